/**
 * The worker's HTTP surface: behind credentials the job dashboard (bull-board) and the inspector;
 * `/metrics`, `/healthz`, `/readyz`, and `/openapi.json` (all but bull-board's routes).
 */
import express, { type Express, type RequestHandler } from 'express';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import { adminUserOf, answerOptions, basicAuth, errorHandler, methodNotAllowed, notFoundRoute, requestId, routeStrictly, sendError, unavailable } from '@feed/http';
import type { Config } from '@feed/config';
import { logger } from '@feed/logger';
import { auditTrail, type BuildStore, type RolloutStore, type StoreHealth, type VideoModel } from '@feed/storage';
import { asDashboardRequest, auditedQueue } from './jobs/audited-queue';
import { DASHBOARD_DESCRIPTION } from './jobs/build-queue';
import { inspectorRoutes } from './inspect/inspector-routes';
import { readiness } from './readiness';
import { DASHBOARD_PATH, workerOpenApiDocument } from './openapi';
import type { WorkerMetrics } from './metrics';

export { DASHBOARD_PATH };
export const INSPECTOR_PATH = '/admin/inspector';
const REALM = 'feed-worker';

export interface WorkerAppDeps {
  config: Pick<Config, 'adminUser' | 'adminPassword' | 'shortRecommendV2Enabled' | 'shortRecommendV2Percent' | 'businessTimeZone' | 'redisKeyPrefix' | 'shortRecommendKeyTTLHours' | 'buildLockTtlMs'>;
  queue: Queue;
  metrics: WorkerMetrics;
  /** The build's store (versions, pointers, the held record, repairs) and the rollout's, for the dashboard and the inspector. */
  store: BuildStore;
  rollout: RolloutStore;
  videos: VideoModel;
  /** The stores' probes, shared with `/metrics` (main.ts). */
  health: StoreHealth;
}

/** Longest an admin request may wait on Redis (bull-board's ioredis queues commands while Redis is down). */
const ADMIN_DEADLINE_MS = 2_000;

/** Answers 503 when the route has not answered within `ms` (a store that hangs rather than fails). */
function answerWithin(ms: number): RequestHandler {
  return (req, res, next) => {
    const timer = setTimeout(() => {
      if (res.headersSent) return;
      logger.warn('worker request timed out', { path: req.originalUrl, ms });
      sendError(res, unavailable(`no answer from the stores within ${ms} ms; try again shortly`));
    }, ms);
    res.once('close', () => clearTimeout(timer));
    res.once('finish', () => clearTimeout(timer));
    next();
  };
}

/** The statuses bull-board's handlers may answer with. */
type BoardStatus = ReturnType<Parameters<ExpressAdapter['setErrorHandler']>[0]>['status'];

export function createWorkerApp({ config, queue, metrics, store, rollout, videos, health }: WorkerAppDeps): Express {
  const app = express();
  routeStrictly(app);
  app.disable('x-powered-by');
  app.use(requestId());
  // OPTIONS as the API answers it, before credentials; bull-board's own paths answer theirs below.
  const options = answerOptions(app);
  app.use((req, res, next) => (req.path === DASHBOARD_PATH || req.path.startsWith(`${DASHBOARD_PATH}/`) ? next() : options(req, res, next)));
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', readiness(health));
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  app.get('/openapi.json', (_req, res) => {
    res.json(workerOpenApiDocument);
  });

  const board = new ExpressAdapter();
  board.setBasePath(DASHBOARD_PATH);
  // On-call's trail in MongoDB (D6): the dashboard gets the queue through auditedQueue, so every job it starts is recorded.
  const audit = auditTrail(videos.db, config.redisKeyPrefix);
  createBullBoard({ queues: [new BullMQAdapter(auditedQueue(queue, { trail: audit, versions: store.versions }), { description: DASHBOARD_DESCRIPTION })], serverAdapter: board, options: { uiConfig: { boardTitle: 'Feed builds' } } });
  // bull-board answers its own errors (a bug as a 500 with no log line): its 4xx stay its own,
  // anything else goes on to the app's error handler, which logs it with its stack.
  board.setErrorHandler((err: Error & { statusCode?: BoardStatus }) => {
    if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) return { status: err.statusCode, body: { error: err.message } };
    throw err;
  });
  const admin = [basicAuth(config.adminUser, config.adminPassword, REALM), answerWithin(ADMIN_DEADLINE_MS)];
  // The body is parsed before the request's context is entered: body-parser's stream callbacks would leave it.
  const asked: RequestHandler = (req, res, next) => asDashboardRequest({ actor: adminUserOf(res), request: `${req.method} ${req.originalUrl.split('?')[0]}` }, next);
  // bull-board's routes live in an app of its own, which the app-level 405 below cannot see into.
  const boardApp: Express = board.getRouter();
  boardApp.disable('x-powered-by');
  const boardMethods = methodNotAllowed(boardApp);
  // OPTIONS is answered from bull-board's route table before its app sees it (Express would send a 200 with the list as body).
  const boardOptions: RequestHandler = (req, res, next) => (req.method === 'OPTIONS' ? boardMethods(req, res, next) : next());
  app.use(DASHBOARD_PATH, admin, express.json(), asked, boardOptions, boardApp, boardMethods);
  app.use(INSPECTOR_PATH, admin, inspectorRoutes({ config, queue, store, rollout, videos, audit, logger }));
  app.use(methodNotAllowed(app));
  app.use(notFoundRoute);
  // A failing store is a 503 (a hanging one too, answerWithin); anything else is a bug: a 500, logged with its stack.
  app.use(errorHandler());
  return app;
}
