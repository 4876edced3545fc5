/** Worker entry point: config, connections, the build scheduler and worker, the dashboard. */
import type { Server } from 'node:http';
import { loadConfig, type Config } from '@feed/config';
import { logger } from '@feed/logger';
import { closeRedis, connectMongo, connectRedis, createRedisKeys, interactionModels, reconcileRecommendCounters, videoModel } from '@feed/storage';
import { createWorkerApp } from './app';
import { buildDepsFrom } from './build/daily-build';
import { bullConnectionFactory, startBuildQueue } from './jobs/build-queue';
import { createWorkerMetrics } from './metrics';

const RECONCILE_EVERY_MS = 60_000;

export async function startWorker(config: Config = loadConfig()): Promise<{ server: Server; stop: () => Promise<void> }> {
  const redis = await connectRedis(config);
  const mongo = await connectMongo(config);
  const keys = createRedisKeys(config.redisKeyPrefix);
  const videos = videoModel(mongo.connection);
  await videos.init(); // R19 indexes
  const metrics = createWorkerMetrics({ defaultMetrics: true });
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

  const app = createWorkerApp({ queue: jobs.queue, metrics, adminUser: config.adminUser, adminPassword: config.adminPassword, redis, keys, videos });
  const server = app.listen(config.workerPort, () => logger.info('worker listening', { port: config.workerPort }));
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      logger.info('worker shutting down');
      clearInterval(reconciler);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      // Lets a running build finish (or hands it back to the queue) before disconnecting.
      await jobs.close();
      await closeRedis(redis);
      await mongo.close();
      logger.info('worker stopped');
    })());
  return { server, stop };
}

if (require.main === module) {
  startWorker()
    .then(({ stop }) => {
      const shutdown = () => stop().then(() => process.exit(0), () => process.exit(1));
      process.once('SIGTERM', shutdown);
      process.once('SIGINT', shutdown);
    })
    .catch((err: unknown) => {
      logger.error('worker failed to start', { err });
      process.exit(1);
    });
}
