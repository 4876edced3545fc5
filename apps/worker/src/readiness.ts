/**
 * The worker's `/readyz`: 200 while both stores answer, 503 naming the one that does not. A
 * worker builds from MongoDB into Redis, so without either it can neither build nor show its
 * dashboard; the orchestrator takes it out of rotation until both are back (`/healthz` stays
 * independent of both, so it is not restarted for a store's outage).
 */
import type { RequestHandler } from 'express';
import { probeStore, type Redis, type RedisKeys, type VideoModel } from '@feed/storage';

/** Longest a probe waits on one store: a slow primary election is not "down". */
const PROBE_MS = 1_000;

export function readiness(deps: { redis: Redis; keys: RedisKeys; videos: VideoModel }): RequestHandler {
  return async (_req, res) => {
    const [redis, mongo] = await Promise.all([
      // A keyed read rather than PING: it routes on Redis Cluster too.
      probeStore('redis', () => deps.redis.get(deps.keys.current), PROBE_MS),
      probeStore('mongo', () => deps.videos.db.db!.command({ ping: 1 }), PROBE_MS),
    ]);
    const ready = redis === 'ok' && mongo === 'ok';
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'unavailable', redis, mongo });
  };
}
