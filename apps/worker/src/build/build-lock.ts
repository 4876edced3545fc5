/**
 * The build lock (SPEC R10): SET NX PX with a random owner token, released only by its owner
 * (Lua compare-and-delete). The expiry frees the version when a worker dies mid-build.
 */
import { randomUUID } from 'node:crypto';
import { runScript, type Redis } from '@feed/storage';

export interface BuildLock {
  token: string;
  /** True while the lock still holds our token (it may have expired). */
  stillOwned(): Promise<boolean>;
  /** Deletes the lock if we still own it; returns whether it did. */
  release(): Promise<boolean>;
}

export async function acquireBuildLock(redis: Redis, key: string, ttlMs: number): Promise<BuildLock | null> {
  const token = randomUUID();
  const acquired = await redis.set(key, token, { NX: true, PX: ttlMs });
  if (acquired !== 'OK') return null;
  return {
    token,
    stillOwned: async () => (await redis.get(key)) === token,
    release: async () => (await runScript<number>(redis, 'release-lock', [key], [token])) === 1,
  };
}
