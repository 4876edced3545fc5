import request, { type Response } from '../../../test/support/contract';
import type { Express } from 'express';
import { auditTrail, connectRedis, videoModel, type VideoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { logger } from '@feed/logger';
import type { Api } from '../src/app';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer, offsetOf, publishQueue, setOffset } from '../../../test/support/feed-fixtures';

const s = useTestServices('feed', { CURRENT_CACHE_MS: '0', VIDEO_CACHE_MS: '0' });
let api: Api;
let app: Express;
let videos: VideoModel;
let ids: string[];

const V1 = '20260724';
const V2 = '20260725';

beforeAll(async () => {
  videos = videoModel(s.mongo);
  const docs = Array.from({ length: 50 }, (_, i) => demoVideo({ title: `v${i}`, authorId: `author-${i}` }));
  await videos.insertMany(docs);
  ids = docs.map((d) => d._id!.toHexString());
});

beforeEach(async () => {
  api = testApi(s);
  app = api.app;
  await publishQueue(s.redis, s.keys, V1, ids);
});

const page = (user: string, pageSize = 20, path = '/api/app/recommend/vid/list') =>
  request(app).get(path).query({ pageSize, pageNumber: 1 }).set(bearer(user));

const vids = (res: Response) => (res.body.vInfos as Array<{ vid: string }>).map((v) => v.vid);

