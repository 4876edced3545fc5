/**
 * Exactly-once interaction counters (SPEC R3), without transactions.
 *
 * The records are the truth. A record (one per first success: user + video for likes, collects
 * and shares, user + Idempotency-Key for comments) carries three facts about itself:
 *   - `active`: whether it contributes to the display counter now (liked, published, shared);
 *   - `counted`: whether the video's recommend* counter includes it (never reverts);
 *   - `shown`: whether the video's display counter includes it as active.
 * Any change of `active` sets `dirty` in the same single-document update. A *tally* moves the
 * dirty records of one video and kind into the video's counters:
 *
 *   1. read the video's tally state {seq, batch} for the kind;
 *   2. finalize `batch` (the records the last tally counted): set counted, shown and
 *      `tallyAt = seq` on each record whose `tallyAt < seq` (the fence against a late finalize);
 *   3. read the video's dirty records (at most TALLY_BATCH);
 *   4. compare-and-set on the video: where the tally's seq is still `seq`, set {seq + 1, batch:
 *      these records and the state counted for each} and `$inc` both counters by their deltas,
 *      in one single-document update;
 *   5. finalize the new batch (step 2 for seq + 1).
 *
 * Why it holds at every crash point: the only write that changes a counter is step 4, and it
 * names the exact records it counts in the same atomic update. Until that batch is finalized,
 * the video itself says which records are counted (they are its `batch`); no tally can move the
 * video past `seq + 1` without first finalizing them (step 2 precedes every step 4), so a record
 * outside the current batch is counted exactly when its own fields say so. A tally that read
 * stale state loses the compare-and-set and starts again. Nothing depends on a window of recent
 * operations or on timing: a crash leaves either dirty records (counted by the next tally of that
 * video, by a retry, or by the repair job) or an unfinalized batch (finalized by the next tally).
 *
 * Why it holds under concurrent toggles (one user's like, unlike and like again at once, on
 * several devices, while other users' tallies run on the same video). MongoDB is atomic per
 * document only, so each step is argued per record:
 *   - A toggle changes `active` and sets `dirty` in one single-document update, and the record
 *     write of a like is an upsert on exactly the unique key plus a compare-and-set of `active`
 *     (interaction-service.ts): any interleaving of a user's requests leaves one record whose
 *     `active` is the last write's, every request answered.
 *   - Step 3 may read a record that is toggled right after: the tally counts the state it read
 *     (`to`) and the finalize records that state as `shown`. The toggle set `dirty`, so the
 *     record is counted again from `shown`, whatever the order of the toggle and the finalize.
 *   - The finalize of a record is one update that sets `counted`, `shown = to`, `tallyAt = seq`
 *     and `dirty = (active !== to)` from the `active` it finds at that instant. A toggle before
 *     it keeps `dirty` true; a toggle after it sets `dirty` itself. No toggle can slip between
 *     "counted" and "dirty" (as it could between two statements split on `active`: a record
 *     counted as active, unliked before the first statement and liked again before the second,
 *     matched neither, kept `counted: false`, and a tally finalizing with it counted it again).
 *   - `tallyAt < seq` makes each tally's finalize of a record happen once: several tallies
 *     finalizing the same batch, late or early, apply it once, with the `active` of that moment.
 *   - Step 4's compare-and-set on `seq` orders the tallies of a video: of those that read the same
 *     state, one moves the counters; the others read again, finalize its batch, and so see
 *     `counted` and `shown` as it left them and count only what changed since.
 *   - A request whose record the video's batch already counts in the state the request wrote is
 *     done (step 1): the counters show its action, and a later toggle is its own request's count.
 */
import { mongo, type Model, type Types } from 'mongoose';
import { numericValue } from '@feed/domain';
import type { VideoModel } from '../models/video';
import type { CountedRecord, InteractionModels } from '../models/interactions';

/** The counters each kind of record moves: recommend* (monotonic) and the display counter. */
export const COUNTER_KINDS = {
  likes: { recommend: 'recommendLikeCount', display: 'likeCount' },
  collects: { recommend: 'recommendCollectCount', display: 'collectCount' },
  comments: { recommend: 'recommendCommentCount', display: 'commentCount' },
  shares: { recommend: 'recommendShareCount', display: 'shareCount' },
} as const;

export type CounterKind = keyof typeof COUNTER_KINDS;
export type CounterName = (typeof COUNTER_KINDS)[CounterKind]['recommend' | 'display'];

/** Records counted by one compare-and-set at most: bounds the batch kept on the video. */
export const TALLY_BATCH = 200;
/** Compare-and-set attempts of one tally before it leaves the rest to the repair job. */
export const MAX_TALLY_ATTEMPTS = 50;

