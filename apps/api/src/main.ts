/** API entry point: load config, connect, listen; SIGTERM/SIGINT drain and close (SPEC D4). */
import './telemetry';
import { stopTelemetry, TELEMETRY_SHUTDOWN_MS } from '@feed/telemetry';
import type { Server } from 'node:http';
import { loadConfig, type Config } from '@feed/config';
import { API_DRAIN_MS, apiShutdownDeadlineMs, drainHttpServer, exitOnSignals } from '@feed/lifecycle';
import { createHttpServer } from '@feed/http';
import { configureLogger, logger } from '@feed/logger';
import { closeRedis, connectMongo, connectRedis, interactionModels, videoModel } from '@feed/storage';
import { createApp } from './app';
import { createApiMetrics } from './metrics';

export interface RunningApi {
  server: Server;
  stop(): Promise<void>;
  /** The whole shutdown's bound from the signal (the propagation delay, the drain, the stores). */
  deadlineMs: number;
}

export async function startApi(config: Config = loadConfig()): Promise<RunningApi> {
  configureLogger(config);
  const mongo = await connectMongo(config);
  // Without Redis the API still listens and serves the MongoDB fallback; the client keeps
  // reconnecting in the background and the ring returns when Redis does (R17).
  const redis = await connectRedis(config, { failFast: true, background: true });
  // The unique indexes that decide "first success" (R3) must exist before the first request.
  await Promise.all([videoModel(mongo.connection), ...Object.values(interactionModels(mongo.connection))].map((m) => m.init()));
  const { app, readout, tallies, drain, warmUp } = createApp({ config, redis, mongo: mongo.connection, metrics: createApiMetrics({ defaultMetrics: true }) });
  // A burst of new connections (a viral video's likers at once) queues in the kernel while the loop
  // is busy: Node's default backlog (511) overflowed, and each dropped SYN came back 1-3 s later (issue 49).
  const server = createHttpServer(app, { headersTimeoutMs: config.httpHeadersTimeoutMs, requestTimeoutMs: config.httpRequestTimeoutMs, maxConnections: config.httpMaxConnections });
  await warmUp(server, config.apiWarmUpRequests);
  server.listen({ port: config.port, backlog: 4096 });
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  logger.info('api listening', { port: config.port });
  server.keepAliveTimeout = 65_000;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Unready at once, serving (Connection: close) while the endpoints propagate, then stop
      // accepting, let in-flight requests finish, and close the stores (SPEC D4).
      const signalled = performance.now();
      drain();
      await drainHttpServer(server, config.shutdownDelayMs);
      // The last requests' counters: their tallies run now, within what the drain left of its time
      // (a tally cut off leaves its records dirty for the repair job, counted later, not lost).
      const left = config.shutdownDelayMs + API_DRAIN_MS - (performance.now() - signalled);
      if (!(await tallies.settle(Math.max(0, left)))) logger.warn('counter tallies still running at shutdown: the repair job counts their records', { ms: Math.round(left) });
      await readout.close();
      await closeRedis(redis);
      await mongo.close();
      if (!(await stopTelemetry())) logger.warn('last spans not exported: the trace collector did not answer in time', { ms: TELEMETRY_SHUTDOWN_MS });
    })());
  return { server, stop, deadlineMs: apiShutdownDeadlineMs(config.shutdownDelayMs) };
}

if (require.main === module) {
  startApi().then(
    ({ stop, deadlineMs }) => exitOnSignals('api', stop, deadlineMs),
    (err: unknown) => {
      logger.error('api failed to start', { err });
      process.exit(1);
    },
  );
}
