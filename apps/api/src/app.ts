/** Builds the API's Express app from connected dependencies (supertest imports this). */
import type { Server } from 'node:http';
import cors from 'cors';
import express, { type Express } from 'express';
import type { Connection } from 'mongoose';
import type { Config } from '@feed/config';
import { logger } from '@feed/logger';
import { annotateRequestSpan } from '@feed/telemetry';
import { auditTrail, CounterTallies, createRedisKeys, Deadline, interactionModels, newDeviceLimiter, readoutStore, redisClockMs, RolloutStore, storeHealth, UserHistory, VersionStore, videoModel, WatchCounter, type connectRedis, type CounterHooks } from '@feed/storage';
import { answerOptions, errorHandler, methodNotAllowed, notFoundRoute, requestId, requestIdOf, routeStrictly, unsupportedMediaType } from '@feed/http';
import { createApiMetrics, declareHttpRoutes, type ApiMetrics, type RequestLabels } from './metrics';
import { FeedService } from './feed/feed-service';
import { FeedReadStateCache } from './feed/feed-read-state';
import { ClockSkewProbe } from './feed/clock-skew';
import { RingReader } from './feed/ring-scan';
import { VariantReadout } from './feed/variant-readout';
import { VideoCatalog } from './feed/video-catalog';
import { QueueCopies } from './feed/queue-copies';
import { sizeTokenCache, tokenCacheBytes } from './http/identity';
import { memoryShares } from './memory-budget';
import { adminRoutes } from './routes/admin-routes';
import { feedRoutes } from './routes/feed-routes';
import { interactionRoutes } from './routes/interaction-routes';
import { InteractionService } from './interactions/interaction-service';
import { healthRoutes, MONGO_PROBE_MS } from './routes/health-routes';
import { requestBudget } from './http/request-budget';
import { newDeviceLimit } from './http/new-device-limit';
import { bodyOperations, guestOperations } from './openapi';
import { warmUp as sendWarmUp } from './warm-up';

/** The headers the H5 client sends (a preflight must allow each). */
const CORS_REQUEST_HEADERS = ['Authorization', 'X-Device-Id', 'Idempotency-Key', 'Content-Type'];

/** The client API's CORS: H5 pages on the allowed origins may call it (the bench's limit route has the same). */
export const clientCors = (origin: Config['corsAllowedOrigins']) => cors({ origin, methods: ['GET', 'POST', 'DELETE'], allowedHeaders: CORS_REQUEST_HEADERS, exposedHeaders: ['X-Request-Id'], maxAge: 600 });

export interface ApiDeps {
  config: Config;
  /** The connection, handed only to storage's stores and the feed's collaborators (no command is sent here). */
  redis: Awaited<ReturnType<typeof connectRedis>>;
  mongo: Connection;
  metrics?: ApiMetrics;
  /** Test hook for the crash point between an interaction's two writes. */
  counterHooks?: CounterHooks;
}

export interface Api {
  app: Express;
  feed: FeedService;
  readout: VariantReadout;
  reader: RingReader;
  readState: FeedReadStateCache;
  metrics: ApiMetrics;
  /** The counter tallies running behind the interactions (tests wait for them to be idle). */
  tallies: CounterTallies;
  /** From now on /readyz says 503 `draining` (SIGTERM, SPEC D4). */
  drain(): void;
  /** Runs the start's warm-up (warm-up.ts) through `server`: its requests stay out of /metrics, the logs, the video cache and traces. */
  warmUp(server: Server, requests: number): Promise<Map<number, number>>;
}

