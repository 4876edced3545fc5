/**
 * The rollout kill switch (SPEC R16): environment defaults for `enabled` and `percent`, overridden
 * in one Redis hash (every API within CURRENT_CACHE_MS; cleared: the environment's). Writes go
 * through ramp-store.ts's `commit`, with the ramp (R23).
 */
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';

export interface Rollout {
  enabled: boolean;
  percent: number;
}

export type RolloutSource = 'override' | 'environment';

export interface RolloutInForce extends Rollout {
  source: { enabled: RolloutSource; percent: RolloutSource };
}

/** The override's fields; a field that is absent or unreadable is not overridden. */
export async function readRolloutOverride(redis: Redis, keys: RedisKeys): Promise<Partial<Rollout>> {
  return overrideOf(await redis.hGetAll(keys.rollout));
}

/** The override's fields from the hash as read. */
export function overrideOf(fields: Record<string, string>): Partial<Rollout> {
  const override: Partial<Rollout> = {};
  if (fields.enabled === 'true' || fields.enabled === 'false') override.enabled = fields.enabled === 'true';
  const percent = Number(fields.percent);
  if (fields.percent !== undefined && Number.isInteger(percent) && percent >= 0 && percent <= 100) override.percent = percent;
  return override;
}

export function resolveRollout(defaults: Rollout, override: Partial<Rollout>): RolloutInForce {
  return {
    enabled: override.enabled ?? defaults.enabled,
    percent: override.percent ?? defaults.percent,
    source: { enabled: override.enabled === undefined ? 'environment' : 'override', percent: override.percent === undefined ? 'environment' : 'override' },
  };
}
