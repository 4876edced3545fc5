/**
 * Interaction records (SPEC D1, R3): one collection per kind, each with the uniqueness that makes
 * "first success" decidable. `counted` says whether the record's one recommend* increment has
 * been applied; `opId` makes that increment idempotent on the video (see recommend-counters.ts).
 */
import { Schema, Types, type Connection, type Model } from 'mongoose';

export interface CountedRecord {
  _id: Types.ObjectId;
  userId: string;
  videoId: Types.ObjectId;
  /** Whether the recommend* increment of this record has been applied. */
  counted: boolean;
  /** Idempotency token of that increment. */
  opId: Types.ObjectId;
  createdAt: Date;
}

export interface ToggleRecord extends CountedRecord {
  /** Liked / collected now (unlike and uncollect clear it; the record stays for "first"). */
  active: boolean;
}

export interface CommentRecord extends CountedRecord {
  content: string;
  status: 'published' | 'deleted';
  /** The client's Idempotency-Key, or a generated one: unique per user. */
  idempotencyKey: string;
}

export type ShareRecord = CountedRecord;

const counted = {
  userId: { type: String, required: true },
  videoId: { type: Schema.Types.ObjectId, required: true },
  counted: { type: Boolean, default: false },
  opId: { type: Schema.Types.ObjectId, required: true },
  createdAt: { type: Date, default: () => new Date() },
};

function toggleSchema(collection: string) {
  const schema = new Schema<ToggleRecord>({ ...counted, active: { type: Boolean, default: true } }, { collection, versionKey: false });
  // A user likes (collects) a video at most once in its lifetime: the record is the proof.
  schema.index({ userId: 1, videoId: 1 }, { unique: true });
  schema.index({ counted: 1, createdAt: 1 });
  return schema;
}

const commentSchema = new Schema<CommentRecord>(
  {
    ...counted,
    content: { type: String, required: true },
    status: { type: String, enum: ['published', 'deleted'], default: 'published' },
    idempotencyKey: { type: String, required: true },
  },
  { collection: 'comments', versionKey: false },
);
commentSchema.index({ userId: 1, idempotencyKey: 1 }, { unique: true });
commentSchema.index({ counted: 1, createdAt: 1 });

const shareSchema = new Schema<ShareRecord>(counted, { collection: 'shares', versionKey: false });
shareSchema.index({ userId: 1, videoId: 1 }, { unique: true });
shareSchema.index({ counted: 1, createdAt: 1 });

function model<T>(connection: Connection, name: string, schema: Schema<T>): Model<T> {
  return (connection.models[name] as Model<T> | undefined) ?? connection.model<T>(name, schema);
}

export function interactionModels(connection: Connection) {
  return {
    likes: model(connection, 'Like', toggleSchema('likes')),
    collects: model(connection, 'Collect', toggleSchema('collects')),
    comments: model(connection, 'Comment', commentSchema),
    shares: model(connection, 'Share', shareSchema),
  };
}

export type InteractionModels = ReturnType<typeof interactionModels>;
