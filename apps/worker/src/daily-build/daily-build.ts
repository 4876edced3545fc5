/**
 * The daily build (SPEC R6–R10, R17, R20): read eligible videos, score and assemble the 17+3
 * ring queue, write it as a new version, verify it, and switch `current` — under a build lock.
 *
 * Writes go to staging keys in the version's slot and are RENAMEd into place after
 * verification, so readers never see a half-written queue, even on a forced rebuild of the
 * version they are reading.
 */
import type { Config } from '@feed/config';
import type { Logger } from '@feed/logger';
import {
  assembleQueue,
  countDuplicates,
  ELIGIBLE_FILTER,
  recommendScore,
  splitPools,
  summarizeBlocks,
  versionFor,
  type Candidate,
} from '@feed/domain';
import { encodeMeta, type QueueMeta, type Redis, type RedisKeys, type VideoModel } from '@feed/storage';
import { acquireBuildLock, type BuildLock } from './build-lock';

/** Ids per RPUSH/SADD command; the commands themselves are pipelined. */
const WRITE_BATCH = 5000;
/** Documents per bulkWrite of the score write-back. */
const SCORE_BATCH = 2000;
const READ_BATCH = 5000;

export type BuildPhase = 'lock' | 'read' | 'assemble' | 'write' | 'verify' | 'switch' | 'scores' | 'legacy' | 'done';

export interface BuildOptions {
  /** Fixes generatedAt; the version is its date in the business time zone. Default: now. */
  at?: Date;
  /** Rebuild even when this version is already current (offsets are kept: see README). */
  force?: boolean;
  /** Build and verify without switching `current` (R20). */
  shadow?: boolean;
  /** Aborts the build between phases and batches (worker shutdown): the lock is released, `current` untouched. */
  signal?: AbortSignal;
  /** Called at each phase with an overall percentage, for BullMQ progress and logs. */
  onProgress?: (phase: BuildPhase, percent: number) => void | Promise<void>;
}

export interface BuildDeps {
  redis: Redis;
  keys: RedisKeys;
  videos: VideoModel;
  logger: Logger;
  businessTimeZone: string;
  keyTtlHours: number;
  lockTtlMs: number;
  /** Test hook: runs between the queue write and the switch, to inject failures. */
  beforeSwitch?: () => Promise<void>;
}

/** The build's dependencies for a process configured by `config`. */
export function buildDepsFrom(
  config: Pick<Config, 'businessTimeZone' | 'shortRecommendKeyTTLHours' | 'buildLockTtlMs'>,
  stores: Pick<BuildDeps, 'redis' | 'keys' | 'videos' | 'logger'>,
): BuildDeps {
  return { ...stores, businessTimeZone: config.businessTimeZone, keyTtlHours: config.shortRecommendKeyTTLHours, lockTtlMs: config.buildLockTtlMs };
}

export type BuildStatus = 'built' | 'shadow' | 'already-current' | 'locked';

export interface BuildResult {
  version: string;
  status: BuildStatus;
  meta?: QueueMeta;
  /** Seconds per phase. */
  timings: Partial<Record<BuildPhase, number>>;
}

export class BuildVerificationError extends Error {}

/** Streams eligible videos with a cursor, keeping only what assembly needs. */
async function readCandidates(videos: VideoModel, signal?: AbortSignal): Promise<Candidate[]> {
  const candidates: Candidate[] = [];
  const cursor = videos
    .find(ELIGIBLE_FILTER)
    .select({ _id: 1, reviewAt: 1, recommendLikeCount: 1, recommendCollectCount: 1, recommendCommentCount: 1, recommendShareCount: 1 })
    .lean()
    .cursor({ batchSize: READ_BATCH });
  for await (const video of cursor) {
    signal?.throwIfAborted();
    candidates.push({ id: video._id.toHexString(), score: recommendScore(video), reviewAt: video.reviewAt ? new Date(video.reviewAt).getTime() : null });
  }
  return candidates;
}

async function pushInBatches(redis: Redis, key: string, ids: string[], command: 'rPush' | 'sAdd'): Promise<void> {
  const writes: Promise<unknown>[] = [];
  // Issued back to back on one connection: node-redis pipelines them and Redis applies them in order.
  for (let i = 0; i < ids.length; i += WRITE_BATCH) writes.push(redis[command](key, ids.slice(i, i + WRITE_BATCH)));
  await Promise.all(writes);
}

/** Writes the score every queued video was built with as `recommendScore(At)` (R9). */
async function writeBackScores(videos: VideoModel, candidates: Candidate[], at: Date, signal?: AbortSignal): Promise<void> {
  for (let i = 0; i < candidates.length; i += SCORE_BATCH) {
    signal?.throwIfAborted();
    await videos.bulkWrite(
      candidates.slice(i, i + SCORE_BATCH).map((c) => ({
        updateOne: { filter: { _id: c.id }, update: { $set: { recommendScore: c.score, recommendScoreAt: at } } },
      })),
      { ordered: false },
    );
  }
}

