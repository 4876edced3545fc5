/**
 * What a page leaves behind besides its videos: feed_pages_total and the other page counters
 * (D5), each skip by its reason, and the per-variant health tally the rollout ramp judges (D7,
 * R23). HEAD counts none of it (SPEC C).
 */
import mongoose from 'mongoose';
import request from 'supertest';
import { startEmbeddedMongo } from '@feed/embedded-mongo';
import { demoVideo } from '@feed/demo-data';
import { readStepReadout, videoModel } from '@feed/storage';
import type { Api } from '../src/app';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer, offsetOf, publishQueue } from '../../../test/support/feed-fixtures';

const s = useTestServices('feed-page-accounting', { CURRENT_CACHE_MS: '0', QUEUE_COPIES_MAX: '0' });
const [V1, V2] = ['20260724', '20260725'];
const USER = 'accounted';

let ids: string[];
let offline: string;
let own: string;
beforeAll(async () => {
  const docs = [...Array.from({ length: 8 }, () => demoVideo({})), demoVideo({ status: 'offline' }), demoVideo({ authorId: USER })];
  await videoModel(s.mongo).insertMany(docs);
  ids = docs.slice(0, 8).map((d) => d._id!.toHexString());
  [offline, own] = docs.slice(8).map((d) => d._id!.toHexString());
});

/** The value of `metric` for the label set `labels` (e.g. `strategy="ring"`), 0 when never counted. */
async function counted(api: Api, metric: string, labels = ''): Promise<number> {
  const text = await api.metrics.registry.getSingleMetricAsString(metric);
  const line = text.split('\n').find((l) => l.startsWith(`${metric}${labels ? `{${labels}}` : ''} `));
  return Number(line?.split(' ')[1] ?? 0);
}

/** The ring variant's health tally of this hour, as the ramp reads it. */
async function ringHealth(api: Api) {
  await api.readout.flush();
  const { requests, degradations, emptyPages, serverErrors } = (await readStepReadout(s.redis, s.keys, new Date(), 1)).ring;
  return { requests, degradations, emptyPages, serverErrors };
}

const page = (api: Api, pageSize: number) => request(api.app).get('/api/app/recommend/vid/list').query({ pageSize }).set(bearer(USER)).expect(200);
const vids = (res: request.Response) => (res.body.vInfos as Array<{ vid: string }>).map((v) => v.vid);

