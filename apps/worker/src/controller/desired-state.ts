/**
 * The desired-state controller (SPEC R21): the worker keeps the state, not only the schedule. Every
 * CHECK_EVERY_MS the `Lease` holder checks that both job schedulers exist, that a complete version
 * is current (today's once its cron time passed) and that the legacy set exists, and repairs what
 * is missing with one build job per version (`repair-V`). Past MAX_REPAIR_ATTEMPTS a day for one
 * state it says why and waits. An abandoned check acts no more. The holder also drives the ramp
 * (R23). Why the lease lives outside BullMQ: docs/design.md, "Self-healing".
 */
import type { Job, Queue } from 'bullmq';
import { CronExpressionParser } from 'cron-parser';
import { versionFor } from '@feed/domain';
import type { Logger } from '@feed/logger';
import { withDeadline, type BuildStore } from '@feed/storage';
import type { WorkerMetrics } from '../metrics';
import { SCHEDULER_ID, type BuildJobData } from '../jobs/build-queue';
import { COUNTER_REPAIR_SCHEDULER_ID } from '../jobs/counter-repair';
import { REPAIR_REASONS, type RepairReason } from './repair-reasons';

export const CHECK_EVERY_MS = 10_000;
/** The lease outlives a few missed checks, so a live holder keeps it and a dead one frees it soon. */
export const LEASE_MS = 30_000;
/** A check abandoned past this still leaves LEASE_MS - CHECK_DEADLINE_MS of our lease: it stops before anyone else may hold it. */
export const CHECK_DEADLINE_MS = 20_000;
/** Repairs of one state a business day; five, so FeedRepairsNotHolding pages (at the fourth in 30 min) before it gives up. */
export const MAX_REPAIR_ATTEMPTS = 5;

export interface Repair {
  reason: RepairReason;
  /** The version a build was queued for. */
  version?: string;
  detail: string;
}

export interface ControllerDeps {
  store: BuildStore;
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
  /** Aborted when the check is abandoned (its deadline passed): it then acts no more. */
  signal?: AbortSignal;
  /** The rollout ramp's tick (R23), run by the lease holder after each check (ramp-driver.ts). */
  driveRamp?: (signal: AbortSignal) => Promise<unknown>;
}

/** The version whose build is due: the business day of the cron's last run at or before now. */
export function dueVersion(cron: string, timeZone: string, now: Date): string {
  return versionFor(CronExpressionParser.parse(cron, { tz: timeZone, currentDate: now }).prev().toDate(), timeZone);
}

type VersionProblem = Omit<Repair, 'version'> & { target: string; force: boolean; current: string | null };

/** What is wrong with the current version, or null when it is complete and not behind. */
async function versionProblem(deps: ControllerDeps, today: string, due: string): Promise<VersionProblem | null> {
  const { store } = deps;
  const current = await store.versions.current();
  if (!current) return { reason: 'no-version', detail: 'no version is current', target: today, force: false, current: null };
  // The due day held by the release gate (R23) is on-call's to promote; current is still checked.
  const dueHeld = current < due && ((await store.heldVersion())?.version ?? '') >= due;
  if (current < due && !dueHeld) return { reason: 'version-behind', detail: `current ${current} is older than the due version ${due}`, target: today, force: false, current };
  const [completeness, legacy] = await Promise.all([store.versions.completeness(current), store.versions.legacyExists()]);
  // A current later than today (switched ahead by on-call) is repaired as itself; today's is
  // rebuilt in place (offsets kept); an older current is replaced by today's.
  const target = dueHeld || current > today ? current : today;
  const force = dueHeld || current >= today;
  if (!completeness.complete) return { reason: 'queue-incomplete', detail: `current ${current}: ${completeness.problem}`, target, force, current };
  if (!legacy) return { reason: 'legacy-missing', detail: 'the legacy random set is missing', target, force, current };
  return null;
}

/** The build job's data that repairs `target`: forced in place when it is current, and switched when it is later than today. */
function repairJobData(target: string, today: string, force: boolean): BuildJobData {
  const at = `${target.slice(0, 4)}-${target.slice(4, 6)}-${target.slice(6, 8)}`;
  if (target > today) return { at, force: true, switch: true };
  if (target < today) return { at, force: true };
  return force ? { force: true } : {};
}

type QueueOutcome = 'queued' | 'busy' | 'stopped';

/** A failed repair past the catalog read fails again however often it runs: an attempt. A lock or MongoDB failure is not. */
function readTheCatalog(job: Job | undefined): boolean {
  const phase = (job?.progress as { phase?: unknown } | undefined)?.phase;
  return typeof phase === 'string' && phase !== 'lock' && phase !== 'read';
}

/** Queues the repair build unless one is waiting or running, or MAX_REPAIR_ATTEMPTS did not fix the state. */
async function queueRepairBuild(deps: ControllerDeps, problem: VersionProblem, today: string): Promise<QueueOutcome> {
  const { buildQueue, store } = deps;
  const version = problem.target;
  // A build of that version holds its lock (the scheduled one, say): let it finish.
  if (await store.buildLocked(version)) return 'busy';
  const jobId = `repair-${version}`;
  const existing = await buildQueue.getJob(jobId);
  const state = existing ? await existing.getState() : undefined;
  if (state && state !== 'completed' && state !== 'failed' && state !== 'unknown') return 'busy';
  // A repair that ran to its end and left the state wrong is an attempt; a failed one (MongoDB down) is retried freely.
  const field = `${problem.reason}|${version}|${problem.current ?? ''}`;
  if ((await store.repairAttempts(today, field)) >= MAX_REPAIR_ATTEMPTS) return 'stopped';
  deps.signal?.throwIfAborted();
  if (existing) await existing.remove();
  if (state !== 'failed' || readTheCatalog(existing)) await store.countRepairAttempt(today, field);
  await buildQueue.add('repair-build', repairJobData(version, today, problem.force), { jobId });
  return 'queued';
}

