/** SPEC R7, R8: the new pool and the high pool, each in its serving order. */

export const NEW_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface Candidate {
  /** 24-hex ObjectId string: string order is ObjectId order. */
  id: string;
  score: number;
  /** Epoch milliseconds of approval; null when unknown (never "new"). */
  reviewAt: number | null;
}

export interface Pools {
  /** Approved within the 24 h before generatedAt: reviewAt desc, id desc. */
  fresh: string[];
  /** Every other candidate: score desc, reviewAt desc, id desc. */
  high: string[];
}

const byIdDesc = (a: Candidate, b: Candidate): number => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
const byReviewDesc = (a: Candidate, b: Candidate): number => (b.reviewAt ?? -Infinity) - (a.reviewAt ?? -Infinity);

/** True when `reviewAt` lies in [generatedAt - 24 h, generatedAt]. */
export function isNew(reviewAt: number | null, generatedAt: number): boolean {
  return reviewAt !== null && reviewAt >= generatedAt - NEW_WINDOW_MS && reviewAt <= generatedAt;
}

/** Splits eligible candidates into the two pools; a new video is not also in the high pool. */
export function splitPools(candidates: Iterable<Candidate>, generatedAt: number): Pools {
  const fresh: Candidate[] = [];
  const high: Candidate[] = [];
  for (const c of candidates) (isNew(c.reviewAt, generatedAt) ? fresh : high).push(c);
  fresh.sort((a, b) => byReviewDesc(a, b) || byIdDesc(a, b));
  high.sort((a, b) => b.score - a.score || byReviewDesc(a, b) || byIdDesc(a, b));
  return { fresh: fresh.map((c) => c.id), high: high.map((c) => c.id) };
}
