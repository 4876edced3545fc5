/**
 * R23 on the API side: the feed's health per variant in the D7 hashes (what the ramp's
 * operational guards read), and on-call's ramp endpoints (start, read, pause, resume; a manual
 * percent pauses a running ramp first), each with a clear 4xx and an audit entry.
 */
import mongoose from 'mongoose';
import request from '../../../test/support/contract';
import { startEmbeddedMongo } from '@feed/embedded-mongo';
import { auditTrail, readRamp, readStepReadout } from '@feed/storage';
import type { Api } from '../src/app';
import { useTestServices } from '../../../test/support/services';
import { LEGACY_USERS_AT_30, RING_USERS_AT_30, testApi, useSplitRollout } from '../../../test/support/api';
import { bearer } from '../../../test/support/feed-fixtures';

const s = useTestServices('rollout-ramp', { CURRENT_CACHE_MS: '0' });
const VERSION = '20260724';
const split = useSplitRollout(s, VERSION);
const RING_USERS = RING_USERS_AT_30;
const LEGACY_USERS = LEGACY_USERS_AT_30.slice(0, 2);
let api: Api;
beforeEach(() => ({ api } = split));

const admin = () => ({ Authorization: `Basic ${Buffer.from(`${s.config.adminUser}:${s.config.adminPassword}`).toString('base64')}` });
const page = (user: string) => request(api.app).get('/api/app/recommend/vid/list').set(bearer(user)).expect(200);

describe('the feed health per variant (R23 operational guards)', () => {
  it('when ring and legacy users read pages and the ring queue vanishes, then requests and degradations are tallied per variant', async () => {
    for (const user of RING_USERS) await page(user);
    for (const user of LEGACY_USERS) await page(user);
    // Today's queue gone: the ring users are served by a fallback (a degradation of the ring).
    await s.redis.del([s.keys.queue(VERSION), s.keys.previous]);
    expect((await page(RING_USERS[0])).body.queueVersion).toBe('legacy');
    await api.readout.flush();
    const readout = await readStepReadout(s.redis, s.keys, new Date(), 1);
    expect(readout.ring).toMatchObject({ requests: 4, degradations: 1, serverErrors: 0 });
    expect(readout.legacy).toMatchObject({ requests: 2, degradations: 0, serverErrors: 0 });
  });
});

describe('the feed health per variant when nothing can serve', () => {
  it('when Redis holds no feed and MongoDB is down, then each 503 is a server error of the user\'s variant', async () => {
    // A MongoDB of this test's own, stopped after the app connected.
    const mongo = await startEmbeddedMongo();
    const connection = await mongoose.createConnection(`${mongo.uri}/down`, { serverSelectionTimeoutMS: 300 }).asPromise();
    try {
      const down = testApi(s, { shortRecommendV2Percent: 30 }, { mongo: connection });
      await mongo.stop();
      await s.redis.del([s.keys.queue(VERSION), s.keys.current, s.keys.previous, s.keys.legacyIds]);
      await request(down.app).get('/api/app/recommend/vid/list').set(bearer(RING_USERS[0])).expect(503);
      await request(down.app).get('/api/app/recommend/vid/list').set(bearer(LEGACY_USERS[0])).expect(503);
      await down.readout.flush();
      const readout = await readStepReadout(s.redis, s.keys, new Date(), 1);
      expect(readout.ring).toMatchObject({ requests: 1, serverErrors: 1 });
      expect(readout.legacy).toMatchObject({ requests: 1, serverErrors: 1 });
    } finally {
      await connection.close(true);
      await mongo.stop();
    }
  }, 60_000);
});