/** Says once per state that its repairs stopped (log, gauge, the inspector's error line). */
async function reportStopped(deps: ControllerDeps, problem: VersionProblem, now: Date): Promise<void> {
  const { store } = deps;
  const detail = `${problem.detail}: ${MAX_REPAIR_ATTEMPTS} repair builds of ${problem.target} completed today without fixing it; repairs stopped until the state changes or on-call acts (fix the cause, then \`pnpm cli build\`, or DEL ${store.attemptsKey(versionFor(now, deps.timeZone))})`;
  deps.metrics.repairStopped.set({ reason: problem.reason }, 1);
  if ((await store.stoppedDetail()) !== detail) deps.logger.error('desired state repair stopped', { reason: problem.reason, version: problem.target, detail });
  await store.recordStopped({ reason: problem.reason, version: problem.target, detail, at: now.toISOString() });
}

/** One check of the desired state, with its repairs. Run by the lease holder; exported for tests. */
export async function checkDesiredState(deps: ControllerDeps): Promise<Repair[]> {
  const now = deps.now?.() ?? new Date();
  const { signal } = deps;
  const repairs: Repair[] = [];
  if (!(await deps.buildQueue.getJobScheduler(SCHEDULER_ID))) {
    signal?.throwIfAborted();
    await deps.ensureBuildScheduler();
    repairs.push({ reason: 'scheduler-missing', detail: `job scheduler ${SCHEDULER_ID} was missing: upserted` });
  }
  if (!(await deps.counterRepairQueue.getJobScheduler(COUNTER_REPAIR_SCHEDULER_ID))) {
    signal?.throwIfAborted();
    await deps.ensureCounterRepairScheduler();
    repairs.push({ reason: 'counter-scheduler-missing', detail: `job scheduler ${COUNTER_REPAIR_SCHEDULER_ID} was missing: upserted` });
  }
  const today = versionFor(now, deps.timeZone);
  const problem = await versionProblem(deps, today, dueVersion(deps.cron, deps.timeZone, now));
  const outcome = problem ? await queueRepairBuild(deps, problem, today) : undefined;
  if (problem && outcome === 'queued') {
    repairs.push({ reason: problem.reason, version: problem.target, detail: `${problem.detail}: ${problem.force ? 'forced rebuild' : 'build'} of ${problem.target} queued` });
  }
  if (problem && outcome === 'stopped') {
    await reportStopped(deps, problem, now);
  } else if (outcome !== 'busy') {
    // Repaired, or being repaired anew: nothing is stopped any more.
    for (const reason of REPAIR_REASONS) deps.metrics.repairStopped.set({ reason }, 0);
    await deps.store.clearStopped();
  }
  for (const repair of repairs) {
    deps.metrics.repairs.inc({ reason: repair.reason });
    deps.logger.warn('desired state repaired', { ...repair });
    await deps.store.recordRepair({ reason: repair.reason, version: repair.version ?? '', detail: repair.detail, at: now.toISOString() });
  }
  return repairs;
}

/** Starts the controller: a first check at once (a first start on an empty Redis builds at once), then every CHECK_EVERY_MS. */
export function startController(deps: ControllerDeps, everyMs = CHECK_EVERY_MS, timing: { leaseMs?: number; checkDeadlineMs?: number } = {}) {
  const leaseMs = timing.leaseMs ?? LEASE_MS;
  const checkDeadlineMs = timing.checkDeadlineMs ?? CHECK_DEADLINE_MS;
  const lease = deps.store.lease(leaseMs);
  let running: Promise<void> | undefined;
  // BullMQ's ioredis queues commands while Redis is gone: a hung check is abandoned (never holding
  // up shutdown) and aborted, so it cannot act once another replica holds the lease.
  const tick = () =>
    (running ??= (async () => {
      const abandoned = new AbortController();
      try {
        await withDeadline(
          (async () => {
            if (!(await lease.hold())) return;
            // The ramp is driven even when the check failed (BullMQ or MongoDB trouble): it needs Redis only.
            const checked = await checkDesiredState({ ...deps, signal: abandoned.signal }).then(() => undefined, (err: unknown) => err ?? new Error('check failed'));
            await deps.driveRamp?.(abandoned.signal);
            if (checked) throw checked;
          })(),
          checkDeadlineMs,
          'desired state check',
        );
      } catch (err) {
        abandoned.abort(err);
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
    /** Runs one check now if this replica holds (or takes) the lease; resolves when it is done. */
    tick,
    async stop() {
      clearInterval(timer);
      // The next replica takes over at its next check, not after the lease's expiry.
      await lease.release().catch(() => undefined);
    },
  };
}

export type Controller = ReturnType<typeof startController>;
