/**
 * `pnpm start`: the whole service on localhost — embedded MongoDB (when MONGO_URL is unset),
 * demo data when the database is empty, a first build when no version is current, then the
 * API and the worker in this one process.
 */
import { loadConfig } from '@feed/config';
import { logger } from '@feed/logger';
import { closeRedis, connectMongo, connectRedis, createRedisKeys, seedVideos, videoModel } from '@feed/storage';
import { startApi } from '../apps/api/src/main';
import { buildDepsFrom, runDailyBuild } from '../apps/worker/src/build/daily-build';
import { startWorker } from '../apps/worker/src/main';

const DEMO_VIDEOS = 2000;
const DEMO_FRESH = 120;

async function prepareDemo(config: ReturnType<typeof loadConfig>): Promise<void> {
  const redis = await connectRedis(config);
  const mongo = await connectMongo(config);
  try {
    const videos = videoModel(mongo.connection);
    await videos.init();
    if ((await videos.estimatedDocumentCount()) === 0) {
      await seedVideos(videos, { videos: DEMO_VIDEOS, fresh: DEMO_FRESH });
      logger.info('demo data seeded', { videos: DEMO_VIDEOS, fresh: DEMO_FRESH });
    }
    const keys = createRedisKeys(config.redisKeyPrefix);
    if (!(await redis.get(keys.current)) || !config.mongoUrl) {
      // The embedded database starts empty each run, so the queue is rebuilt from it.
      await runDailyBuild(buildDepsFrom(config, { redis, keys, videos, logger }), { force: true });
    }
  } finally {
    await closeRedis(redis);
    // Keep the embedded server running: the API and worker connect to it next.
    await mongo.connection.close();
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  await prepareDemo(config);
  const worker = await startWorker(config);
  const api = await startApi(config);
  logger.info('feed service running', {
    api: `http://127.0.0.1:${config.port}/api/app/recommend/vid/list`,
    dashboard: `http://127.0.0.1:${config.workerPort}/admin/queues`,
  });
  const shutdown = () => {
    Promise.all([api.stop(), worker.stop()]).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

main().catch((err: unknown) => {
  logger.error('start failed', { err: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
