/**
 * The ring read (SPEC R11): the one implementation of the offset and the wrap, in Lua.
 *  - `claimRing` (lua/ring-claim.lua) takes the next positions for a user and moves the offset;
 *    a claim Redis runs past the caller's deadline moves nothing;
 *  - `unclaimRing` (lua/ring-unclaim.lua) gives a claim back when its answer came too late to be
 *    served (compare-and-set: never undoes a later claim);
 *  - `peekRing` (lua/ring-peek.lua) reads what a claim would take, moving nothing.
 */
import { runScript } from './lua-scripts';
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';

export interface RingSlice {
  /** Queue length; 0 when the version's queue is gone. */
  length: number;
  /** The user's offset before this read. */
  offset: number;
  /** Up to `count` ids in ring order, wrapping at the tail. */
  ids: string[];
}

/** A claim: a slice, or `late` when Redis ran it past its deadline (nothing moved). */
export type RingClaim = (RingSlice & { late?: false }) | { late: true; length: number };

const slice = (reply: Array<number | string>): RingSlice => ({ length: Number(reply[0]), offset: Number(reply[1] ?? 0), ids: reply.slice(2).map(String) });

/**
 * Claims the next `count` positions of `version`'s ring for `userKey`, moving the offset past
 * them, unless Redis runs the claim after `deadlineAt` (epoch ms; the caller's clock against
 * Redis's TIME, so hosts keep NTP time).
 */
export async function claimRing(redis: Redis, keys: RedisKeys, version: string, userKey: string, count: number, deadlineAt = 0): Promise<RingClaim> {
  const reply = await runScript<Array<number | string>>(redis, 'ring-claim', [keys.queue(version), keys.offset(version)], [userKey, String(count), String(Math.floor(deadlineAt))]);
  if (Number(reply[1]) === -1) return { late: true, length: Number(reply[0]) };
  return slice(reply);
}

/** Gives back `claim` of `userKey` if the offset is still where it left it; true when it did. */
export async function unclaimRing(redis: Redis, keys: RedisKeys, version: string, userKey: string, claim: RingSlice): Promise<boolean> {
  if (claim.length === 0 || claim.ids.length === 0) return false;
  const after = (claim.offset + claim.ids.length) % claim.length;
  return (await runScript<number>(redis, 'ring-unclaim', [keys.offset(version)], [userKey, String(after), String(claim.offset)])) === 1;
}

/** The `count` positions from `skip` past `userKey`'s offset, read without claiming them (explain). */
export async function peekRing(redis: Redis, keys: RedisKeys, version: string, userKey: string, count: number, skip = 0): Promise<RingSlice> {
  return slice(await runScript<Array<number | string>>(redis, 'ring-peek', [keys.queue(version), keys.offset(version)], [userKey, String(count), String(skip)]));
}
