/**
 * The daily build (SPEC R2, R6–R10, R17, R20): read eligible videos, score and assemble the 17+3
 * ring queue, write it as a new version, verify it, and switch `current`, under a build lock.
 *
 * The pipeline, one named step each:
 *   plan -> lock -> read -> assemble -> write -> verify -> switch | shadow -> legacy -> scores
 * Writes go to staging keys in the version's slot and are RENAMEd into place after
 * verification, so readers never see a half-written queue, even on a forced rebuild of the
 * version they are reading. A shadow build RENAMEs onto keys of its own instead (R20).
 */
import type { Config } from '@feed/config';
import type { Logger } from '@feed/logger';
import { assembleQueue, splitPools, summarizeBlocks, versionFor, type CandidateColumns } from '@feed/domain';
import { encodeMeta, makeCurrent, slotKeys, type QueueMeta, type QueueSlot, type Redis, type RedisKeys, type VideoModel } from '@feed/storage';
import { acquireBuildLock, type BuildLock } from './build-lock';
import { readCandidates } from './read-candidates';
import { writeBackScores } from './score-write-back';
import { writeIds } from './write-ids';

export type BuildPhase = 'lock' | 'read' | 'assemble' | 'write' | 'verify' | 'switch' | 'shadow' | 'legacy' | 'scores' | 'done';

export interface BuildOptions {
  /** Fixes generatedAt; the version is its date in the business time zone. Default: now. */
  at?: Date;
  /** Rebuild even when this version is already current (offsets are kept: see README). */
  force?: boolean;
  /** Build and verify without switching `current` (R20). */
  shadow?: boolean;
  /**
   * Make a version current that is older than `current` or later than today (a replay). Without
   * it such a build is verified as a shadow and `current` stays.
   */
  switch?: boolean;
  /** Aborts the build between phases and batches (worker shutdown): the lock is released, `current` untouched. */
  signal?: AbortSignal;
  /** Called at each phase (and each score batch) with an overall percentage, for BullMQ progress and logs. */
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
  /** The clock that says which version is today's (tests fix it). */
  now?: () => Date;
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
  /** Why a build that was not asked to be a shadow became one (a replay without `switch`). */
  reason?: string;
  meta?: QueueMeta;
  /** Documents whose recommendScore changed and was written back (R2). */
  scoresWritten?: number;
  /** For `locked`: milliseconds until the other holder's lock expires. */
  lockExpiresInMs?: number;
  /** For `locked`: whether `version` is today's, the build that is due (a lost one is retried). */
  due?: boolean;
  /** Seconds per phase. */
  timings: Partial<Record<BuildPhase, number>>;
}

export class BuildVerificationError extends Error {}

/** The version the business day of now builds: the one that is due. */
function todayVersion(deps: BuildDeps): string {
  return versionFor(deps.now?.() ?? new Date(), deps.businessTimeZone);
}

/** What this build will do once it has the lock. */
type Plan = { publish: 'current' } | { publish: 'shadow'; reason?: string } | { skip: BuildResult };

/**
 * "Already current" means switched *and* finished: a build that failed after its switch (legacy
 * refill, score write-back) is run again by BullMQ's retry rather than skipped. A version older
 * than current or later than today is a replay: it switches only when asked to.
 */
async function plan(deps: BuildDeps, version: string, options: BuildOptions): Promise<Plan> {
  if (options.shadow) return { publish: 'shadow' };
  const current = await deps.redis.get(deps.keys.current);
  if (!options.force && current === version && (await deps.redis.hExists(deps.keys.meta(version), 'completedAt'))) {
    return { skip: { version, status: 'already-current', timings: {} } };
  }
  if (options.switch) return { publish: 'current' };
  const today = todayVersion(deps);
  if (version > today) return { publish: 'shadow', reason: `${version} is later than today (${today}); pass switch to make it current` };
  if (current && version < current) return { publish: 'shadow', reason: `${version} is older than current ${current}; pass switch to make it current` };
  return { publish: 'current' };
}