describe('GET /api/app/recommend/vid/list (ring read)', () => {
  it('when a user visits first, then they get the first 20 of the queue and the documented shape', async () => {
    const res = await page('first-visit').expect(200);
    expect(vids(res)).toEqual(ids.slice(0, 20));
    expect(res.body).toMatchObject({ totalPages: 3, hasNext: true, queueVersion: V1 });
    expect(res.headers['x-request-id']).toBeDefined();
    const item = res.body.vInfos[0];
    expect(Object.keys(item).sort()).toEqual(
      ['authorId', 'coin', 'collectCount', 'commentCount', 'coverUrl', 'durationSec', 'isAd', 'likeCount', 'playUrl', 'reviewAt', 'shareCount', 'special', 'title', 'vid', 'vip'].sort(),
    );
    expect(JSON.stringify(res.body)).not.toMatch(/recommend(Like|Collect|Comment|Share|Score)/);
    expect(await offsetOf(s.redis, s.keys, V1, 'u:first-visit')).toBe('20');
  });

  it('when a client sends HEAD, then it gets the headers and no position is claimed (R11)', async () => {
    for (const path of ['/api/app/recommend/vid/list', '/api/app/vid/module/short/all']) {
      const head = await request(app).head(path).set(bearer('head-user')).expect(200);
      expect(head.headers['content-type']).toMatch(/application\/json/);
    }
    expect(await offsetOf(s.redis, s.keys, V1, 'u:head-user')).toBeNull();
    expect(vids(await page('head-user').expect(200))).toEqual(ids.slice(0, 20));
  });

  it('when the client sends any pageNumber, then it is ignored: pages follow the user\'s offset (R12)', async () => {
    const at = (pageNumber: string) => request(app).get('/api/app/recommend/vid/list').query({ pageSize: 10, pageNumber }).set(bearer('page-numbers'));
    expect(vids(await at('7').expect(200))).toEqual(ids.slice(0, 10));
    expect(vids(await at('1').expect(200))).toEqual(ids.slice(10, 20));
    expect(vids(await at('1').expect(200))).toEqual(ids.slice(20, 30));
    // A 0-based client's first page, and R12's call with empty values (the default size, 20).
    expect(vids(await at('0').expect(200))).toEqual(ids.slice(30, 40));
    const empty = await request(app).get('/api/app/recommend/vid/list?pageNumber=&pageSize=').set(bearer('page-numbers')).expect(200);
    expect(vids(empty)).toEqual([...ids.slice(40), ...ids.slice(0, 60 - ids.length)]);
  });

  it('when users read, then each has an independent offset', async () => {
    await page('iso-a').expect(200);
    const a2 = await page('iso-a').expect(200);
    const b1 = await page('iso-b').expect(200);
    expect(vids(a2)).toEqual(ids.slice(20, 40));
    expect(vids(b1)).toEqual(ids.slice(0, 20));
  });

  it('when the tail is reached, then the read wraps around to the head', async () => {
    await setOffset(s.redis, s.keys, V1, 'u:wrap', 45);
    const res = await page('wrap').expect(200);
    expect(vids(res)).toEqual([...ids.slice(45), ...ids.slice(0, 15)]);
    expect(await offsetOf(s.redis, s.keys, V1, 'u:wrap')).toBe('15');
  });

  it('when the version switches, then every user starts again at 0', async () => {
    await page('switch').expect(200);
    const reversed = [...ids].reverse();
    await publishQueue(s.redis, s.keys, V2, reversed);
    const res = await page('switch').expect(200);
    expect(res.body.queueVersion).toBe(V2);
    expect(vids(res)).toEqual(reversed.slice(0, 20));
  });

  it('when a video was taken down after the build, then it is skipped and the page is still filled', async () => {
    await videos.updateOne({ _id: ids[3] }, { $set: { status: 'offline' } });
    await videos.updateOne({ _id: ids[7] }, { $set: { deleted: true } });
    const before = Number((await api.metrics.registry.getSingleMetricAsString('feed_skipped_videos_total')).match(/reason="invalid"} (\d+)/)?.[1] ?? 0);
    const res = await page('takedown').expect(200);
    expect(vids(res)).toEqual(ids.slice(0, 22).filter((id) => id !== ids[3] && id !== ids[7]));
    expect(await offsetOf(s.redis, s.keys, V1, 'u:takedown')).toBe('22');
    const after = Number((await api.metrics.registry.getSingleMetricAsString('feed_skipped_videos_total')).match(/reason="invalid"} (\d+)/)?.[1]);
    expect(after - before).toBe(2);
    await videos.updateMany({ _id: { $in: [ids[3], ids[7]] } }, { $set: { status: 'approved', deleted: false } });
  });

  it('when the queue is shorter than the page, then one circle is returned without duplicates', async () => {
    await publishQueue(s.redis, s.keys, V2, ids.slice(0, 7));
    await setOffset(s.redis, s.keys, V2, 'u:short', 5);
    const res = await page('short').expect(200);
    expect(vids(res)).toEqual([...ids.slice(5, 7), ...ids.slice(0, 5)]);
    expect(res.body).toMatchObject({ totalPages: 1, hasNext: true });
  });

  it('when the user authored a video, then it is skipped in their feed', async () => {
    const res = await page('author-2').expect(200);
    expect(vids(res)).not.toContain(ids[2]);
    expect(vids(res)).toHaveLength(20);
  });

  it('when the older client calls /vid/module/short/all, then it is served from the same ring', async () => {
    await page('old-client').expect(200);
    const res = await page('old-client', 20, '/api/app/vid/module/short/all').expect(200);
    expect(vids(res)).toEqual(ids.slice(20, 40));
    expect(res.body).toMatchObject({ hasNext: true, queueVersion: V1 });
  });

  it('when a guest sends a device id, then the guest has an offset of its own', async () => {
    const res = await request(app).get('/api/app/recommend/vid/list').set('X-Device-Id', 'device-abc-123').expect(200);
    expect(vids(res)).toEqual(ids.slice(0, 20));
    expect(await offsetOf(s.redis, s.keys, V1, 'g:device-abc-123')).toBe('20');
  });

  it('when 200 requests of one user run concurrently, then their slices tile the ring exactly', async () => {
    const responses = await Promise.all(Array.from({ length: 200 }, () => page('concurrent', 5)));
    const all = responses.flatMap((r) => vids(r));
    expect(all).toHaveLength(1000);
    // 1000 positions over a 50-long ring: every id served exactly 20 times, no overlap.
    const counts = new Map<string, number>();
    for (const id of all) counts.set(id, (counts.get(id) ?? 0) + 1);
    expect([...counts.values()].every((c) => c === 20)).toBe(true);
    expect(counts.size).toBe(50);
    for (const r of responses) {
      const slice = vids(r);
      const start = ids.indexOf(slice[0]);
      expect(slice).toEqual(Array.from({ length: 5 }, (_, i) => ids[(start + i) % 50]));
    }
    expect(await offsetOf(s.redis, s.keys, V1, 'u:concurrent')).toBe('0');
  });
});

