/**
 * R19: the build's high pool and the new pool read the videos collection through indexes of
 * status + newsType. Which indexes exist is checked on any MongoDB (the embedded server lists
 * them); whether the queries use them only on a real MongoDB (TEST_MONGO_URL): the embedded
 * server has no query planner, so those checks are skipped without one, and say so.
 */
import mongoose, { type Connection } from 'mongoose';
import { videoModel, type VideoModel } from '../src';
import { onRealMongo, testMongoUrl } from '../../../test/support/mongo';

const NEW_POOL_INDEX = 'status_1_newsType_1_reviewAt_-1';
const HIGH_POOL_INDEX = 'status_1_newsType_1_recommendScore_-1_reviewAt_-1';

let conn: Connection;
let videos: VideoModel;

beforeAll(async () => {
  conn = await mongoose.createConnection(testMongoUrl('video_indexes')).asPromise();
  videos = videoModel(conn);
  await videos.init();
});

afterAll(async () => {
  await conn.dropDatabase();
  await conn.close();
});

describe('R19 indexes of the videos collection', () => {
  it('when the video model is initialised, then the new-pool and high-pool indexes exist', async () => {
    const names = (await videos.collection.listIndexes().toArray()).map((index) => index.name as string);
    expect(names).toEqual(expect.arrayContaining([NEW_POOL_INDEX, HIGH_POOL_INDEX]));
  });
});

const onPlanner = onRealMongo ? describe : describe.skip;
if (!onRealMongo) console.warn('R19 explain checks (packages/storage/test/video-indexes.test.ts) skipped: they need a real MongoDB (TEST_MONGO_URL=mongodb://...); the embedded server has no query planner');

onPlanner(`R19 query plans (explain${onRealMongo ? '' : ': skipped, needs a real MongoDB, TEST_MONGO_URL'})`, () => {
  it('when the build and new-pool queries are explained, then they use the status+newsType indexes', async () => {
    const plan = JSON.stringify(await videos.find({ status: 'approved', newsType: 'short' }).sort({ recommendScore: -1, reviewAt: -1 }).explain());
    expect(plan).toContain(HIGH_POOL_INDEX);
    const newPool = JSON.stringify(await videos.find({ status: 'approved', newsType: 'short', reviewAt: { $gte: new Date(Date.now() - 86_400_000) } }).explain());
    expect(newPool).toContain('IXSCAN');
  });

  it('when find, count and aggregate are explained, then queryPlanner names the winning index, or COLLSCAN without one', async () => {
    /** An explain reply as plain JSON (mongoose types it loosely). */
    const plain = (reply: unknown) => JSON.parse(JSON.stringify(reply));
    const find = plain(await videos.find({ status: 'approved', newsType: 'short', reviewAt: { $gte: new Date(0) } }).explain());
    expect(find.queryPlanner.namespace).toMatch(/\.videos$/);
    expect(JSON.stringify(find.queryPlanner.winningPlan)).toContain(`"indexName":"${NEW_POOL_INDEX}"`);
    // mongoose has no explain for counts: the count command's explain, as the shell sends it.
    const count = await conn.db!.command({ explain: { count: 'videos', query: { status: 'approved', newsType: 'short' } }, verbosity: 'queryPlanner' });
    expect(count.queryPlanner.winningPlan.stage).toBe('COUNT');
    expect(JSON.stringify(count.queryPlanner.winningPlan)).toMatch(/IXSCAN/);
    const aggregate = await videos.aggregate([{ $match: { status: 'approved', newsType: 'short' } }, { $group: { _id: '$authorId', n: { $sum: 1 } } }]).explain();
    expect(JSON.stringify(aggregate)).toMatch(/"indexName":"status_1_newsType_1_/);
    const unindexed = plain(await videos.find({ title: 'x' }).explain());
    expect(unindexed.queryPlanner.winningPlan.stage).toBe('COLLSCAN');
    // Model.exists() is a findOne with a projection and options: it answers, and explains too.
    expect(await videos.exists({ status: 'approved' })).toBeNull();
    expect(JSON.stringify(await videos.exists({ status: 'approved', newsType: 'short' }).explain())).toMatch(/IXSCAN/);
  });
});
