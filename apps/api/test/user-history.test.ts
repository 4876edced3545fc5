import request, { type Response } from '../../../test/support/contract';
import type { Express } from 'express';
import { videoModel } from '@feed/storage';
import { versionFor } from '@feed/domain';
import { demoVideo } from '@feed/demo-data';
import type { Api } from '../src/app';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer, offsetOf, publishQueue } from '../../../test/support/feed-fixtures';
import { waitUntil } from '../../../tools/support/processes';

const s = useTestServices('history', { CURRENT_CACHE_MS: '0', VIDEO_CACHE_MS: '0', VIEW_HISTORY_SIZE: '10' });
let api: Api;
let app: Express;
let ids: string[];

beforeAll(async () => {
  const docs = Array.from({ length: 30 }, () => demoVideo({}));
  await videoModel(s.mongo).insertMany(docs);
  ids = docs.map((d) => d._id!.toHexString());
});

beforeEach(() => {
  api = testApi(s);
  app = api.app;
});

let day = 20260700;
/** A new day's version with the same queue: every user starts again at offset 0. */
async function nextDay(queue = ids): Promise<string> {
  day += 1;
  await publishQueue(s.redis, s.keys, String(day), queue);
  return String(day);
}

const feed = (headers: Record<string, string>, pageSize = 5) =>
  request(app).get('/api/app/recommend/vid/list').query({ pageSize }).set(headers);
const vids = (res: Response) => (res.body.vInfos as Array<{ vid: string }>).map((v) => v.vid);
const view = (headers: Record<string, string>, vid: string) => request(app).post('/api/app/vid/view').set(headers).send({ vid }).expect(200);

describe('recently viewed (V1, V2)', () => {
  it('when a user viewed videos, then the next days skip them while the offset moves past them', async () => {
    const user = bearer('viewer');
    await nextDay();
    for (const vid of ids.slice(0, 3)) await view(user, vid);
    const version = await nextDay();
    const res = await feed(user).expect(200);
    expect(vids(res)).toEqual(ids.slice(3, 8));
    expect(await offsetOf(s.redis, s.keys, version, 'u:viewer')).toBe('8');
    expect(await api.metrics.registry.getSingleMetricAsString('feed_skipped_videos_total')).toMatch(/reason="seen"} 3/);
  });

  it('when a video is served but not reported as viewed, then it is not skipped later', async () => {
    const user = bearer('server-only');
    await nextDay();
    await feed(user).expect(200);
    await nextDay();
    expect(vids(await feed(user).expect(200))).toEqual(ids.slice(0, 5));
  });

  it('when more than N videos are viewed, then only the newest N are remembered', async () => {
    const user = bearer('heavy');
    for (const vid of ids.slice(0, 12)) await view(user, vid);
    expect(await s.redis.strLen(s.keys.views('u:heavy'))).toBe(10 * 4);
    await nextDay();
    // The two oldest views dropped out of the window: they come back first.
    expect(vids(await feed(user, 3).expect(200))).toEqual([ids[0], ids[1], ids[12]]);
  });

  it('when the view window expires, then the videos come back', async () => {
    const shortLived = testApi(s, { viewHistoryTtlDays: 0.5 / 86400 });
    await request(shortLived.app).post('/api/app/vid/view').set(bearer('expiring')).send({ vid: ids[0] }).expect(200);
    const key = s.keys.views('u:expiring');
    expect(await s.redis.pTTL(key)).toBeGreaterThan(0);
    // Wait, bounded, for Redis's own expiry of the key (observed state, not a fixed sleep).
    await waitUntil('the view window to expire', async () => (await s.redis.exists(key)) === 0, 5_000);
    await nextDay();
    expect(vids(await feed(bearer('expiring'), 1).expect(200))).toEqual([ids[0]]);
  });

  it('when the count endpoint registers a watch, then it is a view too and both branches report totalWatchCount', async () => {
    const user = bearer('counter');
    const before = await request(app).get('/api/app/vid/user/count').set(user).expect(200);
    expect(before.body).toEqual({ watchCount: 10, totalWatchCount: 10 });
    const after = await request(app).get('/api/app/vid/user/count').query({ vid: ids[0] }).set(user).expect(200);
    expect(after.body).toEqual({ watchCount: 9, totalWatchCount: 10 });
    await request(app).get('/api/app/vid/user/count').query({ vid: ids[0] }).set(user).expect(200, { watchCount: 9, totalWatchCount: 10 });
    await nextDay();
    expect(vids(await feed(user, 1).expect(200))).toEqual([ids[1]]);
    await request(app).get('/api/app/vid/user/count').query({ vid: 'nope' }).set(user).expect(400);
    await request(app).get('/api/app/vid/user/count').query({ vid: '0123456789abcdef01234567' }).set(user).expect(404);
  });

  it('when one device registers watches of every video, then its day keeps no more than the free watches (a device cannot fill Redis)', async () => {
    const device = { 'X-Device-Id': 'watch-filler-1' };
    for (const vid of ids) await request(app).get('/api/app/vid/user/count').query({ vid }).set(device).expect(200);
    await request(app).get('/api/app/vid/user/count').set(device).expect(200, { watchCount: 0, totalWatchCount: 10 });
    expect(await s.redis.sCard(s.keys.watches('g:watch-filler-1', versionFor(new Date(), s.config.businessTimeZone)))).toBe(10);
  });

  it('when a user has seen the whole ring, then the response says so instead of looping', async () => {
    const small = ids.slice(0, 4);
    const user = bearer('seen-all');
    for (const vid of small) await view(user, vid);
    const version = await nextDay(small);
    const res = await feed(user, 5).expect(200);
    expect(res.body).toMatchObject({ vInfos: [], hasNext: true, allSeen: true });
    expect(await offsetOf(s.redis, s.keys, version, 'u:seen-all')).toBe('0');
  });
});

