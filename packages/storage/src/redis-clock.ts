/** Redis's TIME, for the API's skew gauge (SPEC R11: never relied on), by a script keyed on `current` to route on a cluster. */
import { runScript } from './lua-scripts';
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';

/** Redis's clock in ms since the epoch. */
export async function redisClockMs(redis: Redis, keys: RedisKeys): Promise<number> {
  const [seconds, micros] = await runScript<[string, string]>(redis, 'redis-time', [keys.current], []);
  return Number(seconds) * 1000 + Number(micros) / 1000;
}