/**
 * The stored format of a video's tally state, `counterTally.<kind>` in its document (models/video.ts):
 *   { seq: number, batch: [{ r: ObjectId, to: boolean }, ...] }
 * `seq` is the last tally's sequence number (step 4's compare-and-set), `batch` the records it
 * counted (at most TALLY_BATCH). The entry's names are one letter because every video document
 * carries them; renaming them is a data migration, not a refactor.
 */
interface TallyState {
  seq: number;
  batch: BatchEntry[];
}

/** A record as the last tally counted it: `r` its `_id`, `to` the `active` state it was counted as. */
interface BatchEntry {
  r: Types.ObjectId;
  to: boolean;
}

export interface CounterHooks {
  /** Test hook: runs after the record write and before the tally (a crash there leaves it dirty). */
  afterRecord?: () => Promise<void>;
  /** Test hook: runs after the counters' compare-and-set and before its batch is finalized. */
  afterTally?: () => Promise<void>;
}

export interface TallyOutcome {
  /** Records this call's compare-and-sets counted, with the deltas they applied. */
  records: Types.ObjectId[];
  recommend: number;
  display: number;
  /** Why the tally stopped with records possibly left dirty (its attempts ran out); absent when it finished. */
  unfinished?: string;
}

/** The fields every new record starts with: dirty, nothing counted yet. */
export function freshRecordFields(now = new Date()) {
  return { counted: false, shown: false, tallyAt: 0, dirty: true, changedAt: now, createdAt: now };
}

interface ReadTally extends TallyState {
  /** The kind's counters that hold no finite number (R1a: they count as 0), with the value stored. */
  odd: Array<{ field: CounterName; value: unknown }>;
}

const isBatchEntry = (entry: unknown): entry is BatchEntry =>
  typeof (entry as BatchEntry | null)?.to === 'boolean' && typeof (entry as BatchEntry).r?.equals === 'function';

/** Step 1: the kind's tally state, and (in the same read) its counters that `$inc` cannot move. */
async function readTally(videos: VideoModel, videoId: Types.ObjectId, kind: CounterKind): Promise<ReadTally | null> {
  const { recommend, display } = COUNTER_KINDS[kind];
  const doc = await videos
    .findById(videoId)
    .select({ [`counterTally.${kind}`]: 1, [recommend]: 1, [display]: 1 })
    .lean<{ counterTally?: Partial<Record<CounterKind, TallyState>> } & Partial<Record<CounterName, unknown>>>();
  if (!doc) return null;
  const state = doc.counterTally?.[kind];
  const odd = [recommend, display].filter((field) => field in doc && numericValue(doc[field]) === null).map((field) => ({ field, value: doc[field] }));
  // A batch this code did not write (a hand edit) counts nothing: its entries are skipped.
  return { seq: state?.seq ?? 0, batch: Array.isArray(state?.batch) ? state.batch.filter(isBatchEntry) : [], odd };
}

/** MongoDB's error code when `$inc` meets a field that holds no number. */
const TYPE_MISMATCH = 14;
/** MongoDB's error code when `$set` names a field below a value that is no document. */
const PATH_NOT_VIABLE = 28;
/** Errors of one document, not of the server: BadValue, PathNotViable, a document grown past 16 MB. */
const DOCUMENT_REFUSALS = new Set([2, PATH_NOT_VIABLE, 10334, 17419]);

/**
 * Counters stored as no finite number (a string, null, an object, NaN, an infinity: written past
 * the schema by another service or a shell) count as 0 by R1a, as the build and the read path
 * read them; left so, `$inc` fails on them for ever (TypeMismatch) or keeps them NaN and every
 * like is lost. Each is set to 0, only while it still holds the value read (`$eq`, so a stored
 * object is compared, never taken for operators; the native driver, so mongoose does not cast
 * it to the schema's Number). A finite number of any BSON type is left alone.
 */
async function zeroOddCounters(videos: VideoModel, videoId: Types.ObjectId, odd: ReadTally['odd']): Promise<void> {
  for (const { field, value } of odd) await videos.collection.updateOne({ _id: videoId, [field]: { $eq: value } }, { $set: { [field]: 0 } });
}

/**
 * Steps 2 and 5: the batch's records learn that tally `seq` counted them. One pipeline update
 * per record sets `counted`, `shown`, `tallyAt` and `dirty` together, `dirty` from the record's
 * `active` at that very moment: a toggle either precedes it (then `active !== to` keeps the
 * record dirty) or follows it (and sets `dirty` itself). Fenced by `tallyAt < seq`, so a record
 * takes each tally's finalize once, however many tallies finalize the same batch.
 */
