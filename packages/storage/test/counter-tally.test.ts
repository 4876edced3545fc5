/**
 * The counter tally (SPEC R3, counters/counter-tally.ts) over the run's MongoDB: what a tally
 * writes, that a repeated or stale one counts nothing twice, the previous protocol's records
 * and the history counts (R5) kept, the coalescing of `CounterTallies`, and the repair job's
 * selection and clean-up. Random interleavings with crashes: apps/api/test/interaction-model.test.ts.
 */
import { mongo, Types } from 'mongoose';
import { demoVideo } from '@feed/demo-data';
import { COUNTER_KINDS, CounterTallies, TALLY_RETRIES, freshRecordFields, interactionModels, repairPendingCounters, tallyCounters, videoModel, type CountedRecord, type CounterKind, type InteractionModels, type VideoModel } from '../src';
import { useTestServices } from '../../../test/support/services';
import { waitUntil } from '../../../tools/support/processes';

const s = useTestServices('counter-tally');
let videos: VideoModel;
let models: InteractionModels;

beforeAll(async () => {
  videos = videoModel(s.mongo);
  models = interactionModels(s.mongo);
  await Promise.all([videos.init(), ...Object.values(models).map((model) => model.init())]);
});
afterEach(() => jest.restoreAllMocks());

const KINDS = Object.keys(COUNTER_KINDS) as CounterKind[];
const ALL_COUNTERS = Object.values(COUNTER_KINDS).flatMap((c) => [c.recommend, c.display]);
const MINUTE_AGO = () => new Date(Date.now() - 60_000);
const zeros = Object.fromEntries(ALL_COUNTERS.map((field) => [field, 0]));

async function newVideo(fields: Record<string, unknown> = {}): Promise<Types.ObjectId> {
  const [video] = await videos.insertMany([demoVideo(fields)]);
  return video._id;
}

/** `n` records of `kind` on the video as a first success writes them, with `fields` over them. */
async function addRecords(kind: CounterKind, videoId: Types.ObjectId, n: number, fields: Partial<CountedRecord> = {}): Promise<Types.ObjectId[]> {
  const docs = Array.from({ length: n }, () => {
    const userId = `u-${new Types.ObjectId().toHexString()}`;
    const comment = kind === 'comments' ? { content: 'hi', status: 'published', idempotencyKey: userId } : {};
    return { userId, videoId, active: true, ...freshRecordFields(), ...comment, ...fields };
  });
  const inserted = await (models[kind] as typeof models.likes).insertMany(docs);
  return inserted.map((doc) => doc._id);
}

/** An unlike as the service writes it: `active` off, `v` + 1, dirty. */
const unlike = (id: Types.ObjectId) => models.likes.updateOne({ _id: id }, { $set: { active: false, dirty: true, changedAt: new Date() }, $inc: { v: 1 } });

async function counters(videoId: Types.ObjectId): Promise<Record<string, unknown>> {
  const doc = await videos.collection.findOne({ _id: videoId });
  return Object.fromEntries(ALL_COUNTERS.map((field) => [field, doc?.[field]]));
}

