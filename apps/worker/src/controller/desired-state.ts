/**
 * The desired-state controller (SPEC R21): the worker keeps the state, not only the schedule.
 *
 * Every CHECK_EVERY_MS each replica tries to hold a Redis lease; the holder compares Redis with
 * what should be there and repairs the difference without a human:
 *   - the daily build's job scheduler and the counter repair's exist (upserted again if not);
 *   - a complete version is current: today's once today's cron time has passed, else
 *     yesterday's or today's; its queue length equals `meta.length`;
 *   - the legacy random set exists.
 * A missing or incomplete version is repaired by one build job with a deterministic id per
 * version (`repair-V`): replicas never pile up builds, and a failed repair is re-queued on the
 * next check. A current version whose queue (or the legacy set) vanished is rebuilt in place
 * (forced). Each repair is logged, counted in `feed_repairs_total{reason}` and kept as the last
 * repair for the inspector. The lease lives in Redis, not in BullMQ: after Redis lost its data
 * the controller itself still runs (a BullMQ scheduler would be gone with the data).
 */
import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import { CronExpressionParser } from 'cron-parser';
import { versionFor } from '@feed/domain';
import type { Logger } from '@feed/logger';
import { runScript, withDeadline, type Redis, type RedisKeys } from '@feed/storage';
import type { WorkerMetrics } from '../metrics';
import { SCHEDULER_ID, type BuildJobData } from '../jobs/build-queue';
import { COUNTER_REPAIR_SCHEDULER_ID } from '../jobs/counter-repair';

export const CHECK_EVERY_MS = 10_000;
/** The lease outlives a few missed checks, so a live holder keeps it and a dead one frees it soon. */
const LEASE_MS = 30_000;

export type RepairReason = 'scheduler-missing' | 'counter-scheduler-missing' | 'no-version' | 'version-behind' | 'queue-incomplete' | 'legacy-missing';

export interface Repair {
  reason: RepairReason;
  /** The version a build was queued for. */
  version?: string;
  detail: string;
}

export interface ControllerDeps {
  redis: Redis;
  keys: RedisKeys;
  logger: Logger;
  metrics: WorkerMetrics;
  buildQueue: Queue<BuildJobData>;
  /** Upserts the daily build's job scheduler. */
  ensureBuildScheduler(): Promise<void>;
  counterRepairQueue: Queue;
  ensureCounterRepairScheduler(): Promise<void>;
  cron: string;
  timeZone: string;
  now?: () => Date;
}

/** The version whose build is due: the business day of the cron's last run at or before now. */
export function dueVersion(cron: string, timeZone: string, now: Date): string {
  const lastRun = CronExpressionParser.parse(cron, { tz: timeZone, currentDate: now }).prev().toDate();
  return versionFor(lastRun, timeZone);
}

/** What is wrong with the current version, or null when it is complete and not behind. */
async function versionProblem(deps: ControllerDeps, today: string, due: string): Promise<Omit<Repair, 'version'> & { force: boolean } | null> {
  const { redis, keys } = deps;
  const current = await redis.get(keys.current);
  if (!current) return { reason: 'no-version', detail: 'no version is current', force: false };
  if (current < due) return { reason: 'version-behind', detail: `current ${current} is older than the due version ${due}`, force: false };
  const [length, metaLength, legacy] = await Promise.all([redis.lLen(keys.queue(current)), redis.hGet(keys.meta(current), 'length'), redis.exists(keys.legacyIds)]);
  // A rebuild of the current version in place keeps its offsets; an older current is replaced by today's.
  const force = current === today;
  if (metaLength == null || Number(metaLength) !== length) {
    return { reason: 'queue-incomplete', detail: `current ${current}: queue length ${length}, meta.length ${metaLength ?? 'missing'}`, force };
  }
  if (legacy === 0) return { reason: 'legacy-missing', detail: 'the legacy random set is missing', force };
  return null;
}