/** Progress, logs and per-phase timings of one build. */
class BuildRun {
  readonly timings: BuildResult['timings'] = {};

  constructor(
    private readonly logger: Logger,
    private readonly version: string,
    private readonly options: BuildOptions,
  ) {}

  async phase<T>(name: BuildPhase, percent: number, step: () => Promise<T>): Promise<T> {
    this.options.signal?.throwIfAborted();
    this.logger.info('daily build phase', { version: this.version, phase: name, percent });
    await this.options.onProgress?.(name, percent);
    const started = performance.now();
    const result = await step();
    this.timings[name] = (performance.now() - started) / 1000;
    return result;
  }

  async progress(name: BuildPhase, percent: number): Promise<void> {
    await this.options.onProgress?.(name, Math.floor(percent));
  }
}

interface AssembledBuild {
  candidates: CandidateColumns;
  /** Candidate indices in queue order. */
  order: Uint32Array;
  meta: QueueMeta;
}

function assemble(candidates: CandidateColumns, generatedAt: Date, version: string, shadow: boolean): AssembledBuild {
  const duplicateCount = candidates.countDuplicateIds();
  if (duplicateCount > 0) throw new BuildVerificationError(`read ${duplicateCount} duplicate video ids`);
  const pools = splitPools(candidates, generatedAt.getTime());
  const { ids: order, blocks } = assembleQueue(pools.high, pools.fresh, version);
  const meta: QueueMeta = {
    version,
    length: order.length,
    generatedAt: generatedAt.toISOString(),
    startOffset: 0,
    candidateCount: candidates.length,
    highCount: pools.high.length,
    newCount: pools.fresh.length,
    finalCount: order.length,
    duplicateCount,
    blocks: summarizeBlocks(blocks),
    builtAt: new Date().toISOString(),
    shadow,
  };
  return { candidates, order, meta };
}

/** Staging keys of this version: where the queue and meta are written before verification. */
async function writeStaging(deps: BuildDeps, build: AssembledBuild, signal?: AbortSignal): Promise<void> {
  const { redis, keys } = deps;
  const { version } = build.meta;
  await redis.del([keys.queueStaging(version), keys.metaStaging(version)]);
  await writeIds(redis, keys.queueStaging(version), build.candidates, build.order, 'RPUSH', signal);
  await redis.hSet(keys.metaStaging(version), encodeMeta(build.meta));
}

async function verifyStaging(deps: BuildDeps, build: AssembledBuild, lock: BuildLock): Promise<void> {
  const { redis, keys } = deps;
  const { version, length } = build.meta;
  const written = await redis.lLen(keys.queueStaging(version));
  if (written !== length || Number(await redis.hGet(keys.metaStaging(version), 'length')) !== written) {
    throw new BuildVerificationError(`queue length ${written} != meta.length ${length}`);
  }
  await deps.beforeSwitch?.();
  // An empty queue is never published: the API would have nothing to serve.
  if (length === 0) throw new BuildVerificationError('no eligible videos: refusing to publish an empty queue');
  if (!(await lock.stillOwned())) throw new BuildVerificationError('build lock expired before the switch');
}

/** RENAMEs staging onto the version's keys in `slot` (same slot: atomic) and counts their expiry from now (R10). */
async function moveStaging(deps: BuildDeps, version: string, slot: QueueSlot, alsoExpire: string[] = []): Promise<void> {
  const { redis, keys } = deps;
  const target = slotKeys(keys, version, slot);
  await redis.rename(keys.queueStaging(version), target.queue);
  await redis.rename(keys.metaStaging(version), target.meta);
  await Promise.all([target.queue, target.meta, ...alsoExpire].map((key) => redis.expire(key, deps.keyTtlHours * 3600)));
}

/** R20: the shadow's own keys; the version's live queue, meta and offsets are never touched. */
async function publishShadow(deps: BuildDeps, version: string): Promise<void> {
  await moveStaging(deps, version, 'shadow');
  await deps.redis.set(deps.keys.shadow, version);
}

