/**
 * The worker's `/readyz`: 200 while both stores answer (a moment's slowness shows `down`, still
 * 200), 503 naming one failing for a few seconds: a build needs both. `/healthz` needs neither, so
 * an outage does not restart the worker.
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
