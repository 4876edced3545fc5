/**
 * Liveness, readiness and metrics for the orchestrator and Prometheus (SPEC R17).
 * `/healthz` depends on nothing. `/readyz` is 200 while this instance can serve a page, i.e.
 * while MongoDB answers (without Redis the feed degrades to MongoDB); 503 only when it cannot.
 */
import { Router } from 'express';
import type { Connection } from 'mongoose';
import { ROUTING } from '@feed/http';
import { withDeadline, type Redis, type RedisKeys } from '@feed/storage';
import type { ApiMetrics } from '../metrics';
import { openApiDocument } from '../openapi';

/** MongoDB's probe gets longer than a Redis read: a slow primary election is not "down". */
const MONGO_PROBE_MS = 1000;

export function healthRoutes(deps: { redis: Redis; keys: RedisKeys; mongo: Connection; metrics: ApiMetrics; deadlineMs: number }): Router {
  const router = Router(ROUTING);
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const check = async (dependency: string, probe: () => Promise<unknown>, ms: number) => {
      let up = false;
      try {
        await withDeadline(probe(), ms, `${dependency} readiness probe`);
        up = true;
      } catch {
        up = false;
      }
      deps.metrics.dependencyUp.set({ dependency }, up ? 1 : 0);
      return up ? 'ok' : 'down';
    };
    const [redis, mongo] = await Promise.all([
      // A keyed read rather than PING: it routes on Redis Cluster too.
      check('redis', () => deps.redis.get(deps.keys.current), deps.deadlineMs),
      // The signal closes a ping's socket on a frozen server: probes do not pile up in the pool.
      check('mongo', () => deps.mongo.db!.command({ ping: 1 }, { signal: AbortSignal.timeout(MONGO_PROBE_MS) }), MONGO_PROBE_MS),
    ]);
    const ready = mongo === 'ok';
    res.status(ready ? 200 : 503).json({ status: ready ? (redis === 'ok' ? 'ready' : 'degraded') : 'unavailable', redis, mongo });
  });
  router.get('/openapi.json', (_req, res) => {
    res.json(openApiDocument);
  });
  router.get('/metrics', async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  return router;
}
