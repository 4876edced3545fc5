/**
 * The queue inspector (next to the dashboard, same credentials): versions, meta, block
 * composition, score distribution and the shadow version's diff.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Router } from 'express';
import { Types } from 'mongoose';
import type { Redis, RedisKeys, VideoModel } from '@feed/storage';
import { diffVersions, listVersions, reportVersion, versionPointers } from './inspect-versions';

/** Scores are sampled from the head of the queue: what users see first, bounded work. */
const SCORE_SAMPLE = 2000;
const SCORE_BUCKETS = 12;
const PAGE = readFileSync(path.join(__dirname, 'inspector.html'), 'utf8');

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

export function inspectorRoutes(deps: { redis: Redis; keys: RedisKeys; videos: VideoModel }): Router {
  const router = Router();
  router.get('/', (_req, res) => {
    res.type('html').send(PAGE);
  });
  router.get('/api/summary', async (_req, res) => {
    const { redis, keys } = deps;
    const pointers = await versionPointers(redis, keys);
    const versions = (await listVersions(redis, keys)).slice(0, 7);
    const reports = await Promise.all(versions.map((v) => reportVersion(redis, keys, v, pointers)));
    const focus = pointers.current ?? versions[0];
    const [scores, shadowDiff] = await Promise.all([
      focus ? scoreHistogram(redis, keys, deps.videos, focus) : undefined,
      pointers.shadow && pointers.current && pointers.shadow !== pointers.current ? diffVersions(redis, keys, pointers.current, pointers.shadow) : undefined,
    ]);
    res.json({ pointers, versions: reports, scores: scores ? { version: focus, ...scores } : null, shadowDiff: shadowDiff ?? null });
  });
  return router;
}
