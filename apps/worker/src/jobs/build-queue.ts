/**
 * The BullMQ side of the daily build (SPEC R6): a Job Scheduler with the configured cron and
 * time zone, and a Worker that runs the build with progress, retries and backoff.
 */
import { Queue, Worker, type Job } from 'bullmq';
import IORedis, { Cluster } from 'ioredis';
import type { Config } from '@feed/config';
import { parseBuildAt } from '@feed/domain';
import type { Logger } from '@feed/logger';
import { oncePerMessage, withLogContext } from '@feed/logger';
import { runDailyBuild, type BuildDeps, type BuildOptions, type BuildResult } from '../daily-build/daily-build';
import { recordBuildMeta, type WorkerMetrics } from '../metrics';

export const BUILD_QUEUE = 'short-recommend-build';
export const SCHEDULER_ID = 'daily-short-recommend-build';

/**
 * Job data; every field optional, so "Add job" in the dashboard with `{}` builds today.
 * `at` without an offset is read in TZ_BUSINESS. A version older than current or later than
 * today is built as a shadow unless `switch` is true (replaying a day never moves `current` by accident).
 */
export interface BuildJobData {
  at?: string;
  force?: boolean;
  shadow?: boolean;
  switch?: boolean;
}

/** Backoff type of build jobs: exponential from `delay`, or until the lock expires (see lockAwareBackoff). */
const BUILD_BACKOFF = 'lock-aware';

export const BUILD_JOB_OPTIONS = {
  attempts: 3,
  backoff: { type: BUILD_BACKOFF, delay: 30_000 },
  removeOnComplete: 100,
  removeOnFail: 100,
} as const;

/**
 * The due version's build found another holder's lock (a crashed worker's, until it expires):
 * the job fails, so it is retried rather than completed with yesterday's queue still current.
 */
export class BuildLockedError extends Error {
  constructor(
    readonly version: string,
    readonly retryAfterMs: number,
  ) {
    super(`the build lock of ${version} is held by another worker; retrying in ${Math.ceil(retryAfterMs / 1000)} s, when it expires`);
  }
}

/** A locked build retries just after the lock expires; every other failure backs off exponentially. */
export function lockAwareBackoff(attemptsMade: number, _type?: string, err?: Error): number {
  if (err instanceof BuildLockedError) return err.retryAfterMs;
  return Math.round(2 ** (attemptsMade - 1) * BUILD_JOB_OPTIONS.backoff.delay);
}

export type BullConnection = IORedis | Cluster;

/**
 * BullMQ's own connections use ioredis, its primary client: its node-redis adapter does not
 * drive a node-redis cluster client (jobs never ran on a Redis Cluster in our test).
 */
export function bullConnectionFactory(config: Pick<Config, 'redisUrl' | 'redisClusterNodes'>): () => BullConnection {
  const options = { maxRetriesPerRequest: null };
  if (config.redisClusterNodes) {
    const nodes = config.redisClusterNodes.map((node) => {
      const [host, port] = node.split(':');
      return { host, port: Number(port) };
    });
    return () => new Cluster(nodes, { redisOptions: options });
  }
  return () => new IORedis(config.redisUrl, options);
}

export interface BuildQueueOptions {
  /** Makes a new connection for BullMQ (see bullConnectionFactory). */
  connection: () => BullConnection;
  prefix: string;
  cron: string;
  timeZone: string;
  logger: Logger;
  metrics: WorkerMetrics;
  deps: BuildDeps;
  /** Start a Worker that processes jobs (false for CLI/dashboard-only use). */
  process?: boolean;
}

export function toBuildOptions(data: BuildJobData, timeZone: string): BuildOptions {
  const at = data.at ? parseBuildAt(data.at, timeZone) : undefined;
  if (at === null) throw new Error(`job data 'at' is not an ISO-8601 date or date-time: ${data.at}`);
  return { at, force: Boolean(data.force), shadow: Boolean(data.shadow), switch: Boolean(data.switch) };
}

/** A locked build's retry waits this long past the lock's expiry. */
const LOCK_RETRY_MARGIN_MS = 1_000;
/** How long a shutdown waits for an active build before aborting it (within D4's 10 s). */
export const BUILD_SHUTDOWN_GRACE_MS = 6_000;
/** How long BullMQ gets to close after the build is done or aborted. */
const CLOSE_SETTLE_MS = 1_500;
/** The same BullMQ error is logged at most once per this interval (a Redis outage repeats it). */
const ERROR_LOG_INTERVAL_MS = 30_000;

