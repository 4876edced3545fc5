/** API entry point: load config, connect, listen, shut down gracefully on SIGTERM/SIGINT. */
import type { Server } from 'node:http';
import { loadConfig } from '@feed/config';
import { logger } from '@feed/logger';
import { closeRedis, connectMongo, connectRedis, interactionModels, videoModel } from '@feed/storage';
import { createApp } from './app';
import { createApiMetrics } from './metrics';

export async function startApi(config = loadConfig()): Promise<{ server: Server; stop: () => Promise<void> }> {
  const redis = await connectRedis(config, { failFast: true });
  const mongo = await connectMongo(config);
  // The unique indexes that decide "first success" (R3) must exist before the first request.
  await Promise.all([videoModel(mongo.connection), ...Object.values(interactionModels(mongo.connection))].map((m) => m.init()));
  const { app } = createApp({ config, redis, mongo: mongo.connection, metrics: createApiMetrics({ defaultMetrics: true }) });
  const server = app.listen(config.port, () => logger.info('api listening', { port: config.port }));
  server.keepAliveTimeout = 65_000;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      logger.info('api shutting down');
      // Stop accepting, let in-flight requests finish, then close the stores.
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await closeRedis(redis);
      await mongo.close();
      logger.info('api stopped');
    })());
  return { server, stop };
}

if (require.main === module) {
  startApi()
    .then(({ stop, server }) => {
      const shutdown = () => {
        setTimeout(() => server.closeAllConnections(), 10_000).unref();
        stop().then(() => process.exit(0), () => process.exit(1));
      };
      process.once('SIGTERM', shutdown);
      process.once('SIGINT', shutdown);
    })
    .catch((err: unknown) => {
      logger.error('api failed to start', { err });
      process.exit(1);
    });
}
