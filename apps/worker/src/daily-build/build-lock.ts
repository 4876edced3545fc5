/**
 * The build lock (SPEC R10): SET NX PX with a random owner token, released only by its owner
 * (Lua compare-and-delete). While the build runs, a heartbeat renews the expiry every third of
 * it, so a long build keeps its lock and a crashed worker frees the version within one TTL.
 */
import { randomUUID } from 'node:crypto';
import { runScript, type Redis } from '@feed/storage';

export interface BuildLock {
  token: string;
  /** Stops the heartbeat and deletes the lock if we still own it; returns whether it did. */
  release(): Promise<boolean>;
}

export async function acquireBuildLock(redis: Redis, key: string, ttlMs: number): Promise<BuildLock | null> {
  const token = randomUUID();
  const acquired = await redis.set(key, token, { NX: true, PX: ttlMs });
  if (acquired !== 'OK') return null;
  const heartbeat = setInterval(() => {
    // A failed renewal is noticed by the publish script, which checks the token before anything moves.
    runScript(redis, 'extend-lock', [key], [token, String(ttlMs)]).catch(() => undefined);
  }, Math.max(100, Math.floor(ttlMs / 3)));
  heartbeat.unref();
  return {
    token,
    release: async () => {
      clearInterval(heartbeat);
      return (await runScript<number>(redis, 'release-lock', [key], [token])) === 1;
    },
  };
}
