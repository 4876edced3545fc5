/**
 * The rollout kill switch (SPEC R16): the environment gives the defaults of `enabled` and
 * `percent`; on-call overrides either at run time in one Redis hash, and every API instance
 * applies it within CURRENT_CACHE_MS. Clearing its fields returns to the environment's values.
 */
import { logger } from '@feed/logger';
import type { AuditEntry, AuditTrail } from './audit-trail';
import { runScript } from './lua-scripts';
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

/*
 * The override's `revision` field: every write and clear bumps it (lua/rollout-write.lua), so the
 * ramp (R23) tells a human's change that was undone before its next check from a write of its own
 * that was lost, and writes only over the revision it observed.
 */
/**
 * Sets the given fields of the override (callers validate: enabled boolean, percent 0-100
 * integer), bumping its revision in the same step. With `ifRevision` (the ramp's write, R23), only
 * when the revision is still that one, so a human's change that landed after the ramp read it
 * wins (lua/rollout-write.lua). False when it was refused (nothing written).
 */
export async function writeRolloutOverride(redis: Redis, keys: RedisKeys, override: Partial<Rollout>, ifRevision?: number): Promise<boolean> {
  const fields = [
    ...(override.enabled !== undefined ? ['enabled', String(override.enabled)] : []),
    ...(override.percent !== undefined ? ['percent', String(override.percent)] : []),
  ];
  if (fields.length === 0) return true;
  return (await runScript<number>(redis, 'rollout-write', [keys.rollout], [ifRevision === undefined ? '' : String(ifRevision), 'set', ...fields])) === 1;
}

/** Removes the overridden fields (the environment rules again); the revision stays, bumped in the same step. */
export async function clearRolloutOverride(redis: Redis, keys: RedisKeys): Promise<void> {
  await runScript(redis, 'rollout-write', [keys.rollout], ['', 'clear']);
}

export function resolveRollout(defaults: Rollout, override: Partial<Rollout>): RolloutInForce {
  return {
    enabled: override.enabled ?? defaults.enabled,
    percent: override.percent ?? defaults.percent,
    source: { enabled: override.enabled === undefined ? 'environment' : 'override', percent: override.percent === undefined ? 'environment' : 'override' },
  };
}

/**
 * On-call's change of the override: sets the given fields (or clears the override), and records
 * who did it with the values in force before and after in the audit trail (D6).
 */
export async function changeRollout(
  redis: Redis,
  keys: RedisKeys,
  environment: Rollout,
  change: Partial<Rollout> | 'clear',
  who: Pick<AuditEntry, 'actor' | 'via'>,
  trail: AuditTrail,
): Promise<RolloutInForce> {
  const before = resolveRollout(environment, await readRolloutOverride(redis, keys));
  if (change === 'clear') await clearRolloutOverride(redis, keys);
  else await writeRolloutOverride(redis, keys, change);
  const after = resolveRollout(environment, await readRolloutOverride(redis, keys));
  const entry: AuditEntry = { action: change === 'clear' ? 'rollout-clear' : 'rollout-set', ...who, before, after };
  try {
    await trail.record(entry);
  } catch (err) {
    // The change is in force already, and the kill switch must work while MongoDB is down: answering
    // it as failed would mislead on-call. The entry the trail could not take goes to the log instead.
    logger.error('audit trail unwritable', { ...entry, err });
  }
  return after;
}
