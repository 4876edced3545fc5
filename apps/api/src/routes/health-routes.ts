/**
 * Liveness, readiness and metrics (SPEC R17). `/healthz` depends on nothing. `/readyz` is 200 while
 * this instance can serve a page (MongoDB answers; without Redis the feed degrades); 503 once MongoDB
 * failed every probe for a few seconds, while draining (SPEC D4), and until warm (current's copy
 * loaded).
 */
import { Router } from 'express';
import { ROUTING } from '@feed/http';
import type { StoreHealth } from '@feed/storage';
import type { ApiMetrics } from '../metrics';
import { openApiDocument } from '../openapi';

/** MongoDB's probe: within the orchestrator's 1 s timeout; a slower MongoDB is "down" for that probe, failing only once it stays so. */
export const MONGO_PROBE_MS = 500;

export function healthRoutes(deps: { health: StoreHealth; metrics: ApiMetrics; draining: () => boolean; warm: (redisUp: boolean) => Promise<boolean> }): Router {
  const router = Router(ROUTING);
  const { health } = deps;
  deps.metrics.storeHealth.read = () => health.upForScrape();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const { redis, mongo, failing } = await health.probe();
    const warm = await deps.warm(redis === 'ok').catch(() => true);
    const status = deps.draining() ? 'draining' : failing.includes('mongo') ? 'unavailable' : !warm ? 'warming' : redis === 'ok' ? 'ready' : 'degraded';
    res.status(status === 'ready' || status === 'degraded' ? 200 : 503).json({ status, redis, mongo });
  });
  router.get('/openapi.json', (_req, res) => {
    res.json(openApiDocument);
  });
  router.get('/metrics', async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  return router;
}
