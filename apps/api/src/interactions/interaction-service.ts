/**
 * Likes, collects, comments and shares (SPEC R2–R4): display counters follow what users see
 * (unlike lowers likeCount); the recommend* counters rise once per first successful real action.
 */
import { randomUUID } from 'node:crypto';
import { Types, type Model } from 'mongoose';
import { isEligible } from '@feed/domain';
import {
  applyRecommendIncrement,
  type CounterHooks,
  type InteractionModels,
  type RecommendCounter,
  type ToggleRecord,
  type VideoModel,
} from '@feed/storage';
import { AppError, notFound } from '@feed/http';

type DisplayCounter = 'likeCount' | 'collectCount' | 'commentCount' | 'shareCount';

const isDuplicateKey = (err: unknown) => (err as { code?: number }).code === 11000;

export interface ToggleOutcome {
  /** The state after the call. */
  active: boolean;
  /** Whether this call changed it (false for a repeated like or a double unlike). */
  changed: boolean;
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

  private async bumpDisplay(videoId: Types.ObjectId, counter: DisplayCounter, delta: 1 | -1): Promise<void> {
    // Never below zero, even if the display counter was edited by hand.
    const guard = delta < 0 ? { [counter]: { $gt: 0 } } : {};
    await this.videos.updateOne({ _id: videoId, ...guard }, { $inc: { [counter]: delta } });
  }

  /** Like or collect: the user's record becomes active; its first activation counts once. */
  private async activate(model: Model<ToggleRecord>, vid: string, userId: string, display: DisplayCounter, counter: RecommendCounter): Promise<ToggleOutcome> {
    const videoId = await this.requireServable(vid);
    const upsert = () =>
      model.findOneAndUpdate(
        { userId, videoId },
        { $set: { active: true }, $setOnInsert: { counted: false, opId: new Types.ObjectId(), createdAt: new Date() } },
        { upsert: true, returnDocument: 'before' },
      );
    // Two concurrent first likes race on the unique index: the loser retries and sees the winner's record.
    const before = await upsert().catch((err: unknown) => (isDuplicateKey(err) ? upsert() : Promise.reject(err)));
    const changed = !before || !before.active;
    if (changed) await this.bumpDisplay(videoId, display, 1);
    // An existing record only changed `active`; a new one is read back for its _id and opId.
    const record = before ?? (await model.findOne({ userId, videoId }).lean());
    if (record && !record.counted) await applyRecommendIncrement(this.videos, model, record, counter, this.hooks);
    return { active: true, changed };
  }

  /** Unlike or uncollect: lowers the display counter only; recommend* never goes down. */
  private async deactivate(model: Model<ToggleRecord>, vid: string, userId: string, display: DisplayCounter): Promise<ToggleOutcome> {
    const videoId = new Types.ObjectId(vid);
    const exists = await this.videos.exists({ _id: videoId });
    if (!exists) throw notFound(`video ${vid} does not exist`);
    const before = await model.findOneAndUpdate({ userId, videoId, active: true }, { $set: { active: false } });
    if (before) await this.bumpDisplay(videoId, display, -1);
    return { active: false, changed: Boolean(before) };
  }

  like = (vid: string, userId: string) => this.activate(this.records.likes, vid, userId, 'likeCount', 'recommendLikeCount');
  unlike = (vid: string, userId: string) => this.deactivate(this.records.likes, vid, userId, 'likeCount');
  collect = (vid: string, userId: string) => this.activate(this.records.collects, vid, userId, 'collectCount', 'recommendCollectCount');
  uncollect = (vid: string, userId: string) => this.deactivate(this.records.collects, vid, userId, 'collectCount');

  /**
   * Publishes a comment. A retried request with the same Idempotency-Key returns the first
   * comment and counts nothing more.
   */
  async comment(vid: string, userId: string, content: string, idempotencyKey?: string): Promise<{ commentId: string; created: boolean }> {
    const videoId = await this.requireServable(vid);
    const key = idempotencyKey ?? `generated:${randomUUID()}`;
    const { comments } = this.records;
    let record;
    let created = true;
    try {
      record = (await comments.create({ userId, videoId, content, idempotencyKey: key, opId: new Types.ObjectId() })).toObject();
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      record = await comments.findOne({ userId, idempotencyKey: key }).lean();
      if (!record) throw err;
      if (!record.videoId.equals(videoId)) throw new AppError(409, 'idempotency_conflict', 'Idempotency-Key was already used for another video');
      created = false;
    }
    if (created) await this.bumpDisplay(videoId, 'commentCount', 1);
    if (!record.counted) await applyRecommendIncrement(this.videos, comments, record, 'recommendCommentCount', this.hooks);
    return { commentId: record._id.toHexString(), created };
  }

  /** Deletes the user's own comment: display count down, recommend count unchanged. */
  async deleteComment(commentId: string, userId: string): Promise<{ deleted: boolean }> {
    const before = await this.records.comments.findOneAndUpdate({ _id: commentId, userId, status: 'published' }, { $set: { status: 'deleted' } });
    if (!before) {
      // Someone else's comment is reported as missing: ids are not a way to probe other users.
      const own = await this.records.comments.exists({ _id: commentId, userId });
      if (!own) throw notFound(`comment ${commentId} does not exist`);
      return { deleted: false };
    }
    await this.bumpDisplay(before.videoId, 'commentCount', -1);
    return { deleted: true };
  }

  /**
   * A share (R4). Without a video id nothing is counted (old clients). With one, the first share
   * of that user and video counts once, and only for an approved short video.
   */
  async share(vid: string | undefined, userId: string | undefined): Promise<{ counted: boolean }> {
    if (vid === undefined || userId === undefined) return { counted: false };
    const video = await this.existing(vid);
    if (!isEligible(video)) return { counted: false };
    const { shares } = this.records;
    let record;
    try {
      record = (await shares.create({ userId, videoId: video._id, opId: new Types.ObjectId() })).toObject();
      await this.bumpDisplay(video._id, 'shareCount', 1);
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      record = await shares.findOne({ userId, videoId: video._id }).lean();
      if (!record) throw err;
    }
    const applied = !record.counted && (await applyRecommendIncrement(this.videos, shares, record, 'recommendShareCount', this.hooks));
    return { counted: applied };
  }
}
