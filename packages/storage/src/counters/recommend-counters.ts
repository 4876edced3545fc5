/**
 * Exactly-once increments of the monotonic recommend* counters (SPEC R3).
 *
 * An action first writes its record (unique per user and video, or per idempotency key) with
 * `counted: false` and a fresh `opId`. The increment is then applied to the video with a
 * condition on that opId — `recommendOps` keeps the video's most recent op ids — and only then
 * is the record marked counted. A crash after the record and before the increment leaves a
 * `counted: false` record that a retry or the reconciler completes; a crash after the
 * increment and before the mark is caught by the opId condition, so nothing counts twice.
 */
import type { Model } from 'mongoose';
import type { VideoModel } from '../models/video';
import type { CountedRecord, InteractionModels } from '../models/interactions';

/** Op ids kept per video: far more than can arrive between a crash and its reconciliation. */
export const RECOMMEND_OPS_KEPT = 500;

export type RecommendCounter = 'recommendLikeCount' | 'recommendCollectCount' | 'recommendCommentCount' | 'recommendShareCount';

export interface CounterHooks {
  /** Test hook: runs after the video increment and before the record is marked counted. */
  afterIncrement?: () => Promise<void>;
}

/** Applies the record's one increment (idempotent); returns true when this call applied it. */
export async function applyRecommendIncrement(
  videos: VideoModel,
  // Any of the four record models: only `_id` and `counted` are touched.
  records: Model<any>,
  record: Pick<CountedRecord, '_id' | 'videoId' | 'opId' | 'counted'>,
  counter: RecommendCounter,
  hooks: CounterHooks = {},
): Promise<boolean> {
  if (record.counted) return false;
  const result = await videos.updateOne(
    { _id: record.videoId, recommendOps: { $ne: record.opId } },
    { $inc: { [counter]: 1 }, $push: { recommendOps: { $each: [record.opId], $slice: -RECOMMEND_OPS_KEPT } } },
  );
  await hooks.afterIncrement?.();
  await records.updateOne({ _id: record._id }, { $set: { counted: true } });
  return result.modifiedCount === 1;
}

const COUNTERS: Array<[keyof InteractionModels, RecommendCounter]> = [
  ['likes', 'recommendLikeCount'],
  ['collects', 'recommendCollectCount'],
  ['comments', 'recommendCommentCount'],
  ['shares', 'recommendShareCount'],
];

/**
 * Completes increments left pending by a crash: every record still `counted: false` and older
 * than `minAgeMs` (younger ones are probably being applied by their request right now).
 */
export async function reconcileRecommendCounters(videos: VideoModel, models: InteractionModels, minAgeMs = 30_000): Promise<number> {
  let applied = 0;
  const before = new Date(Date.now() - minAgeMs);
  for (const [name, counter] of COUNTERS) {
    const records = models[name] as Model<CountedRecord>;
    const pending = await records.find({ counted: false, createdAt: { $lte: before } }).limit(10_000).lean<CountedRecord[]>();
    for (const record of pending) if (await applyRecommendIncrement(videos, records, record, counter)) applied++;
  }
  return applied;
}
