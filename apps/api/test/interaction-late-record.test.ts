/**
 * An interaction whose record write outlives the request's MongoDB budget (R3, R17): the answer
 * is 503 with Retry-After, the driver's AbortSignal of the write is aborted (a frozen MongoDB
 * does not keep the socket), and when the write landed all the same, the retry is idempotent and
 * the landed record is counted once for D7 as the 503'd request's first success.
 */
import request from 'supertest';
import type { Types } from 'mongoose';
import { CounterTallies, interactionModels, RequestBudget, videoModel, type InteractionModels, type VideoModel } from '@feed/storage';
import { InteractionService } from '../src/interactions/interaction-service';
import { VideoCatalog } from '../src/feed/video-catalog';
import { demoVideo } from '@feed/demo-data';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer } from '../../../test/support/feed-fixtures';
import { waitUntil } from '../../../tools/support/processes';

const s = useTestServices('interaction-late-record');
let videos: VideoModel;
let records: InteractionModels;

beforeAll(async () => {
  videos = videoModel(s.mongo);
  records = interactionModels(s.mongo);
  await Promise.all([videos.init(), records.likes.init()]);
});
afterEach(() => jest.restoreAllMocks());

/** The D7 engagements of `action` the instance counted (its Prometheus counter). */
const engagements = async (api: ReturnType<typeof testApi>, action: string) =>
  Number(new RegExp(`feed_variant_engagement_total\\{variant="\\w+",action="${action}"\\} (\\d+)`).exec(await api.metrics.registry.metrics())?.[1] ?? 0);

/** The late-landing writes the instance follows (its Prometheus gauge). */
const followed = async (api: ReturnType<typeof testApi>) => Number(/^feed_interaction_late_writes_followed (\d+)$/m.exec(await api.metrics.registry.metrics())?.[1]);

/**
 * The next like record write reaches MongoDB only once the request gave up on it (its signal
 * aborted), and lands all the same. The toggles write through the model's collection (the
 * driver's findAndModify).
 */
function landingAfterTheBudget(): { signal?: AbortSignal; landed: Promise<unknown> } {
  const { collection } = records.likes;
  const findOneAndUpdate = collection.findOneAndUpdate.bind(collection) as (...args: unknown[]) => Promise<unknown>;
  const write: { signal?: AbortSignal; landed: Promise<unknown> } = { landed: Promise.resolve() };
  jest.spyOn(collection, 'findOneAndUpdate').mockImplementationOnce(((...args: unknown[]) => {
    const signal = (write.signal = (args[2] as { signal?: AbortSignal }).signal);
    const late = new Promise((resolve) => signal?.addEventListener('abort', resolve)).then(() => {
      write.landed = findOneAndUpdate(args[0], args[1], { ...(args[2] as object), signal: undefined });
      return write.landed;
    });
    return late.then(() => Promise.reject(signal?.reason));
  }) as never);
  return write;
}

it('when the like record lands after the budget, then the answer is 503 with Retry-After, its signal is aborted, and the retry counts it once', async () => {
  const [video] = await videos.insertMany([demoVideo()]);
  const vid = video._id.toHexString();
  const api = testApi(s, { mongoDeadlineMs: 1000 });
  // The video in the instance's cache first: the budget is the record write's alone.
  await request(api.app).post('/api/app/vid/unlike').set(bearer('late-0')).send({ vid }).expect(200);
  const write = landingAfterTheBudget();

  const res = await request(api.app).post('/api/app/vid/like').set(bearer('late-1')).send({ vid }).expect(503);
  expect(res.headers['retry-after']).toBeDefined();
  expect(write.signal?.aborted).toBe(true);
  await write.landed;
  await request(api.app).post('/api/app/vid/like').set(bearer('late-1')).send({ vid }).expect(200, { active: true, changed: false });
  await api.tallies.idle();
  expect(await videos.findById(vid).lean()).toMatchObject({ likeCount: 1, recommendLikeCount: 1 });
  // D7: the late record is the 503'd request's first success, counted once it is seen (the retry's was no first).
  await waitUntil('the late like counted for D7', async () => (await engagements(api, 'like')) === 1, 10_000);
  expect(await engagements(api, 'like')).toBe(1);
});

