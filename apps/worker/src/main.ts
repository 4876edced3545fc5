/** Worker entry point: config, connections, the build scheduler and worker, the dashboard (SPEC D4 on signals). */
import type { Server } from 'node:http';
import { loadConfig, type Config } from '@feed/config';
import { closeHttpServer, exitOnSignals } from '@feed/lifecycle';
import { logger } from '@feed/logger';
import { closeRedis, connectMongo, connectRedis, createRedisKeys, interactionModels, readMeta, reconcileRecommendCounters, videoModel } from '@feed/storage';
import { createWorkerApp } from './app';
import { buildDepsFrom } from './daily-build/daily-build';
import { bullConnectionFactory, startBuildQueue, type BuildQueue } from './jobs/build-queue';
import { createWorkerMetrics } from './metrics';

const RECONCILE_EVERY_MS = 60_000;

export interface RunningWorker {
  server: Server;
  jobs: BuildQueue;
  stop(): Promise<void>;
}

export async function startWorker(config: Config = loadConfig()): Promise<RunningWorker> {
  const mongo = await connectMongo(config);
  // Fail fast while disconnected: an admin page answers 503 and a build fails (BullMQ retries it)
  // instead of waiting on a queue of commands for a Redis that is gone.
  const redis = await connectRedis(config, { failFast: true });
  const keys = createRedisKeys(config.redisKeyPrefix);
  const videos = videoModel(mongo.connection);
  await videos.init(); // R19 indexes
  const metrics = createWorkerMetrics({
    defaultMetrics: true,
    currentMeta: async () => {
      const current = await redis.get(keys.current);
      return current ? readMeta(redis, keys, current) : null;
    },
  });
  const jobs = await startBuildQueue({
    connection: bullConnectionFactory(config),
    prefix: keys.bullPrefix,
    cron: config.shortRecommendCron,
    timeZone: config.businessTimeZone,
    logger,
    metrics,
    deps: buildDepsFrom(config, { redis, keys, videos, logger }),
  });
  // Completes recommend* increments that a crashed API process left pending (R3).
  const records = interactionModels(mongo.connection);
  const reconciler = setInterval(() => {
    reconcileRecommendCounters(videos, records).then(
      (applied) => applied > 0 && logger.info('pending recommend counters reconciled', { applied }),
      (err: unknown) => logger.warn('recommend counter reconciliation failed', { err }),
    );
  }, RECONCILE_EVERY_MS);
  reconciler.unref();

  const app = createWorkerApp({ config, queue: jobs.queue, metrics, redis, keys, videos });
  const server = app.listen(config.workerPort);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  logger.info('worker listening', { port: config.workerPort });
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      clearInterval(reconciler);
      // The dashboard and the build stop together: an active build finishes within its grace
      // or is aborted, releasing its lock and leaving `current` untouched.
      await Promise.all([closeHttpServer(server), jobs.close()]);
      await closeRedis(redis);
      await mongo.close();
    })());
  return { server, jobs, stop };
}

if (require.main === module) {
  startWorker().then(
    ({ stop }) => exitOnSignals('worker', stop),
    (err: unknown) => {
      logger.error('worker failed to start', { err });
      process.exit(1);
    },
  );
}
