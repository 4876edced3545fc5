/** SPEC R2: the recommendation score. Weights are constants, not configuration (R16). */

export const SCORE_WEIGHTS = Object.freeze({ like: 1, collect: 2, comment: 3, share: 5 });

/** The four monotonic counters; display and fake counters never enter the score. */
export interface RecommendCounters {
  recommendLikeCount?: number | null;
  recommendCollectCount?: number | null;
  recommendCommentCount?: number | null;
  recommendShareCount?: number | null;
}

/** A counter as a count: missing, negative or non-finite values count as 0. */
export const nonNegativeCount = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0);

/** The largest score: counters R1a accepts (1e308) can sum to Infinity, so scores saturate to an orderable integer. */
export const MAX_RECOMMEND_SCORE = Number.MAX_SAFE_INTEGER;

/** like x1 + collect x2 + comment x3 + share x5, at most MAX_RECOMMEND_SCORE. Missing or negative counters count as 0. */
export function recommendScore(video: RecommendCounters): number {
  const score =
    SCORE_WEIGHTS.like * nonNegativeCount(video.recommendLikeCount) +
    SCORE_WEIGHTS.collect * nonNegativeCount(video.recommendCollectCount) +
    SCORE_WEIGHTS.comment * nonNegativeCount(video.recommendCommentCount) +
    SCORE_WEIGHTS.share * nonNegativeCount(video.recommendShareCount);
  return Math.min(score, MAX_RECOMMEND_SCORE);
}