async function finalize(records: Model<CountedRecord>, { seq, batch }: TallyState): Promise<void> {
  const updates = [true, false].flatMap((to) => {
    const ids = batch.filter((entry) => entry.to === to).map((entry) => entry.r);
    if (ids.length === 0) return [];
    const reflected = { counted: { $literal: true }, shown: { $literal: to }, tallyAt: { $literal: seq }, dirty: { $ne: ['$active', to] } };
    // `$not: {$gte}` also matches a record without `tallyAt` (written by the previous code), which `$lt` does not.
    return [{ updateMany: { filter: { _id: { $in: ids }, tallyAt: { $not: { $gte: seq } } }, update: [{ $set: reflected }] } }];
  });
  // One `update` command for both groups.
  if (updates.length > 0) await records.bulkWrite(updates, { ordered: false });
}

/**
 * A `counterTally` that is no document (a hand edit: 5, null, a string, an array) holds no tally
 * state: it starts again with no batch, each kind's sequence at the highest `tallyAt` of its
 * records. Restarted at 0 instead, a record finalized at tallyAt = t would fail the finalize fence
 * (`tallyAt < seq`) of tallies 1..t and be counted again by each of them. The filter is `$expr`'s
 * `$type`: the query's `$type` also matches an array that holds a document. A kind never
 * finalized stays absent (its first compare-and-set expects no sequence).
 */
async function restartTallyState(videos: VideoModel, models: InteractionModels, videoId: Types.ObjectId): Promise<void> {
  const state: Partial<Record<CounterKind, TallyState>> = {};
  for (const kind of Object.keys(COUNTER_KINDS) as CounterKind[]) {
    const [last] = await (models[kind] as Model<CountedRecord>).find({ videoId }).sort({ tallyAt: -1 }).limit(1).select({ tallyAt: 1 }).lean<CountedRecord[]>();
    if (typeof last?.tallyAt === 'number' && last.tallyAt > 0) state[kind] = { seq: last.tallyAt, batch: [] };
  }
  await videos.collection.updateOne({ _id: videoId, $expr: { $ne: [{ $type: '$counterTally' }, 'object'] } }, { $set: { counterTally: state } });
}

export interface TallyOptions {
  hooks?: CounterHooks;
  /**
   * The record a request tallies for: the tally stops once that record is counted, by this
   * call or by a concurrent one, instead of draining every dirty record of a busy video.
   */
  record?: Types.ObjectId;
  /** The `active` this request wrote to `record`: a batch that counted it so is this request's count. */
  active?: boolean;
  /** Stops the tally before its next attempt (a request's budget spent): what is left, is left as after a crash there. */
  signal?: AbortSignal;
}

/**
 * Counts the dirty records of one video and kind into its counters (the protocol above).
 * Safe to run at any time, concurrently, from any process, as often as wanted.
 */