describe('degradation (R17)', () => {
  it('when the current version keys are gone, then the previous version serves, and the degradation is counted and logged with its reason', async () => {
    await publishQueue(s.redis, s.keys, V2, [...ids].reverse());
    await s.redis.del(s.keys.queue(V2));
    const warn = jest.spyOn(logger, 'warn');
    s.disposeAfter(() => warn.mockRestore());
    const res = await page('degrade-prev').expect(200);
    expect(res.body.queueVersion).toBe(V1);
    expect(vids(res)).toEqual(ids.slice(0, 20));
    expect(await api.metrics.registry.getSingleMetricAsString('feed_degradations_total')).toMatch(/kind="previous-version"} [1-9]/);
    expect(warn).toHaveBeenCalledWith('feed degraded', {
      requestId: res.headers['x-request-id'],
      kind: 'previous-version',
      reasons: [`ring: queue of version ${V2} is gone`],
    });
  });

  it('when no version exists, then the legacy random set serves', async () => {
    await s.redis.del([s.keys.current, s.keys.previous]);
    await s.redis.sAdd(s.keys.legacyIds, ids.slice(0, 10));
    const res = await page('degrade-legacy').expect(200);
    expect(res.body.queueVersion).toBe('legacy');
    expect(vids(res).length).toBe(10);
    expect(new Set(vids(res))).toEqual(new Set(ids.slice(0, 10)));
  });

  it('when Redis is unreachable, then a bounded MongoDB query serves and the degradation is counted', async () => {
    // A real client pointed at a port where nothing listens: with the offline queue disabled
    // (as the API runs), every command fails at once.
    const dead = await connectRedis({ redisUrl: 'redis://127.0.0.1:1' }, { failFast: true, background: true });
    s.disposeAfter(() => dead.destroy());
    const broken = testApi(s, {}, { redis: dead });
    const res = await request(broken.app).get('/api/app/recommend/vid/list').set(bearer('no-redis')).expect(200);
    expect(res.body.queueVersion).toBe('fallback');
    expect(vids(res)).toHaveLength(20);
    expect(new Set(vids(res)).size).toBe(20);
    const degradations = await broken.metrics.registry.getSingleMetricAsString('feed_degradations_total');
    // One page, one degradation: the strategy that served it.
    expect(degradations).not.toMatch(/kind="legacy-set"} [1-9]/);
    expect(degradations).toMatch(/kind="mongo-fallback"} 1/);
    const failures = await broken.metrics.registry.getSingleMetricAsString('feed_redis_failures_total');
    expect(failures).toMatch(/operation="settings"} 1/);
    expect(failures).toMatch(/operation="legacy-set"} 1/);
    const ready = await request(broken.app).get('/readyz').expect(200);
    expect(ready.body).toEqual({ status: 'degraded', redis: 'down', mongo: 'ok' });
    // Views, marks and watch counts live only in Redis: a prompt 503, never a generic 500, and counted.
    const vid = res.body.vInfos[0].vid;
    await request(broken.app).post('/api/app/vid/view').set(bearer('no-redis')).send({ vid }).expect(503);
    await request(broken.app).post('/api/app/recommend/vid/not-interested').set(bearer('no-redis')).send({ vid }).expect(503);
    await request(broken.app).post('/api/app/recommend/vid/not-interested/undo').set(bearer('no-redis')).send({ vid }).expect(503);
    const count = await request(broken.app).get('/api/app/vid/user/count').set(bearer('no-redis')).expect(503);
    expect(count.body.error.code).toBe('unavailable');
    await request(broken.app).get('/api/app/vid/user/count').query({ vid }).set(bearer('no-redis')).expect(503);
    const afterEndpoints = await broken.metrics.registry.getSingleMetricAsString('feed_redis_failures_total');
    expect(afterEndpoints).toMatch(/operation="view-history"} 1/);
    expect(afterEndpoints).toMatch(/operation="not-interested"} 2/);
    expect(afterEndpoints).toMatch(/operation="watch-count"} 2/);

    // A bad rollout value is a 400 before any store is touched.
    const admin = { Authorization: `Basic ${Buffer.from(`${s.config.adminUser}:${s.config.adminPassword}`).toString('base64')}` };
    await request(broken.app).put('/api/admin/rollout').set(admin).send({ percent: 101 }).expect(400);
  });
});

describe('GET /api/app/recommend/vid/ad (R14)', () => {
  it('when ads are requested, then only approved short ad videos come back, outside the ring', async () => {
    const ads = [demoVideo({ isAd: true }), demoVideo({ isAd: true }), demoVideo({ isAd: true, status: 'offline' })];
    await videos.insertMany(ads);
    const adApp = testApi(s);
    const res = await request(adApp.app).get('/api/app/recommend/vid/ad').query({ pageSize: 5 }).set(bearer('ad-viewer')).expect(200);
    expect(new Set(vids(res))).toEqual(new Set(ads.slice(0, 2).map((a) => a._id!.toHexString())));
    expect(await offsetOf(s.redis, s.keys, V1, 'u:ad-viewer')).toBeNull();
    await request(adApp.app).get('/api/app/recommend/vid/ad').query({ pageSize: 11 }).set(bearer('ad-viewer')).expect(400);
  });
});

