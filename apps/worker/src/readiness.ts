/**
 * The worker's `/readyz`: 200 while both stores answer, 503 naming the one that has been failing
 * for a few seconds (a store slow for a moment shows `down` in the body, still 200: see
 * StoreHealth). A worker builds from MongoDB into Redis, so without either it can neither build
 * nor show its dashboard; `/healthz` stays independent of both, so it is not restarted for a
 * store's outage.
 */
import type { RequestHandler } from 'express';
import type { StoreHealth } from '@feed/storage';

/** Longest a probe waits on each store: within the orchestrator's 1 s probe timeout (a slower store fails the probe, not yet readiness). */
export const PROBE_MS = { redis: 500, mongo: 500 };

export function readiness(health: StoreHealth): RequestHandler {
  return async (_req, res) => {
    const { failing, ...stores } = await health.probe();
    const ready = failing.length === 0;
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'unavailable', ...stores });
  };
}
