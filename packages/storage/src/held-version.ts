/**
 * The version the release gate held (SPEC R23), beside the shadow pointer: the controller knows the
 * day is handled, and a promote switches exactly the judged build (its buildId).
 */
import type { GateVerdict } from '@feed/domain';
import { logger } from '@feed/logger';
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';

export interface HeldVersion {
  version: string;
  /** The held build (meta.buildId of its shadow keys): a promote refuses another shadow build of the day. */
  buildId: string;
  /** ISO-8601, the worker's clock. */
  heldAt: string;
  /** The version that was current when it was judged. */
  current: string | null;
  verdict: Pick<GateVerdict, 'outcome' | 'reasons' | 'compared' | 'holdDrop'>;
}

/** The held version, or null when none is (or the record is unreadable: nothing to promote then). */
export async function readHeldVersion(redis: Redis, keys: RedisKeys): Promise<HeldVersion | null> {
  const text = await redis.get(keys.held);
  if (!text) return null;
  try {
    const held = JSON.parse(text) as HeldVersion;
    if (typeof held?.version === 'string' && typeof held.buildId === 'string') return held;
  } catch {
    // Logged below, not counted: the controller then reads the day as not held and builds it again.
  }
  logger.warn('held version record unreadable: read as none held', { key: keys.held, record: text.slice(0, 200) });
  return null;
}