describe('rollout (R16)', () => {
  it('when the percentage is 30, then users whose stable bucket is below 30 get the ring and the rest the legacy feed', async () => {
    const partial = testApi(s, { shortRecommendV2Percent: 30 });
    await s.redis.sAdd(s.keys.legacyIds, ids);
    // Buckets computed outside the service (FNV-1a 32 of "u:<id>", mod 100), around the boundary.
    const buckets: Array<[user: string, bucket: number]> = [
      ['rollout-6', 0], ['rollout-34', 1], ['rollout-82', 28], ['rollout-197', 29],
      ['rollout-149', 30], ['rollout-21', 31], ['rollout-22', 50], ['rollout-90', 99],
    ];
    for (const [user, bucket] of buckets) {
      const res = await request(partial.app).get('/api/app/recommend/vid/list').set(bearer(user)).expect(200);
      expect({ user, served: res.body.queueVersion }).toEqual({ user, served: bucket < 30 ? V1 : 'legacy' });
    }
  });

  it('when v2 is disabled, then everyone gets the legacy feed', async () => {
    const off = testApi(s, { shortRecommendV2Enabled: false });
    await s.redis.sAdd(s.keys.legacyIds, ids);
    const res = await request(off.app).get('/api/app/recommend/vid/list').set(bearer('disabled')).expect(200);
    expect(res.body.queueVersion).toBe('legacy');
  });

  describe('the admin kill switch', () => {
    const admin = () => ({ Authorization: `Basic ${Buffer.from(`${s.config.adminUser}:${s.config.adminPassword}`).toString('base64')}` });

    it('when on-call PUTs enabled=false, then this instance serves the legacy feed at once, and the ring again after DELETE', async () => {
      await s.redis.sAdd(s.keys.legacyIds, ids);
      const off = await request(app).put('/api/admin/rollout').set(admin()).send({ enabled: false }).expect(200);
      expect(off.body).toMatchObject({ enabled: false, percent: 100, source: { enabled: 'override', percent: 'environment' } });
      expect((await request(app).get('/api/app/recommend/vid/list').set(bearer('kill-switch')).expect(200)).body.queueVersion).toBe('legacy');
      expect(await api.metrics.registry.getSingleMetricAsString('feed_rollout_enabled')).toMatch(/^feed_rollout_enabled 0$/m);
      const back = await request(app).delete('/api/admin/rollout').set(admin()).expect(200);
      expect(back.body.source).toEqual({ enabled: 'environment', percent: 'environment' });
      expect((await request(app).get('/api/app/recommend/vid/list').set(bearer('kill-switch')).expect(200)).body.queueVersion).toBe(V1);

      // Both changes are in the audit trail (D6), newest first, with who and the values before and after.
      const audit = await request(app).get('/api/admin/audit').set(admin()).expect(200);
      expect(audit.body.entries).toEqual([
        expect.objectContaining({ action: 'rollout-clear', actor: s.config.adminUser, via: 'api', before: expect.objectContaining({ enabled: false }), after: expect.objectContaining({ enabled: true }) }),
        expect.objectContaining({ action: 'rollout-set', actor: s.config.adminUser, via: 'api', before: expect.objectContaining({ enabled: true }), after: expect.objectContaining({ enabled: false, source: { enabled: 'override', percent: 'environment' } }) }),
      ]);
      expect(Date.now() - Date.parse(audit.body.entries[0].at)).toBeLessThan(60_000);
      expect(JSON.stringify(audit.body)).not.toContain(s.config.adminPassword);
      await request(app).get('/api/admin/audit').expect(401);
    });

    it.each([[{ percent: 101 }], [{ percent: '50' }], [{ enabled: 'false' }], [{}], [{ enabled: true, extra: 1 }]])('when the body is %j, then 400 and nothing changes', async (body) => {
      const res = await request(app).put('/api/admin/rollout').set(admin()).send(body).expect(400);
      expect(res.body.error.code).toBe('bad_request');
      expect(await s.redis.exists(s.keys.rollout)).toBe(0);
      expect(await auditTrail(s.mongo, s.config.redisKeyPrefix).read()).toEqual([]);
    });

    it('when called without credentials, then 401 with the API realm', async () => {
      const res = await request(app).get('/api/admin/rollout').expect(401);
      expect(res.headers['www-authenticate']).toMatch(/realm="feed-api"/);
    });
  });
});
