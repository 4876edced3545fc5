/**
 * Explain: what a user's next page would be and why, without moving their offset (ring-scan.ts,
 * peeking). Replayable: the build is deterministic, so `pnpm cli build --at` rebuilds a version.
 */
import { BLOCK_SIZE, isNew } from '@feed/domain';
import type { RequestBudget, VersionStore } from '@feed/storage';
import type { Identity } from '../http/identity';
import type { UserHistory } from '@feed/storage';
import type { Verdict } from './candidate-verdict';
import { RingReader, scanRing } from './ring-scan';
import type { VideoCatalog } from './video-catalog';

export interface ExplainedCandidate {
  position: number;
  vid: string;
  block: number;
  pool: 'high' | 'new' | 'unknown';
  /** The score the build of this version used (recorded beside its queue), whatever the document holds now. */
  score: number | null;
  verdict: Verdict;
}

export interface Explanation {
  user: string;
  version: string;
  queueLength: number;
  offset: number;
  generatedAt: string | null;
  candidates: ExplainedCandidate[];
}

export interface ExplainDeps {
  versions: VersionStore;
  catalog: VideoCatalog;
  history: UserHistory;
  /** The feed's reader (the API's queue copies); the CLI reads positions from Redis. */
  reader?: RingReader;
}

/** Every Redis read within `budget.redis` and every MongoDB read within `budget.mongo`: a stalled store is a 503, not a hang. */
export async function explainNextPage(deps: ExplainDeps, identity: Identity, version: string, pageSize: number, budget: RequestBudget): Promise<Explanation | null> {
  const { versions } = deps;
  const { redis } = budget;
  const [ring, meta] = await redis.run(() => Promise.all([versions.ring(version), versions.readMeta(version)]), 'version');
  if (!ring) return null;
  const reader = deps.reader ?? new RingReader(versions);
  const offset = await redis.run(() => versions.offset(ring, identity.key), 'offset');
  const filter = redis.run(() => deps.history.load(identity.key), 'user filter');
  // Awaited by the scan; handled here too, so a scan that fails first leaves no unhandled rejection.
  filter.catch(() => undefined);
  const scanned = await scanRing({
    ring,
    identity,
    pageSize,
    catalog: deps.catalog,
    filter,
    budget: budget.mongo,
    // The positions a claim would take next, read-only: the same offset, the same wrap.
    positions: reader.peekFrom(ring, offset, redis),
  });
  // The scan's positions run on from the offset: one range of the recorded scores.
  const scores = await redis.run(() => versions.recordedScores(version, ring.length, offset, scanned.length), 'recorded scores');
  const generatedAt = meta ? Date.parse(meta.generatedAt) : null;
  const candidates = scanned.map(({ position, vid, video, verdict }, i): ExplainedCandidate => {
    const reviewAt = video?.reviewAt ?? null;
    return {
      position,
      vid,
      block: Math.floor(position / BLOCK_SIZE),
      pool: generatedAt === null || !video ? 'unknown' : isNew(reviewAt, generatedAt) ? 'new' : 'high',
      score: scores[i],
      verdict,
    };
  });
  return { user: identity.key, version, queueLength: ring.length, offset, generatedAt: meta?.generatedAt ?? null, candidates };
}