export async function tallyCounters(
  videos: VideoModel,
  models: InteractionModels,
  kind: CounterKind,
  videoId: Types.ObjectId,
  { hooks = {}, record, active, signal }: TallyOptions = {},
): Promise<TallyOutcome> {
  const records = models[kind] as Model<CountedRecord>;
  const { recommend: recommendField, display: displayField } = COUNTER_KINDS[kind];
  const outcome: TallyOutcome = { records: [], recommend: 0, display: 0 };
  for (let attempt = 0; attempt < MAX_TALLY_ATTEMPTS && !signal?.aborted; attempt++) {
    const state = await readTally(videos, videoId, kind);
    if (!state) return outcome;
    if (state.odd.length > 0) {
      await zeroOddCounters(videos, videoId, state.odd);
      continue;
    }
    // The video already counts this request's record as it wrote it (typically: a concurrent
    // tally won the compare-and-set with it). That tally finalizes its batch right after (step
    // 5); a crash there leaves the records dirty for the next tally or the repair job.
    if (record && state.batch.some((entry) => entry.r.equals(record) && entry.to === active)) return outcome;
    await finalize(records, state);
    const dirty = await records
      .find({ videoId, dirty: true })
      .select({ active: 1, counted: 1, shown: 1 })
      .limit(TALLY_BATCH)
      // One reply for the whole batch: no getMore under contention.
      .batchSize(TALLY_BATCH)
      .lean<CountedRecord[]>();
    if (dirty.length === 0) return outcome;
    // A concurrent tally counted this request's record (its batch was finalized above): done.
    if (record && dirty.length < TALLY_BATCH && !dirty.some((entry) => entry._id.equals(record))) return outcome;
    let recommend = 0;
    let display = 0;
    const batch = dirty.map((record) => {
      if (!record.counted) recommend++;
      if (record.active !== record.shown) display += record.active ? 1 : -1;
      return { r: record._id, to: record.active };
    });
    // Stopped while it read (a request answered 503 before its record landed): no write of its own.
    if (signal?.aborted) break;
    const next: TallyState = { seq: state.seq + 1, batch };
    const swapped = await videos
      .updateOne(
        { _id: videoId, [`counterTally.${kind}.seq`]: state.seq === 0 ? { $exists: false } : state.seq },
        { $set: { [`counterTally.${kind}`]: next }, $inc: { [recommendField]: recommend, [displayField]: display } },
      )
      // A counter made odd since the read: the next read sees it. A `counterTally` that is no
      // document (a hand edit) holds no tally state: it starts again (restartTallyState).
      .catch(async (err: unknown) => {
        const { code } = err as { code?: unknown };
        if (code === PATH_NOT_VIABLE) await restartTallyState(videos, models, videoId);
        else if (code !== TYPE_MISMATCH) throw err;
        return null;
      });
    if (swapped?.modifiedCount !== 1) continue; // another tally moved first, or a counter turned odd: read again
    outcome.records.push(...batch.map((entry) => entry.r));
    outcome.recommend += recommend;
    outcome.display += display;
    await hooks.afterTally?.();
    await finalize(records, next);
    if (dirty.length < TALLY_BATCH || (record && batch.some((entry) => entry.r.equals(record)))) return outcome;
  }
  // Bounded: a video under a storm of tallies (or of full batches, or a counter that keeps turning odd) is left to the next tally or the repair job.
  const why = signal?.aborted ? 'stopped by its caller' : `stopped after ${MAX_TALLY_ATTEMPTS} attempts (compare-and-sets lost to other tallies, full batches or odd counters)`;
  return { ...outcome, unfinished: `${why}: dirty records are left to the next tally` };
}

export interface RepairOptions {
  /** Only records dirty for at least this long (younger ones are being tallied by their request). */
  minAgeMs?: number;
  /** Videos tallied per kind and run: bounds the work of one run. */
  maxVideos?: number;
  /** Called per tally that counted something left behind, or that stopped unfinished or was refused (`unfinished` says why). */
  onRepair?: (repair: { kind: CounterKind; videoId: Types.ObjectId } & TallyOutcome) => void;
}

export type RepairReport = Record<CounterName, number>;

/**
 * The repair job's work: tallies the videos that have records left dirty by a crash. Returns how
 * many records each counter gained or lost by it (0 everywhere when nothing was left behind).
 */
export async function repairPendingCounters(videos: VideoModel, models: InteractionModels, options: RepairOptions = {}): Promise<RepairReport> {
  const { minAgeMs = 30_000, maxVideos = 500 } = options;
  const report = Object.fromEntries(Object.values(COUNTER_KINDS).flatMap((c) => [[c.recommend, 0], [c.display, 0]])) as RepairReport;
  const before = new Date(Date.now() - minAgeMs);
  for (const kind of Object.keys(COUNTER_KINDS) as CounterKind[]) {
    const records = models[kind] as Model<CountedRecord>;
    const left = await records
      .find({ dirty: true, changedAt: { $lte: before } })
      .select({ videoId: 1 })
      .limit(maxVideos * 10)
      .lean<CountedRecord[]>();
    const videoIds = [...new Map(left.map((record) => [record.videoId.toHexString(), record.videoId])).values()].slice(0, maxVideos);
    for (const videoId of videoIds) {
      // A document MongoDB refuses the tally's update on stops only its own repair, reported; any
      // other error (a server unreachable, not primary, unauthorized) is the whole run's.
      const outcome = await tallyCounters(videos, models, kind, videoId).catch((err: unknown) => {
        if (!(err instanceof mongo.MongoServerError && DOCUMENT_REFUSALS.has(Number(err.code)))) throw err;
        return { records: [], recommend: 0, display: 0, unfinished: `refused by MongoDB (code ${err.code}): ${err.message}` };
      });
      if (outcome.records.length === 0 && !outcome.unfinished) continue;
      report[COUNTER_KINDS[kind].recommend] += outcome.recommend;
      report[COUNTER_KINDS[kind].display] += Math.abs(outcome.display);
      options.onRepair?.({ kind, videoId, ...outcome });
    }
  }
  return report;
}
