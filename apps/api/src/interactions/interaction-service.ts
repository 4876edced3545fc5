/**
 * Likes, collects, comments and shares (SPEC R2–R4). Each action changes its record only; the
 * video's display and recommend* counters then follow the records exactly once, through a tally
 * (`@feed/storage` counter-tally.ts), which also completes what a crashed earlier attempt left.
 * An action is done once its record is written (`Written`); its tally runs on from there.
 */
import { randomUUID } from 'node:crypto';
import { Types, type Model, type mongo } from 'mongoose';
import { isEligible } from '@feed/domain';
import { freshRecordFields, tallyCounters, type CounterHooks, type CounterKind, type InteractionModels, type ToggleRecord, type VideoModel } from '@feed/storage';
import { AppError, notFound } from '@feed/http';

const isDuplicateKey = (err: unknown) => (err as { code?: number }).code === 11000;

/**
 * First stage of every toggle's update: a record written by the previous code has no `shown`;
 * the display counter included it exactly when it was active (a comment: published), so that is
 * what it shows until a tally counts it, set before `active` changes, in the same update.
 */
const keepShown = { $set: { shown: { $ifNull: ['$shown', { $ifNull: ['$active', { $eq: ['$status', 'published'] }] }] } } };

export interface ToggleOutcome {
  /** The state after the call. */
  active: boolean;
  /** Whether this call changed it (false for a repeated like or a double unlike). */
  changed: boolean;
  /** Whether this call was the user's first success on the video (D7 counts only that one). */
  first: boolean;
}

type ToggleKind = Extract<CounterKind, 'likes' | 'collects'>;
interface TalliedRecord {
  _id: Types.ObjectId;
  videoId: Types.ObjectId;
  dirty: boolean;
  active: boolean;
}

/**
 * An action whose record is written: the client's action succeeded. `tally` (already running)
 * brings the video's counters up to the record; `stop` ends it before its next compare-and-set
 * round. Left unfinished, it is a crash after the record write: the record stays dirty for the
 * next tally of the video or the repair job.
 */
export interface Written<T> {
  outcome: T;
  /** False when the tally stopped with the record still dirty (its attempts ran out, or `stop`). */
  tally: Promise<boolean>;
  stop(): void;
}

/** The outcome once the tally has run too (callers that do not bound the tally on their own). */
export async function tallied<T>(action: Promise<Written<T>>): Promise<T> {
  const { outcome, tally } = await action;
  await tally;
  return outcome;
}

export class InteractionService {
  constructor(
    private readonly videos: VideoModel,
    private readonly records: InteractionModels,
    private readonly hooks: CounterHooks = {},
  ) {}

  /** The video's eligibility fields; 404 when it does not exist. */
  private async existing(vid: string) {
    const video = await this.videos.findById(vid).select({ status: 1, newsType: 1, deleted: 1 }).lean();
    if (!video) throw notFound(`video ${vid} does not exist`);
    return video;
  }

  /** 404 when the video does not exist; 409 when it is not an approved short video. */
  private async requireServable(vid: string): Promise<Types.ObjectId> {
    const video = await this.existing(vid);
    if (!isEligible(video)) throw new AppError(409, 'video_unavailable', `video ${vid} is not an approved short video`);
    return video._id;
  }

  /** Brings the video's counters up to its records when this record is not counted yet. */
  private async tallyIfUncounted(kind: CounterKind, record: TalliedRecord | null, signal?: AbortSignal): Promise<boolean> {
    if (!record?.dirty) return true;
    await this.hooks.afterRecord?.();
    const { unfinished } = await tallyCounters(this.videos, this.records, kind, record.videoId, { hooks: this.hooks, record: record._id, active: record.active, signal });
    return unfinished === undefined;
  }

  /** The action's outcome, its record's tally started. */
  private written<T>(outcome: T, kind: CounterKind, record: TalliedRecord | null): Written<T> {
    const stopped = new AbortController();
    const tally = this.tallyIfUncounted(kind, record, stopped.signal);
    tally.catch(() => undefined); // awaited by the caller, or by no one once it stopped waiting
    return { outcome, tally, stop: () => stopped.abort() };
  }

  /**
   * Like or collect: the user's record becomes active (created on the first success). Two
   * single-document writes, each safe under any interleaving of the user's other requests: an
   * upsert whose filter is exactly the unique key (MongoDB retries such an upsert itself when
   * two of them race for the insert), which creates an active record and changes nothing in an
   * existing one, then, for an existing inactive record, a compare-and-set of `active`.
   */
  private async activate(kind: ToggleKind, vid: string, userId: string): Promise<Written<ToggleOutcome>> {
    const videoId = await this.requireServable(vid);
    const model = this.records[kind] as Model<ToggleRecord>;
    const now = new Date();
    const upserted = await this.upsertRecord(model, userId, videoId, now);
    if (upserted.inserted) return this.written({ active: true, changed: true, first: true }, kind, upserted.record);
    let record: ToggleRecord | null = upserted.record;
    let changed = false;
    if (!record.active) {
      const turnedOn = await model
        .findOneAndUpdate({ _id: record._id, active: { $ne: true } }, [keepShown, { $set: { active: true, dirty: true, changedAt: now } }], { returnDocument: 'after', updatePipeline: true })
        .lean();
      // No match: a concurrent request of the same user turned it on first.
      changed = Boolean(turnedOn);
      record = turnedOn ?? (await model.findById(record._id).lean());
    }
    // Unchanged, it still completes the count when an earlier attempt crashed before it.
    return this.written({ active: true, changed, first: false }, kind, record);
  }

