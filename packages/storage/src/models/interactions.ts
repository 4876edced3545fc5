/**
 * Interaction records (SPEC D1, R3): one collection per kind, unique so "first success" is
 * decidable; never deleted (undoing clears `active`). Counters follow: counters/counter-tally.ts.
 */
import { Schema, Types, type Connection, type Model } from 'mongoose';

export interface CountedRecord {
  _id: Types.ObjectId;
  userId: string;
  videoId: Types.ObjectId;
  /** Contributes to the display counter now (liked, collected, published, shared). */
  active: boolean;
  /** 1 when made, +1 with each change of `active`: a video's sum of them orders its tallies. */
  v: number;
  /** Changed since the repair job last tallied the video (it takes records left so for a while). */
  dirty: boolean;
  /** Left by the previous protocol (counters included the record; as active): read once, by a video's first tally. */
  counted?: boolean;
  shown?: boolean;
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
  v: { type: Number, default: 1 },
  dirty: { type: Boolean, default: true },
  counted: Boolean,
  shown: Boolean,
  changedAt: { type: Date, default: () => new Date() },
  createdAt: { type: Date, default: () => new Date() },
};

/** The tally counts a video's records; the repair job finds records left dirty. */
function indexForTally(schema: Schema) {
  schema.index({ videoId: 1, active: 1 });
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
