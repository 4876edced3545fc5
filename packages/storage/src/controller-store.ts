/**
 * What the desired-state controller (SPEC R21) reads and writes in Redis, as named operations:
 * the versions it checks, the build lock it defers to, its lease, the repair attempts counted per
 * day and state, and the "repairs stopped" and "last repair" records on-call reads. The
 * controller holds this store, never the client.
 */
import { readHeldVersion, type HeldVersion } from './held-version';
import { Lease } from './lease';
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';
import { VersionStore } from './version-store';

/** A day's repair attempts outlive the day they count for. */
const ATTEMPTS_TTL_SECONDS = 2 * 86_400;

export class ControllerStore {
  readonly versions: VersionStore;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {
    this.versions = new VersionStore(redis, keys);
  }

  heldVersion(): Promise<HeldVersion | null> {
    return readHeldVersion(this.redis, this.keys);
  }

  /** Whether a build of `version` holds its lock. */
  async buildLocked(version: string): Promise<boolean> {
    return (await this.redis.exists(this.keys.buildLock(version))) === 1;
  }

  /** The controller's lease: one replica checks at a time. */
  lease(ttlMs: number): Lease {
    return new Lease(this.redis, this.keys.controllerLease, ttlMs);
  }

  /** The key on-call deletes to let the repairs of `day` start again. */
  attemptsKey(day: string): string {
    return this.keys.repairAttempts(day);
  }

  async repairAttempts(day: string, state: string): Promise<number> {
    return Number((await this.redis.hGet(this.keys.repairAttempts(day), state)) ?? 0);
  }

  async countRepairAttempt(day: string, state: string): Promise<void> {
    await this.redis.hIncrBy(this.keys.repairAttempts(day), state, 1);
    await this.redis.expire(this.keys.repairAttempts(day), ATTEMPTS_TTL_SECONDS);
  }

  /** The detail of the stopped repairs on record, or null. */
  stoppedDetail(): Promise<string | null> {
    return this.redis.hGet(this.keys.repairStopped, 'detail');
  }

  async recordStopped(stopped: Record<string, string>): Promise<void> {
    await this.redis.hSet(this.keys.repairStopped, stopped);
  }

  async clearStopped(): Promise<void> {
    await this.redis.del(this.keys.repairStopped);
  }

  async recordRepair(repair: Record<string, string>): Promise<void> {
    await this.redis.hSet(this.keys.lastRepair, repair);
  }
}
