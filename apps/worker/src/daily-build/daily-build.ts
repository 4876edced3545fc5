/**
 * The daily build (SPEC R2, R6–R10, R17, R20), one named step each, under a build lock:
 *   plan -> lock -> read -> assemble -> write -> verify -> gate -> switch | shadow -> legacy -> scores
 * The gate (R23, release-gate.ts) holds a version about to become current as a shadow when its
 * queue or candidate read shrank too much, or it has a duplicate (promote-held.ts promotes it).
 * Writes go to staging keys RENAMEd into place after verification, so readers never see a
 * half-written queue, even on a forced rebuild; a shadow build RENAMEs onto its own keys (R20).
 */
import type { Config } from '@feed/config';
import type { Logger } from '@feed/logger';
import { inSpan } from '@feed/telemetry';
import { randomUUID } from 'node:crypto';
import { assembleQueue, judgeRelease, offsetBucketsFor, releaseFigures, splitPools, summarizeBlocks, versionFor, type GateVerdict } from '@feed/domain';
import type { CandidateColumns } from './candidate-columns';
import { PublishRefusedError, type AuditTrail, type BuildStore, type LiveOrShadow, type QueueMeta, type SwitchOutcome, type VideoModel } from '@feed/storage';
import { acquireBuildLock, type BuildLock } from './build-lock';
import { readCandidates, type DocumentIssues } from './read-candidates';
import { writeBackScores } from './score-write-back';
import { writeIds, writeScores } from './write-ids';

export type BuildPhase = 'lock' | 'read' | 'assemble' | 'write' | 'verify' | 'gate' | 'switch' | 'shadow' | 'legacy' | 'scores' | 'done';

export interface BuildOptions {
  /** Fixes generatedAt; the version is its date in the business time zone. Default: now. */
  at?: Date;
  /** Rebuild even when this version is already current (offsets are kept: docs/design.md, "Daily build"). */
  force?: boolean;
  /** Build and verify without switching `current` (R20). */
  shadow?: boolean;
  /** Make a replay (older than `current` or later than today) current; without it, it is a shadow. */
  switch?: boolean;
  /** On-call's forced rebuild past the release gate (R23): who asked. The would-be verdict is in the result. */
  skipGate?: { by: string };
  /** Aborts the build between phases and batches (worker shutdown): the lock is released, `current` untouched. */
  signal?: AbortSignal;
  /** Called at each phase (and each score batch) with an overall percentage, for BullMQ progress and logs. */
  onProgress?: (phase: BuildPhase, percent: number) => void | Promise<void>;
}

export interface BuildDeps {
  store: BuildStore;
  videos: VideoModel;
  logger: Logger;
  businessTimeZone: string;
  keyTtlHours: number;
  lockTtlMs: number;
  /** How long a build waits for a held lock, then plans again (the holder may have built this); 0: `locked` at once. */
  lockWaitMs?: number;
  /** The clock: which version is today's, and when a build without `at` runs (tests fix it). */
  now?: () => Date;
  /** Share of current's length or candidate count a new version may lose before the gate holds it (SHORT_RECOMMEND_HOLD_DROP; default 0.5). */
  holdDrop?: number;
  /** On-call's trail (D6): a held build is recorded there (absent: logged only). */
  audit?: AuditTrail;
  /** Test hook: runs at each point of the publish sequence, to inject failures and process kills. */
  failpoint?: (point: PublishPoint) => Promise<void>;
}

/** The build's dependencies for a process configured by `config`. */
export function buildDepsFrom(
  config: Pick<Config, 'businessTimeZone' | 'shortRecommendKeyTTLHours' | 'buildLockTtlMs' | 'shortRecommendHoldDrop'>,
  stores: Pick<BuildDeps, 'store' | 'videos' | 'logger'> & Partial<Pick<BuildDeps, 'audit'>>,
): BuildDeps {
  return {
    ...stores,
    businessTimeZone: config.businessTimeZone,
    keyTtlHours: config.shortRecommendKeyTTLHours,
    lockTtlMs: config.buildLockTtlMs,
    lockWaitMs: LOCK_WAIT_MS,
    holdDrop: config.shortRecommendHoldDrop,
  };
}

/** Longer than a full build, so a live holder finishes first; a dead holder's lease lapses within BUILD_LOCK_TTL_MS. */
export const LOCK_WAIT_MS = 20 * 60_000;