describe('PUT /api/admin/rollout/ramp (R23)', () => {
  it.each([
    [{ steps: [1, 5], dwell: '1 hour' }, /dwell/],
    [{ steps: [5, 1], dwell: '1h' }, /'steps' must be strictly increasing/],
    [{ steps: [0, 100], dwell: '1h' }, /steps/],
    [{ steps: [1, 100], dwell: '10s' }, /^'dwell' must be from 1m to 30d$/],
    [{ steps: [1, 100], dwell: '100000000d' }, /'dwell' with value '100000000d' fails to match/],
    [{ steps: [1, 100], dwell: '31d' }, /^'dwell' must be from 1m to 30d$/],
    [{ steps: [1, 100], dwell: '1h', recheck: '5s' }, /^'recheck' must be from 1m to 30d$/],
    [{ steps: [1, 100], dwell: '1h', minViews: 1e9 }, /'minViews' must be less than or equal to 100000000/],
    [{ steps: ['5'], dwell: '1h' }, /steps/],
    [{ dwell: '1h' }, /steps/],
  ])('when the body is %j, then it is a 400 naming the problem and no ramp is stored', async (body, message) => {
    const res = await request(api.app).put('/api/admin/rollout/ramp').set(admin()).send(body).expect(400);
    expect(res.body.error.message).toMatch(message);
    expect(await s.redis.exists(s.keys.ramp)).toBe(0);
  });

  it('when on-call starts a ramp, then it is stored and audited, a second start is a 409, a manual percent pauses it and resume restarts its step', async () => {
    await request(api.app).get('/api/admin/rollout/ramp').set(admin()).expect(404);
    const started = await request(api.app).put('/api/admin/rollout/ramp').set(admin()).send({ steps: [1, 5, 25, 50, 100], dwell: '1h', minViews: 5000 }).expect(200);
    expect(started.body).toMatchObject({ status: 'running', current: 0, steps: [{ outcome: 'running' }, {}, {}, {}, {}], guards: { minViews: 5000, confidence: 0.95 }, requestedBy: s.config.adminUser });
    // The first step is written in the same step as the ramp.
    expect(await s.redis.hGetAll(s.keys.rollout)).toMatchObject({ enabled: 'true', percent: '1' });
    expect((await request(api.app).get('/api/admin/rollout/ramp').set(admin()).expect(200)).body).toEqual(started.body);
    const again = await request(api.app).put('/api/admin/rollout/ramp').set(admin()).send({ steps: [1, 100], dwell: '1h' }).expect(409);
    expect(again.body.error.message).toMatch(/pause it before starting another/);

    await request(api.app).put('/api/admin/rollout').set(admin()).send({ percent: 40 }).expect(200);
    expect((await readRamp(s.redis, s.keys)).state).toMatchObject({ status: 'paused', pause: { cause: 'manual-percent', by: s.config.adminUser, detail: expect.stringMatching(/percent=40/) } });
    await request(api.app).post('/api/admin/rollout/ramp/pause').set(admin()).expect(409);

    const resumed = await request(api.app).post('/api/admin/rollout/ramp/resume').set(admin()).expect(200);
    expect(resumed.body).toMatchObject({ status: 'running', current: 0 });
    expect(await s.redis.hGetAll(s.keys.rollout)).toMatchObject({ enabled: 'true', percent: '1' });
    const paused = await request(api.app).post('/api/admin/rollout/ramp/pause').set(admin()).expect(200);
    expect(paused.body).toMatchObject({ status: 'paused', pause: { cause: 'manual-pause' } });

    const entries = (await auditTrail(s.mongo, s.prefix).read(20)).map((e) => `${e.action} ${e.actor} ${e.via}`);
    expect(entries).toEqual([
      `ramp-pause ${s.config.adminUser} api`,
      `rollout-set ${s.config.adminUser} api`,
      `ramp-resume ${s.config.adminUser} api`,
      `rollout-set ${s.config.adminUser} api`,
      `ramp-pause ${s.config.adminUser} api`,
      `rollout-set ${s.config.adminUser} api`,
      `ramp-start ${s.config.adminUser} api`,
    ]);
  });

  it('when the kill switch is on, then a ramp cannot start (409)', async () => {
    await request(api.app).put('/api/admin/rollout').set(admin()).send({ enabled: false }).expect(200);
    const res = await request(api.app).put('/api/admin/rollout/ramp').set(admin()).send({ steps: [1, 100], dwell: '1h' }).expect(409);
    expect(res.body.error.message).toMatch(/kill switch/);
  });

  it('when the credentials are missing, then every ramp endpoint is a 401', async () => {
    await request(api.app).get('/api/admin/rollout/ramp').expect(401);
    await request(api.app).put('/api/admin/rollout/ramp').send({ steps: [1, 100], dwell: '1h' }).expect(401);
    await request(api.app).post('/api/admin/rollout/ramp/pause').expect(401);
    await request(api.app).post('/api/admin/rollout/ramp/resume').expect(401);
  });
});
