/** SPEC R7, R8: the new pool and the high pool, each in its serving order. */

export const NEW_WINDOW_MS = 24 * 60 * 60 * 1000;

/** The candidates as the pool rules read them (review time -Infinity when unknown); the build's columns fit. */
export interface PoolCandidates {
  readonly length: number;
  readonly scores: Float64Array;
  readonly reviewAt: Float64Array;
  /** ObjectId order: negative when candidate a's id sorts before b's. */
  compareIds(a: number, b: number): number;
}

/** Each pool holds candidate indices (into the columns) in serving order. */
export interface Pools {
  /** Approved within the 24 h before generatedAt: reviewAt desc, id desc. */
  fresh: Uint32Array;
  /** Every other candidate: score desc, reviewAt desc, id desc. */
  high: Uint32Array;
}

/** True when `reviewAt` lies in [generatedAt - 24 h, generatedAt]. */
export function isNew(reviewAt: number | null, generatedAt: number): boolean {
  return reviewAt !== null && reviewAt >= generatedAt - NEW_WINDOW_MS && reviewAt <= generatedAt;
}

/** Splits eligible candidates into the two pools; a new video is not also in the high pool. */
export function splitPools(candidates: PoolCandidates, generatedAt: number): Pools {
  const { reviewAt, scores } = candidates;
  let freshCount = 0;
  for (let i = 0; i < candidates.length; i++) if (isNew(reviewAt[i], generatedAt)) freshCount++;
  const fresh = new Uint32Array(freshCount);
  const high = new Uint32Array(candidates.length - freshCount);
  for (let i = 0, f = 0, h = 0; i < candidates.length; i++) {
    if (isNew(reviewAt[i], generatedAt)) fresh[f++] = i;
    else high[h++] = i;
  }
  // Unknown review times are -Infinity: equal to each other, after every known time.
  const byReviewDesc = (a: number, b: number) => (reviewAt[a] === reviewAt[b] ? 0 : reviewAt[a] < reviewAt[b] ? 1 : -1);
  const byIdDesc = (a: number, b: number) => candidates.compareIds(b, a);
  fresh.sort((a, b) => byReviewDesc(a, b) || byIdDesc(a, b));
  high.sort((a, b) => scores[b] - scores[a] || byReviewDesc(a, b) || byIdDesc(a, b));
  return { fresh, high };
}