export async function runDailyBuild(deps: BuildDeps, options: BuildOptions = {}): Promise<BuildResult> {
  const { redis, keys, logger } = deps;
  const generatedAt = options.at ?? new Date();
  const version = versionFor(generatedAt, deps.businessTimeZone);
  const timings: BuildResult['timings'] = {};
  let phaseStarted = Date.now();
  const phase = async (name: BuildPhase, percent: number) => {
    options.signal?.throwIfAborted();
    logger.info('daily build phase', { version, phase: name, percent });
    await options.onProgress?.(name, percent);
  };
  const finishPhase = (name: BuildPhase) => {
    timings[name] = (Date.now() - phaseStarted) / 1000;
    phaseStarted = Date.now();
  };

  // "Already current" means switched *and* finished: a build that failed after its switch (legacy
  // refill, score write-back) is run again by BullMQ's retry rather than skipped.
  if (!options.force && !options.shadow && (await redis.get(keys.current)) === version && (await redis.hExists(keys.meta(version), 'completedAt'))) {
    logger.info('daily build skipped: version already current', { version });
    return { version, status: 'already-current', timings };
  }

  await phase('lock', 0);
  const lock: BuildLock | null = await acquireBuildLock(redis, keys.buildLock(version), deps.lockTtlMs);
  if (!lock) {
    logger.info('daily build skipped: another worker holds the lock', { version });
    return { version, status: 'locked', timings };
  }
  finishPhase('lock');

  const stagingQueue = keys.queueStaging(version);
  const stagingMeta = keys.metaStaging(version);
  const stagingLegacy = keys.legacyIdsStaging;
  try {
    await phase('read', 5);
    const candidates = await readCandidates(deps.videos, options.signal);
    finishPhase('read');

    await phase('assemble', 35);
    const pools = splitPools(candidates, generatedAt.getTime());
    const { ids, blocks } = assembleQueue(pools.high, pools.fresh, version);
    const duplicateCount = countDuplicates(ids);
    if (duplicateCount > 0) throw new BuildVerificationError(`assembled queue has ${duplicateCount} duplicates`);
    finishPhase('assemble');

    await phase('write', 45);
    const ttlSeconds = deps.keyTtlHours * 3600;
    const meta: QueueMeta = {
      version,
      length: ids.length,
      generatedAt: generatedAt.toISOString(),
      startOffset: 0,
      candidateCount: candidates.length,
      highCount: pools.high.length,
      newCount: pools.fresh.length,
      finalCount: ids.length,
      duplicateCount,
      blocks: summarizeBlocks(blocks),
      builtAt: new Date().toISOString(),
      shadow: Boolean(options.shadow),
    };
    await redis.del([stagingQueue, stagingMeta]);
    await pushInBatches(redis, stagingQueue, ids, 'rPush');
    await redis.hSet(stagingMeta, encodeMeta(meta));
    finishPhase('write');

    await phase('verify', 70);
    const written = await redis.lLen(stagingQueue);
    if (written !== ids.length || Number(await redis.hGet(stagingMeta, 'length')) !== written) {
      throw new BuildVerificationError(`queue length ${written} != meta.length ${ids.length}`);
    }
    await deps.beforeSwitch?.();
    if (ids.length === 0) {
      // An empty queue is never made current: the API would have nothing to serve.
      throw new BuildVerificationError('no eligible videos: refusing to publish an empty queue');
    }
    if (!(await lock.stillOwned())) throw new BuildVerificationError('build lock expired before the switch');
    // Same slot: RENAME moves the verified queue and meta into place atomically, then every
    // version key gets its expiry counted from now (R10).
    await redis.rename(stagingQueue, keys.queue(version));
    await redis.rename(stagingMeta, keys.meta(version));
    await Promise.all([keys.queue(version), keys.meta(version), keys.offset(version)].map((key) => redis.expire(key, ttlSeconds)));
    finishPhase('verify');

    if (options.shadow) {
      await redis.set(keys.shadow, version);
      logger.info('shadow build verified, current not switched', { version, length: ids.length });
      await phase('done', 100);
      return { version, status: 'shadow', meta, timings };
    }

    await phase('switch', 80);
    const previous = await redis.set(keys.current, version, { GET: true });
    if (previous && previous !== version) await redis.set(keys.previous, previous);
    meta.switchedAt = new Date().toISOString();
    await redis.hSet(keys.meta(version), 'switchedAt', meta.switchedAt);
    logger.info('current version switched', { version, previous, length: ids.length });
    finishPhase('switch');

    await phase('legacy', 85);
    await redis.del(stagingLegacy);
    await pushInBatches(redis, stagingLegacy, ids, 'sAdd');
    if (ids.length > 0) await redis.rename(stagingLegacy, keys.legacyIds);
    finishPhase('legacy');

    await phase('scores', 90);
    await writeBackScores(deps.videos, candidates, generatedAt, options.signal);
    await redis.hSet(keys.meta(version), 'completedAt', new Date().toISOString());
    finishPhase('scores');
    logger.info('daily build done', { version, length: ids.length, high: pools.high.length, fresh: pools.fresh.length, timings });
    await phase('done', 100);
    return { version, status: 'built', meta, timings };
  } catch (err) {
    await redis.del([stagingQueue, stagingMeta]).catch(() => undefined);
    await redis.del(stagingLegacy).catch(() => undefined);
    logger.error('daily build failed', { version, err });
    throw err;
  } finally {
    await lock.release().catch(() => undefined);
  }
}
