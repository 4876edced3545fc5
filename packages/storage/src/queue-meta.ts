/** The meta hash of one version (SPEC R10): what a build wrote, read back by API, worker and CLI. */
import { MIN_OFFSET_BUCKETS, type BlockRun } from '@feed/domain';
import type { Redis } from './redis-client';
import { liveOrShadowKeys, type LiveOrShadow, type RedisKeys } from './redis-keys';

export interface QueueMeta {
  version: string;
  length: number;
  generatedAt: string;
  startOffset: 0;
  candidateCount: number;
  highCount: number;
  newCount: number;
  finalCount: number;
  duplicateCount: number;
  /** Eligible documents the build skipped or read with a field taken as 0, by reason (R1a). */
  documentIssues: Record<string, number>;
  /** Run-length block composition (high vs new per block). */
  blocks: BlockRun[];
  builtAt: string;
  /** The build that wrote this version (its lock token): a forced rebuild in place changes it (R22). */
  buildId: string;
  /** Hashes the version's offsets are spread over (R22, ring.ts). */
  offsetBuckets: number;
  /** Set when the version became current; absent for shadow builds. */
  switchedAt?: string;
  /** Set when every step after the switch (legacy refill, score write-back) finished. */
  completedAt?: string;
  shadow: boolean;
}

export function encodeMeta(meta: QueueMeta): Record<string, string> {
  const fields: Record<string, string> = {
    version: meta.version,
    length: String(meta.length),
    generatedAt: meta.generatedAt,
    startOffset: '0',
    candidateCount: String(meta.candidateCount),
    highCount: String(meta.highCount),
    newCount: String(meta.newCount),
    finalCount: String(meta.finalCount),
    duplicateCount: String(meta.duplicateCount),
    documentIssues: JSON.stringify(meta.documentIssues),
    blocks: JSON.stringify(meta.blocks),
    builtAt: meta.builtAt,
    buildId: meta.buildId,
    offsetBuckets: String(meta.offsetBuckets),
    shadow: meta.shadow ? '1' : '0',
  };
  if (meta.switchedAt) fields.switchedAt = meta.switchedAt;
  return fields;
}

export function decodeMeta(fields: Record<string, string>): QueueMeta | null {
  if (!fields || fields.length === undefined) return null;
  return {
    version: fields.version,
    length: Number(fields.length),
    generatedAt: fields.generatedAt,
    startOffset: 0,
    candidateCount: Number(fields.candidateCount),
    highCount: Number(fields.highCount),
    newCount: Number(fields.newCount),
    finalCount: Number(fields.finalCount),
    duplicateCount: Number(fields.duplicateCount),
    documentIssues: JSON.parse(fields.documentIssues ?? '{}') as Record<string, number>,
    blocks: JSON.parse(fields.blocks ?? '[]') as BlockRun[],
    builtAt: fields.builtAt,
    buildId: fields.buildId ?? '',
    // The build always writes it; a meta written by hand without it shows the minimum count.
    offsetBuckets: Number(fields.offsetBuckets) || MIN_OFFSET_BUCKETS,
    switchedAt: fields.switchedAt,
    completedAt: fields.completedAt,
    shadow: fields.shadow === '1',
  };
}

/** A version's live meta, or (`which: 'shadow'`) the meta of its shadow build (R20). */
export async function readMeta(redis: Redis, keys: RedisKeys, version: string, which: LiveOrShadow = 'live'): Promise<QueueMeta | null> {
  return decodeMeta((await redis.hGetAll(liveOrShadowKeys(keys, version, which).meta)) as Record<string, string>);
}
