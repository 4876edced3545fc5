/**
 * On-call's trail (SPEC D6): every change of the rollout override and every build requested by
 * hand, with who, when, and the values before and after, in one bounded Redis stream. Entries
 * hold settings and job names only, never a secret; reading them is behind the admin credentials.
 */
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';

/** About this many entries are kept (XADD MAXLEN ~: Redis trims whole nodes, so a few more may stay). */
export const AUDIT_TRAIL_MAX = 10_000;

export type AuditAction = 'rollout-set' | 'rollout-clear' | 'build-requested';

export interface AuditEntry {
  action: AuditAction;
  /** The admin user, or `user@host` for the CLI. */
  actor: string;
  /** Where it was done: `api`, `cli`, `dashboard`. */
  via: 'api' | 'cli' | 'dashboard';
  /** JSON-able values before and after the change (a build: what was asked, and what came of it). */
  before: unknown;
  after: unknown;
}

export interface AuditRecord extends AuditEntry {
  id: string;
  /** ISO-8601, from the stream id (Redis's clock). */
  at: string;
}

export async function recordAudit(redis: Redis, keys: RedisKeys, entry: AuditEntry): Promise<void> {
  await redis.xAdd(
    keys.auditTrail,
    '*',
    { action: entry.action, actor: entry.actor, via: entry.via, before: JSON.stringify(entry.before ?? null), after: JSON.stringify(entry.after ?? null) },
    { TRIM: { strategy: 'MAXLEN', strategyModifier: '~', threshold: AUDIT_TRAIL_MAX } },
  );
}

const parseJson = (text: string | undefined): unknown => {
  try {
    return text === undefined ? null : JSON.parse(text);
  } catch {
    return text;
  }
};

/** The newest `count` entries, newest first. */
export async function readAudit(redis: Redis, keys: RedisKeys, count = 50): Promise<AuditRecord[]> {
  const entries = await redis.xRevRange(keys.auditTrail, '+', '-', { COUNT: count });
  return entries.map(({ id, message }) => ({
    id,
    at: new Date(Number(id.split('-')[0])).toISOString(),
    action: message.action as AuditAction,
    actor: message.actor,
    via: message.via as AuditEntry['via'],
    before: parseJson(message.before),
    after: parseJson(message.after),
  }));
}
