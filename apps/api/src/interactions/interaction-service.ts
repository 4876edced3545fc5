/**
 * Likes, collects, comments and shares (SPEC R2–R4). A request's MongoDB work is its own record:
 * one write on its unique key within its budget (R17), answered once durable. The video's counters
 * follow behind, by a coalesced per-video tally that counts records exactly once (counter-tally.ts).
 * A write cut off by the budget is a 503 with an idempotent retry; if it landed, the retry's tally
 * (or the repair job) counts it.
 */
import { randomUUID } from 'node:crypto';
import { Types, type Model, type mongo } from 'mongoose';
import { isEligible } from '@feed/domain';
import { Deadline, freshRecordFields, MongoBudget, type CounterHooks, type CounterKind, type CounterTallies, type InteractionModels, type RequestBudget, type ToggleRecord } from '@feed/storage';
import { AppError, notFound } from '@feed/http';
import type { VideoCatalog } from '../feed/video-catalog';
import type { VariantReadout } from '../feed/variant-readout';
import { userIdentity } from '../http/identity';
import { setTimeout as sleep } from 'node:timers/promises';

const isDuplicateKey = (err: unknown) => (err as { code?: number }).code === 11000;

/** First stage of every toggle update: a record older than `shown` was shown exactly when active (a comment: published). */
const keepShown = { $set: { shown: { $ifNull: ['$shown', { $ifNull: ['$active', { $eq: ['$status', 'published'] }] }] } } };

/** A change of `active` to `to` (no change when it holds already): `v` + 1, dirty. */
const turn = (to: boolean, now: Date) => {
  const same = { $eq: ['$active', to] };
  return { $set: { active: to, v: { $cond: [same, '$v', { $add: [{ $ifNull: ['$v', 0] }, 1] }] }, dirty: { $cond: [same, '$dirty', true] }, changedAt: { $cond: [same, '$changedAt', now] }, createdAt: { $ifNull: ['$createdAt', now] } } };
};

/**
 * findAndModify as mongoose sends it (checked with command monitoring) minus its query layer, a
 * tenth of the API's CPU in a like burst (issue 49). The driver honours `signal`; its types do not.
 */
const findAndModify = (model: Model<ToggleRecord>, filter: object, update: object[], options: mongo.FindOneAndUpdateOptions & mongo.Abortable) =>
  model.collection.findOneAndUpdate(filter, update, options as mongo.FindOneAndUpdateOptions) as Promise<ToggleRecord | null>;

export interface ToggleOutcome {
  /** The state after the call. */
  active: boolean;
  /** Whether this call changed it (false for a repeated like or a double unlike). */
  changed: boolean;
  /** Whether this call made the user's record: the first success (D7 counts only that one). */
  first: boolean;
}

/**
 * Late writes looked for at once. Past it, an outage's failures are counted by their video's next
 * tally or the repair job (their D7 first successes not at all) rather than probed by the thousand
 * as MongoDB comes back.
 */
const MAX_FOLLOWED = 1_000;

type ToggleKind = Extract<CounterKind, 'likes' | 'collects'>;
type FirstKind = Exclude<CounterKind, 'shares'>;
/** D7's event for a first success of each kind (shares are counted by the route). */
const FIRST_EVENTS = { likes: 'like', collects: 'collect', comments: 'comment' } as const;

export class InteractionService {
  /** `catalog`: eligibility from the feed's cache or one read; `readout`: D7's first successes, counted once a late write lands. */
  constructor(private readonly deps: { catalog: Pick<VideoCatalog, 'load'>; records: InteractionModels; tallies: CounterTallies; readout?: Pick<VariantReadout, 'record'>; hooks?: CounterHooks; maxFollowed?: number }) {}

  private followed = 0;
  /** Late writes being looked for now (`followLanding`). */
  get following(): number {
    return this.followed;
  }

  /**
   * A failed record write (the budget, an election) may still land: it is looked for 2, 6, 14, 30 and
   * 62 s later, and once found the video is tallied and `then` runs, though the client never retries.
   */
  private followLanding<T>(kind: CounterKind, videoId: Types.ObjectId, landed: (signal: AbortSignal) => Promise<T | null>, then?: (found: T) => unknown): void {
    if (this.followed >= (this.deps.maxFollowed ?? MAX_FOLLOWED)) return;
    this.followed += 1;
    void (async () => {
      for (let wait = 2_000; wait <= 32_000; wait *= 2) {
        await sleep(wait, undefined, { ref: false });
        const found = await new MongoBudget(1_000).run(landed, 'landed record').catch(() => null);
        if (found) {
          this.deps.tallies.request(kind, videoId);
          return then?.(found);
        }
      }
    })()
      .catch(() => undefined)
      .finally(() => (this.followed -= 1));
  }

