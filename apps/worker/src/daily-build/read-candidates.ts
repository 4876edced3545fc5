/** The read phase: eligible videos streamed from a cursor straight into candidate columns. */
import type { Types } from 'mongoose';
import { CandidateColumns, ELIGIBLE_FILTER, recommendScore, type RecommendCounters } from '@feed/domain';
import type { VideoModel } from '@feed/storage';

/** Documents per cursor batch: small, so each batch dies young instead of bloating the old heap. */
const READ_BATCH = 1000;

/** What the read fetches of a video: the score's inputs, the stored score and the review time. */
interface CandidateFields extends RecommendCounters {
  _id: Types.ObjectId;
  reviewAt?: Date | null;
  recommendScore?: number | null;
  recommendScoreAt?: Date | null;
}

const PROJECTION = { _id: 1, reviewAt: 1, recommendLikeCount: 1, recommendCollectCount: 1, recommendCommentCount: 1, recommendShareCount: 1, recommendScore: 1, recommendScoreAt: 1 };

export async function readCandidates(videos: VideoModel, signal?: AbortSignal): Promise<CandidateColumns> {
  // The count sizes the columns once; videos approved during the read make them grow.
  const candidates = new CandidateColumns(await videos.countDocuments(ELIGIBLE_FILTER));
  // The driver's cursor under the model: plain documents, without mongoose's per-document work.
  const cursor = videos.collection.find<CandidateFields>(ELIGIBLE_FILTER, { projection: PROJECTION, batchSize: READ_BATCH });
  for await (const video of cursor) {
    if (candidates.length % READ_BATCH === 0) signal?.throwIfAborted();
    // A score counts as written back only with its recommendScoreAt (R2); else it is written.
    const stored = video.recommendScoreAt ? (video.recommendScore ?? null) : null;
    candidates.push(video._id.id, recommendScore(video), video.reviewAt ? video.reviewAt.getTime() : null, stored);
  }
  return candidates;
}
