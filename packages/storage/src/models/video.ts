/** The `videos` collection (SPEC D1). */
import { Schema, type Connection, type InferSchemaType, type Model, type Types } from 'mongoose';

export const VIDEO_STATUSES = ['pending', 'approved', 'rejected', 'offline'] as const;

const videoSchema = new Schema(
  {
    title: { type: String, default: '' },
    coverUrl: { type: String, default: '' },
    playUrl: { type: String, default: '' },
    durationSec: { type: Number, default: 0 },
    authorId: { type: String, default: '' },
    newsType: { type: String, default: 'short' },
    status: { type: String, enum: VIDEO_STATUSES, default: 'pending' },
    deleted: { type: Boolean, default: false },
    reviewAt: { type: Date },
    vip: { type: Boolean, default: false },
    coin: { type: Boolean, default: false },
    isAd: { type: Boolean, default: false },
    special: { type: Boolean, default: false },
    // Display counters: go down on cancel/delete. Never part of the score (R2).
    likeCount: { type: Number, default: 0 },
    collectCount: { type: Number, default: 0 },
    commentCount: { type: Number, default: 0 },
    shareCount: { type: Number, default: 0 },
    // Operator-edited counters: shown to users, never part of the score (R2).
    fakeLikeCount: { type: Number, default: 0 },
    fakeCommentCount: { type: Number, default: 0 },
    fakeShareCount: { type: Number, default: 0 },
    // Monotonic counters: +1 on the first successful real action only (R3). Never in responses.
    recommendLikeCount: { type: Number, default: 0 },
    recommendCollectCount: { type: Number, default: 0 },
    recommendCommentCount: { type: Number, default: 0 },
    recommendShareCount: { type: Number, default: 0 },
    recommendScore: { type: Number, default: 0 },
    recommendScoreAt: { type: Date },
    // Per kind of interaction, what the last tally counted (R3, counters/counter-tally.ts): { <kind>: { v, all, active } };
    // `counterTally` is the previous protocol's, removed by each kind's first tally.
    tally: { type: Schema.Types.Mixed, select: false },
    counterTally: { type: Schema.Types.Mixed, select: false },
    // Set by `pnpm cli init-history` (R5) once this video's counters were initialised.
    recommendInitVersion: { type: Number },
  },
  { collection: 'videos', versionKey: false },
);

// R19: the new pool reads by reviewAt, the high pool by score; both filter status + newsType.
videoSchema.index({ status: 1, newsType: 1, reviewAt: -1 });
videoSchema.index({ status: 1, newsType: 1, recommendScore: -1, reviewAt: -1 });

export type VideoDoc = InferSchemaType<typeof videoSchema> & { _id: Types.ObjectId };
export type VideoModel = Model<VideoDoc>;

export function videoModel(connection: Connection): VideoModel {
  return (connection.models.Video as VideoModel | undefined) ?? connection.model<VideoDoc>('Video', videoSchema as never);
}
