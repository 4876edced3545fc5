/**
 * The worker's HTTP surface, admin parts behind credentials: the job dashboard (bull-board),
 * where on-call watches builds and triggers a rebuild, and the queue inspector; `/metrics`; `/healthz`.
 */
import express, { type Express } from 'express';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import { basicAuth } from '@feed/admin-auth';
import type { Redis, RedisKeys, VideoModel } from '@feed/storage';
import { inspectorRoutes } from './inspect/inspector-routes';
import type { WorkerMetrics } from './metrics';

export const DASHBOARD_PATH = '/admin/queues';
export const INSPECTOR_PATH = '/admin/inspector';

export interface WorkerAppDeps {
  queue: Queue;
  metrics: WorkerMetrics;
  adminUser: string;
  adminPassword: string;
  redis: Redis;
  keys: RedisKeys;
  videos: VideoModel;
}

export function createWorkerApp({ queue, metrics, adminUser, adminPassword, redis, keys, videos }: WorkerAppDeps): Express {
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
  const admin = basicAuth(adminUser, adminPassword);
  app.use(DASHBOARD_PATH, admin, board.getRouter());
  app.use(INSPECTOR_PATH, admin, inspectorRoutes({ redis, keys, videos }));
  app.use((_req, res) => {
    res.status(404).json({ error: { code: 'not_found', message: 'no such route' } });
  });
  return app;
}
