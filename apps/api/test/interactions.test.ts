import mongoose from 'mongoose';
import request, { withInjectedFaults } from '../../../test/support/contract';
import type { Express } from 'express';
import { interactionModels, repairPendingCounters, videoModel, type CounterHooks, type InteractionModels, type VideoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { startEmbeddedMongo } from '@feed/embedded-mongo';
import { useTestServices } from '../../../test/support/services';
import { testApi as makeApi } from '../../../test/support/api';
import { bearer } from '../../../test/support/feed-fixtures';

const s = useTestServices('interactions');
let app: Express;
/** Every API of this file: their tallies run behind the answers, `settled` waits for them. */
const apis: Array<ReturnType<typeof makeApi>> = [];
const testApi = (...args: Parameters<typeof makeApi>) => {
  const api = makeApi(...args);
  apis.push(api);
  return api;
};
const settled = () => Promise.all(apis.map((api) => api.tallies.idle()));
let videos: VideoModel;
let records: InteractionModels;

beforeAll(async () => {
  videos = videoModel(s.mongo);
  records = interactionModels(s.mongo);
  await Promise.all([videos.init(), ...Object.values(records).map((m) => m.init())]);
});

beforeEach(() => {
  app = testApi(s).app;
});

async function newVideo(overrides = {}) {
  const [doc] = await videos.insertMany([demoVideo(overrides)]);
  return doc._id.toHexString();
}

const counters = async (vid: string) =>
  settled().then(() => videos
    .findById(vid)
    .select({ likeCount: 1, collectCount: 1, commentCount: 1, shareCount: 1, recommendLikeCount: 1, recommendCollectCount: 1, recommendCommentCount: 1, recommendShareCount: 1 })
    .lean());

const post = (path: string, user: string, body: object) => request(app).post(path).set(bearer(user)).send(body);

describe('like / unlike', () => {
  it('when a user likes, unlikes and likes again, then likeCount follows but recommendLikeCount counts once', async () => {
    const vid = await newVideo();
    await post('/api/app/vid/like', 'alice', { vid }).expect(200, { active: true, changed: true });
    await post('/api/app/vid/like', 'alice', { vid }).expect(200, { active: true, changed: false });
    expect(await counters(vid)).toMatchObject({ likeCount: 1, recommendLikeCount: 1 });
    await post('/api/app/vid/unlike', 'alice', { vid }).expect(200, { active: false, changed: true });
    await post('/api/app/vid/unlike', 'alice', { vid }).expect(200, { active: false, changed: false });
    expect(await counters(vid)).toMatchObject({ likeCount: 0, recommendLikeCount: 1 });
    await post('/api/app/vid/like', 'alice', { vid }).expect(200);
    expect(await counters(vid)).toMatchObject({ likeCount: 1, recommendLikeCount: 1 });
    await post('/api/app/vid/like', 'bob', { vid }).expect(200);
    expect(await counters(vid)).toMatchObject({ likeCount: 2, recommendLikeCount: 2 });
  });

  it('when the same like is sent 20 times concurrently, then it counts once', async () => {
    const vid = await newVideo();
    const responses = await Promise.all(Array.from({ length: 20 }, () => post('/api/app/vid/like', 'racer', { vid })));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    expect(await counters(vid)).toMatchObject({ likeCount: 1, recommendLikeCount: 1 });
  });

  // A Decimal128 counter counts by its value on MongoDB ($add); the embedded server's aggregation (mingo) adds no Decimal128.
  it('when a counter is stored as a string, null, an object, NaN or an infinity (no finite number: it counts as 0, R1a), then likes answer 200 and count from 0', async () => {
    const odd = await newVideo();
    // Written past mongoose's casts, as another service or an operator's shell would.
    await videos.collection.updateOne({ _id: new mongoose.Types.ObjectId(odd) }, { $set: { likeCount: '7', recommendLikeCount: null, collectCount: { n: 3 } } });
    await post('/api/app/vid/like', 'alice', { vid: odd }).expect(200, { active: true, changed: true });
    await post('/api/app/vid/collect', 'alice', { vid: odd }).expect(200, { active: true, changed: true });
    await post('/api/app/vid/like', 'bob', { vid: odd }).expect(200, { active: true, changed: true });
    await settled();
    expect(await videos.collection.findOne({ _id: new mongoose.Types.ObjectId(odd) })).toMatchObject({ likeCount: 2, recommendLikeCount: 2, collectCount: 1 });

    // No finite number either (NaN and the infinities, an object that reads like operators), and the previous protocol's state hand-edited.
    for (const odd of [NaN, Infinity, -Infinity, mongoose.Types.Decimal128.fromString('NaN'), { $gt: -1 }, { $foo: 1 }]) {
      const vid = await newVideo();
      await videos.collection.updateOne({ _id: new mongoose.Types.ObjectId(vid) }, { $set: { likeCount: odd, recommendLikeCount: odd, 'counterTally.likes': { batch: 'garbage' } } });
      await post('/api/app/vid/like', 'alice', { vid }).expect(200, { active: true, changed: true });
      await post('/api/app/vid/like', 'bob', { vid }).expect(200, { active: true, changed: true });
      await settled();
      expect(await videos.collection.findOne({ _id: new mongoose.Types.ObjectId(vid) })).toMatchObject({ likeCount: 2, recommendLikeCount: 2 });
    }
  });

  it('when collect and uncollect are used, then collectCount follows and recommendCollectCount never decreases', async () => {
    const vid = await newVideo();
    await post('/api/app/vid/collect', 'carol', { vid }).expect(200);
    await post('/api/app/vid/uncollect', 'carol', { vid }).expect(200);
    await post('/api/app/vid/collect', 'carol', { vid }).expect(200);
    expect(await counters(vid)).toMatchObject({ collectCount: 1, recommendCollectCount: 1 });
  });

  it('when the input is bad, then a clear 4xx answers and nothing changes', async () => {
    const vid = await newVideo();
    await request(app).post('/api/app/vid/like').send({ vid }).expect(401);
    await post('/api/app/vid/like', 'dave', { vid: 'not-an-id' }).expect(400);
    await post('/api/app/vid/like', 'dave', { vid: { $gt: '' } }).expect(400);
    await post('/api/app/vid/like', 'dave', {}).expect(400);
    await post('/api/app/vid/like', 'dave', { vid: '0123456789abcdef01234567' }).expect(404);
    const pending = await newVideo({ status: 'pending' });
    await post('/api/app/vid/like', 'dave', { vid: pending }).expect(409);
    expect(await counters(pending)).toMatchObject({ likeCount: 0, recommendLikeCount: 0 });
    expect(await records.likes.countDocuments({ userId: 'dave' })).toBe(0);
  });
});

describe('comments', () => {
  it('when a comment is published and deleted, then commentCount goes back but recommendCommentCount stays', async () => {
    const vid = await newVideo();
    const created = await post('/api/app/vid/comment', 'erin', { vid, content: 'nice' }).expect(201);
    expect(created.body.commentId).toMatch(/^[0-9a-f]{24}$/);
    expect(await counters(vid)).toMatchObject({ commentCount: 1, recommendCommentCount: 1 });
    await request(app).delete(`/api/app/vid/comment/${created.body.commentId}`).set(bearer('frank')).expect(404);
    await request(app).delete(`/api/app/vid/comment/${created.body.commentId}`).set(bearer('erin')).expect(200, { deleted: true });
    await request(app).delete(`/api/app/vid/comment/${created.body.commentId}`).set(bearer('erin')).expect(200, { deleted: false });
    expect(await counters(vid)).toMatchObject({ commentCount: 0, recommendCommentCount: 1 });
  });

  it('when a comment is retried with the same Idempotency-Key, then it is created and counted once', async () => {
    const vid = await newVideo();
    const first = await post('/api/app/vid/comment', 'gina', { vid, content: 'hello' }).set('Idempotency-Key', 'retry-key-0001').expect(201);
    const again = await post('/api/app/vid/comment', 'gina', { vid, content: 'hello' }).set('Idempotency-Key', 'retry-key-0001').expect(200);
    expect(again.body).toEqual({ commentId: first.body.commentId, created: false });
    await post('/api/app/vid/comment', 'gina', { vid, content: 'second' }).expect(201);
    expect(await counters(vid)).toMatchObject({ commentCount: 2, recommendCommentCount: 2 });
  });

  it('when the comment is empty or oversized, then 400 and nothing is written', async () => {
    const vid = await newVideo();
    await post('/api/app/vid/comment', 'hank', { vid, content: '   ' }).expect(400);
    await post('/api/app/vid/comment', 'hank', { vid, content: 'x'.repeat(501) }).expect(400);
    await post('/api/app/vid/comment', 'hank', { vid, content: 'ok' }).set('Idempotency-Key', 'bad key!').expect(400);
    expect(await records.comments.countDocuments({ userId: 'hank' })).toBe(0);
  });
});

describe('share (R4)', () => {
  it('when an old client omits videoID, then the share answers and counts nothing', async () => {
    const res = await post('/api/app/share/output', 'ivan', {}).expect(200);
    expect(res.body).toEqual({ ok: true, counted: false });
    expect(await records.shares.countDocuments({ userId: 'ivan' })).toBe(0);
  });

  it('when a valid approved videoID is shared twice, then it counts once', async () => {
    const vid = await newVideo();
    expect((await post('/api/app/share/output', 'judy', { videoID: vid }).expect(200)).body.counted).toBe(true);
    expect((await post('/api/app/share/output', 'judy', { videoID: vid }).expect(200)).body.counted).toBe(false);
    expect(await counters(vid)).toMatchObject({ shareCount: 1, recommendShareCount: 1 });
  });

  it('when a guest shares, then an unknown video is 404 as for a user and a real one counts nothing', async () => {
    const guest = { 'X-Device-Id': 'guest-device-0001' };
    const missing = '0123456789abcdef01234567';
    await request(app).post('/api/app/share/output').set(guest).send({ videoID: missing }).expect(404);
    await post('/api/app/share/output', 'kim', { videoID: missing }).expect(404);
    const vid = await newVideo();
    expect((await request(app).post('/api/app/share/output').set(guest).send({ videoID: vid }).expect(200)).body).toEqual({ ok: true, counted: false });
    expect(await counters(vid)).toMatchObject({ shareCount: 0, recommendShareCount: 0 });
    expect(await records.shares.countDocuments({ videoId: vid })).toBe(0);
  });

  it('when videoID is malformed, unknown or not approved, then nothing counts', async () => {
    await post('/api/app/share/output', 'kim', { videoID: 'xyz' }).expect(400);
    await post('/api/app/share/output', 'kim', { videoID: '0123456789abcdef01234567' }).expect(404);
    const offline = await newVideo({ status: 'offline' });
    expect((await post('/api/app/share/output', 'kim', { videoID: offline }).expect(200)).body.counted).toBe(false);
    expect(await counters(offline)).toMatchObject({ recommendShareCount: 0 });
  });
});

describe('fake counters (R2)', () => {
  it('when a video with huge fake counts is liked, commented and shared, then only the real counters move and an operator edit of fake counts moves none', async () => {
    const vid = await newVideo({ fakeLikeCount: 1e6, fakeCommentCount: 1e6, fakeShareCount: 1e6 });
    await post('/api/app/vid/like', 'fake-1', { vid }).expect(200);
    await post('/api/app/vid/comment', 'fake-1', { vid, content: 'hi' }).expect(201);
    await post('/api/app/share/output', 'fake-1', { videoID: vid }).expect(200);
    await videos.updateOne({ _id: vid }, { $inc: { fakeLikeCount: 500 } });
    await post('/api/app/vid/like', 'fake-2', { vid }).expect(200);
    await settled();
    const doc = await videos.findById(vid).lean();
    expect(doc).toMatchObject({ fakeLikeCount: 1e6 + 500, fakeCommentCount: 1e6, fakeShareCount: 1e6, recommendLikeCount: 2, recommendCommentCount: 1, recommendShareCount: 1 });
  });
});

/** One action per kind of record, as a client sends it (a comment retried with its Idempotency-Key). */
const actions = {
  likes: { send: (a: Express, user: string, vid: string) => request(a).post('/api/app/vid/like').set(bearer(user)).send({ vid }), counters: ['recommendLikeCount', 'likeCount'] },
  collects: { send: (a: Express, user: string, vid: string) => request(a).post('/api/app/vid/collect').set(bearer(user)).send({ vid }), counters: ['recommendCollectCount', 'collectCount'] },
  comments: {
    send: (a: Express, user: string, vid: string) => request(a).post('/api/app/vid/comment').set(bearer(user)).set('Idempotency-Key', `key-${user}`).send({ vid, content: 'hi' }),
    counters: ['recommendCommentCount', 'commentCount'],
  },
  shares: { send: (a: Express, user: string, vid: string) => request(a).post('/api/app/share/output').set(bearer(user)).send({ videoID: vid }), counters: ['recommendShareCount', 'shareCount'] },
} as const;

// A crash is injected as a thrown error: its 500 stands for the process dying, not for an answer.
const crashing = (hooks: CounterHooks) => withInjectedFaults(testApi(s, {}, { counterHooks: hooks }).app);
const crash = () => Promise.reject(new Error('injected crash'));

describe.each(Object.entries(actions))('crash points of the counter protocol (R3): %s', (kind, action) => {
  const [recommend, display] = action.counters;
  const read = async (vid: string) => {
    await settled();
    const doc = await videos.findById(vid).lean();
    return [doc?.[recommend], doc?.[display]];
  };

  it('when the process dies after the record and before the tally, then the retry counts it exactly once', async () => {
    const vid = await newVideo();
    await action.send(crashing({ afterRecord: crash }), 'crash-a', vid).expect(500);
    expect(await read(vid)).toEqual([0, 0]);
    await action.send(app, 'crash-a', vid).expect((res) => expect(res.status).toBeLessThan(300));
    await action.send(app, 'crash-a', vid).expect((res) => expect(res.status).toBeLessThan(300));
    expect(await read(vid)).toEqual([1, 1]);
  });

  it('when the tally dies before its command, then the answer was 2xx, and neither a retry nor 500 other users count it twice', async () => {
    const vid = await newVideo();
    const api = testApi(s, {}, { counterHooks: { beforeTally: crash } });
    await action.send(api.app, 'crash-b', vid).expect((res) => expect(res.status).toBeLessThan(300));
    expect(await read(vid)).toEqual([0, 0]);
    const others = Array.from({ length: 500 }, (_, i) => `other-${i}`);
    for (let i = 0; i < others.length; i += 25) await Promise.all(others.slice(i, i + 25).map((user) => action.send(app, user, vid)));
    await action.send(app, 'crash-b', vid).expect((res) => expect(res.status).toBeLessThan(300));
    await settled();
    expect(await read(vid)).toEqual([501, 501]);
    await repairPendingCounters(videos, records, { minAgeMs: 0 });
    expect(await read(vid)).toEqual([501, 501]);
  });
});

describe('the repair job (R3)', () => {
  it('when a crash left records uncounted and nobody retries, then the repair counts each once and a second run finds nothing', async () => {
    const vid = await newVideo();
    await actions.likes.send(crashing({ afterRecord: crash }), 'left-1', vid).expect(500);
    await actions.shares.send(crashing({ afterRecord: crash }), 'left-1', vid).expect(500);
    const first = await repairPendingCounters(videos, records, { minAgeMs: 0 });
    expect(first).toMatchObject({ recommendLikeCount: 1, likeCount: 1, recommendShareCount: 1, shareCount: 1, recommendCommentCount: 0 });
    expect(await repairPendingCounters(videos, records, { minAgeMs: 0 })).toMatchObject({ recommendLikeCount: 0, likeCount: 0, recommendShareCount: 0 });
    expect(await counters(vid)).toMatchObject({ likeCount: 1, recommendLikeCount: 1, shareCount: 1, recommendShareCount: 1 });
  });

  it('when an unlike crashed before the tally, then the display counter still comes back to the active likes', async () => {
    const vid = await newVideo();
    await post('/api/app/vid/like', 'left-2', { vid }).expect(200);
    await request(crashing({ afterRecord: crash })).post('/api/app/vid/unlike').set(bearer('left-2')).send({ vid }).expect(500);
    expect(await counters(vid)).toMatchObject({ likeCount: 1 });
    await repairPendingCounters(videos, records, { minAgeMs: 0 });
    expect(await counters(vid)).toMatchObject({ likeCount: 0, recommendLikeCount: 1 });
  });

  it('when records are younger than the minimum age, then the repair leaves them to their request', async () => {
    const vid = await newVideo();
    await actions.likes.send(crashing({ afterRecord: crash }), 'left-3', vid).expect(500);
    // A day: no record of this run is that old, however slow the machine (the report covers the whole database).
    expect(await repairPendingCounters(videos, records, { minAgeMs: 86_400_000 })).toMatchObject({ recommendLikeCount: 0 });
    expect(await counters(vid)).toMatchObject({ recommendLikeCount: 0 });
    // Left pending, not dropped: once old enough, the repair counts it.
    await repairPendingCounters(videos, records, { minAgeMs: 0 });
    expect(await counters(vid)).toMatchObject({ recommendLikeCount: 1 });
  });
});

describe('the answer does not wait for the tally (R3, R17)', () => {
  it('when the video’s tally is held, then the like is answered 200 within the production budget and counted once for D7, and the counters follow once the tally runs', async () => {
    const vid = await newVideo();
    let release = () => undefined as void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const api = testApi(s, { mongoDeadlineMs: 1000 }, { counterHooks: { beforeTally: () => held } });
    try {
      await request(api.app).post('/api/app/vid/like').set(bearer('slow-1')).send({ vid }).expect(200, { active: true, changed: true });
      expect(await api.metrics.registry.metrics()).toMatch(/feed_variant_engagement_total\{variant="\w+",action="like"\} 1/);
      expect(await videos.findById(vid).lean()).toMatchObject({ likeCount: 0, recommendLikeCount: 0 });
    } finally {
      release();
    }
    expect(await counters(vid)).toMatchObject({ likeCount: 1, recommendLikeCount: 1 });
  });

  it('when a tally fails, then the like is answered 200, the failure is counted, and the repair counts the record once', async () => {
    const vid = await newVideo();
    const api = testApi(s, {}, { counterHooks: { beforeTally: crash } });
    await request(api.app).post('/api/app/vid/like').set(bearer('busy-1')).send({ vid }).expect(200, { active: true, changed: true });
    await settled();
    const metrics = await api.metrics.registry.metrics();
    expect(metrics).toContain('feed_interaction_tallies_deferred_total{kind="likes"} 1');
    expect(metrics).toContain('feed_interaction_tallies_deferred_total{kind="comments"} 0');
    expect(await counters(vid)).toMatchObject({ likeCount: 0, recommendLikeCount: 0 });
    await repairPendingCounters(videos, records, { minAgeMs: 0 });
    expect(await counters(vid)).toMatchObject({ likeCount: 1, recommendLikeCount: 1 });
  });
});

describe('records written by the previous code (no tally fields)', () => {
  // Records of two protocols ago: `counted` and `active`, no `dirty`, `shown` or `v`.
  const oldRecord = (userId: string, videoId: string, active: boolean) => ({ _id: new mongoose.Types.ObjectId(), userId, videoId: new mongoose.Types.ObjectId(videoId), active, counted: true, opId: new mongoose.Types.ObjectId(), createdAt: new Date() });

  it('when an old counted like is unliked and others like the video afterwards, then likeCount loses that like once, not once per later tally', async () => {
    const vid = await newVideo();
    await records.likes.collection.insertOne(oldRecord('old-1', vid, true));
    await videos.updateOne({ _id: vid }, { $set: { likeCount: 1, recommendLikeCount: 1 } });
    await post('/api/app/vid/unlike', 'old-1', { vid }).expect(200, { active: false, changed: true });
    for (const user of ['new-1', 'new-2', 'new-3']) await post('/api/app/vid/like', user, { vid }).expect(200);
    await repairPendingCounters(videos, records, { minAgeMs: 0 });
    expect(await counters(vid)).toMatchObject({ likeCount: 3, recommendLikeCount: 4 });
    expect(await records.likes.countDocuments({ dirty: true })).toBe(0);
  });

  it('when an old counted like is unliked and liked again before a tally, then likeCount is unchanged', async () => {
    const vid = await newVideo();
    await records.likes.collection.insertOne(oldRecord('old-2', vid, true));
    await videos.updateOne({ _id: vid }, { $set: { likeCount: 1, recommendLikeCount: 1 } });
    await request(crashing({ afterRecord: crash })).post('/api/app/vid/unlike').set(bearer('old-2')).send({ vid }).expect(500);
    await post('/api/app/vid/like', 'old-2', { vid }).expect(200);
    await repairPendingCounters(videos, records, { minAgeMs: 0 });
    expect(await counters(vid)).toMatchObject({ likeCount: 1, recommendLikeCount: 1 });
  });

  it('when an old published comment (no active field) is deleted and others comment afterwards, then commentCount loses it once', async () => {
    const vid = await newVideo();
    const { active: _active, ...comment } = { ...oldRecord('old-3', vid, true), content: 'old', status: 'published', idempotencyKey: 'old-key-3' };
    await records.comments.collection.insertOne(comment);
    await videos.updateOne({ _id: vid }, { $set: { commentCount: 1, recommendCommentCount: 1 } });
    await request(app).delete(`/api/app/vid/comment/${comment._id.toHexString()}`).set(bearer('old-3')).expect(200, { deleted: true });
    for (const user of ['new-4', 'new-5']) await post('/api/app/vid/comment', user, { vid, content: 'hi' }).expect(201);
    await repairPendingCounters(videos, records, { minAgeMs: 0 });
    expect(await counters(vid)).toMatchObject({ commentCount: 2, recommendCommentCount: 3 });
  });
});

describe('MongoDB down', () => {
  it('when MongoDB stops answering, then like and the ad route answer 503 unavailable, never a generic 500', async () => {
    // A MongoDB of this test's own, stopped after the app connected: the driver's server
    // selection then fails (within its timeout), as against a real MongoDB that went away.
    const mongo = await startEmbeddedMongo();
    const connection = await mongoose.createConnection(`${mongo.uri}/down`, { serverSelectionTimeoutMS: 300 }).asPromise();
    try {
      const [video] = await videoModel(connection).insertMany([demoVideo({ isAd: true })]);
      const downApp = testApi(s, { videoCacheMs: 0 }, { mongo: connection }).app;
      await mongo.stop();
      const like = await request(downApp).post('/api/app/vid/like').set(bearer('mongo-down')).send({ vid: video._id.toHexString() }).expect(503);
      expect(like.body.error.code).toBe('unavailable');
      const ads = await request(downApp).get('/api/app/recommend/vid/ad').set(bearer('mongo-down')).expect(503);
      expect(ads.body.error.code).toBe('unavailable');
    } finally {
      await connection.close(true);
      await mongo.stop();
    }
  });
});
