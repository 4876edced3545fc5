/**
 * A version's keys in Redis (SPEC R10, R17, R20, R22): the apps ask this store, never send commands
 * on them nor parse their names. A version is its queue (ids), its scores and its meta
 * (queue-meta.ts), live or as a shadow's own copy (R20), plus its offset buckets (ring.ts). A build
 * stages them under its lock token and `publish` renames them into place in one script; the legacy
 * set (R17) likewise. "Complete" is defined once, by `completeness`, for the controller (R21), the
 * API's copies (R22) and the inspector; the publish script repeats the check inside Redis.
 */
import { runScript } from './lua-scripts';
import { encodeMeta, readMeta, type QueueMeta } from './queue-meta';
import type { Redis } from './redis-client';
import { liveOrShadowKeys, VERSION_PATTERN, type LiveOrShadow, type RedisKeys } from './redis-keys';
import { readRolloutOverride, type Rollout } from './rollout-override';
import { claimPositions, offsetBucketKeys, readOffset, readQueueRange, readRecordedScores, readRingVersion, unclaimPositions, type Claim, type RingVersion } from './ring';

/** Whether meta names a positive length and the queue holds that many ids (scores do not count). */
export type Completeness = { complete: true; length: number; buildId: string } | { complete: false; problem: string };

/** The publish script refused (nothing changed): the lock was lost, or the staged keys disagree with the build's length. */
export class PublishRefusedError extends Error {}

/** Appends values to one staged key: what a build's writer is handed instead of the key. */
export type Append = (values: string[]) => Promise<unknown>;

export interface PublishLock {
  key: string;
  token: string;
}

/** Ids a command when the legacy set is refilled from a published queue. */
const LEGACY_BATCH = 5000;

export class VersionStore {
  constructor(private readonly redis: Redis, private readonly keys: RedisKeys) {}

  /** The version users read (`current`), or null before the first build. */
  current(): Promise<string | null> {
    return this.redis.get(this.keys.current);
  }

  /** The read path's pointers and the rollout override in force (one round trip, pipelined). */
  async pointers(): Promise<{ current: string | null; previous: string | null; override: Partial<Rollout> }> {
    const [current, previous, override] = await Promise.all([this.current(), this.redis.get(this.keys.previous), readRolloutOverride(this.redis, this.keys)]);
    return { current, previous, override };
  }

  /** The version's ring as published, or null when its queue or meta is gone (ring.ts). */
  ring(version: string): Promise<RingVersion | null> {
    return readRingVersion(this.redis, this.keys, version);
  }

  /** Claims `userKey`'s next positions of `ring` (lua/ring-claim.lua). */
  claim(ring: RingVersion, userKey: string, count: number): Promise<Claim> {
    return claimPositions(this.redis, this.keys, ring, userKey, count);
  }

  /** Gives back a claim never served (lua/ring-unclaim.lua): how many positions stay consumed. */
  unclaim(ring: RingVersion, userKey: string, claim: Claim): Promise<number> {
    return unclaimPositions(this.redis, this.keys, ring, userKey, claim);
  }

  /** `userKey`'s next position in `ring`, read without claiming. */
  offset(ring: RingVersion, userKey: string): Promise<number> {
    return readOffset(this.redis, this.keys, ring, userKey);
  }

  /** The scores the build recorded at ring positions [start, start + count) (explain). */
  recordedScores(version: string, length: number, start: number, count: number): Promise<Array<number | null>> {
    return readRecordedScores(this.redis, this.keys, version, length, start, count);
  }

  /** The version's meta (live or shadow, `which`), or null when it has none. */
  readMeta(version: string, which: LiveOrShadow = 'live'): Promise<QueueMeta | null> {
    return readMeta(this.redis, this.keys, version, which);
  }

