/**
 * Exactly-once interaction counters (SPEC R3) by recomputation, MongoDB's computed pattern. The
 * records are the truth (one per first success, never deleted; each change bumps its `v`). A tally
 * counts a video's records and `$merge`s the difference into its counters, fenced on the `v` sum:
 * repeated, late or concurrent, nothing counts twice and a stale tally never overwrites a newer.
 * Pre-record counts (R5's history) stay. Records stay `dirty` until the repair job tallies them,
 * so a crash anywhere is repaired. The proof: docs/design.md, "Interactions".
 */
import { mongo, type Model, type Types } from 'mongoose';
import { MongoBudget } from '../deadline';
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

/** A tally's own bound: a frozen MongoDB does not hold a video's tallies for ever. */
export const TALLY_TIMEOUT_MS = 10_000;

export interface CounterHooks {
  /** Test hook: runs after the record write, before its tally is asked for (a crash there leaves it dirty). */
  afterRecord?: () => Promise<void>;
  /** Test hook: runs before a tally's command (a crash there leaves the records dirty). */
  beforeTally?: () => Promise<void>;
}

/** The fields of a record's first state: `v` 1, dirty. */
export const freshRecordFields = (now = new Date()) => ({ v: 1, dirty: true, changedAt: now, createdAt: now });

/** A number's value, any other value (a string, null, NaN, an infinity) 0 (R1a), in an aggregation. */
const numeric = (path: string) => ({ $cond: [{ $and: [{ $isNumber: path }, { $gt: [path, -Infinity] }, { $lt: [path, Infinity] }] }, path, 0] });

/** One tally, one command, fenced on the stored `v` sum; before the first, counters hold the old protocol's `counted`/`shown`. */
export async function tallyCounters(videos: VideoModel, models: InteractionModels, kind: CounterKind, videoId: Types.ObjectId, hooks: CounterHooks = {}): Promise<void> {
  await hooks.beforeTally?.();
  const { recommend, display } = COUNTER_KINDS[kind];
  const legacy = { $ne: [{ $type: '$counted' }, 'missing'] };
  const legacyShown = { $and: [legacy, { $ifNull: ['$shown', { $ifNull: ['$active', { $eq: ['$status', 'published'] }] }] }] };
  const one = (condition: unknown) => ({ $sum: { $cond: [condition, 1, 0] } });
  const stored = (field: string) => `$tally.${kind}.${field}`;
  // A missing or odd stored sum (not a number, or past 2^53) is older than any count: else it
  // would fence out every tally for ever.
  const fresh = { $or: [{ $not: [{ $isNumber: stored('v') }] }, { $gt: [stored('v'), Number.MAX_SAFE_INTEGER] }, { $lt: [stored('v'), '$$new.v'] }] };
  const last = (field: 'all' | 'active', otherwise: string) => ({ $cond: [{ $isNumber: stored(field) }, stored(field), otherwise] });
  const moved = (counter: string, by: unknown) => ({ $cond: [fresh, { $add: [numeric(`$${counter}`), by] }, `$${counter}`] });
  const tally = { $mergeObjects: [{ $cond: [{ $eq: [{ $type: '$tally' }, 'object'] }, '$tally', {}] }, { [kind]: { v: '$$new.v', all: '$$new.all', active: '$$new.active' } }] };
  await new MongoBudget(TALLY_TIMEOUT_MS).run(
    (signal) =>
      (models[kind] as Model<CountedRecord>)
        .aggregate([
          { $match: { videoId } },
          { $group: { _id: '$videoId', all: { $sum: 1 }, active: one({ $eq: ['$active', true] }), v: { $sum: numeric('$v') }, counted: one({ $eq: ['$counted', true] }), shown: one(legacyShown) } },
          {
            $merge: {
              into: videos.collection.collectionName,
              whenMatched: [
                { $set: { [recommend]: moved(recommend, { $subtract: ['$$new.all', last('all', '$$new.counted')] }), [display]: moved(display, { $subtract: ['$$new.active', last('active', '$$new.shown')] }) } },
                // Not a dotted $set: a `tally` that is no document (a hand edit) is replaced, not kept.
                { $set: { tally: { $cond: [fresh, tally, '$tally'] } } },
                { $unset: `counterTally.${kind}` },
              ],
              whenNotMatched: 'discard',
            },
          },
        ])
        .option({ signal }),
    'tally',
  );
}

/** The pause before a video's next asked-for tally (up to the last's duration): a burst costs a few tallies a second (issue 49). */
export const TALLY_PAUSE_MS = 200;
export const TALLY_PAUSE_MAX_MS = 1_000;
/** Tries again of a failed tally, each after its pause, before it is reported (`onError`) and left to the repair job. */
export const TALLY_RETRIES = 3;

/** One tally per video and kind at a time; one asked for meanwhile reruns after a pause, reading every write. `pauseMs` 0: none. */
export class CounterTallies {
  private readonly running = new Map<string, { again: boolean; done: Promise<void> }>();
  /** Wakes the paused tallies (shutdown: no pause). */
  private readonly paused = new Set<() => void>();
  private settling = false;