/** Queues the repair build of `version`, unless one is waiting or running; returns whether it queued one. */
async function queueRepairBuild(deps: ControllerDeps, version: string, force: boolean): Promise<boolean> {
  const { buildQueue, redis, keys } = deps;
  // A build of that version holds its lock (the scheduled one, say): let it finish.
  if ((await redis.exists(keys.buildLock(version))) === 1) return false;
  const jobId = `repair-${version}`;
  const existing = await buildQueue.getJob(jobId);
  if (existing) {
    const state = await existing.getState();
    if (state !== 'completed' && state !== 'failed' && state !== 'unknown') return false;
    // Done, yet the state is wrong again (or it failed for good): the same id runs once more.
    await existing.remove();
  }
  await buildQueue.add('repair-build', force ? { force: true } : {}, { jobId });
  return true;
}

/** One check of the desired state, with its repairs. Run by the lease holder; exported for tests. */
export async function checkDesiredState(deps: ControllerDeps): Promise<Repair[]> {
  const now = deps.now?.() ?? new Date();
  const repairs: Repair[] = [];
  if (!(await deps.buildQueue.getJobScheduler(SCHEDULER_ID))) {
    await deps.ensureBuildScheduler();
    repairs.push({ reason: 'scheduler-missing', detail: `job scheduler ${SCHEDULER_ID} was missing: upserted` });
  }
  if (!(await deps.counterRepairQueue.getJobScheduler(COUNTER_REPAIR_SCHEDULER_ID))) {
    await deps.ensureCounterRepairScheduler();
    repairs.push({ reason: 'counter-scheduler-missing', detail: `job scheduler ${COUNTER_REPAIR_SCHEDULER_ID} was missing: upserted` });
  }
  const today = versionFor(now, deps.timeZone);
  const problem = await versionProblem(deps, today, dueVersion(deps.cron, deps.timeZone, now));
  if (problem && (await queueRepairBuild(deps, today, problem.force))) {
    repairs.push({ reason: problem.reason, version: today, detail: `${problem.detail}: ${problem.force ? 'forced rebuild' : 'build'} of ${today} queued` });
  }
  for (const repair of repairs) {
    deps.metrics.repairs.inc({ reason: repair.reason });
    deps.logger.warn('desired state repaired', { ...repair });
    await deps.redis.hSet(deps.keys.lastRepair, { reason: repair.reason, version: repair.version ?? '', detail: repair.detail, at: now.toISOString() });
  }
  return repairs;
}

export interface Controller {
  /** Runs one check now if this replica holds (or takes) the lease; resolves when it is done. */
  tick(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts the controller: a first check at once (a first start on an empty Redis builds at once), then every CHECK_EVERY_MS. */
export function startController(deps: ControllerDeps, everyMs = CHECK_EVERY_MS): Controller {
  const token = randomUUID();
  const holdsLease = async () =>
    (await deps.redis.set(deps.keys.controllerLease, token, { NX: true, PX: LEASE_MS })) === 'OK' ||
    (await runScript<number>(deps.redis, 'extend-lock', [deps.keys.controllerLease], [token, String(LEASE_MS)])) === 1;
  let running: Promise<void> | undefined;
  // BullMQ's ioredis queues commands while Redis is gone: a check that hangs is abandoned (its
  // repairs are idempotent) so the next one can run, and it never holds up a shutdown.
  const tick = () =>
    (running ??= (async () => {
      try {
        await withDeadline((async () => (await holdsLease()) && (await checkDesiredState(deps)))(), LEASE_MS, 'desired state check');
      } catch (err) {
        deps.metrics.controllerFailures.inc();
        deps.logger.warn('desired state check failed', { err: err instanceof Error ? err.message : String(err) });
      } finally {
        running = undefined;
      }
    })());
  void tick();
  const timer = setInterval(() => void tick(), everyMs);
  timer.unref();
  return {
    tick,
    async stop() {
      clearInterval(timer);
      // The next replica takes over at its next check, not after the lease's expiry.
      await runScript(deps.redis, 'release-lock', [deps.keys.controllerLease], [token]).catch(() => undefined);
    },
  };
}