/** The points between the commands that publish a build, where a crash may stop it. */
export type PublishPoint = 'before-publish' | 'after-publish' | 'after-switch' | 'legacy-staged' | 'after-legacy';

export type BuildStatus = 'built' | 'shadow' | 'held' | 'superseded' | 'already-current' | 'locked';

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
  /** The release gate's verdict (R23), for a build that was about to switch: `held` has its reasons. */
  verdict?: GateVerdict;
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

/** "Already current" is switched *and* finished, so a retry reruns a build failed after its switch; a replay switches only if asked. */
async function plan(deps: BuildDeps, version: string, options: BuildOptions): Promise<Plan> {
  if (options.shadow) return { publish: 'shadow' };
  const current = await deps.store.versions.current();
  if (!options.force && current === version && (await deps.store.versions.isFinished(version))) {
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

  constructor(private readonly logger: Logger, private readonly version: string, private readonly options: BuildOptions) {}

  async phase<T>(name: BuildPhase, percent: number, step: () => Promise<T>): Promise<T> {
    this.options.signal?.throwIfAborted();
    this.logger.info('daily build phase', { version: this.version, phase: name, percent });
    await this.options.onProgress?.(name, percent);
    const started = performance.now();
    // Each phase a span: children of the BullMQ job's span when the worker runs the build (D5).
    const result = await inSpan(`build ${name}`, { 'feed.version': this.version, 'feed.phase': name }, step);
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

/** The assemble phase: refuses duplicate ids (a broken read), then pools and 17+3 blocks; exported for tests. */
export function assemble(candidates: CandidateColumns, documentIssues: DocumentIssues, generatedAt: Date, version: string, shadow: boolean, offsetBuckets: number): AssembledBuild {
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
    documentIssues,
    blocks: summarizeBlocks(blocks),
    builtAt: new Date().toISOString(),
    buildId: randomUUID(),
    offsetBuckets,
    shadow,
  };
  return { candidates, order, meta };
}

/** Offset buckets (R22): a forced rebuild keeps the live version's; a new one is sized by current's users. */
async function planOffsetBuckets(deps: BuildDeps, version: string): Promise<number> {
  const { store } = deps;
  const live = await store.versions.readMeta(version);
  if (live) return live.offsetBuckets;
  const current = await store.versions.current();
  const before = current ? await store.versions.readMeta(current) : null;
  if (!current || !before) return offsetBucketsFor(0);
  return offsetBucketsFor(await store.usersWithOffset(current, before.offsetBuckets));
}

/** Staged keys expire like published ones: a build killed before publishing leaves nothing for ever. */
async function writeStaging(deps: BuildDeps, build: AssembledBuild, lock: BuildLock, signal?: AbortSignal): Promise<void> {
  await deps.store.versions.stage(build.meta, lock, deps.keyTtlHours * 3600, async (lists) => {
    await writeIds(lists.queue, build.candidates, build.order, signal);
    await writeScores(lists.scores, build.candidates, build.order, signal);
  });
}

/** An empty queue is never published; lengths and lock ownership the publish script checks atomically. */
async function verifyStaging(deps: BuildDeps, build: AssembledBuild): Promise<void> {
  if (build.meta.length === 0) throw new BuildVerificationError('no eligible videos: refusing to publish an empty queue');
  await deps.failpoint?.('before-publish');
}

/** VersionStore.publish with the keys' expiry (R10); a refused publish (lock lost, lengths disagree) is a failed verification. */
export async function publish(deps: Pick<BuildDeps, 'store' | 'keyTtlHours'>, meta: QueueMeta, lock: BuildLock, which: LiveOrShadow, from: 'staging' | 'shadow' = 'staging'): Promise<void> {
  try {
    await deps.store.versions.publish(meta, lock, which, deps.keyTtlHours * 3600, from);
  } catch (err) {
    if (err instanceof PublishRefusedError) throw new BuildVerificationError(err.message);
    throw err;
  }
}

/** R20: the shadow's own keys; the version's live queue, meta and offsets are never touched. */
async function publishShadow(deps: BuildDeps, meta: QueueMeta, lock: BuildLock): Promise<void> {
  await publish(deps, meta, lock, 'shadow');
  await deps.store.pointShadowAt(meta.version);
}

/** Publishes, then moves `current` by compare-and-set: refused when current is newer, unless `allowOlder`. */
async function switchCurrent(deps: BuildDeps, meta: QueueMeta, lock: BuildLock, allowOlder: boolean): Promise<SwitchOutcome> {
  await publish(deps, meta, lock, 'live');
  await deps.failpoint?.('after-publish');
  const outcome = await deps.store.makeCurrent(meta.version, allowOlder);
  await deps.failpoint?.('after-switch');
  if (outcome.switched) {
    meta.switchedAt = new Date().toISOString();
    await deps.store.versions.markSwitched(meta.version, meta.switchedAt);
  }
  return outcome;
}

/** The legacy random feed's id set (R17), refilled from the same queue, swapped in whole. */
async function refillLegacySet(deps: BuildDeps, build: AssembledBuild, lock: BuildLock, signal?: AbortSignal): Promise<void> {
  await deps.store.versions.refillLegacy(
    lock,
    deps.keyTtlHours * 3600,
    (add) => writeIds(add, build.candidates, build.order, signal),
    () => deps.failpoint?.('legacy-staged') ?? Promise.resolve(),
  );
  await deps.failpoint?.('after-legacy');
}

/** The gate's verdict on `meta` against the version current now (its live meta): R23. */
async function judgeGate(deps: BuildDeps, meta: QueueMeta, options: BuildOptions): Promise<GateVerdict> {
  const current = await deps.store.versions.current();
  const currentMeta = current ? await deps.store.versions.readMeta(current) : null;
  return judgeRelease(releaseFigures(meta), currentMeta ? releaseFigures(currentMeta) : null, { holdDrop: deps.holdDrop, skip: options.skipGate });
}

/** A held version (R23): published as a shadow (R20), recorded as held, logged and audited; exported for tests. */
export async function holdVersion(deps: BuildDeps, meta: QueueMeta, lock: BuildLock, verdict: GateVerdict): Promise<void> {
  const { store, logger } = deps;
  meta.shadow = true;
  const held = { version: meta.version, buildId: meta.buildId, heldAt: new Date().toISOString(), current: verdict.current?.version ?? null, verdict: { outcome: verdict.outcome, reasons: verdict.reasons, compared: verdict.compared, holdDrop: verdict.holdDrop } };
  // A later day's hold stays the record (lua/held-record.lua): this is then the controller
  // repairing an older current while the due day is held; replacing the record would make the
  // controller alternate between the two days (R21). Promoting the due day settles both.
  await publish(deps, meta, lock, 'shadow');
  await store.versions.markShadow(meta.version, 'shadow', true);
  const stays = await store.writeHeld(held, deps.keyTtlHours * 3600);
  if (stays !== meta.version) {
    logger.warn('daily build held by the release gate; the later held day stays the one to promote', { version: meta.version, held: stays, reasons: verdict.reasons.map((r) => r.message) });
  } else {
    logger.warn('daily build held by the release gate', { version: meta.version, current: held.current, reasons: verdict.reasons.map((r) => r.message), promote: `pnpm cli build --promote ${meta.version}` });
  }
  try {
    await deps.audit?.record({ action: 'build-held', actor: 'release gate', via: 'worker', before: { current: held.current, figures: verdict.current }, after: { held: meta.version, buildId: meta.buildId, reasons: verdict.reasons, figures: verdict.next } });
  } catch (err) {
    // The version is held already (nothing moved): the trail's outage is on-call's to know, not a failed build.
    logger.error('audit trail unwritable', { action: 'build-held', version: meta.version, err });
  }
}

type Planned = { shadow: boolean; reason?: string; run: BuildRun; lock: BuildLock };

/** Plans, then locks; a held lock is waited for (at most `lockWaitMs`) and the plan made again. */
async function planAndLock(deps: BuildDeps, version: string, options: BuildOptions): Promise<Planned | BuildResult> {
  const { logger } = deps;
  const started = performance.now();
  for (;;) {
    const planned = await plan(deps, version, options);
    if ('skip' in planned) {
      logger.info('daily build skipped: version already current', { version });
      return planned.skip;
    }
    const shadow = planned.publish === 'shadow';
    const reason = 'reason' in planned ? planned.reason : undefined;
    if (reason) logger.warn('daily build runs as a shadow', { version, reason });
    const run = new BuildRun(logger, version, options);
    // The version's lock, or a shadow's own, so a shadow never blocks the live build or a repair (R21).
    const held = deps.store.buildLock(version, shadow, deps.lockTtlMs);
    const lock = await run.phase('lock', 0, () => acquireBuildLock(held, logger));
    if (lock) return { shadow, reason, run, lock };
    const waitLeft = (deps.lockWaitMs ?? 0) - (performance.now() - started);
    if (waitLeft > 0) {
      logger.info('daily build waits for the build lock to be released', { version, shadow });
      if (await held.waitUntilFree(waitLeft, options.signal)) continue;
    }
    const lockExpiresInMs = await held.remainingMs();
    logger.warn('daily build skipped: another worker holds the lock', { version, lockExpiresInMs });
    return { version, status: 'locked', lockExpiresInMs, due: version === todayVersion(deps), timings: run.timings };
  }
}

export async function runDailyBuild(deps: BuildDeps, options: BuildOptions = {}): Promise<BuildResult> {
  const { store, logger } = deps;
  const generatedAt = options.at ?? deps.now?.() ?? new Date();
  const version = versionFor(generatedAt, deps.businessTimeZone);
  const { signal } = options;

  const locked = await planAndLock(deps, version, options);
  if ('status' in locked) return locked;
  const { shadow, reason, run, lock } = locked;
  try {
    const { candidates, issues } = await run.phase('read', 5, () => readCandidates(deps.videos, logger, signal));
    const offsetBuckets = await planOffsetBuckets(deps, version);
    const build = await run.phase('assemble', 35, async () => assemble(candidates, issues, generatedAt, version, shadow, offsetBuckets));
    const { meta } = build;
    await run.phase('write', 45, () => writeStaging(deps, build, lock, signal));
    await run.phase('verify', 70, () => verifyStaging(deps, build));

    const verdict = shadow ? undefined : await run.phase('gate', 75, () => judgeGate(deps, meta, options));
    if (verdict?.hold) {
      await run.phase('shadow', 80, () => holdVersion(deps, meta, lock, verdict));
      await run.progress('done', 100);
      return { version, status: 'held', reason: verdict.reasons.map((r) => r.message).join('; '), meta, verdict, timings: run.timings };
    }
    if (verdict?.outcome === 'skipped' && verdict.reasons.length > 0) {
      logger.warn('release gate skipped by on-call', { version, by: verdict.skippedBy, wouldHoldFor: verdict.reasons.map((r) => r.message) });
    }

    if (shadow) {
      await run.phase('shadow', 80, () => publishShadow(deps, meta, lock));
      logger.info('shadow build verified, current not switched', { version, length: meta.length, reason });
      await run.progress('done', 100);
      return { version, status: 'shadow', reason, meta, timings: run.timings };
    }

    const switched = await run.phase('switch', 80, () => switchCurrent(deps, meta, lock, options.switch === true));
    if (!switched.switched) {
      // Another build made a newer version current while this one ran: this one stays published, not current.
      logger.warn('daily build published but not switched: current is newer', { version, current: switched.current });
      await run.progress('done', 100);
      return { version, status: 'superseded', reason: `current moved to the newer ${switched.current} during the build`, meta, timings: run.timings };
    }
    logger.info('current version switched', { version, previous: switched.replaced, length: meta.length, gate: verdict?.outcome });
    // A held record of this day or an older one is moot once it is current.
    await store.clearHeld(version, false);
    await run.phase('legacy', 85, () => refillLegacySet(deps, build, lock, signal));
    const scoresWritten = await run.phase('scores', 90, () =>
      writeBackScores(deps.videos, candidates, generatedAt, { signal, onBatch: (written, total) => run.progress('scores', 90 + (9 * written) / total) }),
    );
    meta.completedAt = new Date().toISOString();
    await store.versions.markFinished(version, meta.completedAt);
    logger.info('daily build done', { version, length: meta.length, high: meta.highCount, fresh: meta.newCount, scoresWritten, timings: run.timings });
    await run.progress('done', 100);
    return { version, status: 'built', meta, scoresWritten, verdict, timings: run.timings };
  } catch (err) {
    // Cleanup failures are logged, not counted: the build already counts as failed, staging keys expire and the lock lapses.
    await store.versions.dropStaging(version, lock).catch((dropErr: unknown) => logger.warn('staging keys not dropped: they expire with their TTL', { version, err: dropErr }));
    logger.error('daily build failed', { version, err });
    throw err;
  } finally {
    await lock.release().catch((err: unknown) => logger.warn('build lock not released: it lapses with its lease', { version, err }));
  }
}
