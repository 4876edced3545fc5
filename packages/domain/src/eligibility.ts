/** SPEC R1: which videos may enter the queue. */

export interface EligibilityFields {
  status?: string | null;
  newsType?: string | null;
  deleted?: boolean | null;
}

/** Approved, short, not deleted; VIP, coin, ad and special videos alike. */
export function isEligible(video: EligibilityFields): boolean {
  return video.status === 'approved' && video.newsType === 'short' && video.deleted !== true;
}

/** The same rule as a MongoDB filter, so the database applies it where an index helps. */
export const ELIGIBLE_FILTER = Object.freeze({ status: 'approved', newsType: 'short', deleted: { $ne: true } });