it('when the like record lands after the budget and the client never retries, then the video counters follow within seconds, not at the repair job', async () => {
  const [video] = await videos.insertMany([demoVideo()]);
  const vid = video._id.toHexString();
  const api = testApi(s, { mongoDeadlineMs: 1000 });
  await request(api.app).post('/api/app/vid/unlike').set(bearer('late-0')).send({ vid }).expect(200);
  const write = landingAfterTheBudget();

  await request(api.app).post('/api/app/vid/like').set(bearer('late-2')).send({ vid }).expect(503);
  expect(await followed(api)).toBe(1);
  await write.landed;
  // The repair job takes records dirty for 30 s, once a minute: a count within 10 s is this instance's.
  await waitUntil('the late like counted in the video', async () => (await videos.findById(vid).lean())?.likeCount === 1, 10_000);
  expect(await videos.findById(vid).lean()).toMatchObject({ likeCount: 1, recommendLikeCount: 1 });
  await waitUntil('the late like no longer followed', async () => (await followed(api)) === 0, 10_000);
});

it('when an unlike lands after the budget and the client never retries, then the video display counter follows within seconds, not at the repair job', async () => {
  const [video] = await videos.insertMany([demoVideo()]);
  const vid = video._id.toHexString();
  const api = testApi(s, { mongoDeadlineMs: 1000 });
  await request(api.app).post('/api/app/vid/like').set(bearer('late-3')).send({ vid }).expect(200);
  await api.tallies.idle();
  expect(await videos.findById(vid).lean()).toMatchObject({ likeCount: 1, recommendLikeCount: 1 });
  const write = landingAfterTheBudget();

  await request(api.app).post('/api/app/vid/unlike').set(bearer('late-3')).send({ vid }).expect(503);
  await write.landed;
  await waitUntil('the late unlike counted in the video', async () => (await videos.findById(vid).lean())?.likeCount === 0, 10_000);
  expect(await videos.findById(vid).lean()).toMatchObject({ likeCount: 0, recommendLikeCount: 1 });
});

it('when a share record lands after the budget, then the video share counters follow within seconds, not at the repair job, and D7 counts the share once (the retry is no first)', async () => {
  const [video] = await videos.insertMany([demoVideo()]);
  const vid = video._id.toHexString();
  const api = testApi(s, { mongoDeadlineMs: 1000 });
  await request(api.app).post('/api/app/vid/unlike').set(bearer('late-4')).send({ vid }).expect(200);
  // The share's upsert goes through mongoose's query (lean): it reaches MongoDB once the request gave up, and lands.
  const { shares } = records;
  const findOneAndUpdate = shares.findOneAndUpdate.bind(shares) as (...args: unknown[]) => { lean(): { exec(): Promise<unknown> } };
  let landed: Promise<unknown> = Promise.resolve();
  jest.spyOn(shares, 'findOneAndUpdate').mockImplementationOnce(((...args: unknown[]) => ({
    lean: () => {
      const { signal } = args[2] as { signal: AbortSignal };
      const late = new Promise((resolve) => signal.addEventListener('abort', resolve)).then(() => (landed = findOneAndUpdate(args[0], args[1], { ...(args[2] as object), signal: undefined }).lean().exec()));
      return late.then(() => Promise.reject(signal.reason));
    },
  })) as never);

  await request(api.app).post('/api/app/share/output').set(bearer('late-4')).send({ videoID: vid }).expect(503);
  await landed;
  await waitUntil('the late share counted in the video', async () => (await videos.findById(vid).lean())?.shareCount === 1, 10_000);
  expect(await videos.findById(vid).lean()).toMatchObject({ shareCount: 1, recommendShareCount: 1 });
  // D7: the late record is the 503'd share's first, counted once it is seen (the retry's is no first), as a late like is.
  await request(api.app).post('/api/app/share/output').set(bearer('late-4')).send({ videoID: vid }).expect(200, { ok: true, counted: false });
  await waitUntil('the late share counted for D7', async () => (await engagements(api, 'share')) === 1, 10_000);
  expect(await engagements(api, 'share')).toBe(1);
});

