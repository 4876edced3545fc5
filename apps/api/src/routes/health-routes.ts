/** Liveness, readiness and metrics for the orchestrator and Prometheus. */
import { Router } from 'express';
import type { Connection } from 'mongoose';
import type { Redis, RedisKeys } from '@feed/storage';
import type { ApiMetrics } from '../metrics';
import { openApiDocument } from '../openapi';
import { withDeadline } from '../with-deadline';

export function healthRoutes(deps: { redis: Redis; keys: RedisKeys; mongo: Connection; metrics: ApiMetrics }): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const check = async (probe: () => Promise<unknown>) => {
      try {
        await withDeadline(probe(), 1000, 'readiness probe');
        return 'ok';
      } catch {
        return 'down';
      }
    };
    // A keyed read rather than PING: it routes on Redis Cluster too.
    const [redis, mongo] = await Promise.all([check(() => deps.redis.get(deps.keys.current)), check(() => deps.mongo.db!.command({ ping: 1 }))]);
    res.status(redis === 'ok' && mongo === 'ok' ? 200 : 503).json({ redis, mongo });
  });
  router.get('/openapi.json', (_req, res) => {
    res.json(openApiDocument);
  });
  router.get('/metrics', async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  return router;
}
