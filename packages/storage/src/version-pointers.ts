/** The version pointers (SPEC R10, R17): `current`, and the one before it as `previous`. */
import { runScript } from './lua-scripts';
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';

export type SwitchOutcome = { switched: true; replaced: string | null } | { switched: false; current: string };

/** Makes `version` current by compare-and-set unless current is newer (`allowOlder`); the old becomes `previous` (R17). */
export async function makeCurrent(redis: Redis, keys: RedisKeys, version: string, allowOlder = false): Promise<SwitchOutcome> {
  const [switched, other] = await runScript<[number, string | null]>(redis, 'switch-current', [keys.current, keys.previous], [version, allowOlder ? '1' : '0']);
  return switched === 1 ? { switched: true, replaced: other ?? null } : { switched: false, current: other! };
}