  /**
   * A first success's record write, counted for D7 (within the request's Redis deadline) when it
   * makes the record; one that fails but lands is tallied and counted once found (`followLanding`).
   */
  private async firstSuccess<T>(action: { kind: FirstKind; videoId: Types.ObjectId; userId: string }, budget: RequestBudget, landed: (signal: AbortSignal) => Promise<{ made: boolean } | null>, write: () => Promise<T>, isFirst: (result: T) => boolean): Promise<T> {
    const record = (deadline: Deadline) => this.deps.readout?.record(userIdentity(action.userId), FIRST_EVENTS[action.kind], deadline);
    try {
      const result = await write();
      if (isFirst(result)) await record(budget.redis);
      return result;
    } catch (err) {
      this.followLanding(action.kind, action.videoId, landed, ({ made }) => made && record(new Deadline(budget.redis.ms)));
      throw err;
    }
  }

  /** The record is durable: the video's counters follow (a crash in between leaves it dirty for the repair job). */
  private async recorded(kind: CounterKind, videoId: Types.ObjectId): Promise<void> {
    await this.deps.hooks?.afterRecord?.();
    this.deps.tallies.request(kind, videoId);
  }

  /** The video; 404 when it does not exist. */
  private async existing(vid: string, budget: RequestBudget) {
    const video = (await this.deps.catalog.load([vid], budget.mongo)).get(vid);
    if (!video) throw notFound(`video ${vid} does not exist`);
    return video;
  }

  /** 404 when the video does not exist; 409 when it is not an approved short video. */
  private async requireServable(vid: string, budget: RequestBudget): Promise<Types.ObjectId> {
    const video = await this.existing(vid, budget);
    if (!isEligible(video)) throw new AppError(409, 'video_unavailable', `video ${vid} is not an approved short video`);
    return video._id;
  }

  /** Like or collect: one upsert on the unique key; one retry for a server that does not retry a racing upsert itself. */
  private async activate(kind: ToggleKind, vid: string, userId: string, budget: RequestBudget): Promise<ToggleOutcome> {
    const videoId = await this.requireServable(vid, budget);
    const model = this.deps.records[kind] as Model<ToggleRecord>;
    const now = new Date();
    const upsert = () =>
      budget.mongo.run((signal) => findAndModify(model, { userId, videoId }, [keepShown, turn(true, now)], { upsert: true, returnDocument: 'before', signal }), `${kind} record`);
    const write = () => upsert().catch((err: unknown) => (isDuplicateKey(err) ? upsert() : Promise.reject(err)));
    // The record made at `now` (changed again since, or not) or the change made at `now` (a like again).
    const landed = async (signal: AbortSignal) => {
      const found = await model.findOne({ userId, videoId, $or: [{ createdAt: now }, { changedAt: now }] }, { createdAt: 1 }, { signal }).lean();
      return found && { made: found.createdAt.getTime() === now.getTime() };
    };
    const before = await this.firstSuccess({ kind, videoId, userId }, budget, landed, write, (found) => !found);
    await this.recorded(kind, videoId);
    return { active: true, changed: before?.active !== true, first: !before };
  }

  /** Unlike or uncollect: the display counter follows; recommend* never goes down. */
  private async deactivate(kind: ToggleKind, vid: string, userId: string, budget: RequestBudget): Promise<ToggleOutcome> {
    const { _id: videoId } = await this.existing(vid, budget);
    const model = this.deps.records[kind] as Model<ToggleRecord>;
    const now = new Date();
    const turnedOff = await budget.mongo
      .run((signal) => findAndModify(model, { userId, videoId, active: true }, [keepShown, turn(false, now)], { signal, projection: { _id: 1 } }), `${kind} record`)
      .catch((err: unknown) => {
        // The change made at `now`, should it land after all.
        this.followLanding(kind, videoId, (signal) => model.exists({ userId, videoId, active: false, changedAt: now }).setOptions({ signal }));
        throw err;
      });
    // Unchanged, it still asks for the tally an earlier attempt may have crashed before.
    await this.recorded(kind, videoId);
    return { active: false, changed: Boolean(turnedOff), first: false };
  }

  like = (vid: string, userId: string, budget: RequestBudget) => this.activate('likes', vid, userId, budget);
  unlike = (vid: string, userId: string, budget: RequestBudget) => this.deactivate('likes', vid, userId, budget);
  collect = (vid: string, userId: string, budget: RequestBudget) => this.activate('collects', vid, userId, budget);
  uncollect = (vid: string, userId: string, budget: RequestBudget) => this.deactivate('collects', vid, userId, budget);

