/**
 * One-time recommend* counters from history (SPEC R5): recommendXCount = max(XCount, 0); fakes never
 * read. `recommendInitVersion` makes a rerun skip a video; `$max` never lowers a live counter.
 */
import type { Connection } from 'mongoose';
import { nonNegativeCount } from '@feed/domain';
import type { VideoModel } from '../models/video';

export const HISTORY_INIT_VERSION = 1;
const MARKER_ID = 'recommend-history-init';
const BATCH = 1000;

export async function initRecommendHistory(
  connection: Connection,
  videos: VideoModel,
  onProgress: (done: number) => void = () => undefined,
): Promise<{ version: number; initialised: number; previouslyCompletedAt?: Date }> {
  const markers = connection.collection<{ _id: string; version: number; startedAt: Date; completedAt?: Date; initialised?: number }>('migrations');
  const existing = await markers.findOne({ _id: MARKER_ID, version: HISTORY_INIT_VERSION });
  await markers.updateOne({ _id: MARKER_ID }, { $set: { version: HISTORY_INIT_VERSION }, $setOnInsert: { startedAt: new Date() } }, { upsert: true });

  let initialised = 0;
  let batch: Parameters<VideoModel['bulkWrite']>[0] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const { modifiedCount } = await videos.bulkWrite(batch, { ordered: false });
    initialised += modifiedCount; // after the await: `x += await` would read x before it
    batch = [];
    onProgress(initialised);
  };
  const cursor = videos
    .find({ recommendInitVersion: { $ne: HISTORY_INIT_VERSION } })
    .select({ likeCount: 1, collectCount: 1, commentCount: 1, shareCount: 1 })
    .lean()
    .cursor({ batchSize: BATCH });
  for await (const video of cursor) {
    batch.push({
      updateOne: {
        filter: { _id: video._id, recommendInitVersion: { $ne: HISTORY_INIT_VERSION } },
        update: {
          $max: {
            recommendLikeCount: nonNegativeCount(video.likeCount),
            recommendCollectCount: nonNegativeCount(video.collectCount),
            recommendCommentCount: nonNegativeCount(video.commentCount),
            recommendShareCount: nonNegativeCount(video.shareCount),
          },
          $set: { recommendInitVersion: HISTORY_INIT_VERSION },
        },
      },
    });
    if (batch.length >= BATCH) await flush();
  }
  await flush();
  await markers.updateOne({ _id: MARKER_ID }, { $set: { completedAt: new Date() }, $inc: { initialised } });
  // previouslyCompletedAt: set when an earlier run already completed this version.
  return { version: HISTORY_INIT_VERSION, initialised, previouslyCompletedAt: existing?.completedAt };
}