describe('tallyCounters (R3)', () => {
  it.each(KINDS)('when a video has %s records, then a tally sets both counters from them and its sums, and a second tally changes nothing', async (kind) => {
    const videoId = await newVideo();
    await addRecords(kind, videoId, 3);
    await tallyCounters(videos, models, kind, videoId);
    const want = { ...zeros, [COUNTER_KINDS[kind].recommend]: 3, [COUNTER_KINDS[kind].display]: 3 };
    expect(await counters(videoId)).toEqual(want);
    expect((await videos.collection.findOne({ _id: videoId }))?.tally).toEqual({ [kind]: { v: 3, all: 3, active: 3 } });
    await tallyCounters(videos, models, kind, videoId);
    expect(await counters(videoId)).toEqual(want);
  });

  it('when a counted like is unliked, then the display counter goes down and recommend* stays', async () => {
    const videoId = await newVideo();
    const [id] = await addRecords('likes', videoId, 2);
    await tallyCounters(videos, models, 'likes', videoId);
    await unlike(id);
    await tallyCounters(videos, models, 'likes', videoId);
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 2, likeCount: 1 });
  });

  it('when a tally reads a smaller v sum than the counters were written with (a stale read, as in MongoDB between its count and its merge), then it writes nothing', async () => {
    const videoId = await newVideo({ tally: { shares: { v: 9, all: 9, active: 9 } } });
    const [, second] = await addRecords('likes', videoId, 2);
    await tallyCounters(videos, models, 'likes', videoId);
    // Records are never deleted: removing one makes the next tally read what an earlier one read.
    await models.likes.deleteOne({ _id: second });
    await tallyCounters(videos, models, 'likes', videoId);
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 2, likeCount: 2 });
    expect((await videos.collection.findOne({ _id: videoId }))?.tally).toEqual({ shares: { v: 9, all: 9, active: 9 }, likes: { v: 2, all: 2, active: 2 } });
  });

  it('when a video has counts from history (R5) and no records, then a like adds one to them', async () => {
    const videoId = await newVideo({ likeCount: 10, recommendLikeCount: 12 });
    await addRecords('likes', videoId, 1);
    await tallyCounters(videos, models, 'likes', videoId);
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 13, likeCount: 11 });
  });

  it("when records of the previous protocol are on the video (counted, shown), then the first tally counts only what the counters lacked and removes its state", async () => {
    const videoId = await newVideo({ likeCount: 7, recommendLikeCount: 9, counterTally: { likes: { seq: 4, batch: [] } } });
    // The counters include two of them: one active, one unliked after it was counted (display not yet down).
    await addRecords('likes', videoId, 1, { counted: true, shown: true, dirty: false, v: undefined });
    await addRecords('likes', videoId, 1, { counted: true, shown: true, active: false, v: undefined });
    await addRecords('likes', videoId, 1, { counted: false, shown: false, v: undefined });
    await tallyCounters(videos, models, 'likes', videoId);
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 10, likeCount: 7 });
    expect((await videos.collection.findOne({ _id: videoId }))?.counterTally).toEqual({});
  });

  it.each([['a string', 'many'], ['null', null], ['NaN', NaN]])('when a counter holds %s (R1a: 0), then the tally sets it from the records', async (_, odd) => {
    const videoId = await newVideo();
    await videos.collection.updateOne({ _id: videoId }, { $set: { likeCount: odd, recommendLikeCount: odd } });
    await addRecords('likes', videoId, 2);
    await tallyCounters(videos, models, 'likes', videoId);
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 2, likeCount: 2 });
  });

  it('when the video was removed after its records were written (a like racing a deletion), then neither a tally nor the repair makes a video document of the sums', async () => {
    const videoId = await newVideo();
    await addRecords('likes', videoId, 2, { changedAt: MINUTE_AGO() });
    await videos.deleteOne({ _id: videoId });
    await tallyCounters(videos, models, 'likes', videoId);
    await repairPendingCounters(videos, models, { minAgeMs: 0 });
    expect(await videos.collection.findOne({ _id: videoId })).toBeNull();
    expect(await models.likes.countDocuments({ videoId, dirty: true })).toBe(0);
  });

  it('when the counters are stored as Decimal128 and Int64 (R1a: any numeric BSON type counts by value), then a tally adds to their values (a decimal stays one)', async () => {
    const { Decimal128, Long } = mongo;
    const videoId = await newVideo();
    await videos.collection.updateOne({ _id: videoId }, { $set: { likeCount: Decimal128.fromString('41'), recommendLikeCount: Long.fromNumber(50) } });
    await addRecords('likes', videoId, 1);
    await tallyCounters(videos, models, 'likes', videoId);
    const doc = await videos.collection.findOne({ _id: videoId });
    expect({ likeCount: String(doc?.likeCount), likeType: doc?.likeCount?._bsontype, recommend: Number(doc?.recommendLikeCount) }).toEqual({ likeCount: '42', likeType: 'Decimal128', recommend: 51 });
  });

  // No tally writes such a sum (past 2^53 it would take 9e15 record changes): a hand edit or another tool's.
  it.each([['a string', '7'], ['null', null], ['Infinity', Infinity], ['2^60', 2 ** 60]])('when the stored v sum is %s, then it counts as older and the tally counts the records (the counters do not freeze)', async (_, odd) => {
    const videoId = await newVideo({ tally: { likes: { v: odd, all: 0, active: 0 } } });
    await addRecords('likes', videoId, 2);
    await tallyCounters(videos, models, 'likes', videoId);
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 2, likeCount: 2 });
    expect((await videos.collection.findOne({ _id: videoId }))?.tally).toEqual({ likes: { v: 2, all: 2, active: 2 } });
  });
});