  /** The record of a unique key, made (`$setOnInsert`) when there is none: `created` says which. */
  private async insertOnce<T>(model: Model<T>, key: object, fields: object, budget: RequestBudget): Promise<{ record: T & { _id: Types.ObjectId }; created: boolean }> {
    const upsert = () =>
      budget.mongo.run(
        (signal) => model.findOneAndUpdate(key, { $setOnInsert: fields }, { upsert: true, returnDocument: 'after', includeResultMetadata: true, signal }).lean<mongo.ModifyResult<T & { _id: Types.ObjectId }>>(),
        `${model.collection.name} record`,
      );
    const { value, lastErrorObject } = await upsert().catch((err: unknown) => (isDuplicateKey(err) ? upsert() : Promise.reject(err)));
    if (!value) throw new Error(`the upsert of a ${model.collection.name} record returned no document`);
    return { record: value as T & { _id: Types.ObjectId }, created: lastErrorObject?.updatedExisting === false };
  }

  /** Publishes a comment; a retry with the same Idempotency-Key returns it and completes its count. */
  async comment(vid: string, userId: string, content: string, budget: RequestBudget, idempotencyKey?: string): Promise<{ commentId: string; created: boolean }> {
    const videoId = await this.requireServable(vid, budget);
    const key = idempotencyKey ?? `generated:${randomUUID()}`;
    const fields = { videoId, content, status: 'published', active: true, ...freshRecordFields() };
    const { comments } = this.deps.records;
    const write = () => this.insertOnce(comments, { userId, idempotencyKey: key }, fields, budget);
    const landed = async (signal: AbortSignal) => ((await comments.exists({ userId, idempotencyKey: key, createdAt: fields.createdAt }).setOptions({ signal })) ? { made: true } : null);
    const { record, created } = await this.firstSuccess({ kind: 'comments', videoId, userId }, budget, landed, write, (result) => result.created);
    if (!record.videoId.equals(videoId)) throw new AppError(409, 'idempotency_conflict', 'Idempotency-Key was already used for another video');
    await this.recorded('comments', videoId);
    return { commentId: record._id.toHexString(), created };
  }

  /** Deletes the user's own comment: display count down, recommend count unchanged. */
  async deleteComment(commentId: string, userId: string, budget: RequestBudget): Promise<{ deleted: boolean }> {
    const { comments } = this.deps.records;
    const deleted = await budget.mongo.run(
      (signal) =>
        comments.findOneAndUpdate({ _id: commentId, userId, status: 'published' }, [keepShown, turn(false, new Date()), { $set: { status: 'deleted' } }], { updatePipeline: true, signal }).lean(),
      'comment record',
    );
    // Someone else's comment is reported as missing: ids are not a way to probe other users.
    const record = deleted ?? (await budget.mongo.run((signal) => comments.findOne({ _id: commentId, userId }, null, { signal }).lean(), 'comment record'));
    if (!record) throw notFound(`comment ${commentId} does not exist`);
    await this.recorded('comments', record.videoId);
    return { deleted: Boolean(deleted) };
  }

  /**
   * A share (R4): without a video id nothing counts (old clients); unknown video: 404. A user's first
   * share of an approved short video counts once (`counted`/`first`); `valid`: it names one.
   */
  async share(vid: string | undefined, userId: string | undefined, budget: RequestBudget): Promise<{ counted: boolean; first: boolean; valid: boolean }> {
    if (vid === undefined) return { counted: false, first: false, valid: false };
    const video = await this.existing(vid, budget);
    if (!isEligible(video)) return { counted: false, first: false, valid: false };
    if (userId === undefined) return { counted: false, first: false, valid: true };
    const { shares } = this.deps.records;
    const fields = { active: true, ...freshRecordFields() };
    const { created } = await this.insertOnce(shares, { userId, videoId: video._id }, fields, budget).catch((err: unknown) => {
      // Found, it is this share's first (the route counts only the shares it answers), as a late like is.
      this.followLanding(
        'shares',
        video._id,
        (signal) => shares.exists({ userId, videoId: video._id, createdAt: fields.createdAt }).setOptions({ signal }),
        () => this.deps.readout?.record(userIdentity(userId), 'share', new Deadline(budget.redis.ms), vid),
      );
      throw err;
    });
    await this.recorded('shares', video._id);
    return { counted: created, first: created, valid: true };
  }
}
