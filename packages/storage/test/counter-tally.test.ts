/**
 * The counter tally (SPEC R3, counters/counter-tally.ts) step by step over the run's MongoDB:
 * what one tally moves, where it stops, what it leaves to the next one, and the repair job's
 * selection. Records are written as the service writes them (dirty, nothing counted) or as a
 * crash leaves them; the interleavings of several tallies are in counter-tally-races.test.ts and
 * the model-based apps/api/test/interaction-model.test.ts.
 */
import { mongo, Types } from 'mongoose';
import { demoVideo } from '@feed/demo-data';
import {
  COUNTER_KINDS,
  freshRecordFields,
  interactionModels,
  MAX_TALLY_ATTEMPTS,
  repairPendingCounters,
  tallyCounters,
  TALLY_BATCH,
  videoModel,
  type CountedRecord,
  type CounterKind,
  type InteractionModels,
  type VideoModel,
} from '../src';
import { useTestServices } from '../../../test/support/services';

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

async function newVideo(fields: Record<string, unknown> = {}): Promise<Types.ObjectId> {
  const [video] = await videos.insertMany([demoVideo(fields)]);
  return video._id;
}

/** `n` records of `kind` on the video as a first success writes them (dirty, nothing counted yet), with `fields` over them. */
async function addRecords(kind: CounterKind, videoId: Types.ObjectId, n: number, fields: Partial<CountedRecord> = {}): Promise<Types.ObjectId[]> {
  const docs = Array.from({ length: n }, () => {
    const userId = `u-${new Types.ObjectId().toHexString()}`;
    const comment = kind === 'comments' ? { content: 'hi', status: 'published', idempotencyKey: userId } : {};
    return { userId, videoId, active: true, ...freshRecordFields(), ...comment, ...fields };
  });
  const inserted = await (models[kind] as typeof models.likes).insertMany(docs);
  return inserted.map((doc) => doc._id);
}

/** Every counter of the video (the ones the tally must leave alone included). */
async function counters(videoId: Types.ObjectId): Promise<Record<string, unknown>> {
  const doc = await videos.collection.findOne({ _id: videoId });
  return Object.fromEntries(ALL_COUNTERS.map((field) => [field, doc?.[field]]));
}

const zeros = Object.fromEntries(ALL_COUNTERS.map((field) => [field, 0]));
const tallyState = async (videoId: Types.ObjectId) => ((await videos.collection.findOne({ _id: videoId }))?.counterTally as Record<string, { seq: number; batch: unknown[] }> | undefined)?.likes;
const likeRecord = (id: Types.ObjectId) => models.likes.findById(id).select({ active: 1, counted: 1, shown: 1, tallyAt: 1, dirty: 1, _id: 0 }).lean();
/** A tally whose process dies right after its compare-and-set, before it finalizes its batch. */
class Crash extends Error {}
const crashAfterTally = { afterTally: () => Promise.reject(new Crash()) };

/** Before each compare-and-set of a likes tally (the tally's one `videos.updateOne`), another tally moves the video's sequence on. */
function otherTalliesWinEveryCompareAndSet(videoId: Types.ObjectId) {
  const updateOne = videos.updateOne.bind(videos);
  return jest.spyOn(videos, 'updateOne').mockImplementation(((...args: Parameters<typeof updateOne>) =>
    videos.collection.updateOne({ _id: videoId }, { $inc: { 'counterTally.likes.seq': 1 } }).then(() => updateOne(...args))) as never);
}