describe('CounterTallies', () => {
  /** Tallies whose first waits for `release()`; `tallies()` counts those begun. */
  function heldTallies(options: { pauseMs?: number } = {}) {
    let release = () => undefined as void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let tallies = 0;
    const queue = new CounterTallies({
      videos,
      records: models,
      ...options,
      hooks: { beforeTally: () => (++tallies === 1 ? held : Promise.resolve()) },
      onError: (_, err) => {
        throw err;
      },
    });
    return { queue, release: () => release(), tallies: () => tallies };
  }

  /** Tallies without a pause whose reported failures are kept in `errors`; the hook gets the queue (to ask for more). */
  function reportingTallies(beforeTally: (queue: CounterTallies) => Promise<void>) {
    const errors: unknown[] = [];
    const queue: CounterTallies = new CounterTallies({ videos, records: models, pauseMs: 0, hooks: { beforeTally: () => beforeTally(queue) }, onError: (_, err) => errors.push(err) });
    return { queue, errors };
  }

  it('when 50 tallies of one video are asked for while one runs, then they cost one more tally, which counts every record', async () => {
    const videoId = await newVideo();
    const { queue, release, tallies } = heldTallies();
    await addRecords('likes', videoId, 1);
    queue.request('likes', videoId);
    for (let i = 0; i < 50; i++) {
      await addRecords('likes', videoId, 1);
      queue.request('likes', videoId);
    }
    release();
    await queue.idle();
    expect(tallies()).toBe(2);
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 51, likeCount: 51 });
  });

  it('when a tally is asked for while one runs, then the next waits its pause, and settle (shutdown) runs it at once: true, the counters exact', async () => {
    const videoId = await newVideo();
    const { queue, release, tallies } = heldTallies({ pauseMs: 60_000 });
    await addRecords('likes', videoId, 1);
    queue.request('likes', videoId);
    await addRecords('likes', videoId, 1);
    queue.request('likes', videoId);
    release();
    // The second ask waits out the first tally's pause: a minute, far past settle's bound below.
    await waitUntil('the second tally paused', async () => (Reflect.get(queue, 'paused') as Set<unknown>).size === 1);
    expect(tallies()).toBe(1);
    expect(await queue.settle(5_000)).toBe(true);
    expect(tallies()).toBe(2);
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 2, likeCount: 2 });
  });

  it('when tallies fail (MongoDB frozen past the tally\'s bound), then the video is tallied again with no further ask, TALLY_RETRIES times before the failure is reported', async () => {
    const videoId = await newVideo();
    await addRecords('likes', videoId, 2);
    let failing = 2;
    const { queue, errors } = reportingTallies(async () => {
      if (failing-- > 0) throw new Error('MongoDB frozen');
    });
    queue.request('likes', videoId);
    await queue.idle();
    expect(errors).toHaveLength(0);
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 2, likeCount: 2 });

    failing = 1 + TALLY_RETRIES;
    await addRecords('likes', videoId, 1);
    queue.request('likes', videoId);
    await queue.idle();
    expect(errors).toHaveLength(1);
    expect(failing).toBe(0);
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 2, likeCount: 2 });
  });

  it('when a busy video\'s tallies gave up (reported) and a new ask meanwhile fails too, then that one gets its own retries', async () => {
    const videoId = await newVideo();
    await addRecords('likes', videoId, 1);
    let calls = 0;
    // The first 1 + TALLY_RETRIES tallies fail (given up), the last of them meets a new like; that like's tally fails once.
    const { queue, errors } = reportingTallies(async (tallies) => {
      calls++;
      if (calls === TALLY_RETRIES + 1) {
        await addRecords('likes', videoId, 1);
        tallies.request('likes', videoId);
      }
      if (calls <= TALLY_RETRIES + 2) throw new Error('MongoDB frozen');
    });
    queue.request('likes', videoId);
    await queue.idle();
    expect({ calls, reported: errors.length }).toEqual({ calls: TALLY_RETRIES + 3, reported: 1 });
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 2, likeCount: 2 });
  });

  it('when a busy video\'s tallies fail now and then (each followed by a success and a new ask), then each failure still gets its retries: none reported, every record counted', async () => {
    const videoId = await newVideo();
    await addRecords('likes', videoId, 1);
    let calls = 0;
    // Odd tallies fail; each success meets a new like (asked for while it runs), one more than TALLY_RETRIES times.
    const { queue, errors } = reportingTallies(async (tallies) => {
      if (++calls % 2 === 0) {
        if (calls <= 2 * (TALLY_RETRIES + 1)) tallies.request('likes', videoId);
        return;
      }
      await addRecords('likes', videoId, 1);
      throw new Error('MongoDB blip');
    });
    queue.request('likes', videoId);
    await queue.idle();
    expect(errors).toHaveLength(0);
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: TALLY_RETRIES + 3, likeCount: TALLY_RETRIES + 3 });
  });
});

