/**
 * The worker's named Redis operations besides a version's keys (SPEC R20-R23): switch `current`,
 * point `shadow`, size offset buckets, keep the held record, the build lock and controller lease,
 * repair attempts, and the records on-call reads. The worker holds this store, never the client.
 */
import { readHeldVersion, type HeldVersion } from './held-version';
import { Lease } from './lease';
import { runScript } from './lua-scripts';
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';
import { countUsersWithOffset } from './ring';
import { makeCurrent, type SwitchOutcome } from './version-pointers';
import { VersionStore } from './version-store';

/** A day's repair attempts outlive the day they count for. */
const ATTEMPTS_TTL_SECONDS = 2 * 86_400;

export class BuildStore {
  readonly versions: VersionStore;

  constructor(private readonly redis: Redis, private readonly keys: RedisKeys) {
    this.versions = new VersionStore(redis, keys);
  }

  /** The lock of `version`'s build, or of its shadow build (so a shadow never blocks the live build). */
  buildLock(version: string, shadow: boolean, ttlMs: number): Lease {
    return new Lease(this.redis, shadow ? this.keys.shadowBuildLock(version) : this.keys.buildLock(version), ttlMs);
  }

  /** Moves `current` to `version` by compare-and-set (version-pointers.ts). */
  makeCurrent(version: string, allowOlder = false): Promise<SwitchOutcome> {
    return makeCurrent(this.redis, this.keys, version, allowOlder);
  }

  /** The version pointers: `current`, `previous` (R17) and `shadow`. */
  async pointers() {
    const [current, previous, shadow] = await Promise.all([this.redis.get(this.keys.current), this.redis.get(this.keys.previous), this.redis.get(this.keys.shadow)]);
    return { current, previous, shadow };
  }

  async pointShadowAt(version: string): Promise<void> {
    await this.redis.set(this.keys.shadow, version);
  }

  usersWithOffset(version: string, offsetBuckets: number): Promise<number> {
    return countUsersWithOffset(this.redis, this.keys, version, offsetBuckets);
  }

  heldVersion(): Promise<HeldVersion | null> {
    return readHeldVersion(this.redis, this.keys);
  }

  /** Records `held` and points `shadow` at it in one step, unless a later day is held; returns the held version after. */
  writeHeld(held: HeldVersion, ttlSeconds: number): Promise<string> {
    return runScript<string>(this.redis, 'held-record', [this.keys.shadow, this.keys.held], ['hold', held.version, JSON.stringify(held), String(ttlSeconds)]);
  }

  /** Clears `version`'s record and (`exact`) a shadow pointer at it; else every record up to `version`. */
  async clearHeld(version: string, exact: boolean): Promise<void> {
    await runScript(this.redis, 'held-record', [this.keys.shadow, this.keys.held], ['clear', version, exact ? '1' : '0']);
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

  /** The controller's last repair on record, or null. */
  async lastRepair(): Promise<Record<string, string> | null> {
    const repair = await this.redis.hGetAll(this.keys.lastRepair);
    return Object.keys(repair).length > 0 ? (repair as Record<string, string>) : null;
  }

  async recordRepair(repair: Record<string, string>): Promise<void> {
    await this.redis.hSet(this.keys.lastRepair, repair);
  }
}
