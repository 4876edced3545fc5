/** Fixtures for read-path tests: tokens, and queues published the way the build publishes them. */
import jwt from 'jsonwebtoken';
import { makeCurrent, type Redis, type RedisKeys } from '@feed/storage';

export const TEST_JWT_SECRET = 'local-development-jwt-secret';

export function tokenFor(userId: string, options: jwt.SignOptions = {}, secret = TEST_JWT_SECRET): string {
  return jwt.sign({ sub: userId }, secret, { algorithm: 'HS256', expiresIn: '1h', ...options });
}

export const bearer = (userId: string) => ({ Authorization: `Bearer ${tokenFor(userId)}` });

/** Writes a version's queue and meta and makes it current, as a successful build does. */
export async function publishQueue(redis: Redis, keys: RedisKeys, version: string, ids: string[], options: { makeCurrent?: boolean } = {}): Promise<void> {
  await redis.del([keys.queue(version), keys.meta(version), keys.offset(version)]);
  if (ids.length) await redis.rPush(keys.queue(version), ids);
  await redis.hSet(keys.meta(version), { version, length: String(ids.length), startOffset: '0', generatedAt: new Date().toISOString() });
  await redis.expire(keys.queue(version), 3600);
  await redis.expire(keys.meta(version), 3600);
  if (options.makeCurrent !== false) await makeCurrent(redis, keys, version, true);
}