  /** The record of `userId` and `videoId`, inserted active when there is none. */
  private async upsertRecord(model: Model<ToggleRecord>, userId: string, videoId: Types.ObjectId, now: Date): Promise<{ record: ToggleRecord; inserted: boolean }> {
    // An existing record is left as it is: `$setOnInsert` only.
    const upsert = () =>
      model
        .findOneAndUpdate({ userId, videoId }, { $setOnInsert: { ...freshRecordFields(now), active: true } }, { upsert: true, returnDocument: 'after', includeResultMetadata: true })
        .lean<mongo.ModifyResult<ToggleRecord>>();
    let result;
    try {
      result = await upsert();
    } catch (err) {
      // A server that does not retry the raced insert itself: the record exists now, read it.
      if (!isDuplicateKey(err)) throw err;
      result = await upsert();
    }
    if (!result.value) throw new Error(`the upsert of a ${model.collection.name} record returned no document`);
    return { record: result.value, inserted: result.lastErrorObject?.updatedExisting === false };
  }

  /** Unlike or uncollect: the display counter follows; recommend* never goes down. */
  private async deactivate(kind: ToggleKind, vid: string, userId: string): Promise<Written<ToggleOutcome>> {
    const videoId = new Types.ObjectId(vid);
    const exists = await this.videos.exists({ _id: videoId });
    if (!exists) throw notFound(`video ${vid} does not exist`);
    const model = this.records[kind] as Model<ToggleRecord>;
    const turnedOff = await model
      .findOneAndUpdate({ userId, videoId, active: true }, [keepShown, { $set: { active: false, dirty: true, changedAt: new Date() } }], { returnDocument: 'after', updatePipeline: true })
      .lean();
    return this.written({ active: false, changed: Boolean(turnedOff), first: false }, kind, turnedOff ?? (await model.findOne({ userId, videoId }).lean()));
  }

  like = (vid: string, userId: string) => this.activate('likes', vid, userId);
  unlike = (vid: string, userId: string) => this.deactivate('likes', vid, userId);
  collect = (vid: string, userId: string) => this.activate('collects', vid, userId);
  uncollect = (vid: string, userId: string) => this.deactivate('collects', vid, userId);

  /**
   * Publishes a comment. A retried request with the same Idempotency-Key returns the first
   * comment and counts nothing more (it completes the count if the first attempt crashed).
   */
  async comment(vid: string, userId: string, content: string, idempotencyKey?: string): Promise<Written<{ commentId: string; created: boolean }>> {
    const videoId = await this.requireServable(vid);
    const key = idempotencyKey ?? `generated:${randomUUID()}`;
    const { comments } = this.records;
    let record;
    let created = true;
    try {
      record = (await comments.create({ userId, videoId, content, idempotencyKey: key, status: 'published', active: true, ...freshRecordFields() })).toObject();
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      record = await comments.findOne({ userId, idempotencyKey: key }).lean();
      if (!record) throw err;
      if (!record.videoId.equals(videoId)) throw new AppError(409, 'idempotency_conflict', 'Idempotency-Key was already used for another video');
      created = false;
    }
    return this.written({ commentId: record._id.toHexString(), created }, 'comments', record);
  }

  /** Deletes the user's own comment: display count down, recommend count unchanged. */
  async deleteComment(commentId: string, userId: string): Promise<Written<{ deleted: boolean }>> {
    const { comments } = this.records;
    const deleted = await comments
      .findOneAndUpdate(
        { _id: commentId, userId, status: 'published' },
        [keepShown, { $set: { status: 'deleted', active: false, dirty: true, changedAt: new Date() } }],
        { returnDocument: 'after', updatePipeline: true },
      )
      .lean();
    // Someone else's comment is reported as missing: ids are not a way to probe other users.
    const record = deleted ?? (await comments.findOne({ _id: commentId, userId }).lean());
    if (!record) throw notFound(`comment ${commentId} does not exist`);
    return this.written({ deleted: Boolean(deleted) }, 'comments', record);
  }

  /**
   * A share (R4). Without a video id nothing is counted (old clients); an unknown video is 404
   * for guests and users alike. The first share of a user and an approved short video counts
   * once; `counted` says whether this call's share is that first one (a retry of a share whose
   * answer was lost reports it again until it is counted); `first` says whether this call made
   * the user's share record (D7 counts that one only); `valid` whether the share names an
   * approved short video (a guest's valid share is engagement, though no counter moves).
   */
  async share(vid: string | undefined, userId: string | undefined): Promise<Written<{ counted: boolean; first: boolean; valid: boolean }>> {
    if (vid === undefined) return this.written({ counted: false, first: false, valid: false }, 'shares', null);
    const video = await this.existing(vid);
    if (!isEligible(video)) return this.written({ counted: false, first: false, valid: false }, 'shares', null);
    if (userId === undefined) return this.written({ counted: false, first: false, valid: true }, 'shares', null);
    const { shares } = this.records;
    let record;
    let counted = true;
    let first = true;
    try {
      record = (await shares.create({ userId, videoId: video._id, active: true, ...freshRecordFields() })).toObject();
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      record = await shares.findOne({ userId, videoId: video._id }).lean();
      if (!record) throw err;
      counted = !record.counted && record.dirty;
      first = false;
    }
    return this.written({ counted, first, valid: true }, 'shares', record);
  }
}
