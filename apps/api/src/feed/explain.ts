/**
 * Explain (for the people who tune the feed): what a user's next page would be and why, without
 * moving their offset. Replayable: the build is deterministic, so a version can be rebuilt with
 * `pnpm cli build --at` and explained again.
 */
import { BLOCK_SIZE, isNew } from '@feed/domain';
import { readMeta, peekRing, type Redis, type RedisKeys, type VideoModel } from '@feed/storage';
import type { Identity } from '../http/identity';
import type { UserHistory } from '../users/user-history';
import { judgeCandidate, type Verdict } from './candidate-verdict';
import type { VideoCatalog } from './video-catalog';

export interface ExplainedCandidate {
  position: number;
  vid: string;
  block: number;
  pool: 'high' | 'new' | 'unknown';
  /** The score the build used (recommendScore written back by that build). */
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

export async function explainNextPage(
  deps: { redis: Redis; keys: RedisKeys; catalog: VideoCatalog; videos: VideoModel; history: UserHistory },
  identity: Identity,
  version: string,
  pageSize = 20,
): Promise<Explanation | null> {
  const { redis, keys } = deps;
  const [{ length, offset }, meta, filter] = await Promise.all([
    peekRing(redis, keys, version, identity.key, 0),
    readMeta(redis, keys, version),
    deps.history.load(identity.key),
  ]);
  if (length === 0) return null;
  const generatedAt = meta ? Date.parse(meta.generatedAt) : null;
  const candidates: ExplainedCandidate[] = [];
  const inPage = new Set<string>();
  let served = 0;
  // Scan as the ring read would: until the page is full or one circle is done.
  for (let scanned = 0; served < pageSize && scanned < length; ) {
    // The ring read itself, read-only: the same positions a claim would take, the same wrap.
    const { ids } = await peekRing(redis, keys, version, identity.key, Math.min(pageSize - served, length - scanned), scanned);
    const start = (offset + scanned) % length;
    const [videos, scores] = await Promise.all([
      deps.catalog.load(ids),
      deps.videos.find({ _id: { $in: ids } }).select({ recommendScore: 1 }).lean(),
    ]);
    const scoreOf = new Map(scores.map((v) => [v._id.toHexString(), v.recommendScore ?? null]));
    ids.forEach((vid, i) => {
      const position = (start + i) % length;
      const video = videos.get(vid);
      const verdict = judgeCandidate(vid, video, filter, identity, inPage);
      if (verdict === 'serve') {
        inPage.add(vid);
        served++;
      }
      const reviewAt = video?.reviewAt ? new Date(video.reviewAt).getTime() : null;
      candidates.push({
        position,
        vid,
        block: Math.floor(position / BLOCK_SIZE),
        pool: generatedAt === null || !video ? 'unknown' : isNew(reviewAt, generatedAt) ? 'new' : 'high',
        score: scoreOf.get(vid) ?? null,
        verdict,
      });
    });
    scanned += ids.length;
  }
  return { user: identity.key, version, queueLength: length, offset, generatedAt: meta?.generatedAt ?? null, candidates };
}