/** Moves the queue into place and switches `current`, keeping the one before as `previous`. */
async function switchCurrent(deps: BuildDeps, meta: QueueMeta): Promise<string | null> {
  const { redis, keys } = deps;
  const { version } = meta;
  await moveStaging(deps, version, 'live', [keys.offset(version)]);
  const previous = await makeCurrent(redis, keys, version);
  meta.switchedAt = new Date().toISOString();
  await redis.hSet(keys.meta(version), 'switchedAt', meta.switchedAt);
  return previous;
}

/** The legacy random feed's id set (R17), refilled from the same queue, swapped in whole. */
async function refillLegacySet(deps: BuildDeps, build: AssembledBuild, signal?: AbortSignal): Promise<void> {
  const { redis, keys } = deps;
  await redis.del(keys.legacyIdsStaging);
  await writeIds(redis, keys.legacyIdsStaging, build.candidates, build.order, 'SADD', signal);
  await redis.rename(keys.legacyIdsStaging, keys.legacyIds);
}

export async function runDailyBuild(deps: BuildDeps, options: BuildOptions = {}): Promise<BuildResult> {
  const { redis, keys, logger } = deps;
  const generatedAt = options.at ?? new Date();
  const version = versionFor(generatedAt, deps.businessTimeZone);
  const { signal } = options;

  const planned = await plan(deps, version, options);
  if ('skip' in planned) {
    logger.info('daily build skipped: version already current', { version });
    return planned.skip;
  }
  const shadow = planned.publish === 'shadow';
  const reason = 'reason' in planned ? planned.reason : undefined;
  if (reason) logger.warn('daily build runs as a shadow', { version, reason });

  const run = new BuildRun(logger, version, options);
  const lock = await run.phase('lock', 0, () => acquireBuildLock(redis, keys.buildLock(version), deps.lockTtlMs));
  if (!lock) {
    const lockExpiresInMs = Math.max(0, await redis.pTTL(keys.buildLock(version)));
    logger.warn('daily build skipped: another worker holds the lock', { version, lockExpiresInMs });
    return { version, status: 'locked', lockExpiresInMs, due: version === todayVersion(deps), timings: run.timings };
  }
  try {
    const candidates = await run.phase('read', 5, () => readCandidates(deps.videos, signal));
    const build = await run.phase('assemble', 35, async () => assemble(candidates, generatedAt, version, shadow));
    const { meta } = build;
    await run.phase('write', 45, () => writeStaging(deps, build, signal));
    await run.phase('verify', 70, () => verifyStaging(deps, build, lock));

    if (shadow) {
      await run.phase('shadow', 80, () => publishShadow(deps, version));
      logger.info('shadow build verified, current not switched', { version, length: meta.length, reason });
      await run.progress('done', 100);
      return { version, status: 'shadow', reason, meta, timings: run.timings };
    }

    const previous = await run.phase('switch', 80, () => switchCurrent(deps, meta));
    logger.info('current version switched', { version, previous, length: meta.length });
    await run.phase('legacy', 85, () => refillLegacySet(deps, build, signal));
    const scoresWritten = await run.phase('scores', 90, () =>
      writeBackScores(deps.videos, candidates, generatedAt, { signal, onBatch: (written, total) => run.progress('scores', 90 + (9 * written) / total) }),
    );
    meta.completedAt = new Date().toISOString();
    await redis.hSet(keys.meta(version), 'completedAt', meta.completedAt);
    logger.info('daily build done', { version, length: meta.length, high: meta.highCount, fresh: meta.newCount, scoresWritten, timings: run.timings });
    await run.progress('done', 100);
    return { version, status: 'built', meta, scoresWritten, timings: run.timings };
  } catch (err) {
    await redis.del([keys.queueStaging(version), keys.metaStaging(version)]).catch(() => undefined);
    await redis.del(keys.legacyIdsStaging).catch(() => undefined);
    logger.error('daily build failed', { version, err });
    throw err;
  } finally {
    await lock.release().catch(() => undefined);
  }
}
