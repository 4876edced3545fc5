/** The version pointers (SPEC R10, R17): `current`, and the one before it as `previous`. */
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';

/**
 * Makes `version` current with one `SET ... GET`; the version it replaces becomes `previous`
 * (R17's first fallback). Returns that replaced version, or null.
 */
export async function makeCurrent(redis: Redis, keys: RedisKeys, version: string): Promise<string | null> {
  const previous = await redis.set(keys.current, version, { GET: true });
  if (previous && previous !== version) await redis.set(keys.previous, previous);
  return previous;
}
