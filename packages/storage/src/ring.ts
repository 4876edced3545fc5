/** The ring read (SPEC R11) through lua/ring-read.lua: the one implementation of the offset and the wrap. */
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

/**
 * Claims the next `count` positions of `version`'s ring for `userKey`, moving the offset past them.
 * With `peek`, reads the same positions (from `peek.skip` past the offset) and moves nothing.
 */
export async function readRing(redis: Redis, keys: RedisKeys, version: string, userKey: string, count: number, peek?: { skip: number }): Promise<RingSlice> {
  const args = [userKey, String(count), ...(peek ? ['peek', String(peek.skip)] : [])];
  const reply = await runScript<Array<number | string>>(redis, 'ring-read', [keys.queue(version), keys.offset(version)], args);
  return { length: Number(reply[0]), offset: Number(reply[1] ?? 0), ids: reply.slice(2).map(String) };
}