  /** The one definition of a complete version (see `Completeness`), with what is wrong when it is not. */
  async completeness(version: string, which: LiveOrShadow = 'live'): Promise<Completeness> {
    const { queue, meta } = liveOrShadowKeys(this.keys, version, which);
    const [[metaLength, buildId, offsetBuckets], queueLength] = await Promise.all([this.redis.hmGet(meta, ['length', 'buildId', 'offsetBuckets']), this.redis.lLen(queue)]);
    const length = Number(metaLength);
    if (metaLength === null || !(length > 0) || queueLength !== length) {
      return { complete: false, problem: `queue length ${queueLength}, meta.length ${metaLength ?? 'missing'}` };
    }
    // What a reader needs besides the queue (ring.ts readRingVersion): without it the API cannot read the ring.
    if (!(Number(offsetBuckets) > 0)) return { complete: false, problem: `meta.offsetBuckets ${offsetBuckets ?? 'missing'}: no ring a reader can use` };
    return { complete: true, length, buildId: buildId ?? '' };
  }

  /** Whether every step after the version's switch ran (meta `completedAt`): a build that failed after it is run again. */
  async isFinished(version: string): Promise<boolean> {
    return (await this.redis.hExists(this.keys.meta(version), 'completedAt')) === 1;
  }

  /** Records in the live meta when the version became current. */
  async markSwitched(version: string, at: string): Promise<void> {
    await this.redis.hSet(this.keys.meta(version), 'switchedAt', at);
  }

  /** Records in the live meta that every step after the switch ran (`isFinished`). */
  async markFinished(version: string, at: string): Promise<void> {
    await this.redis.hSet(this.keys.meta(version), 'completedAt', at);
  }

  /** Sets the shadow flag of the `which` meta (a held build says it is a shadow; a promoted one, before its publish, that it is live). */
  async markShadow(version: string, which: LiveOrShadow, shadow: boolean): Promise<void> {
    await this.redis.hSet(liveOrShadowKeys(this.keys, version, which).meta, 'shadow', shadow ? '1' : '0');
  }

  /** Stages queue and scores (`writeLists`), then meta, under the lock token with `ttlSeconds`: a killed build leaves nothing. */
  async stage(meta: QueueMeta, lock: PublishLock, ttlSeconds: number, writeLists: (lists: { queue: Append; scores: Append }) => Promise<void>): Promise<void> {
    const staged = this.stagingKeys(meta.version, lock.token);
    await writeLists({ queue: (ids) => this.redis.rPush(staged.queue, ids), scores: (scores) => this.redis.rPush(staged.scores, scores) });
    await this.redis.hSet(staged.meta, encodeMeta(meta));
    await Promise.all([staged.queue, staged.scores, staged.meta].map((key) => this.redis.expire(key, ttlSeconds)));
  }

  /** Deletes what a build staged and did not publish: only its own keys (their names hold its token). */
  async dropStaging(version: string, lock: PublishLock): Promise<void> {
    const staged = this.stagingKeys(version, lock.token);
    await this.redis.del([staged.queue, staged.scores, staged.meta]);
    await this.redis.del(this.keys.legacyIdsStaging(lock.token));
  }

  /**
   * Publishes the staged keys (`from: 'shadow'`: the shadow copy of `meta.buildId`, a promote) as
   * the version's `which` keys, expiring in `ttlSeconds`, in one script that first checks the lock
   * and the lengths (PublishRefusedError). A rebuild in place gives the offset buckets the same
   * expiry (other slots; a new version's buckets get it from their first claim).
   */
  async publish(meta: QueueMeta, lock: PublishLock, which: LiveOrShadow, ttlSeconds: number, from: 'staging' | 'shadow' = 'staging'): Promise<void> {
    const { version } = meta;
    const source = from === 'shadow' ? liveOrShadowKeys(this.keys, version, 'shadow') : this.stagingKeys(version, lock.token);
    const target = liveOrShadowKeys(this.keys, version, which);
    // A shadow never touches what readers of the version use: its offsets among them (R20).
    const rebuildInPlace = which === 'live' && (await this.redis.exists(target.meta)) === 1;
    try {
      // A promote publishes exactly the held build it was given (meta.buildId), as live.
      const held = from === 'shadow' ? [meta.buildId] : [];
      await runScript(this.redis, 'publish-version', [lock.key, source.queue, source.scores, source.meta, target.queue, target.scores, target.meta], [lock.token, String(ttlSeconds), String(meta.length), ...held]);
    } catch (err) {
      if (err instanceof Error && /LOCK_LOST|LENGTH_MISMATCH|BUILD_CHANGED/.test(err.message)) throw new PublishRefusedError(err.message);
      throw err;
    }
    if (rebuildInPlace) await Promise.all(offsetBucketKeys(this.keys, meta).map((key) => this.redis.expire(key, ttlSeconds)));
  }

