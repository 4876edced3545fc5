/**
 * A build in a process of its own that kills itself with SIGKILL at one publish point (argv[2]):
 * the real crash of a worker between two publish commands, for publish-crash.test.ts.
 * Configured by the environment (REDIS_URL, MONGO_URL, REDIS_KEY_PREFIX) and BUILD_AT.
 */
import { loadConfig } from '@feed/config';
import { createLogger } from '@feed/logger';
import { BuildStore, connectMongo, connectRedis, createRedisKeys, videoModel } from '@feed/storage';
import { buildDepsFrom, runDailyBuild, type PublishPoint } from '../../src/daily-build/daily-build';

/**
 * The suite's embedded MongoDB serves both Jest workers from one event loop and can stall past
 * connectMongo's ~10 s of first-connect windows while a heavy test runs beside this one (seen in
 * CI); this child is the subject of a crash test, not of the start-up bound, so it waits longer.
 */
async function connectPatiently(config: ReturnType<typeof loadConfig>): Promise<Awaited<ReturnType<typeof connectMongo>>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await connectMongo(config);
    } catch (err) {
      if (attempt >= 6 || (err as Error).name !== 'MongooseServerSelectionError') throw err;
    }
  }
}

async function main(): Promise<void> {
  const killAt = process.argv[2] as PublishPoint;
  const config = loadConfig();
  const mongo = await connectPatiently(config);
  const redis = await connectRedis(config);
  const deps = buildDepsFrom(config, { store: new BuildStore(redis, createRedisKeys(config.redisKeyPrefix)), videos: videoModel(mongo.connection), logger: createLogger({ silent: true }) });
  await runDailyBuild(
    {
      ...deps,
      failpoint: async (point) => {
        if (point === killAt) process.kill(process.pid, 'SIGKILL');
      },
    },
    { at: new Date(process.env.BUILD_AT!) },
  );
  // Not killed: the point was never reached, which the test reports.
  process.exit(3);
}

main().catch((err: unknown) => {
  process.stderr.write(`build-killed-at failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
