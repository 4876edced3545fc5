/**
 * What `pnpm cli inspect` and the inspector page show: the versions in Redis, their meta and
 * block composition, and how a shadow (or any) version differs from current (R20).
 */
import { countDuplicates, expandBlocks, fullBlockRatio } from '@feed/domain';
import { readMeta, type QueueMeta, type Redis, type RedisKeys } from '@feed/storage';

export interface VersionReport {
  version: string;
  role: Array<'current' | 'previous' | 'shadow'>;
  meta: QueueMeta | null;
  queueLength: number;
  ttlSeconds: number;
  usersWithOffset: number;
  /** Blocks that are exactly 17 high + 3 new, over all blocks. */
  fullBlockRatio: number;
  /** Blocks by composition, e.g. "17+3" -> 10. */
  compositions: Record<string, number>;
}

export interface VersionDiff {
  base: string;
  other: string;
  baseLength: number;
  otherLength: number;
  /** Ids in both queues, over the larger queue's length. */
  overlap: number;
  onlyInBase: number;
  onlyInOther: number;
  duplicatesInOther: number;
}

export interface Pointers {
  current: string | null;
  previous: string | null;
  shadow: string | null;
}

export async function versionPointers(redis: Redis, keys: RedisKeys): Promise<Pointers> {
  const [current, previous, shadow] = await Promise.all([redis.get(keys.current), redis.get(keys.previous), redis.get(keys.shadow)]);
  return { current, previous, shadow };
}

/** A version's live queue (what the API serves) or its shadow build's queue (R20). */
export type QueueSlot = 'live' | 'shadow';

const queueKey = (keys: RedisKeys, version: string, slot: QueueSlot) => (slot === 'shadow' ? keys.shadowQueue(version) : keys.queue(version));

/** One version's report; `pointers` (read once by the caller) give its roles. A shadow has no readers, so no offsets. */
export async function reportVersion(redis: Redis, keys: RedisKeys, version: string, pointers: Pointers, slot: QueueSlot = 'live'): Promise<VersionReport> {
  const [meta, queueLength, ttlSeconds, usersWithOffset] = await Promise.all([
    readMeta(redis, keys, version, slot),
    redis.lLen(queueKey(keys, version, slot)),
    redis.ttl(queueKey(keys, version, slot)),
    slot === 'shadow' ? 0 : redis.hLen(keys.offset(version)),
  ]);
  const blocks = meta ? expandBlocks(meta.blocks) : [];
  const compositions: Record<string, number> = {};
  for (const b of blocks) compositions[`${b.high}+${b.fresh}`] = (compositions[`${b.high}+${b.fresh}`] ?? 0) + 1;
  const role = slot === 'shadow' ? (['shadow'] as const) : (['current', 'previous'] as const).filter((r) => pointers[r] === version);
  return { version, role: [...role], meta, queueLength, ttlSeconds, usersWithOffset, fullBlockRatio: fullBlockRatio(blocks), compositions };
}

/** How `other`'s queue (live, or its shadow build's) differs from `base`'s live queue. */
export async function diffVersions(redis: Redis, keys: RedisKeys, base: string, other: string, otherSlot: QueueSlot = 'live'): Promise<VersionDiff> {
  const [a, b] = await Promise.all([redis.lRange(keys.queue(base), 0, -1), redis.lRange(queueKey(keys, other, otherSlot), 0, -1)]);
  const inA = new Set(a);
  const both = b.filter((id) => inA.has(id)).length;
  const inB = new Set(b);
  return {
    base,
    other,
    baseLength: a.length,
    otherLength: b.length,
    overlap: Math.max(a.length, b.length) ? both / Math.max(a.length, b.length) : 1,
    onlyInBase: a.filter((id) => !inB.has(id)).length,
    onlyInOther: b.length - both,
    duplicatesInOther: countDuplicates(b),
  };
}

/** Versions that still have a meta hash (they expire with their TTL). */
export async function listVersions(redis: Redis, keys: RedisKeys): Promise<string[]> {
  const versions = new Set<string>();
  const match = keys.meta('*');
  for await (const batch of redis.scanKeys(match, 500)) {
    for (const key of batch) {
      const version = /\{(\d{8})\}$/.exec(key)?.[1];
      if (version) versions.add(version);
    }
  }
  return [...versions].sort().reverse();
}

export interface VersionsSummary {
  pointers: Pointers;
  versions: VersionReport[];
  /** The last shadow build (its own keys) and how it differs from current. */
  shadow: VersionReport | null;
  shadowDiff: VersionDiff | null;
}

/** What `pnpm cli inspect` prints and the inspector page shows: `versions` defaults to every version in Redis. */
export async function summarizeVersions(redis: Redis, keys: RedisKeys, versions?: string[]): Promise<VersionsSummary> {
  const pointers = await versionPointers(redis, keys);
  const listed = versions ?? (await listVersions(redis, keys));
  const [reports, shadow, shadowDiff] = await Promise.all([
    Promise.all(listed.map((v) => reportVersion(redis, keys, v, pointers))),
    pointers.shadow ? reportVersion(redis, keys, pointers.shadow, pointers, 'shadow') : null,
    pointers.shadow && pointers.current ? diffVersions(redis, keys, pointers.current, pointers.shadow, 'shadow') : null,
  ]);
  return { pointers, versions: reports, shadow: shadow?.meta ? shadow : null, shadowDiff: shadow?.meta ? shadowDiff : null };
}
