/**
 * The queue inspector (next to the dashboard, same credentials): versions, meta, block
 * composition, score distribution, the shadow version's diff, and the settings in force.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Router } from 'express';
import { CronExpressionParser } from 'cron-parser';
import { Types } from 'mongoose';
import type { Config } from '@feed/config';
import { readRolloutOverride, resolveRollout, type Redis, type RedisKeys, type VideoModel } from '@feed/storage';
import { listVersions, summarizeVersions } from './inspect-versions';

/** Scores are sampled from the head of the queue: what users see first, bounded work. */
const SCORE_SAMPLE = 2000;
const SCORE_BUCKETS = 12;
// Beside `src/` and `dist/` alike: the page ships with the deployable (package.json `files`).
const PAGE = readFileSync(path.join(__dirname, '../../assets/inspector.html'), 'utf8');

export interface ScoreHistogram {
  sampled: number;
  buckets: Array<{ from: number; to: number; count: number }>;
}

async function scoreHistogram(redis: Redis, keys: RedisKeys, videos: VideoModel, version: string): Promise<ScoreHistogram> {
  const ids = await redis.lRange(keys.queue(version), 0, SCORE_SAMPLE - 1);
  const docs = await videos
    .find({ _id: { $in: ids.map((id) => new Types.ObjectId(id)) } })
    .select({ recommendScore: 1 })
    .lean();
  const scores = docs.map((d) => d.recommendScore ?? 0);
  const max = Math.max(1, ...scores);
  const width = Math.ceil((max + 1) / SCORE_BUCKETS);
  const buckets = Array.from({ length: SCORE_BUCKETS }, (_, i) => ({ from: i * width, to: (i + 1) * width - 1, count: 0 }));
  for (const score of scores) buckets[Math.min(SCORE_BUCKETS - 1, Math.floor(score / width))].count++;
  return { sampled: scores.length, buckets };
}

/** When the scheduler runs the daily build next (ISO-8601 in the business time zone). */
export function nextBuildAt(cron: string, timeZone: string, from = new Date()): string {
  return CronExpressionParser.parse(cron, { tz: timeZone, currentDate: from }).next().toISOString() ?? '';
}

export interface InspectorDeps {
  config: Pick<Config, 'shortRecommendV2Enabled' | 'shortRecommendV2Percent' | 'shortRecommendCron' | 'businessTimeZone'>;
  redis: Redis;
  keys: RedisKeys;
  videos: VideoModel;
}

export function inspectorRoutes({ config, redis, keys, videos }: InspectorDeps): Router {
  const router = Router();
  router.get('/', (req, res) => {
    // The page loads `api/summary` relative to itself: `/admin/inspector` must become `/admin/inspector/`.
    if (!req.originalUrl.split('?')[0].endsWith('/')) {
      res.redirect(301, `${req.baseUrl}/`);
      return;
    }
    res.type('html').send(PAGE);
  });
  router.get('/api/summary', async (_req, res) => {
    const summary = await summarizeVersions(redis, keys, (await listVersions(redis, keys)).slice(0, 7));
    const focus = summary.pointers.current ?? summary.versions[0]?.version;
    const [scores, override] = await Promise.all([focus ? scoreHistogram(redis, keys, videos, focus) : undefined, readRolloutOverride(redis, keys)]);
    res.json({
      ...summary,
      scores: scores ? { version: focus, ...scores } : null,
      rollout: resolveRollout({ enabled: config.shortRecommendV2Enabled, percent: config.shortRecommendV2Percent }, override),
      nextBuildAt: nextBuildAt(config.shortRecommendCron, config.businessTimeZone),
    });
  });
  return router;
}
