/**
 * What the worker's builds, promotes of a held build and desired-state controller (SPEC R20-R23)
 * do in Redis besides a version's own keys (VersionStore), as named operations: switch `current`,
 * point `shadow`, size the offset buckets by the users of a version, keep the held record, take a
 * build's lock or the controller's lease, count repair attempts per day and state, and keep the
 * "repairs stopped" and "last repair" records on-call reads. The worker holds this store, never
 * the client.
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

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {
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

  /**
   * Records `held` as the held version and points `shadow` at it, in one step (lua/held-record.lua),
   * unless a later day is held: that record and pointer stay. Returns the version held after it.
   */
  writeHeld(held: HeldVersion, ttlSeconds: number): Promise<string> {
    return runScript<string>(this.redis, 'held-record', [this.keys.shadow, this.keys.held], ['hold', held.version, JSON.stringify(held), String(ttlSeconds)]);
  }

  /**
   * Clears, in one step, the record of `version` and (`exact`: a promote or a dismiss) a shadow
   * pointer at it; without `exact` any record up to `version` (it switched: older holds are moot).
   */
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
