/**
 * Interaction records (SPEC D1, R3): one collection per kind, each with the uniqueness that makes
 * "first success" decidable. Records are never deleted: unlike, uncollect and comment deletion
 * clear `active`. How the video's counters follow them exactly once: counters/counter-tally.ts.
 */
import { Schema, Types, type Connection, type Model } from 'mongoose';

export interface CountedRecord {
  _id: Types.ObjectId;
  userId: string;
  videoId: Types.ObjectId;
  /** Contributes to the display counter now (liked, collected, published, shared). */
  active: boolean;
  /** The video's recommend* counter includes this record (never reverts). */
  counted: boolean;
  /** The video's display counter includes this record as active. */
  shown: boolean;
  /** The tally that last counted this record (fences a late finalize of an older tally). */
  tallyAt: number;
  /** `active` changed and the counters do not follow yet: the next tally of the video counts it. */
  dirty: boolean;
  /** When `dirty` was last set (the repair job takes records left dirty for a while). */
  changedAt: Date;
  createdAt: Date;
}

export type ToggleRecord = CountedRecord;

export interface CommentRecord extends CountedRecord {
  content: string;
  status: 'published' | 'deleted';
  /** The client's Idempotency-Key, or a generated one: unique per user. */
  idempotencyKey: string;
}

const countedFields = {
  userId: { type: String, required: true },
  videoId: { type: Schema.Types.ObjectId, required: true },
  active: { type: Boolean, default: true },
  counted: { type: Boolean, default: false },
  shown: { type: Boolean, default: false },
  tallyAt: { type: Number, default: 0 },
  dirty: { type: Boolean, default: true },
  changedAt: { type: Date, default: () => new Date() },
  createdAt: { type: Date, default: () => new Date() },
};

/** The tally reads a video's dirty records; the repair job finds records left dirty. */
function indexForTally(schema: Schema) {
  schema.index({ videoId: 1, dirty: 1 });
  schema.index({ dirty: 1, changedAt: 1 });
}

function toggleSchema(collection: string) {
  const schema = new Schema<ToggleRecord>(countedFields, { collection, versionKey: false });
  // One record per user and video: the proof of their first like (collect, share), which counts once in its lifetime.
  schema.index({ userId: 1, videoId: 1 }, { unique: true });
  indexForTally(schema);
  return schema;
}

const commentSchema = new Schema<CommentRecord>(
  {
    ...countedFields,
    content: { type: String, required: true },
    status: { type: String, enum: ['published', 'deleted'], default: 'published' },
    idempotencyKey: { type: String, required: true },
  },
  { collection: 'comments', versionKey: false },
);
commentSchema.index({ userId: 1, idempotencyKey: 1 }, { unique: true });
indexForTally(commentSchema);

function model<T>(connection: Connection, name: string, schema: Schema<T>): Model<T> {
  return (connection.models[name] as Model<T> | undefined) ?? connection.model<T>(name, schema);
}

export function interactionModels(connection: Connection) {
  return {
    likes: model(connection, 'Like', toggleSchema('likes')),
    collects: model(connection, 'Collect', toggleSchema('collects')),
    comments: model(connection, 'Comment', commentSchema),
    shares: model(connection, 'Share', toggleSchema('shares')),
  };
}

export type InteractionModels = ReturnType<typeof interactionModels>;
