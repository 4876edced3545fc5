/**
 * The build lock (SPEC R10, R21): a `Lease` of BUILD_LOCK_TTL_MS renewed every third of it, so a
 * long build keeps it and a killed worker's lapses within one term. The publish script refuses a
 * lost lock by its token.
 */
import type { Logger } from '@feed/logger';
import type { Lease } from '@feed/storage';

export type BuildLock = Lease;

/** `lock` taken and renewed until released, or null when another build holds it. */
export async function acquireBuildLock(lock: Lease, logger?: Logger): Promise<BuildLock | null> {
  if (!(await lock.acquire())) return null;
  // Logged, not counted: a failed beat leaves the lease to lapse unless a later one renews it.
  lock.keepRenewing((err) => logger?.warn(err ? 'build lock heartbeat failed' : 'build lock lost: it lapsed or another build holds it', { key: lock.key, err }));
  return lock;
}