it('when a like again (after an unlike) lands after the budget and the client never retries, then the display counter follows within seconds and D7 counts no new first like', async () => {
  const [video] = await videos.insertMany([demoVideo()]);
  const vid = video._id.toHexString();
  const api = testApi(s, { mongoDeadlineMs: 1000 });
  await request(api.app).post('/api/app/vid/like').set(bearer('late-5')).send({ vid }).expect(200);
  await request(api.app).post('/api/app/vid/unlike').set(bearer('late-5')).send({ vid }).expect(200);
  await api.tallies.idle();
  expect(await videos.findById(vid).lean()).toMatchObject({ likeCount: 0, recommendLikeCount: 1 });
  const write = landingAfterTheBudget();

  await request(api.app).post('/api/app/vid/like').set(bearer('late-5')).send({ vid }).expect(503);
  await write.landed;
  await waitUntil('the late like again counted in the video', async () => (await videos.findById(vid).lean())?.likeCount === 1, 10_000);
  expect(await videos.findById(vid).lean()).toMatchObject({ likeCount: 1, recommendLikeCount: 1 });
  expect(await engagements(api, 'like')).toBe(1);
});

it('when more writes fail than the service follows at once, then the ones past the bound are left to the repair job and a later failure is followed again', async () => {
  const [followed, unfollowed] = await videos.insertMany([demoVideo(), demoVideo()]);
  const tallies = new CounterTallies({ videos, records, onError: () => undefined });
  const service = new InteractionService({ catalog: new VideoCatalog({ model: videos, ttlMs: 0 }), records, tallies, maxFollowed: 1 });
  // Each of the next three like writes lands, then fails as a write cut off by its budget does.
  const { collection } = records.likes;
  const findOneAndUpdate = collection.findOneAndUpdate.bind(collection) as (...args: unknown[]) => Promise<unknown>;
  const failAfterLanding = ((...args: unknown[]) => findOneAndUpdate(...args).then(() => Promise.reject(new Error('cut off after it landed')))) as never;
  jest.spyOn(collection, 'findOneAndUpdate').mockImplementationOnce(failAfterLanding).mockImplementationOnce(failAfterLanding).mockImplementationOnce(failAfterLanding);
  const like = (video: { _id: Types.ObjectId }, user: string) => service.like(video._id.toHexString(), user, new RequestBudget({ redisMs: 1000, mongoMs: 1000 }));

  await expect(like(followed, 'bound-1')).rejects.toThrow('cut off');
  await expect(like(unfollowed, 'bound-2')).rejects.toThrow('cut off');
  expect(service.following).toBe(1);
  // The followed like is found and counted; the other stays dirty for the repair job.
  await waitUntil('the followed like found', async () => service.following === 0, 10_000);
  await tallies.settle(5_000);
  expect(await videos.findById(followed._id).lean()).toMatchObject({ likeCount: 1, recommendLikeCount: 1 });
  expect(await videos.findById(unfollowed._id).lean()).toMatchObject({ likeCount: 0, recommendLikeCount: 0 });
  expect(await records.likes.countDocuments({ videoId: unfollowed._id, dirty: true })).toBe(1);
  // The bound is of follows at once: a failure after the first one ended is followed.
  await expect(like(unfollowed, 'bound-3')).rejects.toThrow('cut off');
  expect(service.following).toBe(1);
});