export interface BuildQueue {
  queue: Queue<BuildJobData>;
  worker?: Worker<BuildJobData, BuildResult>;
  /** Stops taking jobs; an active build gets BUILD_SHUTDOWN_GRACE_MS, then is aborted (its lock released). */
  close(): Promise<void>;
}

/** Logs BullMQ `error` events as structured lines, once per distinct message per interval. */
const errorLogger = (logger: Logger, source: string) => oncePerMessage(ERROR_LOG_INTERVAL_MS, (err) => logger.warn('bullmq error', { source, err: err.message }));

export async function startBuildQueue(options: BuildQueueOptions): Promise<BuildQueue> {
  const { logger, metrics } = options;
  const activeBuilds = new Set<AbortController>();
  // BullMQ gets clients of its own (the worker's blocks on BZPOPMIN) and we close them after it.
  const connections: BullConnection[] = [];
  const connection = () => {
    const client = options.connection();
    connections.push(client);
    return client;
  };
  // Jobs added by hand in the dashboard get the same retries and backoff as scheduled ones.
  const queue = new Queue<BuildJobData>(BUILD_QUEUE, { connection: connection(), prefix: options.prefix, defaultJobOptions: BUILD_JOB_OPTIONS });
  queue.on('error', errorLogger(logger, 'queue'));
  await queue.upsertJobScheduler(
    SCHEDULER_ID,
    { pattern: options.cron, tz: options.timeZone },
    { name: 'daily-build', data: {}, opts: BUILD_JOB_OPTIONS },
  );
  logger.info('daily build scheduled', { cron: options.cron, tz: options.timeZone });

  let worker: Worker | undefined;
  if (options.process !== false) {
    worker = new Worker<BuildJobData, BuildResult>(
      BUILD_QUEUE,
      (job: Job<BuildJobData>) =>
        withLogContext({ jobId: job.id }, async () => {
          const endTimer = metrics.buildDuration.startTimer();
          const abort = new AbortController();
          activeBuilds.add(abort);
          try {
            const result = await runDailyBuild(options.deps, {
              ...toBuildOptions(job.data ?? {}, options.timeZone),
              signal: abort.signal,
              onProgress: (phase, percent) => job.updateProgress({ phase, percent }),
            });
            endTimer({ result: result.status });
            metrics.builds.inc({ result: result.status });
            if (result.meta) recordBuildMeta(metrics, result.meta);
            if (result.status === 'locked' && result.due) {
              // Counted as `locked` above; the lock expires within its TTL, so retry just after.
              throw new BuildLockedError(result.version, (result.lockExpiresInMs ?? 0) + LOCK_RETRY_MARGIN_MS);
            }
            return result;
          } catch (err) {
            if (err instanceof BuildLockedError) throw err;
            endTimer({ result: 'failed' });
            metrics.builds.inc({ result: 'failed' });
            throw err;
          } finally {
            activeBuilds.delete(abort);
          }
        }),
      { connection: connection(), prefix: options.prefix, concurrency: 1, settings: { backoffStrategy: lockAwareBackoff } },
    );
    worker.on('failed', (job, err) => logger.error('build job failed', { jobId: job?.id, attempt: job?.attemptsMade, err }));
    worker.on('error', errorLogger(logger, 'worker'));
  }
  return {
    queue,
    worker,
    async close() {
      const abortAfterGrace = setTimeout(() => {
        for (const build of activeBuilds) build.abort(new Error('worker shutting down: build aborted, lock released'));
      }, BUILD_SHUTDOWN_GRACE_MS);
      // BullMQ's close waits on Redis; with Redis gone it would wait forever, so it is bounded:
      // the grace for an active build (then its abort), or a short wait when idle.
      const bound = (activeBuilds.size > 0 ? BUILD_SHUTDOWN_GRACE_MS : 0) + CLOSE_SETTLE_MS;
      const closing = (async () => {
        await worker?.close();
        await queue.close();
      })();
      closing.catch(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      const closed = await Promise.race([closing.then(() => true, () => false), new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), bound)))]);
      clearTimeout(timer);
      clearTimeout(abortAfterGrace);
      if (!closed) logger.warn('bullmq did not close in time (Redis unreachable?), disconnecting', { boundMs: bound });
      await Promise.all(connections.map((c) => (closed ? c.quit().catch(() => c.disconnect()) : c.disconnect())));
    },
  };
}
