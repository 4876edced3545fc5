/**
 * The worker's HTTP surface, admin parts behind credentials: the job dashboard (bull-board),
 * where on-call watches builds and triggers a rebuild, and the queue inspector; `/metrics`; `/healthz`.
 */
import express, { type Express, type RequestHandler } from 'express';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import { adminUserOf, basicAuth, errorHandler, methodNotAllowed, notFoundRoute, sendError, unavailable } from '@feed/http';
import type { Config } from '@feed/config';
import { logger } from '@feed/logger';
import { recordAudit, type Redis, type RedisKeys, type VideoModel } from '@feed/storage';
import { inspectorRoutes } from './inspect/inspector-routes';
import type { WorkerMetrics } from './metrics';

export const DASHBOARD_PATH = '/admin/queues';
export const INSPECTOR_PATH = '/admin/inspector';
const REALM = 'feed-worker';

export interface WorkerAppDeps {
  config: Pick<Config, 'adminUser' | 'adminPassword' | 'shortRecommendV2Enabled' | 'shortRecommendV2Percent' | 'businessTimeZone'>;
  queue: Queue;
  metrics: WorkerMetrics;
  redis: Redis;
  keys: RedisKeys;
  videos: VideoModel;
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

/** The dashboard's requests that start a build by hand: "Add job", retry (one or all), promote. */
const DASHBOARD_BUILD_REQUEST = /^\/api\/queues\/[^/]+\/(?:add|(?:[^/]+\/)?retry\/[^/]+|(?:[^/]+\/)?promote)$/;

/** Records every build requested from the dashboard in the audit trail (D6), once it was accepted. */
function auditDashboardBuilds(redis: Redis, keys: RedisKeys): RequestHandler {
  return (req, res, next) => {
    if ((req.method === 'POST' || req.method === 'PUT') && DASHBOARD_BUILD_REQUEST.test(req.path)) {
      const current = redis.get(keys.current).catch(() => null);
      res.once('finish', () => {
        if (res.statusCode >= 400) return;
        const body: unknown = req.body;
        const asked = { request: `${req.method} ${req.path}`, ...(body && typeof body === 'object' && 'name' in body ? { name: body.name, data: 'data' in body ? body.data : undefined } : {}) };
        void current
          .then((version) => recordAudit(redis, keys, { action: 'build-requested', actor: adminUserOf(res), via: 'dashboard', before: { current: version }, after: asked }))
          .catch((err: unknown) => logger.warn('audit trail unwritable', { err: err instanceof Error ? err.message : String(err) }));
      });
    }
    next();
  };
}

export function createWorkerApp({ config, queue, metrics, redis, keys, videos }: WorkerAppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  const board = new ExpressAdapter();
  board.setBasePath(DASHBOARD_PATH);
  createBullBoard({ queues: [new BullMQAdapter(queue)], serverAdapter: board, options: { uiConfig: { boardTitle: 'Feed builds' } } });
  const admin = [basicAuth(config.adminUser, config.adminPassword, REALM), answerWithin(ADMIN_DEADLINE_MS)];
  app.use(DASHBOARD_PATH, admin, auditDashboardBuilds(redis, keys), board.getRouter());
  app.use(INSPECTOR_PATH, admin, inspectorRoutes({ config, queue, redis, keys, videos }));
  app.use(methodNotAllowed(app));
  app.use(notFoundRoute);
  // Admin pages read Redis and MongoDB: a failing store is a 503, never a hung or generic 500.
  app.use(errorHandler({ unexpected: 'unavailable' }));
  return app;
}