describe('page accounting', () => {
  it('when a ring page skips candidates, then each skip is counted by its reason and the page by its strategy; HEAD counts nothing', async () => {
    // Queue: a, seen, not interested, own, a again, offline, b, c, ...
    const [a, seen, rejected, b, c] = ids;
    await publishQueue(s.redis, s.keys, V1, [a, seen, rejected, own, a, offline, b, c, ...ids.slice(5)]);
    const api = testApi(s);
    await request(api.app).post('/api/app/vid/view').set(bearer(USER)).send({ vid: seen }).expect(200);
    await request(api.app).post('/api/app/recommend/vid/not-interested').set(bearer(USER)).send({ vid: rejected }).expect(200);

    await request(api.app).head('/api/app/recommend/vid/list').query({ pageSize: 3 }).set(bearer(USER)).expect(200);
    expect(await api.metrics.registry.getSingleMetricAsString('feed_skipped_videos_total')).not.toMatch(/} [1-9]/);
    expect(await counted(api, 'feed_pages_total', 'strategy="ring"')).toBe(0);
    expect(await offsetOf(s.redis, s.keys, V1, `u:${USER}`)).toBeNull();

    const res = await page(api, 3);
    expect(res.body).toEqual(expect.objectContaining({ queueVersion: V1, hasNext: true, totalPages: 1 }));
    expect(res.body).not.toHaveProperty('allSeen');
    expect(vids(res)).toEqual([a, b, c]);
    for (const reason of ['seen', 'not_interested', 'own', 'duplicate', 'invalid']) expect({ reason, n: await counted(api, 'feed_skipped_videos_total', `reason="${reason}"`) }).toEqual({ reason, n: 1 });
    expect(await counted(api, 'feed_pages_total', 'strategy="ring"')).toBe(1);
    expect(await counted(api, 'feed_variant_pages_total', 'variant="ring"')).toBe(1);
    expect(await counted(api, 'feed_empty_pages_total', 'strategy="ring"')).toBe(0);
    expect(await api.metrics.registry.getSingleMetricAsString('feed_degradations_total')).not.toMatch(/} [1-9]/);
    expect(await counted(api, 'feed_current_version')).toBe(Number(V1));
    expect(await ringHealth(api)).toEqual({ requests: 1, degradations: 0, emptyPages: 0, serverErrors: 0 });
  });

  it('when a whole circle holds nothing to serve, then the page is empty, says allSeen and is counted as empty', async () => {
    await publishQueue(s.redis, s.keys, V1, [own, offline]);
    const api = testApi(s);
    const res = await page(api, 5);
    expect(res.body).toMatchObject({ vInfos: [], allSeen: true, queueVersion: V1 });
    expect(await counted(api, 'feed_empty_pages_total', 'strategy="ring"')).toBe(1);
    expect(await ringHealth(api)).toEqual({ requests: 1, degradations: 0, emptyPages: 1, serverErrors: 0 });
  });

  it('when a fallback strategy serves a ring user, then the page counts as the ring variant\'s degradation', async () => {
    await publishQueue(s.redis, s.keys, V1, ids);
    await publishQueue(s.redis, s.keys, V2, ids);
    await s.redis.del(s.keys.queue(V2));
    const api = testApi(s);
    expect((await page(api, 2)).body.queueVersion).toBe(V1);
    expect(await counted(api, 'feed_pages_total', 'strategy="previous-version"')).toBe(1);
    expect(await counted(api, 'feed_variant_pages_total', 'variant="ring"')).toBe(1);
    expect(await ringHealth(api)).toEqual({ requests: 1, degradations: 1, emptyPages: 0, serverErrors: 0 });
  });

  it('when the rollout in force changes, then feed_rollout_enabled and feed_rollout_percent show it', async () => {
    await publishQueue(s.redis, s.keys, V1, ids);
    const api = testApi(s, { shortRecommendV2Percent: 30 });
    // Before Redis is first read: the environment's rollout.
    expect([await counted(api, 'feed_rollout_enabled'), await counted(api, 'feed_rollout_percent')]).toEqual([1, 30]);
    const admin = { Authorization: `Basic ${Buffer.from(`${s.config.adminUser}:${s.config.adminPassword}`).toString('base64')}` };
    await request(api.app).put('/api/admin/rollout').set(admin).send({ percent: 40 }).expect(200);
    await page(api, 1);
    expect([await counted(api, 'feed_rollout_enabled'), await counted(api, 'feed_rollout_percent')]).toEqual([1, 40]);
  });

  it('when the rollout gives a user the legacy feed, then the page counts for the legacy variant', async () => {
    await publishQueue(s.redis, s.keys, V1, ids);
    await s.redis.sAdd(s.keys.legacyIds, ids);
    const api = testApi(s, { shortRecommendV2Enabled: false });
    expect((await page(api, 2)).body.queueVersion).toBe('legacy');
    expect(await counted(api, 'feed_variant_pages_total', 'variant="legacy"')).toBe(1);
    await api.readout.flush();
    const readout = await readStepReadout(s.redis, s.keys, new Date(), 1);
    expect([readout.legacy.requests, readout.ring.requests]).toEqual([1, 0]);
  });

  it('when one circle of the ring cannot fill the page, then the scan stops at the end of the circle', async () => {
    // Five positions; the first four are never served to this user, the fifth is.
    await publishQueue(s.redis, s.keys, V1, [own, offline, own, offline, ids[0]]);
    const api = testApi(s);
    expect(vids(await page(api, 4))).toEqual([ids[0]]);
    expect(await offsetOf(s.redis, s.keys, V1, `u:${USER}`)).toBe('0');
  });

  it('when MongoDB is down under a ring page, then the 503 counts as the ring variant\'s server error', async () => {
    // A MongoDB of this test's own, stopped after the app connected (as in interactions.test.ts).
    const mongo = await startEmbeddedMongo();
    const connection = await mongoose.createConnection(`${mongo.uri}/down`, { serverSelectionTimeoutMS: 300 }).asPromise();
    s.disposeAfter(async () => {
      await connection.close(true);
      await mongo.stop();
    });
    await publishQueue(s.redis, s.keys, V1, ids);
    const api = testApi(s, { videoCacheMs: 0 }, { mongo: connection });
    await mongo.stop();
    await request(api.app).get('/api/app/recommend/vid/list').set(bearer(USER)).expect(503);
    expect(await ringHealth(api)).toEqual({ requests: 1, degradations: 0, emptyPages: 0, serverErrors: 1 });
  });
});

