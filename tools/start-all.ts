/**
 * `pnpm start`: the whole service on localhost — embedded MongoDB (when MONGO_URL is unset), a
 * private redis-server (when no Redis is configured and none answers on 6379: local-redis.ts),
 * demo data when the database is empty, the worker (whose controller builds at once when no
 * version is current, R21), then the API. The embedded database is new each run, so a queue
 * left in Redis by an earlier run names videos that no longer exist: then a forced rebuild runs
 * first, through the worker's queue (the dashboard's Completed tab shows it).
 * Ctrl-C stops everything within 10 s (SPEC D4).
 */
import { loadConfig, type Config } from '@feed/config';
import { startApi, type RunningApi } from '@feed/api';
import { exitOnSignals } from '@feed/lifecycle';
import { logger } from '@feed/logger';
import { closeRedis, connectMongo, connectRedis, createRedisKeys, videoModel } from '@feed/storage';
import { seedVideos } from '@feed/demo-data';
import { startWorker, type RunningWorker } from '@feed/worker';
import { useLocalMongo } from './support/local-mongo';
import { useLocalRedis } from './support/local-redis';

const DEMO_VIDEOS = 2000;
const DEMO_FRESH = 120;
const REBUILD_TIMEOUT_MS = 120_000;

/** Seeds demo data into an empty database; true when Redis holds a queue of an earlier embedded database. */
async function prepareDemo(config: Config, embedded: boolean): Promise<boolean> {
  const redis = await connectRedis(config, { connectWithinMs: 5_000 });
  const mongo = await connectMongo(config);
  try {
    const videos = videoModel(mongo.connection);
    await videos.init();
    if ((await videos.estimatedDocumentCount()) === 0) {
      await seedVideos(videos, { videos: DEMO_VIDEOS, fresh: DEMO_FRESH });
      logger.info('demo data seeded', { videos: DEMO_VIDEOS, fresh: DEMO_FRESH });
    }
    return embedded && (await redis.get(createRedisKeys(config.redisKeyPrefix).current)) !== null;
  } finally {
    await closeRedis(redis);
    await mongo.close();
  }
}

/** The forced rebuild as a job of the worker's queue: the dashboard shows it with progress and result. */
async function rebuildForEmbeddedData(worker: RunningWorker): Promise<void> {
  const job = await worker.jobs.queue.add('first-build', { force: true }, { jobId: `first-build-${Date.now()}` });
  logger.info('rebuild for the embedded database queued', { jobId: job.id });
  const deadline = Date.now() + REBUILD_TIMEOUT_MS;
  for (;;) {
    const state = await job.getState();
    if (state === 'completed') return;
    if (state === 'failed') throw new Error(`rebuild failed: ${(await worker.jobs.queue.getJob(job.id!))?.failedReason ?? 'unknown'}`);
    if (Date.now() > deadline) throw new Error(`rebuild did not finish within ${REBUILD_TIMEOUT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function main(): Promise<void> {
  const localRedis = await useLocalRedis();
  const localMongo = await useLocalMongo();
  const config = loadConfig();
  let worker: RunningWorker | undefined;
  let api: RunningApi | undefined;
  const stop = async () => {
    await Promise.all([api?.stop(), worker?.stop()]);
    await Promise.all([localMongo.stop(), localRedis.stop()]);
  };
  exitOnSignals('feed service', stop);
  const staleQueue = await prepareDemo(config, localMongo.embedded !== undefined);
  worker = await startWorker(config);
  if (staleQueue) await rebuildForEmbeddedData(worker);
  // No load balancer routes to `pnpm start`: Ctrl-C needs no propagation delay (SPEC D4).
  api = await startApi({ ...config, shutdownDelayMs: 0 });
  logger.info('feed service running', {
    api: `http://127.0.0.1:${config.port}/api/app/recommend/vid/list`,
    dashboard: `http://127.0.0.1:${config.workerPort}/admin/queues`,
    inspector: `http://127.0.0.1:${config.workerPort}/admin/inspector`,
  });
}

main().catch((err: unknown) => {
  logger.error('start failed', { err: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