export function createApp({ config, redis, mongo, metrics = createApiMetrics(), counterHooks }: ApiDeps): Api {
  const keys = createRedisKeys(config.redisKeyPrefix);
  const videos = videoModel(mongo);
  const shares = memoryShares(config.apiMemoryBudgetMb);
  // The start's warm-up (below) looks up ids of no video: the catalog neither counts nor keeps them.
  let warmingUp = false;
  const catalog = new VideoCatalog({ model: videos, ttlMs: config.videoCacheMs, maxEntries: config.videoCacheMax, maxBytes: shares.videoCacheBytes, mongoDeadlineMs: config.mongoDeadlineMs, metrics, warmingUp: () => warmingUp });
  const onLoaded = () => {
    metrics.queueCopyLoads.inc();
    metrics.queueCopyBytes.set(queueCopies.bytes());
  };
  const versions = new VersionStore(redis, keys);
  const queueCopies = new QueueCopies({ versions, queueCopiesMax: config.queueCopiesMax, maxBytes: shares.queueCopyBytes, onLoaded });
  const copies = config.queueCopiesMax > 0 ? queueCopies : undefined;
  sizeTokenCache(shares.tokenCacheBytes);
  metrics.memoryBudget.set(shares.budgetBytes);
  metrics.cacheBudgetBytes.set({ cache: 'video' }, shares.videoCacheBytes);
  metrics.cacheBudgetBytes.set({ cache: 'token' }, shares.tokenCacheBytes);
  metrics.cacheBudgetBytes.set({ cache: 'queue_copies' }, shares.queueCopyBytes);
  metrics.cacheSizes.read = () => ({ video: catalog.cacheBytes(), token: tokenCacheBytes(), queue_copies: queueCopies.bytes() });
  const records = interactionModels(mongo);
  const tallies = new CounterTallies({
    videos,
    records,
    hooks: counterHooks,
    onError: (kind, err) => {
      metrics.talliesDeferred.inc({ kind });
      logger.warn('counter tally failed: its records wait for the next tally or the repair job', { kind, err });
    },
  });
  const history = new UserHistory(redis, keys, config);
  const watches = new WatchCounter(redis, keys, config.totalWatch, config.businessTimeZone);
  const clockSkew = new ClockSkewProbe(() => redisClockMs(redis, keys), metrics.clockSkew);
  const readState = new FeedReadStateCache({
    versions,
    currentCacheMs: config.currentCacheMs,
    defaults: { enabled: config.shortRecommendV2Enabled, percent: config.shortRecommendV2Percent },
    metrics,
    onRefresh: ({ rings }) => {
      clockSkew.maybeMeasure();
      // Each version or build seen is copied ahead of its first reads, at a jittered moment (R22).
      for (const ring of rings.values()) if (ring) copies?.preload(ring);
    },
  });
  // An action's variant and admission are read within the request's Redis deadline (a stalled Redis holds no answer).
  const readout = new VariantReadout({
    store: readoutStore(redis, keys),
    metrics,
    variantOf: (identity, deadline) => readState.variantOf(identity, deadline),
    firstSeenOf: (identity) => history.guestFirstSeen(identity.key),
  });
  const reader = new RingReader(versions, copies);
  const feed = new FeedService({ versions, catalog, history, metrics, readState, reader, readout });

  const interactions = new InteractionService({ catalog, records, tallies, readout, hooks: counterHooks });
  metrics.lateWrites.read = () => interactions.following;

  const app = express();
  routeStrictly(app);
  app.disable('x-powered-by');
  // Every feed response is new (the offset moved): an ETag would only cost a SHA-1 per response.
  app.set('etag', false);
  app.set('query parser', 'simple');
  // Whose X-Forwarded-For names the client (the new-device limit's address); none unless configured.
  app.set('trust proxy', config.trustProxy);
  // The access log line only when LOG_LEVEL enables 'http' (else winston builds and drops it per request).
  const assignId = requestId((id) => annotateRequestSpan({ 'http.request_id': id }));
  const accessLog = logger.isLevelEnabled('http');
  // Set once every route is registered (below); requests come after that.
  let requestLabels: RequestLabels;
  app.use((req, res, next) => {
    const started = performance.now();
    // The warm-up's by its arrival: one cut at 5 s and answered later is still the warm-up's.
    if (warmingUp) res.locals.warmUp = true;
    res.on('finish', () => {
      if (res.locals.warmUp) return;
      const seconds = (performance.now() - started) / 1000;
      metrics.httpDuration.observe(requestLabels(req.method, (req.route as { path?: string } | undefined)?.path, res.statusCode), seconds);
      if (accessLog) logger.http('request', { requestId: requestIdOf(res), method: req.method, path: req.path, status: res.statusCode, ms: Math.round(seconds * 1000) });
    });
    assignId(req, res, next);
  });
  app.use(answerOptions(app, '/api/app'));
  // CORS on the client API only (admin and probes never cross-origin); JSON bodies only where the
  // document takes one (415 otherwise); the budget once the body is read (408s bound a slow body).
  const cors = clientCors(config.corsAllowedOrigins);
  const json = express.json({ limit: '16kb' });
  const startBudget = requestBudget({ redisMs: config.redisDeadlineMs, mongoMs: config.mongoDeadlineMs });
  const limitNewDevices = newDeviceLimit(history, newDeviceLimiter(redis, keys, config.newDevicesPerAddress, config.newDevicesWindowS), () => metrics.newDevicesLimited.inc());
  app.use((req, res, next) => {
    const operation = `${req.method} ${req.path}`;
    const read = (err?: unknown) => (err ? next(err) : startBudget(req, res, () => (guestOperations.has(operation) ? void limitNewDevices(req, res, next).catch(next) : next())));
    const body = (err?: unknown) => {
      if (err || !bodyOperations.has(operation)) return read(err);
      const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
      if (hasBody && !req.is('application/json')) return next(unsupportedMediaType(`request body must be application/json, not ${req.header('content-type') ?? 'untyped'}`));
      json(req, res, read);
    };
    return /^\/api\/app(\/|$)/.test(req.path) ? cors(req, res, body) : body();
  });
  // The feed routes first: they take nearly all the traffic.
  app.use(feedRoutes({ feed, catalog, history, watches, readout, jwtSecret: config.authJwtSecret, onRedisFailure: (operation) => metrics.redisFailures.inc({ operation }) }));
  let draining = false;
  // Warm once the copy of the version current at start is held (or none is needed, refused, or Redis
  // is down: degraded is ready); later versions load while serving, as at the daily switch.
  let warm = config.queueCopiesMax === 0;
  const warmCopies = async (redisUp: boolean) => {
    if (warm || !redisUp) return (warm = true);
    // Bounded like any Redis read: a probe that hangs takes the instance out as surely as a 503.
    const { current, rings } = await readState.read(new Deadline(config.redisDeadlineMs));
    const ring = current ? rings.get(current) : null;
    if (ring) void queueCopies.ensure(ring).then(() => (warm = true));
    return (warm = !ring || queueCopies.ready(ring));
  };
  app.use(healthRoutes({ health: storeHealth({ redis, keys, mongo }, { redis: config.redisDeadlineMs, mongo: MONGO_PROBE_MS }), metrics, draining: () => draining, warm: warmCopies }));
  app.use(interactionRoutes({ interactions, jwtSecret: config.authJwtSecret, readout }));
  app.use(adminRoutes({ config, rollouts: new RolloutStore(redis, keys), versions, catalog, history, reader, readState, audit: auditTrail(mongo, config.redisKeyPrefix) }));
  app.use(methodNotAllowed(app));
  app.use(notFoundRoute);
  app.use(errorHandler({ quiet: (res) => res.locals.warmUp === true }));
  requestLabels = declareHttpRoutes(metrics.httpDuration, routesOf(app));
  const warmUp = (server: Server, requests: number) => {
    warmingUp = true;
    return sendWarmUp(server, requests, config.authJwtSecret).finally(() => (warmingUp = false));
  };
  return { app, feed, readout, reader, readState, metrics, tallies, drain: () => void (draining = true), warmUp };
}

type RouterLayer = Express['router']['stack'][number];

/** `METHOD path` of every route registered on `app` (routers mounted without a path, as here). */
export function routesOf(app: Express): string[] {
  const walk = (stack: RouterLayer[]): string[] =>
    stack.flatMap((layer) => {
      const { route } = layer;
      if (route) return [...new Set(route.stack.map((handler) => handler.method).filter(Boolean))].map((method) => `${method.toUpperCase()} ${route.path}`);
      const inner: unknown = Reflect.get(layer.handle, 'stack');
      return Array.isArray(inner) ? walk(inner as RouterLayer[]) : [];
    });
  return walk(app.router.stack);
}
