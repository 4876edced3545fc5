/**
 * Liveness, readiness and metrics for the orchestrator and Prometheus (SPEC R17).
 * `/healthz` depends on nothing. `/readyz` is 200 while this instance can serve a page, i.e.
 * while MongoDB answers (without Redis the feed degrades to MongoDB); 503 when it cannot, when the
 * instance is draining (SPEC D4: from the SIGTERM on), and until it is warm: a new instance says
 * ready once it serves ring pages at full speed (`warm`, the in-process copy of current loaded).
 */
import { Router } from 'express';
import type { Connection } from 'mongoose';
import { ROUTING } from '@feed/http';
import { probeStore, type Redis, type RedisKeys } from '@feed/storage';
import type { ApiMetrics } from '../metrics';
import { openApiDocument } from '../openapi';

/** MongoDB's probe gets longer than a Redis read: a slow primary election is not "down". */
const MONGO_PROBE_MS = 1000;

export function healthRoutes(deps: { redis: Redis; keys: RedisKeys; mongo: Connection; metrics: ApiMetrics; deadlineMs: number; draining: () => boolean; warm: (redisUp: boolean) => Promise<boolean> }): Router {
  const router = Router(ROUTING);
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const check = async (dependency: string, probe: () => Promise<unknown>, ms: number) => {
      const state = await probeStore(dependency, probe, ms);
      deps.metrics.dependencyUp.set({ dependency }, state === 'ok' ? 1 : 0);
      return state;
    };
    const [redis, mongo] = await Promise.all([
      // A keyed read rather than PING: it routes on Redis Cluster too.
      check('redis', () => deps.redis.get(deps.keys.current), deps.deadlineMs),
      // The signal closes a ping's socket on a frozen server: probes do not pile up in the pool.
      check('mongo', () => deps.mongo.db!.command({ ping: 1 }, { signal: AbortSignal.timeout(MONGO_PROBE_MS) }), MONGO_PROBE_MS),
    ]);
    const warm = await deps.warm(redis === 'ok').catch(() => true);
    const status = deps.draining() ? 'draining' : mongo !== 'ok' ? 'unavailable' : !warm ? 'warming' : redis === 'ok' ? 'ready' : 'degraded';
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