describe('tallyCounters (R3)', () => {
  it.each(KINDS)('when a %s record is new, then its tally moves that kind’s recommend and display counters by one each, and no other counter', async (kind) => {
    const videoId = await newVideo();
    const [id] = await addRecords(kind, videoId, 1);
    expect(await tallyCounters(videos, models, kind, videoId)).toEqual({ records: [id], recommend: 1, display: 1 });
    expect(await counters(videoId)).toEqual({ ...zeros, [COUNTER_KINDS[kind].recommend]: 1, [COUNTER_KINDS[kind].display]: 1 });
    const record = await (models[kind] as typeof models.likes).findById(id).lean();
    expect(record).toMatchObject({ counted: true, shown: true, tallyAt: 1, dirty: false });
  });

  it('when a counted like was unliked and a new like was unliked before any tally, then display follows the active records and recommend counts each first success once', async () => {
    const videoId = await newVideo({ likeCount: 1, recommendLikeCount: 1 });
    const [unliked] = await addRecords('likes', videoId, 1, { active: false, counted: true, shown: true });
    const [never] = await addRecords('likes', videoId, 1, { active: false });
    expect(await tallyCounters(videos, models, 'likes', videoId)).toEqual({ records: [unliked, never], recommend: 1, display: -1 });
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 2, likeCount: 0 });
    expect(await likeRecord(unliked)).toEqual({ active: false, counted: true, shown: false, tallyAt: 1, dirty: false });
    expect(await likeRecord(never)).toEqual({ active: false, counted: true, shown: false, tallyAt: 1, dirty: false });
    // Nothing is left dirty: the next tally counts nothing and leaves the video's tally state as it is.
    expect(await tallyCounters(videos, models, 'likes', videoId)).toEqual({ records: [], recommend: 0, display: 0 });
    expect(await tallyState(videoId)).toMatchObject({ seq: 1 });
  });

  it('when the video does not exist, then the tally counts nothing and leaves its records dirty', async () => {
    const [id] = await addRecords('likes', new Types.ObjectId(), 1);
    expect(await tallyCounters(videos, models, 'likes', new Types.ObjectId(), { record: id, active: true })).toEqual({ records: [], recommend: 0, display: 0 });
    expect(await likeRecord(id)).toMatchObject({ dirty: true, counted: false });
  });

  it('when a tally died before its finalize, then the next one finalizes its batch first and does not count those records again', async () => {
    const videoId = await newVideo();
    const [id] = await addRecords('likes', videoId, 1);
    await expect(tallyCounters(videos, models, 'likes', videoId, { hooks: crashAfterTally })).rejects.toBeInstanceOf(Crash);
    expect(await likeRecord(id)).toMatchObject({ dirty: true, counted: false });
    // The request of another like on the video: its own record is counted, the first one is not counted again.
    const [other] = await addRecords('likes', videoId, 1);
    expect(await tallyCounters(videos, models, 'likes', videoId, { record: other, active: true })).toEqual({ records: [other], recommend: 1, display: 1 });
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 2, likeCount: 2 });
    expect(await likeRecord(id)).toEqual({ active: true, counted: true, shown: true, tallyAt: 1, dirty: false });
  });

  it('when the unfinalized batch counted the request’s record in another state than the request wrote, then the request counts its own change', async () => {
    const videoId = await newVideo();
    const [id] = await addRecords('likes', videoId, 1);
    await expect(tallyCounters(videos, models, 'likes', videoId, { hooks: crashAfterTally })).rejects.toBeInstanceOf(Crash);
    // The user unlikes after the crashed tally counted the like.
    await models.likes.updateOne({ _id: id }, { $set: { active: false, dirty: true } });
    expect(await tallyCounters(videos, models, 'likes', videoId, { record: id, active: false })).toEqual({ records: [id], recommend: 0, display: -1 });
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 1, likeCount: 0 });
  });

  it('when a concurrent tally already counted the request’s record, then the request stops there and leaves the other dirty records to their own requests', async () => {
    const videoId = await newVideo();
    const [mine] = await addRecords('likes', videoId, 1);
    await tallyCounters(videos, models, 'likes', videoId);
    const [theirs] = await addRecords('likes', videoId, 1);
    expect(await tallyCounters(videos, models, 'likes', videoId, { record: mine, active: true })).toEqual({ records: [], recommend: 0, display: 0 });
    expect(await likeRecord(theirs)).toMatchObject({ dirty: true, counted: false });
  });

  /** The records the tally's read of dirty records returns first (the same query: its order is the server's). */
  const firstBatch = async (videoId: Types.ObjectId) => (await models.likes.find({ videoId, dirty: true }).limit(TALLY_BATCH).lean()).map((record) => String(record._id));

  it('when the request’s record is in a full first batch, then its tally stops after that batch', async () => {
    const videoId = await newVideo();
    await addRecords('likes', videoId, TALLY_BATCH + 1);
    const [mine] = await firstBatch(videoId);
    const outcome = await tallyCounters(videos, models, 'likes', videoId, { record: new Types.ObjectId(mine), active: true });
    expect(outcome.records).toHaveLength(TALLY_BATCH);
    expect(outcome.records.map(String)).toContain(mine);
    expect(await models.likes.countDocuments({ videoId, dirty: true })).toBe(1);
  });

  it('when the request’s record is past a full first batch, then its tally goes on, batch by batch, until it is counted', async () => {
    const videoId = await newVideo();
    const ids = await addRecords('likes', videoId, TALLY_BATCH + 1);
    const first = await firstBatch(videoId);
    const mine = ids.find((id) => !first.includes(String(id)))!;
    const outcome = await tallyCounters(videos, models, 'likes', videoId, { record: mine, active: true });
    expect(outcome.records).toHaveLength(TALLY_BATCH + 1);
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: TALLY_BATCH + 1, likeCount: TALLY_BATCH + 1 });
  });

  it('when a counter holds no finite number (a string, null), then the tally counts it as 0 (R1a) and moves it; a Decimal128 number is moved as it is', async () => {
    const videoId = await newVideo();
    await videos.collection.updateOne({ _id: videoId }, { $set: { likeCount: 'n/a', recommendLikeCount: null, collectCount: Types.Decimal128.fromString('5') } });
    await addRecords('likes', videoId, 1);
    await addRecords('collects', videoId, 1);
    expect(await tallyCounters(videos, models, 'likes', videoId)).toMatchObject({ recommend: 1, display: 1 });
    expect(await tallyCounters(videos, models, 'collects', videoId)).toMatchObject({ recommend: 1, display: 1 });
    const after = await counters(videoId);
    expect(after).toMatchObject({ likeCount: 1, recommendLikeCount: 1, recommendCollectCount: 1 });
    expect(String(after.collectCount)).toBe('6');
  });

  it('when a counter turns odd between the read and the compare-and-set, then the tally reads again, zeroes it and counts', async () => {
    const videoId = await newVideo();
    await addRecords('likes', videoId, 1);
    const updateOne = videos.updateOne.bind(videos);
    let turned = false;
    jest.spyOn(videos, 'updateOne').mockImplementation(((...args: Parameters<typeof updateOne>) => {
      if (!turned) {
        turned = true;
        return videos.collection.updateOne({ _id: videoId }, { $set: { likeCount: 'odd' } }).then(() => updateOne(...args));
      }
      return updateOne(...args);
    }) as never);
    expect(await tallyCounters(videos, models, 'likes', videoId)).toMatchObject({ recommend: 1, display: 1 });
    expect(await counters(videoId)).toMatchObject({ likeCount: 1, recommendLikeCount: 1 });
  });

  it('when the compare-and-set fails for another reason than an odd counter, then the tally fails with it (never taken for a lost race)', async () => {
    const videoId = await newVideo();
    await addRecords('likes', videoId, 1);
    jest.spyOn(videos, 'updateOne').mockImplementation((() => Promise.reject(Object.assign(new Error('connection lost'), { code: 6 }))) as never);
    await expect(tallyCounters(videos, models, 'likes', videoId)).rejects.toThrow('connection lost');
  });

  it(`when other tallies win every compare-and-set, then the tally stops after ${MAX_TALLY_ATTEMPTS} attempts, says why and leaves the record dirty`, async () => {
    const videoId = await newVideo();
    const [id] = await addRecords('likes', videoId, 1);
    const compareAndSets = otherTalliesWinEveryCompareAndSet(videoId);
    const outcome = await tallyCounters(videos, models, 'likes', videoId, { record: id, active: true });
    expect(compareAndSets).toHaveBeenCalledTimes(MAX_TALLY_ATTEMPTS);
    expect(outcome).toEqual({ records: [], recommend: 0, display: 0, unfinished: expect.stringMatching(new RegExp(`after ${MAX_TALLY_ATTEMPTS} attempts`)) });
    expect(await likeRecord(id)).toMatchObject({ dirty: true, counted: false });
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 0, likeCount: 0 });
  });

  it('when the tally is stopped while it reads (its request answered 503 meanwhile), then it makes no compare-and-set, says so and leaves the record dirty', async () => {
    const videoId = await newVideo();
    const [id] = await addRecords('likes', videoId, 1);
    const stopped = new AbortController();
    const find = models.likes.find.bind(models.likes);
    jest.spyOn(models.likes, 'find').mockImplementation(((...args: Parameters<typeof find>) => {
      stopped.abort();
      return find(...args);
    }) as never);
    const compareAndSets = jest.spyOn(videos, 'updateOne');
    const outcome = await tallyCounters(videos, models, 'likes', videoId, { record: id, active: true, signal: stopped.signal });
    expect(compareAndSets).not.toHaveBeenCalled();
    expect(outcome).toEqual({ records: [], recommend: 0, display: 0, unfinished: expect.stringContaining('stopped by its caller') });
    expect(await likeRecord(id)).toMatchObject({ dirty: true, counted: false });
  });

  it('when the video’s tally state was edited by hand (entries of another shape, a batch that is no list, no document at all), then those entries count nothing and the sequence goes on from the stored one', async () => {
    const videoId = await newVideo();
    const [id] = await addRecords('likes', videoId, 1);
    await videos.collection.updateOne({ _id: videoId }, { $set: { 'counterTally.likes': { seq: 7, batch: [null, { r: 'x', to: true }, { r: id, to: 'yes' }] } } });
    expect(await tallyCounters(videos, models, 'likes', videoId)).toEqual({ records: [id], recommend: 1, display: 1 });
    expect(await tallyState(videoId)).toEqual({ seq: 8, batch: [{ r: id, to: true }] });
    await addRecords('likes', videoId, 1);
    await videos.collection.updateOne({ _id: videoId }, { $set: { 'counterTally.likes.batch': 'junk' } });
    expect(await tallyCounters(videos, models, 'likes', videoId)).toMatchObject({ recommend: 1, display: 1 });
    expect(await tallyState(videoId)).toMatchObject({ seq: 9 });
    // A tally state that is no document at all (MongoDB refuses to create fields below it) starts again.
    for (const odd of [5, null, 'junk']) {
      const oddOne = await newVideo({ likeCount: 2, recommendLikeCount: 2 });
      await videos.collection.updateOne({ _id: oddOne }, { $set: { counterTally: odd } });
      const [counted] = await addRecords('likes', oddOne, 1);
      expect(await tallyCounters(videos, models, 'likes', oddOne)).toEqual({ records: [counted], recommend: 1, display: 1 });
      expect(await counters(oddOne)).toMatchObject({ recommendLikeCount: 3, likeCount: 3 });
      expect(await likeRecord(counted)).toMatchObject({ dirty: false, counted: true });
    }
  });

  it('when a tally state that is no document replaced one whose tallies finalized records (tallyAt > 0), then an unlike of such a record is counted once, not once per tally until the restarted sequence passes its tallyAt', async () => {
    for (const odd of [5, [], [{ seq: 1 }]]) {
      const videoId = await newVideo({ likeCount: 0, recommendLikeCount: 0 });
      const [first] = await addRecords('likes', videoId, 1);
      for (let tally = 0; tally < 3; tally++) {
        await addRecords('likes', videoId, 1);
        await tallyCounters(videos, models, 'likes', videoId);
      }
      expect(await likeRecord(first)).toMatchObject({ tallyAt: 1, dirty: false });
      await videos.collection.updateOne({ _id: videoId }, { $set: { counterTally: odd } });
      await models.likes.updateOne({ _id: first }, { $set: { active: false, dirty: true } });
      for (let tally = 0; tally < 3; tally++) await tallyCounters(videos, models, 'likes', videoId);
      expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 4, likeCount: 3 });
      expect(await likeRecord(first)).toMatchObject({ shown: false, dirty: false });
    }
  });

  it('when a batch is finalized late, after a later tally finalized its record, then the record keeps the later state and nothing is counted again', async () => {
    const videoId = await newVideo({ likeCount: 0, recommendLikeCount: 1 });
    // Tally 2 counted the unlike and finalized it; the video still names tally 1's batch, as a tally that read it before tally 2 sees it.
    const [id] = await addRecords('likes', videoId, 1, { active: false, counted: true, shown: false, tallyAt: 2, dirty: false });
    await videos.collection.updateOne({ _id: videoId }, { $set: { 'counterTally.likes': { seq: 1, batch: [{ r: id, to: true }] } } });
    expect(await tallyCounters(videos, models, 'likes', videoId)).toEqual({ records: [], recommend: 0, display: 0 });
    expect(await likeRecord(id)).toEqual({ active: false, counted: true, shown: false, tallyAt: 2, dirty: false });
    expect(await counters(videoId)).toMatchObject({ recommendLikeCount: 1, likeCount: 0 });
  });
});