describe('not interested (V3)', () => {
  it('when a user marks a video not interested, then it is skipped; undo brings it back', async () => {
    const user = bearer('picky');
    await request(app).post('/api/app/recommend/vid/not-interested').set(user).send({ vid: ids[1] }).expect(200);
    await nextDay();
    expect(vids(await feed(user, 3).expect(200))).toEqual([ids[0], ids[2], ids[3]]);
    const undo = await request(app).post('/api/app/recommend/vid/not-interested/undo').set(user).send({ vid: ids[1] }).expect(200);
    expect(undo.body).toEqual({ ok: true, removed: true });
    await nextDay();
    expect(vids(await feed(user, 3).expect(200))).toEqual(ids.slice(0, 3));
  });

  it('when the bound is exceeded, then the oldest marks are dropped first', async () => {
    const bounded = testApi(s, { notInterestedMax: 10 });
    for (const vid of ids.slice(0, 11)) await request(bounded.app).post('/api/app/recommend/vid/not-interested').set(bearer('bounded')).send({ vid }).expect(200);
    expect(await s.redis.strLen(s.keys.notInterested('u:bounded'))).toBe(40);
    await nextDay();
    expect(vids(await feed(bearer('bounded'), 2).expect(200))).toEqual([ids[0], ids[11]]);
  });
});

describe('one id rule', () => {
  it('when a client sends an existing id in upper case, then view, not-interested, undo and the watch count treat it as that video', async () => {
    const user = bearer('upper-case');
    const [viewed, marked, counted] = ids.slice(0, 3).map((id) => id.toUpperCase());
    await view(user, viewed);
    await request(app).post('/api/app/recommend/vid/not-interested').set(user).send({ vid: marked }).expect(200);
    const upper = (await request(app).get('/api/app/vid/user/count').query({ vid: counted }).set(user).expect(200)).body;
    // The same video in lower case is the same watch: the count does not move.
    expect((await request(app).get('/api/app/vid/user/count').query({ vid: ids[2] }).set(user).expect(200)).body).toEqual(upper);
    await nextDay();
    // Viewed (twice: the count is a view too) and marked videos are skipped as if sent in lower case.
    expect(vids(await feed(user, 2).expect(200))).toEqual([ids[3], ids[4]]);
    const undo = await request(app).post('/api/app/recommend/vid/not-interested/undo').set(user).send({ vid: marked }).expect(200);
    expect(undo.body).toEqual({ ok: true, removed: true });
  });
});

describe('identity of the sets', () => {
  it('when one user reads on several devices, then all devices share the sets; a guest device has its own', async () => {
    const phone = { ...bearer('multi'), 'X-Device-Id': 'phone-0000001' };
    const tablet = { ...bearer('multi'), 'X-Device-Id': 'tablet-000001' };
    await view(phone, ids[0]);
    await nextDay();
    expect(vids(await feed(tablet, 1).expect(200))).toEqual([ids[1]]);
    const guest = { 'X-Device-Id': 'phone-0000001' };
    expect(vids(await feed(guest, 1).expect(200))).toEqual([ids[0]]);
    await view(guest, ids[0]);
    await nextDay();
    expect(vids(await feed(guest, 1).expect(200))).toEqual([ids[1]]);
  });

  it('when the view body is bad, then 4xx and nothing is stored', async () => {
    await request(app).post('/api/app/vid/view').send({ vid: ids[0] }).expect(401);
    await request(app).post('/api/app/vid/view').set(bearer('bad')).send({ vid: '../etc' }).expect(400);
    await request(app).post('/api/app/vid/view').set(bearer('bad')).send({ vid: '0123456789abcdef01234567' }).expect(404);
    await request(app).post('/api/app/vid/view').set(bearer('bad')).set('Content-Type', 'application/json').send('{"vid":').expect(400);
    expect(await s.redis.exists(s.keys.views('u:bad'))).toBe(0);
  });
});
