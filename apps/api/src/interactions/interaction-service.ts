/**
 * Likes, collects, comments and shares (SPEC R2–R4). Each action changes its record only; the
 * video's display and recommend* counters then follow the records exactly once, through a tally
 * (`@feed/storage` counter-tally.ts), which also completes what a crashed earlier attempt left.
 */
import { randomUUID } from 'node:crypto';
import { Types, type Model } from 'mongoose';
import { isEligible } from '@feed/domain';
import { freshRecordFields, tallyCounters, type CounterHooks, type CounterKind, type InteractionModels, type ToggleRecord, type VideoModel } from '@feed/storage';
import { AppError, notFound } from '@feed/http';

const isDuplicateKey = (err: unknown) => (err as { code?: number }).code === 11000;

export interface ToggleOutcome {
  /** The state after the call. */
  active: boolean;
  /** Whether this call changed it (false for a repeated like or a double unlike). */
  changed: boolean;
}

type ToggleKind = Extract<CounterKind, 'likes' | 'collects'>;

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
  private async follow(kind: CounterKind, record: { _id: Types.ObjectId; videoId: Types.ObjectId; dirty: boolean } | null): Promise<void> {
    if (!record?.dirty) return;
    await this.hooks.afterRecord?.();
    await tallyCounters(this.videos, this.records, kind, record.videoId, { hooks: this.hooks, record: record._id });
  }

  /** Like or collect: the user's record becomes active (created on the first success). */
  private async activate(kind: ToggleKind, vid: string, userId: string): Promise<ToggleOutcome> {
    const videoId = await this.requireServable(vid);
    const model = this.records[kind] as Model<ToggleRecord>;
    const now = new Date();
    const { dirty: _dirty, changedAt: _changedAt, ...onInsert } = freshRecordFields(now);
    // Matches only an inactive record; an active one makes the upsert hit the unique index.
    const turnOn = () =>
      model
        .findOneAndUpdate(
          { userId, videoId, active: { $ne: true } },
          { $set: { active: true, dirty: true, changedAt: now }, $setOnInsert: onInsert },
          { upsert: true, returnDocument: 'after' },
        )
        .lean();
    let record: ToggleRecord | null;
    let changed = true;
    try {
      record = await turnOn();
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      // Already active, or a concurrent first like won the insert: this call changes nothing,
      // but completes the count if an earlier attempt crashed before it.
      record = await model.findOne({ userId, videoId }).lean();
      changed = false;
      if (!record?.active) {
        record = await turnOn();
        changed = true;
      }
    }
    await this.follow(kind, record);
    return { active: true, changed };
  }

  /** Unlike or uncollect: the display counter follows; recommend* never goes down. */
  private async deactivate(kind: ToggleKind, vid: string, userId: string): Promise<ToggleOutcome> {
    const videoId = new Types.ObjectId(vid);
    const exists = await this.videos.exists({ _id: videoId });
    if (!exists) throw notFound(`video ${vid} does not exist`);
    const model = this.records[kind] as Model<ToggleRecord>;
    const turnedOff = await model
      .findOneAndUpdate({ userId, videoId, active: true }, { $set: { active: false, dirty: true, changedAt: new Date() } }, { returnDocument: 'after' })
      .lean();
    await this.follow(kind, turnedOff ?? (await model.findOne({ userId, videoId }).lean()));
    return { active: false, changed: Boolean(turnedOff) };
  }

  like = (vid: string, userId: string) => this.activate('likes', vid, userId);
  unlike = (vid: string, userId: string) => this.deactivate('likes', vid, userId);
  collect = (vid: string, userId: string) => this.activate('collects', vid, userId);
  uncollect = (vid: string, userId: string) => this.deactivate('collects', vid, userId);

  /**
   * Publishes a comment. A retried request with the same Idempotency-Key returns the first
   * comment and counts nothing more (it completes the count if the first attempt crashed).
   */
  async comment(vid: string, userId: string, content: string, idempotencyKey?: string): Promise<{ commentId: string; created: boolean }> {
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
    await this.follow('comments', record);
    return { commentId: record._id.toHexString(), created };
  }

  /** Deletes the user's own comment: display count down, recommend count unchanged. */
  async deleteComment(commentId: string, userId: string): Promise<{ deleted: boolean }> {
    const { comments } = this.records;
    const deleted = await comments
      .findOneAndUpdate({ _id: commentId, userId, status: 'published' }, { $set: { status: 'deleted', active: false, dirty: true, changedAt: new Date() } }, { returnDocument: 'after' })
      .lean();
    // Someone else's comment is reported as missing: ids are not a way to probe other users.
    const record = deleted ?? (await comments.findOne({ _id: commentId, userId }).lean());
    if (!record) throw notFound(`comment ${commentId} does not exist`);
    await this.follow('comments', record);
    return { deleted: Boolean(deleted) };
  }

  /**
   * A share (R4). Without a video id nothing is counted (old clients); an unknown video is 404
   * for guests and users alike. The first share of a user and an approved short video counts
   * once; `counted` says whether this call's share is that first one (a retry of a share whose
   * answer was lost reports it again until it is counted).
   */
  async share(vid: string | undefined, userId: string | undefined): Promise<{ counted: boolean }> {
    if (vid === undefined) return { counted: false };
    const video = await this.existing(vid);
    if (!isEligible(video) || userId === undefined) return { counted: false };
    const { shares } = this.records;
    let record;
    let counted = true;
    try {
      record = (await shares.create({ userId, videoId: video._id, active: true, ...freshRecordFields() })).toObject();
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      record = await shares.findOne({ userId, videoId: video._id }).lean();
      if (!record) throw err;
      counted = !record.counted && record.dirty;
    }
    await this.follow('shares', record);
    return { counted };
  }
}