  constructor(private readonly options: { videos: VideoModel; records: InteractionModels; hooks?: CounterHooks; onError: (kind: CounterKind, err: unknown) => void; pauseMs?: number }) {}

  request(kind: CounterKind, videoId: Types.ObjectId): void {
    const key = `${kind}:${videoId.toHexString()}`;
    const running = this.running.get(key);
    if (running) return void (running.again = true);
    const entry = { again: true, done: Promise.resolve() };
    this.running.set(key, entry);
    const { videos, records, hooks, onError, pauseMs = TALLY_PAUSE_MS } = this.options;
    entry.done = (async () => {
      let retries = 0;
      while (entry.again) {
        entry.again = false;
        const started = performance.now();
        // A failed tally is tried again (a MongoDB back from a freeze), a success ending the failure (a
        // busy video's loop outlives many); the last failure is reported, its records dirty for the repair job.
        await tallyCounters(videos, records, kind, videoId, hooks).then(
          () => void (retries = 0),
          (err: unknown) => {
            if (retries++ < TALLY_RETRIES) return void (entry.again = true);
            // Given up: a later ask in this loop (a busy video) is a new failure with retries of its own.
            retries = 0;
            onError(kind, err);
          },
        );
        if (entry.again && pauseMs > 0) await this.pause(Math.max(pauseMs, Math.min(TALLY_PAUSE_MAX_MS, performance.now() - started)));
      }
      this.running.delete(key);
    })();
  }

  private pause(ms: number): Promise<void> {
    if (this.settling) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.paused.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.paused.add(wake);
    });
  }

  /** Resolves once no tally runs (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()].map((entry) => entry.done));
  }

  /** Shutdown: asked-for tallies run now; false if some still run after `ms` (the repair job covers them). */
  async settle(ms: number): Promise<boolean> {
    this.settling = true;
    for (const wake of [...this.paused]) wake();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    try {
      return await Promise.race([this.idle().then(() => true as const), late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Errors of one document, not of the server: BadValue, TypeMismatch, PathNotViable, a document past 16 MB. */
const DOCUMENT_REFUSALS = new Set([2, 14, 28, 10334, 17419]);

export interface RepairOptions {
  /** Only records dirty for at least this long (younger ones are being tallied by their process). */
  minAgeMs?: number;
  /** Dirty records taken per kind and run: bounds the work of one run. */
  maxRecords?: number;
  /** Called per video whose counters the repair moved, or whose document MongoDB refused (`refused`). */
  onRepair?: (repair: { kind: CounterKind; videoId: Types.ObjectId; records: Types.ObjectId[]; recommend: number; display: number; refused?: string }) => void;
}

export type RepairReport = Record<CounterName, number>;

/** The repair job: tallies videos of records dirty for `minAgeMs`, clears `dirty` where `v` is unchanged; each counter's change. */
export async function repairPendingCounters(videos: VideoModel, models: InteractionModels, options: RepairOptions = {}): Promise<RepairReport> {
  const { minAgeMs = 30_000, maxRecords = 50_000 } = options;
  const report = Object.fromEntries(Object.values(COUNTER_KINDS).flatMap((c) => [[c.recommend, 0], [c.display, 0]])) as RepairReport;
  const before = new Date(Date.now() - minAgeMs);
  for (const kind of Object.keys(COUNTER_KINDS) as CounterKind[]) {
    const records = models[kind] as Model<CountedRecord>;
    const { recommend, display } = COUNTER_KINDS[kind];
    const left = await records.find({ dirty: true, changedAt: { $lte: before } }).select({ videoId: 1, v: 1 }).limit(maxRecords).lean<CountedRecord[]>();
    const byVideo = new Map<string, CountedRecord[]>();
    for (const record of left) {
      const key = record.videoId.toHexString();
      byVideo.set(key, byVideo.get(key) ?? []).get(key)?.push(record);
    }
    for (const dirty of byVideo.values()) {
      const { videoId } = dirty[0];
      const counters = () => videos.findById(videoId).select({ [recommend]: 1, [display]: 1 }).lean<Record<string, unknown>>();
      const was = await counters();
      // A document MongoDB refuses stops only its own repair; any other error stops the run.
      const refused = await tallyCounters(videos, models, kind, videoId).then(
        () => undefined,
        (err: unknown) => {
          if (err instanceof mongo.MongoServerError && DOCUMENT_REFUSALS.has(Number(err.code))) return `refused by MongoDB (code ${err.code}): ${err.message}`;
          throw err;
        },
      );
      if (refused) {
        options.onRepair?.({ kind, videoId, records: [], recommend: 0, display: 0, refused });
        continue;
      }
      await records.bulkWrite(dirty.map(({ _id, v }) => ({ updateOne: { filter: { _id, v: v ?? null }, update: { $set: { dirty: false } } } })), { ordered: false });
      const now = await counters();
      const moved = (field: string) => Number(now?.[field] ?? 0) - Number(was?.[field] ?? 0);
      if (moved(recommend) === 0 && moved(display) === 0) continue;
      report[recommend] += moved(recommend);
      report[display] += Math.abs(moved(display));
      options.onRepair?.({ kind, videoId, records: dirty.map((record) => record._id), recommend: moved(recommend), display: moved(display) });
    }
  }
  return report;
}
