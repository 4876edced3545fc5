/** Fixtures for read-path tests: tokens, and queues published the way the build publishes them. */
import jwt from 'jsonwebtoken';
import { randomUUID } from 'node:crypto';
import { MIN_OFFSET_BUCKETS } from '@feed/domain';
import { makeCurrent, offsetBucketKeys, offsetSlot, parseCursor, readRingVersion, type Redis, type RedisKeys } from '@feed/storage';

export const TEST_JWT_SECRET = 'feed-insecure-local-jwt-secret';

export function tokenFor(userId: string, options: jwt.SignOptions = {}, secret = TEST_JWT_SECRET): string {
  return jwt.sign({ sub: userId }, secret, { algorithm: 'HS256', expiresIn: '1h', ...options });
}

export const bearer = (userId: string) => ({ Authorization: `Bearer ${tokenFor(userId)}` });

/** The version's offset layout as fixtures publish it (a build sizes it by yesterday's users). */
const ring = (version: string) => ({ version, offsetBuckets: MIN_OFFSET_BUCKETS });

/** Writes a version's queue and meta (a new build id) and makes it current, as a successful build does; its offsets start empty. */
export async function publishQueue(redis: Redis, keys: RedisKeys, version: string, ids: string[], options: { makeCurrent?: boolean; scores?: number[] } = {}): Promise<void> {
  await redis.del([keys.queue(version), keys.meta(version), keys.scores(version), ...offsetBucketKeys(keys, ring(version))]);
  if (ids.length) await redis.rPush(keys.queue(version), ids);
  if (options.scores?.length) await redis.rPush(keys.scores(version), options.scores.map(String));
  await redis.hSet(keys.meta(version), { version, length: String(ids.length), startOffset: '0', generatedAt: new Date().toISOString(), buildId: randomUUID(), offsetBuckets: String(MIN_OFFSET_BUCKETS) });
  await redis.expire(keys.queue(version), 3600);
  await redis.expire(keys.meta(version), 3600);
  if (options.makeCurrent !== false) await makeCurrent(redis, keys, version, true);
}

/** The version's offset layout as its meta says (a build's sizing), else as fixtures publish it. */
async function layoutOf(redis: Redis, keys: RedisKeys, version: string) {
  return (await readRingVersion(redis, keys, version)) ?? ring(version);
}

/** The user's next ring position in `version` from what Redis holds (its cursor modulo the length; null: never claimed). */
export async function offsetOf(redis: Redis, keys: RedisKeys, version: string, userKey: string): Promise<string | null> {
  const { key, field } = offsetSlot(keys, await layoutOf(redis, keys, version), userKey);
  const [cursor, length] = await Promise.all([redis.hGet(key, field).then(parseCursor), redis.hGet(keys.meta(version), 'length')]);
  return cursor === null ? null : String(cursor % (Number(length) || 1));
}

/** Sets the user's offset in `version` (a fixture's starting point). */
export async function setOffset(redis: Redis, keys: RedisKeys, version: string, userKey: string, offset: number): Promise<void> {
  const { key, field } = offsetSlot(keys, await layoutOf(redis, keys, version), userKey);
  await redis.hSet(key, field, String(offset));
}