describe('repairPendingCounters (R3)', () => {
  // The run looks at every video: the records the tests above left dirty are not this test's.
  beforeEach(() => Promise.all(Object.values(models).map((model) => (model as typeof models.likes).deleteMany({}))));

  it('when records of every kind were left dirty a while ago, then one run counts them all and reports each counter, an unlike as one display change', async () => {
    const videoId = await newVideo();
    const old = { changedAt: MINUTE_AGO() };
    for (const kind of KINDS) await addRecords(kind, videoId, 2, old);
    const unlikedOn = await newVideo({ likeCount: 1, recommendLikeCount: 1 });
    await addRecords('likes', unlikedOn, 1, { ...old, active: false, counted: true, shown: true });
    const repaired: unknown[] = [];
    const report = await repairPendingCounters(videos, models, { onRepair: (repair) => repaired.push(repair) });
    expect(report).toEqual({
      ...Object.fromEntries(ALL_COUNTERS.map((field) => [field, 2])),
      likeCount: 3, // two likes on one video, an unlike on the other
    });
    expect(await counters(videoId)).toEqual(Object.fromEntries(ALL_COUNTERS.map((field) => [field, 2])));
    expect(await counters(unlikedOn)).toMatchObject({ recommendLikeCount: 1, likeCount: 0 });
    // One tally per video and kind (two records of a video are one tally), with what it counted.
    expect(repaired).toHaveLength(KINDS.length + 1);
    expect(repaired).toContainEqual({ kind: 'likes', videoId: unlikedOn, records: [expect.any(Types.ObjectId)], recommend: 0, display: -1 });
    expect(repaired).toContainEqual({ kind: 'comments', videoId, records: [expect.any(Types.ObjectId), expect.any(Types.ObjectId)], recommend: 2, display: 2 });
  });

  it('when records were changed just now, then the run leaves them to their own request (minAgeMs, 30 s by default) and reports nothing', async () => {
    const videoId = await newVideo();
    const [young] = await addRecords('likes', videoId, 1);
    const onRepair = jest.fn();
    expect(await repairPendingCounters(videos, models, { onRepair })).toEqual(zeros);
    expect(onRepair).not.toHaveBeenCalled();
    expect(await likeRecord(young)).toMatchObject({ dirty: true });
    expect(await repairPendingCounters(videos, models, { minAgeMs: 0 })).toMatchObject({ recommendLikeCount: 1, likeCount: 1 });
  });

  it('when more videos have records left dirty than maxVideos, then one run tallies maxVideos of them', async () => {
    const first = await newVideo();
    const second = await newVideo();
    await addRecords('shares', first, 1, { changedAt: MINUTE_AGO() });
    await addRecords('shares', second, 1, { changedAt: MINUTE_AGO() });
    expect(await repairPendingCounters(videos, models, { maxVideos: 1 })).toMatchObject({ recommendShareCount: 1, shareCount: 1 });
    expect(await repairPendingCounters(videos, models, { maxVideos: 1 })).toMatchObject({ recommendShareCount: 1, shareCount: 1 });
    expect(await repairPendingCounters(videos, models, { maxVideos: 1 })).toMatchObject({ recommendShareCount: 0 });
  });

  it('when a video’s tally runs out of attempts, then the run reports it with why', async () => {
    const videoId = await newVideo();
    await addRecords('likes', videoId, 1, { changedAt: MINUTE_AGO() });
    otherTalliesWinEveryCompareAndSet(videoId);
    const onRepair = jest.fn();
    expect(await repairPendingCounters(videos, models, { onRepair })).toEqual(zeros);
    expect(onRepair).toHaveBeenCalledWith({ kind: 'likes', videoId, records: [], recommend: 0, display: 0, unfinished: expect.stringContaining('attempts') });
  });

  it('when MongoDB refuses one video’s document (BadValue), then the run reports it with the error and repairs the videos after it; a server-wide error (Unauthorized) stops the run', async () => {
    const refusing = await newVideo();
    const fine = await newVideo();
    await addRecords('likes', refusing, 1, { changedAt: MINUTE_AGO() });
    const updateOne = videos.updateOne.bind(videos);
    const ofRefusing = (filter: unknown) => (filter as { _id: Types.ObjectId })._id.equals(refusing);
    let code = 13;
    jest.spyOn(videos, 'updateOne').mockImplementation(((...args: Parameters<typeof updateOne>) =>
      ofRefusing(args[0]) ? Promise.reject(new mongo.MongoServerError({ code, errmsg: 'refused for the test' })) : updateOne(...args)) as never);
    await expect(repairPendingCounters(videos, models)).rejects.toMatchObject({ code: 13 });
    code = 2;
    await addRecords('likes', fine, 1, { changedAt: MINUTE_AGO() });
    const onRepair = jest.fn();
    expect(await repairPendingCounters(videos, models, { onRepair })).toMatchObject({ recommendLikeCount: 1, likeCount: 1 });
    expect(await counters(fine)).toMatchObject({ recommendLikeCount: 1, likeCount: 1 });
    expect(onRepair).toHaveBeenCalledWith({ kind: 'likes', videoId: refusing, records: [], recommend: 0, display: 0, unfinished: expect.stringContaining('refused') });
  });

  it('when the dirty records belong to a video that is gone, then the run counts nothing and reports no repair', async () => {
    await addRecords('likes', new Types.ObjectId(), 1, { changedAt: MINUTE_AGO() });
    const onRepair = jest.fn();
    expect(await repairPendingCounters(videos, models, { onRepair })).toEqual(zeros);
    expect(onRepair).not.toHaveBeenCalled();
  });
});
