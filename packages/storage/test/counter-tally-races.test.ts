/**
 * The counter protocol's finalize under a toggle that lands inside it (SPEC R3, issue 33), as
 * one fixed interleaving: the model-based test (apps/api/test/interaction-model.test.ts) draws
 * such interleavings at random and found this one in some seeds only, so it is written out here.
 * MongoDB runs the statements of one bulk write each on its own, so a toggle may fall between
 * two of them; the test runs them one by one and toggles between them.
 */
import mongoose, { type Model } from 'mongoose';
import { demoVideo } from '@feed/demo-data';
import { freshRecordFields, interactionModels, tallyCounters, videoModel, type CountedRecord, type InteractionModels, type VideoModel } from '../src';
import { useTestServices } from '../../../test/support/services';

const s = useTestServices('counter-tally-races');
let videos: VideoModel;
let records: InteractionModels;
/** Runs once after the first statement of the next bulk write of the likes (then is cleared). */
let betweenStatements: (() => Promise<unknown>) | undefined;

beforeAll(async () => {
  videos = videoModel(s.mongo);
  records = interactionModels(s.mongo);
  await Promise.all([videos.init(), records.likes.init()]);
  const likes = records.likes as Model<CountedRecord>;
  const bulkWrite = likes.bulkWrite.bind(likes);
  Object.assign(likes, {
    bulkWrite: async (ops: Parameters<typeof bulkWrite>[0], options?: Parameters<typeof bulkWrite>[1]) => {
      for (const [index, op] of ops.entries()) {
        await bulkWrite([op], options);
        const between = index === 0 ? betweenStatements : undefined;
        betweenStatements = undefined;
        await between?.();
      }
    },
  });
});

/** A like or unlike's record write, as the service makes it (the toggle sets `dirty` in the same update). */
const toggle = (id: mongoose.Types.ObjectId, active: boolean) => records.likes.updateOne({ _id: id }, { $set: { active, dirty: true, changedAt: new Date() } });

class Crash extends Error {}

describe('finalize under a toggle (R3)', () => {
  it('when a record counted as liked is unliked before its finalize and liked again inside it, then the next tally does not count it again', async () => {
    const [video] = await videos.insertMany([demoVideo({})]);
    const [like] = await records.likes.insertMany([{ userId: 'alice', videoId: video._id, active: true, ...freshRecordFields() }]);
    // A tally counts the like (recommend 1, display 1) and its process dies before the finalize.
    const crashAfterTally = { afterTally: () => Promise.reject(new Crash()) };
    await expect(tallyCounters(videos, records, 'likes', video._id, { hooks: crashAfterTally })).rejects.toBeInstanceOf(Crash);
    // Alice unlikes; the next tally's finalize of that batch is under way when she likes again.
    await toggle(like._id, false);
    betweenStatements = () => toggle(like._id, true);
    await tallyCounters(videos, records, 'likes', video._id);
    expect(betweenStatements).toBeUndefined(); // the toggle ran inside a finalize
    // Whatever is left dirty is counted by the repair's tally.
    await tallyCounters(videos, records, 'likes', video._id);
    const counters = await videos.findById(video._id).select({ likeCount: 1, recommendLikeCount: 1 }).lean();
    expect(counters).toMatchObject({ recommendLikeCount: 1, likeCount: 1 });
    expect(await records.likes.findById(like._id).lean()).toMatchObject({ active: true, counted: true, shown: true, dirty: false });
  });
});

describe('a stopped tally (R3: a request whose budget ran out)', () => {
  it('when the tally is stopped before it starts, then it moves nothing, the record stays dirty, and the next tally counts it once', async () => {
    const [video] = await videos.insertMany([demoVideo({})]);
    const [like] = await records.likes.insertMany([{ userId: 'bob', videoId: video._id, active: true, ...freshRecordFields() }]);
    const outcome = await tallyCounters(videos, records, 'likes', video._id, { record: like._id, active: true, signal: AbortSignal.abort() });
    expect(outcome.records).toEqual([]);
    expect(await videos.findById(video._id).select({ likeCount: 1, recommendLikeCount: 1 }).lean()).toMatchObject({ recommendLikeCount: 0, likeCount: 0 });
    expect(await records.likes.findById(like._id).lean()).toMatchObject({ dirty: true, counted: false });
    await tallyCounters(videos, records, 'likes', video._id);
    await tallyCounters(videos, records, 'likes', video._id);
    expect(await videos.findById(video._id).select({ likeCount: 1, recommendLikeCount: 1 }).lean()).toMatchObject({ recommendLikeCount: 1, likeCount: 1 });
  });
});
