/**
 * The ring read (SPEC R11, R22): one offset per user per version, and the version's immutable
 * queue. Offsets are spread over `offsetBuckets` hashes per version, each with its own hash tag,
 * so on a cluster claims land on every master. Claims (lua/ring-claim.lua) read no clock (R11); a
 * claim answered too late is given back exactly (lua/ring-unclaim.lua). Sizing, and why ids may
 * come from any copy of the queue: docs/design.md, "Layout at scale".
 */
import { hash } from 'node:crypto';
import { runScript } from './lua-scripts';
import { NotDurableError, type Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';

/** What a reader needs of a published version: read from its meta and its queue's expiry. */
export interface RingVersion {
  version: string;
  length: number;
  /** The build that published the queue (its lock token): changes when a forced rebuild replaces it. */
  buildId: string;
  offsetBuckets: number;
  /** When the queue expires (epoch ms): the offset buckets are given the same expiry. */
  expiresAt: number;
}

/** The version's ring, or null when its queue or meta is gone (a short queue still reads: completeness is VersionStore's). */
export async function readRingVersion(redis: Redis, keys: RedisKeys, version: string): Promise<RingVersion | null> {
  const [[length, buildId, offsetBuckets], expiresAt] = await Promise.all([
    redis.hmGet(keys.meta(version), ['length', 'buildId', 'offsetBuckets']),
    redis.pExpireTime(keys.queue(version)),
  ]);
  // -2: the queue does not exist. A queue without expiry (-1) is one a test or on-call wrote by hand.
  // Every build writes `offsetBuckets` into the meta: one without it is not a ring that can be read.
  const buckets = Number(offsetBuckets);
  if (length === null || Number(length) <= 0 || expiresAt === -2 || !(buckets > 0)) return null;
  return { version, length: Number(length), buildId: buildId ?? '', offsetBuckets: buckets, expiresAt: Math.max(0, expiresAt) };
}

/** Where `userKey`'s offset of `ring` lives: its bucket's key and its 8-byte field. */
export function offsetSlot(keys: RedisKeys, ring: Pick<RingVersion, 'version' | 'offsetBuckets'>, userKey: string): { key: string; field: Buffer } {
  // The one-shot hash: half the CPU of createHash().update().digest() (one per page).
  const digest = hash('sha1', userKey, 'buffer');
  return { key: keys.offset(ring.version, digest.readUInt32BE(0) % ring.offsetBuckets), field: digest.subarray(4, 12) };
}

/** Every offset bucket key of `ring` (the build's TTL refresh, the inspector's user count). */
export function offsetBucketKeys(keys: RedisKeys, ring: Pick<RingVersion, 'version' | 'offsetBuckets'>): string[] {
  return Array.from({ length: ring.offsetBuckets }, (_, b) => keys.offset(ring.version, b));
}

/** Users with an offset in `version`: the sum over its offset buckets (the inspector, the build's sizing). */
export async function countUsersWithOffset(redis: Redis, keys: RedisKeys, version: string, offsetBuckets: number): Promise<number> {
  return (await Promise.all(offsetBucketKeys(keys, { version, offsetBuckets }).map((key) => redis.hLen(key)))).reduce((a, b) => a + b, 0);
}

/** The scores the build recorded at ring positions [start, start + count) of `version` (explain); null where none. */
export async function readRecordedScores(redis: Redis, keys: RedisKeys, version: string, length: number, start: number, count: number): Promise<Array<number | null>> {
  const scores = await readListRange(redis, keys.scores(version), length, start, count);
  return Array.from({ length: Math.min(count, length) }, (_, i) => (scores[i] === undefined ? null : Number(scores[i])));
}

/** Positions claimed: where they start in the ring, how many, and where in the user's absolute sequence. */
export interface Claim {
  /** The ring position of the first claimed position (`at % length`). */
  offset: number;
  count: number;
  /** The absolute position of the first one (see ring-claim.lua): what a give-back names. */
  at: number;
}

/** The stored cursor (lua/includes/ring-cursor.lua): absolute positions claimed and not given back. */
export function parseCursor(stored: string | null): number | null {
  if (stored === null) return null;
  const comma = stored.indexOf(',');
  return Number(comma === -1 ? stored : stored.slice(0, comma)) || 0;
}

/** Claims up to min(count, length) next positions and moves the cursor; no clock: a claim given up on is given back. */
export async function claimPositions(redis: Redis, keys: RedisKeys, ring: RingVersion, userKey: string, count: number): Promise<Claim> {
  const { key, field } = offsetSlot(keys, ring, userKey);
  const take = Math.min(count, ring.length);
  const asClaim = ([at, claimed]: [number, number]): Claim => ({ offset: Number(at) % ring.length, count: Number(claimed), at: Number(at) });
  try {
    return asClaim(await runScript<[number, number]>(redis, 'ring-claim', [key], [field, String(take), String(ring.length), String(ring.expiresAt)]));
  } catch (err) {
    // Ran but not confirmed behind Sentinels (NotDurableError): the claim it made, for the caller to give back.
    if (err instanceof NotDurableError && err.written) err.written.reply = asClaim(err.written.reply as [number, number]);
    throw err;
  }
}

/**
 * Gives back exactly `claim`'s positions, whatever claims ran since (ring-unclaim.lua). Answers how
 * many stay consumed unserved: 0; the claim's count when the offset is gone; or an older hole's
 * size when the user has more out-of-order give-backs than the cursor keeps.
 */
export async function unclaimPositions(redis: Redis, keys: RedisKeys, ring: RingVersion, userKey: string, claim: Claim): Promise<number> {
  if (claim.count === 0) return 0;
  const { key, field } = offsetSlot(keys, ring, userKey);
  try {
    // One command: given back on the connection the caller checked, even where the script is not cached (rare: only claims never served).
    return Number(await runScript<number>(redis, 'ring-unclaim', [key], [field, String(claim.at), String(claim.count)], true));
  } catch (err) {
    // Ran but not confirmed behind Sentinels: given back on the node that holds the claim (the caller sent it over the claim's connection).
    if (err instanceof NotDurableError && err.written) return Number(err.written.reply);
    throw err;
  }
}

/** The user's next position in `ring`, read without claiming anything. */
export async function readOffset(redis: Redis, keys: RedisKeys, ring: RingVersion, userKey: string): Promise<number> {
  const { key, field } = offsetSlot(keys, ring, userKey);
  return (parseCursor(await redis.hGet(key, field)) ?? 0) % ring.length;
}

/** The ids at ring positions [start, start + count) of `version`'s queue, wrapping at `length`. */
export function readQueueRange(redis: Redis, keys: RedisKeys, version: string, length: number, start: number, count: number): Promise<string[]> {
  return readListRange(redis, keys.queue(version), length, start, count);
}

/** Entries [start, start + count) of a list read as a ring of `length`: one LRANGE, two across the tail. */
async function readListRange(redis: Redis, key: string, length: number, start: number, count: number): Promise<string[]> {
  const first = start % length;
  const last = first + Math.min(count, length) - 1;
  if (last < length) return redis.lRange(key, first, last);
  const [head, wrapped] = await Promise.all([redis.lRange(key, first, length - 1), redis.lRange(key, 0, last - length)]);
  return [...head, ...wrapped];
}