  /** Refills the legacy set (R17): a staging set under the lock token, renamed over it in one step; `beforeSwap` between. */
  async refillLegacy(lock: PublishLock, ttlSeconds: number, fill: (add: Append) => Promise<void>, beforeSwap?: () => Promise<void>): Promise<void> {
    const staging = this.keys.legacyIdsStaging(lock.token);
    await fill((ids) => this.redis.sAdd(staging, ids));
    await this.redis.expire(staging, ttlSeconds);
    await beforeSwap?.();
    await this.redis.rename(staging, this.keys.legacyIds);
  }

  /** Refills the legacy set from the version's published live queue (a promote: no build columns at hand). */
  async refillLegacyFromQueue(version: string, lock: PublishLock, ttlSeconds: number): Promise<void> {
    const queue = this.keys.queue(version);
    await this.refillLegacy(lock, ttlSeconds, async (add) => {
      const length = await this.redis.lLen(queue);
      for (let start = 0; start < length; start += LEGACY_BATCH) {
        const ids = await this.redis.lRange(queue, start, start + LEGACY_BATCH - 1);
        if (ids.length > 0) await add(ids);
      }
    });
  }

  /** Whether the legacy random set exists (the controller refills it when not). */
  async legacyExists(): Promise<boolean> {
    return (await this.redis.exists(this.keys.legacyIds)) === 1;
  }

  /** Up to `count` random ids of the legacy set (SRANDMEMBER), and its size. */
  async sampleLegacy(count: number): Promise<{ ids: string[]; size: number }> {
    const [ids, size] = await Promise.all([this.redis.sRandMemberCount(this.keys.legacyIds, count), this.redis.sCard(this.keys.legacyIds)]);
    return { ids, size };
  }

  /** Ids of the version's queue (live or shadow, `which`) at list positions [start, stop] (LRANGE: -1 is the last). */
  readQueue(version: string, which: LiveOrShadow = 'live', start = 0, stop = -1): Promise<string[]> {
    return this.redis.lRange(liveOrShadowKeys(this.keys, version, which).queue, start, stop);
  }

  /** The ids at ring positions [start, start + count) of the live queue, wrapping at `length`. */
  readQueueRange(version: string, length: number, start: number, count: number): Promise<string[]> {
    return readQueueRange(this.redis, this.keys, version, length, start, count);
  }

  /** The queue's length and seconds to expiry, live or shadow (-2: no queue, -1: no expiry). */
  async queueState(version: string, which: LiveOrShadow = 'live'): Promise<{ length: number; ttlSeconds: number }> {
    const { queue } = liveOrShadowKeys(this.keys, version, which);
    const [length, ttlSeconds] = await Promise.all([this.redis.lLen(queue), this.redis.ttl(queue)]);
    return { length, ttlSeconds };
  }

  /** Versions that still have a live meta (they expire with their TTL), newest first. */
  async listVersions(): Promise<string[]> {
    const versions = new Set<string>();
    // The glob matches meta:{V} only (a staging or shadow meta ends after the tag); the name is parsed here, beside redis-keys.ts.
    for await (const batch of this.redis.scanKeys(this.keys.meta('*'), 500)) {
      for (const key of batch) {
        const version = /\{([^{}]*)\}$/.exec(key)?.[1];
        if (version && VERSION_PATTERN.test(version)) versions.add(version);
      }
    }
    return [...versions].sort().reverse();
  }

  private stagingKeys(version: string, token: string): { queue: string; scores: string; meta: string } {
    return { queue: this.keys.queueStaging(version, token), scores: this.keys.scoresStaging(version, token), meta: this.keys.metaStaging(version, token) };
  }
}
