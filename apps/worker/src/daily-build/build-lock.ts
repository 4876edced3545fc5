/**
 * The build lock (SPEC R10, R21): SET NX PX with a random owner token, released only by its owner
 * (Lua compare-and-delete). It is a short lease (BUILD_LOCK_TTL_MS, 30 s by default) that a
 * heartbeat renews every third of it while the build lives, so a long build keeps its lock and a
 * killed worker's lock lapses within one lease, not after the longest build could take.
 * A build that finds the lock held waits for its release (`waitForRelease`), not for its TTL.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@feed/logger';
import { runScript, type Redis } from '@feed/storage';

export interface BuildLock {
  key: string;
  token: string;
  /** Stops the heartbeat and deletes the lock if we still own it; returns whether it did. */
  release(): Promise<boolean>;
}

export async function acquireBuildLock(redis: Redis, key: string, ttlMs: number, logger?: Logger): Promise<BuildLock | null> {
  const token = randomUUID();
  const acquired = await redis.set(key, token, { NX: true, PX: ttlMs });
  if (acquired !== 'OK') return null;
  const heartbeat = setInterval(() => {
    // A lost lock is refused by the publish script, which checks the token before anything moves.
    runScript<number>(redis, 'extend-lock', [key], [token, String(ttlMs)]).then(
      (renewed) => {
        if (renewed !== 1) logger?.warn('build lock lost: it lapsed or another build holds it', { key });
      },
      // Logged, not counted: a beat that fails leaves the lease to lapse unless a later one renews it, and the publish script refuses a lost lock.
      (err: unknown) => logger?.warn('build lock heartbeat failed', { key, err }),
    );
  }, Math.max(100, Math.floor(ttlMs / 3)));
  heartbeat.unref();
  return {
    key,
    token,
    release: async () => {
      clearInterval(heartbeat);
      return (await runScript<number>(redis, 'release-lock', [key], [token])) === 1;
    },
  };
}

/** How often a waiting build looks whether the lock is gone. */
export const LOCK_POLL_MS = 250;

/**
 * Waits until `key` no longer exists (released by its holder, or lapsed with a dead one), at most
 * `maxWaitMs`; true when it is gone. Polling keeps it to one EXISTS per LOCK_POLL_MS, also on a
 * cluster, where keyspace notifications would need a subscription per master.
 */
export async function waitForRelease(redis: Redis, key: string, maxWaitMs: number, signal?: AbortSignal): Promise<boolean> {
  const started = performance.now();
  for (;;) {
    signal?.throwIfAborted();
    if ((await redis.exists(key)) === 0) return true;
    if (performance.now() - started >= maxWaitMs) return false;
    await sleep(LOCK_POLL_MS, undefined, { signal });
  }
}
