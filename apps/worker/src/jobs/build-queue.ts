/**
 * The BullMQ side of the daily build (SPEC R6): a Job Scheduler with the configured cron and
 * time zone, and a Worker that runs the build with progress, retries and backoff.
 */
import { Queue, UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import { parseBuildAt } from '@feed/domain';
import { VERSION_PATTERN } from '@feed/storage';
import { withLogContext, type Logger } from '@feed/logger';
import { runDailyBuild, type BuildDeps, type BuildOptions, type BuildResult } from '../daily-build/daily-build';
import { promoteHeldVersion, PromoteRefusedError, type HeldDecision, type PromoteResult } from '../daily-build/promote-held';
import { recordBuildMeta, type WorkerMetrics } from '../metrics';
import { bullErrorLogger, BullConnections, bullTelemetry, type BullConnection } from './bull-connection';

export const BUILD_QUEUE = 'short-recommend-build';
export const SCHEDULER_ID = 'daily-short-recommend-build';
/** The job name the dashboard adds to promote a held version (R23), with data `{"promote": "YYYYMMDD"}` (or `{"dismiss": ...}`). */
export const PROMOTE_JOB = 'promote-held';

/**
 * Job data, all optional: the dashboard's "Add job" with `{}` builds today. `at` without an offset
 * is in TZ_BUSINESS; a replay builds a shadow unless `switch`; `skipGate` passes the gate (R23).
 * `{"promote": "YYYYMMDD"}` alone promotes that held version (R23); `{"dismiss": ...}` drops the
 * hold of a day older than current.
 */
export interface BuildJobData {
  at?: string;
  force?: boolean;
  shadow?: boolean;
  switch?: boolean;
  skipGate?: boolean;
  promote?: string;
  dismiss?: string;
}

/**
 * The scheduler's job run ahead of its time (the dashboard's Promote, a delay edited to now).
 * BullMQ then schedules the next run from its time, skipping a business day; the worker builds
 * today and upserts the scheduler again: one build per business day (R6, R21). The dashboard says
 * so (DASHBOARD_DESCRIPTION); the click is audited (audited-queue.ts).
 */
export function ranAheadOfSchedule(job: Pick<Job, 'repeatJobKey' | 'opts'>, now = Date.now()): boolean {
  const due = (job.opts as { prevMillis?: number }).prevMillis;
  return job.repeatJobKey === SCHEDULER_ID && typeof due === 'number' && due > now + EARLY_MARGIN_MS;
}

/** A scheduler's job taken this much before its time was promoted, not merely picked up early. */
const EARLY_MARGIN_MS = 60_000;

/** What bull-board shows beside the queue: what its buttons do to the daily build. */
export const DASHBOARD_DESCRIPTION =
  "Daily build (R6). Promote on the scheduler's delayed daily-build job runs today's build now (audited) and keeps the schedule's next run; Add job builds by hand (data {\"force\": true}, or {\"promote\": \"YYYYMMDD\"} / {\"dismiss\": ...} for a held version).";

/** Backoff type of build jobs: exponential from `delay`, or until the lock expires (see lockAwareBackoff). */
const BUILD_BACKOFF = 'lock-aware';

/** Options of every build job: scheduled, repair, or added by hand. `retryDelayMs` is BUILD_RETRY_DELAY_MS. */
export function buildJobOptions(retryDelayMs: number) {
  return { attempts: 3, backoff: { type: BUILD_BACKOFF, delay: retryDelayMs }, removeOnComplete: 100, removeOnFail: 100 } as const;
}

/** The due build found another's lock (a crashed worker's): failed, so retried, not completed with yesterday current. */
export class BuildLockedError extends Error {
  constructor(readonly version: string, readonly retryAfterMs: number) {
    super(`the build lock of ${version} is held by another worker; retrying in ${Math.ceil(retryAfterMs / 1000)} s, when it expires`);
  }
}

/** A locked build retries just after the lock expires; every other failure backs off exponentially from `delayMs`. */
export function lockAwareBackoff(attemptsMade: number, delayMs: number, err?: Error): number {
  if (err instanceof BuildLockedError) return err.retryAfterMs;
  return Math.round(2 ** (attemptsMade - 1) * delayMs);
}

export interface BuildQueueOptions {
  /** Makes a new connection for BullMQ (see bullConnectionFactory). */
  connection: () => BullConnection;
  prefix: string;
  cron: string;
  timeZone: string;
  /** First retry delay of a failed build; doubles per attempt. */
  retryDelayMs: number;
  logger: Logger;
  metrics: WorkerMetrics;
  deps: BuildDeps;
  /** Start a Worker that processes jobs (false for CLI/dashboard-only use). */
  process?: boolean;
}

/** Job data that cannot be built: fails once, never retried, counted as `result="invalid"`, not a failed build. */
export class InvalidJobDataError extends UnrecoverableError {}

const FLAGS = ['force', 'shadow', 'switch', 'skipGate'] as const;

/** The held version a job asks to promote or dismiss, or undefined for a build job; InvalidJobDataError for a bad one. */
export function promoteOf(data: unknown): { version: string; decision: HeldDecision } | undefined {
  if (data === null || typeof data !== 'object') return undefined;
  const decision = (['promote', 'dismiss'] as const).find((field) => field in data);
  if (!decision) return undefined;
  const { [decision]: version, ...rest } = data as Record<string, unknown>;
  if (typeof version !== 'string' || !VERSION_PATTERN.test(version)) throw new InvalidJobDataError(`job data '${decision}' must be a held version YYYYMMDD, got ${JSON.stringify(version)}`);
  if (Object.keys(rest).length > 0) throw new InvalidJobDataError(`job data '${decision}' takes no other field, got ${Object.keys(rest).join(', ')}`);
  return { version, decision };
}

export function toBuildOptions(data: unknown, timeZone: string): BuildOptions {
  if (data === undefined || data === null) return {};
  if (typeof data !== 'object' || Array.isArray(data)) throw new InvalidJobDataError(`job data must be a JSON object such as {"force": true}, got ${JSON.stringify(data)}`);
  const fields = data as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((key) => key !== 'at' && !(FLAGS as readonly string[]).includes(key));
  if (unknown.length > 0) throw new InvalidJobDataError(`job data has unknown field(s) ${unknown.join(', ')}; known: at, ${FLAGS.join(', ')} (or promote or dismiss alone)`);
  for (const flag of FLAGS) {
    if (fields[flag] !== undefined && typeof fields[flag] !== 'boolean') throw new InvalidJobDataError(`job data '${flag}' must be true or false, got ${JSON.stringify(fields[flag])}`);
  }
  let at: Date | undefined;
  if (fields.at !== undefined) {
    const parsed = typeof fields.at === 'string' ? parseBuildAt(fields.at, timeZone) : null;
    if (!parsed) throw new InvalidJobDataError(`job data 'at' must be an ISO-8601 date or date-time string such as "2026-07-24", got ${JSON.stringify(fields.at)}`);
    at = parsed;
  }
  return { at, force: fields.force === true, shadow: fields.shadow === true, switch: fields.switch === true, ...(fields.skipGate === true ? { skipGate: { by: 'a build job' } } : {}) };
}

/** A locked build's retry waits this long past the lock's expiry. */
const LOCK_RETRY_MARGIN_MS = 1_000;
/** How long a shutdown waits for an active build before aborting it (within D4's 10 s). */
export const BUILD_SHUTDOWN_GRACE_MS = 6_000;
/** How long BullMQ gets to close after the build is done or aborted. */
const CLOSE_SETTLE_MS = 1_500;

interface ActiveBuild {
  abort: AbortController;
  startedAt: number;
  /** The build's progress (its phase's percentage, 0-100). */
  percent: number;
}

/** Whether the build, at its pace so far, finishes within `ms` (before any progress: no). */
const finishesWithin = (build: ActiveBuild, ms: number) => build.percent > 0 && ((performance.now() - build.startedAt) * (100 - build.percent)) / build.percent <= ms;

export async function startBuildQueue(options: BuildQueueOptions) {
  const { logger, metrics } = options;
  const activeBuilds = new Set<ActiveBuild>();
  const handOver = (build: ActiveBuild) => build.abort.abort(new Error('worker shutting down: build aborted, lock released, job back in the queue'));
  // BullMQ gets clients of its own (the worker's blocks on BZPOPMIN) and we close them after it.
  const connections = new BullConnections(options.connection);
  const connection = connections.next;
  // Jobs added by hand in the dashboard get the same retries and backoff as scheduled ones.
  const jobOptions = buildJobOptions(options.retryDelayMs);
  const queue = new Queue<BuildJobData>(BUILD_QUEUE, { connection: connection(), prefix: options.prefix, defaultJobOptions: jobOptions, ...bullTelemetry() });
  queue.on('error', bullErrorLogger(logger, 'queue'));
  /** Creates the daily job scheduler, or puts it back (the controller calls it after Redis lost it). */
  const ensureScheduler = async () => {
    await queue.upsertJobScheduler(SCHEDULER_ID, { pattern: options.cron, tz: options.timeZone }, { name: 'daily-build', data: {}, opts: jobOptions });
  };
  await ensureScheduler();
  logger.info('daily build scheduled', { cron: options.cron, tz: options.timeZone });

  let worker: Worker<BuildJobData, BuildResult | PromoteResult> | undefined;
  if (options.process !== false) {
    /** A promote job (the dashboard's, R23): no build, so no build metrics; a refusal is not retried. */
    const promote = async (job: Job<BuildJobData>, { version, decision }: NonNullable<ReturnType<typeof promoteOf>>): Promise<PromoteResult> => {
      const { audit } = options.deps;
      if (!audit) throw new UnrecoverableError('this worker has no audit trail: a promote is refused without its entry (D6)');
      try {
        return await promoteHeldVersion({ ...options.deps, audit }, version, { actor: `dashboard job ${job.id}`, via: 'dashboard' }, decision);
      } catch (err) {
        if (err instanceof PromoteRefusedError) throw new InvalidJobDataError(err.message);
        throw err;
      }
    };
    worker = new Worker<BuildJobData, BuildResult | PromoteResult>(
      BUILD_QUEUE,
      (job: Job<BuildJobData>, token?: string) =>
        withLogContext({ jobId: job.id }, async () => {
          const promoted = promoteOf(job.data);
          if (promoted) return promote(job, promoted);
          if (ranAheadOfSchedule(job)) {
            await ensureScheduler();
            logger.warn("the scheduler's job was promoted ahead of its time: built now, the schedule's next run kept", { jobId: job.id, due: new Date((job.opts as { prevMillis: number }).prevMillis).toISOString() });
          }
          const endTimer = metrics.buildDuration.startTimer();
          const active: ActiveBuild = { abort: new AbortController(), startedAt: performance.now(), percent: 0 };
          activeBuilds.add(active);
          try {
            let buildOptions: BuildOptions;
            try {
              buildOptions = toBuildOptions(job.data, options.timeZone);
              if (buildOptions.skipGate) buildOptions.skipGate = { by: `build job ${job.id} (${job.name})` };
            } catch (err) {
              metrics.builds.inc({ result: 'invalid' });
              throw err;
            }
            const result = await runDailyBuild(options.deps, {
              ...buildOptions,
              signal: active.abort.signal,
              onProgress: (phase, percent) => {
                active.percent = percent;
                return job.updateProgress({ phase, percent });
              },
            });
            endTimer({ result: result.status });
            metrics.builds.inc({ result: result.status });
            // A held version's figures are not the service's: the gauges stay current's.
            if (result.meta && result.status !== 'held') {
              recordBuildMeta(metrics, result.meta);
              for (const [reason, count] of Object.entries(result.meta.documentIssues)) metrics.documentsSkipped.inc({ reason }, count);
            }
            if (result.status === 'locked' && result.due) {
              // Counted as `locked` above; the lock expires within its TTL, so retry just after.
              throw new BuildLockedError(result.version, (result.lockExpiresInMs ?? 0) + LOCK_RETRY_MARGIN_MS);
            }
            return result;
          } catch (err) {
            if (err instanceof BuildLockedError || err instanceof InvalidJobDataError) throw err;
            if (active.abort.signal.aborted) {
              // Handed over (SPEC D4): back to waiting, not failed, for the next worker to take at once.
              logger.warn('build handed over at shutdown: lock released, job back in the queue', { jobId: job.id });
              await job.moveToWait(token);
              throw new WaitingError();
            }
            endTimer({ result: 'failed' });
            metrics.builds.inc({ result: 'failed' });
            throw err;
          } finally {
            activeBuilds.delete(active);
          }
        }),
      { connection: connection(), prefix: options.prefix, concurrency: 1, ...bullTelemetry(), settings: { backoffStrategy: (attemptsMade, _type, err) => lockAwareBackoff(attemptsMade, options.retryDelayMs, err) } },
    );
    worker.on('failed', (job, err) => logger.error('build job failed', { jobId: job?.id, attempt: job?.attemptsMade, err }));
    worker.on('error', bullErrorLogger(logger, 'worker'));
  }
  return {
    queue,
    worker,
    ensureScheduler,
    /** Stops taking jobs; a build that cannot finish within BUILD_SHUTDOWN_GRACE_MS is handed over at once, else after it. */
    async close() {
      for (const build of activeBuilds) if (!finishesWithin(build, BUILD_SHUTDOWN_GRACE_MS)) handOver(build);
      const abortAfterGrace = setTimeout(() => activeBuilds.forEach(handOver), BUILD_SHUTDOWN_GRACE_MS);
      // BullMQ's close waits on Redis (forever if it is gone): bounded by the grace, or briefly when idle.
      await connections.closeWithin((activeBuilds.size > 0 ? BUILD_SHUTDOWN_GRACE_MS : 0) + CLOSE_SETTLE_MS, [worker, queue], logger);
      clearTimeout(abortAfterGrace);
    },
  };
}

export type BuildQueue = Awaited<ReturnType<typeof startBuildQueue>>;
