/** Worker entry point: config, connections, the build scheduler and worker, the dashboard (SPEC D4 on signals). */
import './telemetry';
import { stopTelemetry, TELEMETRY_SHUTDOWN_MS } from '@feed/telemetry';
import { loadConfig, type Config } from '@feed/config';
import { closeHttpServer, exitOnSignals } from '@feed/lifecycle';
import { createHttpServer } from '@feed/http';
import { configureLogger, logger } from '@feed/logger';
import { auditTrail, BuildStore, closeRedis, connectMongo, connectRedis, createRedisKeys, interactionModels, RolloutStore, storeHealth, videoModel } from '@feed/storage';
import { createWorkerApp } from './app';
import { buildDepsFrom } from './daily-build/daily-build';
import { startController } from './controller/desired-state';
import { driveRamp } from './controller/ramp-driver';
import { bullConnectionFactory } from './jobs/bull-connection';
import { startBuildQueue } from './jobs/build-queue';
import { startCounterRepair } from './jobs/counter-repair';
import { createWorkerMetrics } from './metrics';
import { PROBE_MS } from './readiness';

export async function startWorker(config: Config = loadConfig()) {
  configureLogger(config);
  const mongo = await connectMongo(config);
  // Fail fast while disconnected: an admin page answers 503 and a build fails (BullMQ retries it)
  // instead of waiting on a queue of commands for a Redis that is gone.
  const redis = await connectRedis(config, { failFast: true });
  const keys = createRedisKeys(config.redisKeyPrefix);
  const videos = videoModel(mongo.connection);
  await videos.init(); // R19 indexes
  const health = storeHealth({ redis, keys, mongo: mongo.connection }, PROBE_MS);
  const [store, rollout] = [new BuildStore(redis, keys), new RolloutStore(redis, keys)];
  const metrics = createWorkerMetrics({
    defaultMetrics: true,
    health,
    currentMeta: async () => {
      const current = await store.versions.current();
      return current ? store.versions.readMeta(current) : null;
    },
    rampStatus: async () => (await rollout.ramp()).state ?? null,
    heldVersion: async () => (await store.heldVersion())?.version ?? null,
  });
  const jobs = await startBuildQueue({
    connection: bullConnectionFactory(config),
    prefix: keys.bullPrefix,
    cron: config.shortRecommendCron,
    timeZone: config.businessTimeZone,
    retryDelayMs: config.buildRetryDelayMs,
    logger,
    metrics,
    // The trail (D6) takes the release gate's holds (R23) and the dashboard's promotes.
    deps: buildDepsFrom(config, { store, videos, logger, audit: auditTrail(mongo.connection, config.redisKeyPrefix) }),
  });
  // Counts interaction records a crashed API process left behind (R3), one replica at a time.
  const counterRepair = await startCounterRepair({
    connection: bullConnectionFactory(config),
    prefix: keys.bullPrefix,
    logger,
    metrics,
    videos,
    records: interactionModels(mongo.connection),
  });
  const environment = { enabled: config.shortRecommendV2Enabled, percent: config.shortRecommendV2Percent };
  const trail = auditTrail(mongo.connection, config.redisKeyPrefix);
  const controller = startController({
    store,
    logger,
    metrics,
    buildQueue: jobs.queue,
    ensureBuildScheduler: jobs.ensureScheduler,
    counterRepairQueue: counterRepair.queue,
    ensureCounterRepairScheduler: counterRepair.ensureScheduler,
    cron: config.shortRecommendCron,
    timeZone: config.businessTimeZone,
    driveRamp: (signal) => driveRamp({ store: rollout, logger, metrics, environment, trail, signal }),
  });

  const app = createWorkerApp({ config, queue: jobs.queue, metrics, store, rollout, videos, health });
  const server = createHttpServer(app, { headersTimeoutMs: config.httpHeadersTimeoutMs, requestTimeoutMs: config.httpRequestTimeoutMs, maxConnections: config.httpMaxConnections }).listen(config.workerPort);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  logger.info('worker listening', { port: config.workerPort });
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await controller.stop();
      // The dashboard and the build stop together: an active build finishes within its grace
      // or is aborted, releasing its lock and leaving `current` untouched.
      await Promise.all([closeHttpServer(server), jobs.close(), counterRepair.close()]);
      await closeRedis(redis);
      await mongo.close();
      if (!(await stopTelemetry())) logger.warn('last spans not exported: the trace collector did not answer in time', { ms: TELEMETRY_SHUTDOWN_MS });
    })());
  return { server, jobs, stop };
}

export type RunningWorker = Awaited<ReturnType<typeof startWorker>>;

if (require.main === module) {
  startWorker().then(
    ({ stop }) => exitOnSignals('worker', stop),
    (err: unknown) => {
      logger.error('worker failed to start', { err });
      process.exit(1);
    },
  );
}