describe('repairPendingCounters (R3)', () => {
  // The run looks at every video: the records the tests above left dirty are not this test's.
  beforeEach(() => Promise.all(Object.values(models).map((model) => (model as typeof models.likes).deleteMany({}))));

  it('when records of every kind were left dirty a while ago without a tally, then one run counts them, reports each counter and cleans them', async () => {
    const videoId = await newVideo();
    for (const kind of KINDS) await addRecords(kind, videoId, 2, { changedAt: MINUTE_AGO() });
    const repaired: unknown[] = [];
    expect(await repairPendingCounters(videos, models, { onRepair: (repair) => repaired.push(repair) })).toEqual(Object.fromEntries(ALL_COUNTERS.map((field) => [field, 2])));
    expect(await counters(videoId)).toEqual(Object.fromEntries(ALL_COUNTERS.map((field) => [field, 2])));
    expect(repaired).toContainEqual({ kind: 'comments', videoId, records: [expect.any(Types.ObjectId), expect.any(Types.ObjectId)], recommend: 2, display: 2 });
    expect(await models.likes.countDocuments({ dirty: true })).toBe(0);
    expect(await repairPendingCounters(videos, models)).toEqual(zeros);
  });

  it('when the records were tallied already, then the run only cleans them and reports nothing', async () => {
    const videoId = await newVideo();
    await addRecords('likes', videoId, 2, { changedAt: MINUTE_AGO() });
    await tallyCounters(videos, models, 'likes', videoId);
    const onRepair = jest.fn();
    expect(await repairPendingCounters(videos, models, { onRepair })).toEqual(zeros);
    expect(onRepair).not.toHaveBeenCalled();
    expect(await models.likes.countDocuments({ dirty: true })).toBe(0);
  });

  it('when records were changed just now, then the run leaves them (minAgeMs, 30 s by default)', async () => {
    const videoId = await newVideo();
    await addRecords('likes', videoId, 1);
    expect(await repairPendingCounters(videos, models)).toEqual(zeros);
    expect(await models.likes.countDocuments({ dirty: true })).toBe(1);
    expect(await repairPendingCounters(videos, models, { minAgeMs: 0 })).toMatchObject({ recommendLikeCount: 1, likeCount: 1 });
  });

  it('when a record changes between the run’s read and its clean-up, then it stays dirty for the next run', async () => {
    const videoId = await newVideo();
    const [id] = await addRecords('likes', videoId, 1, { changedAt: MINUTE_AGO() });
    const bulkWrite = models.likes.bulkWrite.bind(models.likes);
    jest.spyOn(models.likes, 'bulkWrite').mockImplementation((async (...args: Parameters<typeof bulkWrite>) => {
      await unlike(id);
      return bulkWrite(...args);
    }) as never);
    await repairPendingCounters(videos, models, { minAgeMs: 0 });
    expect(await models.likes.findById(id).lean()).toMatchObject({ dirty: true, v: 2 });
    jest.restoreAllMocks();
    await repairPendingCounters(videos, models, { minAgeMs: 0 });
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 1, likeCount: 0 });
  });

  it('when more dirty records wait than maxRecords, then one run takes maxRecords of them', async () => {
    await addRecords('shares', await newVideo(), 1, { changedAt: MINUTE_AGO() });
    await addRecords('shares', await newVideo(), 1, { changedAt: MINUTE_AGO() });
    expect(await repairPendingCounters(videos, models, { maxRecords: 1 })).toMatchObject({ recommendShareCount: 1 });
    expect(await repairPendingCounters(videos, models, { maxRecords: 1 })).toMatchObject({ recommendShareCount: 1 });
    expect(await repairPendingCounters(videos, models, { maxRecords: 1 })).toMatchObject({ recommendShareCount: 0 });
  });

  it('when MongoDB refuses one video’s document (BadValue), then the run reports it and repairs the others; a server-wide error (Unauthorized) stops the run', async () => {
    const refusing = await newVideo();
    const fine = await newVideo();
    await addRecords('likes', refusing, 1, { changedAt: MINUTE_AGO() });
    // The tally's one command (its aggregation, merging into the video) is refused for that video.
    const aggregate = models.likes.aggregate.bind(models.likes);
    let code = 13;
    jest.spyOn(models.likes, 'aggregate').mockImplementation(((pipeline: Array<{ $match?: { videoId?: Types.ObjectId } }>) => {
      const query = aggregate(pipeline as never);
      if (pipeline[0]?.$match?.videoId?.equals(refusing)) jest.spyOn(query, 'exec').mockRejectedValue(new mongo.MongoServerError({ code, errmsg: 'refused for the test' }));
      return query;
    }) as never);
    await expect(repairPendingCounters(videos, models)).rejects.toMatchObject({ code: 13 });
    code = 2;
    await addRecords('likes', fine, 1, { changedAt: MINUTE_AGO() });
    const onRepair = jest.fn();
    expect(await repairPendingCounters(videos, models, { onRepair })).toMatchObject({ recommendLikeCount: 1, likeCount: 1 });
    expect(await counters(fine)).toMatchObject({ recommendLikeCount: 1, likeCount: 1 });
    expect(onRepair).toHaveBeenCalledWith({ kind: 'likes', videoId: refusing, records: [], recommend: 0, display: 0, refused: expect.stringContaining('refused') });
  });
});
