/**
 * The V2 vs legacy readout (SPEC D7): two groups of users, one in the ring's rollout buckets and
 * one outside, are driven through both feeds; pages and engagement are counted for the variant
 * of the user at the time of the action, in Prometheus and in Redis's hourly tally.
 */
import request from '../../../test/support/contract';
import { Deadline, readStepReadout, readVariantStats, type VariantTally } from '@feed/storage';
import type { Api } from '../src/app';
import { guestIdentity } from '../src/http/identity';
import { useTestServices } from '../../../test/support/services';
import { LEGACY_USERS_AT_30, RING_USERS_AT_30, useSplitRollout } from '../../../test/support/api';
import { bearer } from '../../../test/support/feed-fixtures';

const s = useTestServices('readout', { CURRENT_CACHE_MS: '0' });
const VERSION = '20260724';
const split = useSplitRollout(s, VERSION);
const RING_USERS = RING_USERS_AT_30;
const LEGACY_USERS = LEGACY_USERS_AT_30;
let api: Api;
let ids: string[];
beforeEach(() => ({ api, ids } = split));

const counter = async (name: string, labels: Record<string, string>) => {
  const metric = await api.metrics.registry.getSingleMetric(name)!.get();
  return metric.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value ?? 0;
};

describe('V2 vs legacy readout (D7)', () => {
  it('when a ring group and a legacy group read and engage, then each is counted for its own variant, in Prometheus and in Redis', async () => {
    const { app } = api;
    for (const user of RING_USERS) {
      for (let page = 0; page < 2; page++) expect((await request(app).get('/api/app/recommend/vid/list').set(bearer(user)).expect(200)).body.queueVersion).toBe(VERSION);
      for (const vid of ids.slice(0, 3)) await request(app).post('/api/app/vid/view').set(bearer(user)).send({ vid }).expect(200);
      await request(app).post('/api/app/vid/like').set(bearer(user)).send({ vid: ids[0] }).expect(200);
      // A like that changes nothing is not engagement again.
      await request(app).post('/api/app/vid/like').set(bearer(user)).send({ vid: ids[0] }).expect(200);
    }
    for (const user of LEGACY_USERS) {
      expect((await request(app).get('/api/app/recommend/vid/list').set(bearer(user)).expect(200)).body.queueVersion).toBe('legacy');
      await request(app).post('/api/app/vid/view').set(bearer(user)).send({ vid: ids[1] }).expect(200);
      await request(app).post('/api/app/recommend/vid/not-interested').set(bearer(user)).send({ vid: ids[2] }).expect(200);
      await request(app).post('/api/app/share/output').set(bearer(user)).send({ videoID: ids[3] }).expect(200);
      await request(app).post('/api/app/vid/comment').set(bearer(user)).send({ vid: ids[4], content: 'nice' }).expect(201);
    }
    // A bad request is no engagement.
    await request(app).post('/api/app/vid/view').set(bearer(RING_USERS[0])).send({ vid: 'nope' }).expect(400);

    const expected: Record<'ring' | 'legacy', Record<string, number>> = {
      ring: { page: 6, view: 9, like: 3, collect: 0, comment: 0, share: 0, 'not-interested': 0 },
      legacy: { page: 3, view: 3, like: 0, collect: 0, comment: 3, share: 3, 'not-interested': 3 },
    };
    for (const variant of ['ring', 'legacy'] as const) {
      expect(await counter('feed_variant_pages_total', { variant })).toBe(expected[variant].page);
      for (const [action, n] of Object.entries(expected[variant])) if (action !== 'page') expect({ variant, action, n: await counter('feed_variant_engagement_total', { variant, action }) }).toEqual({ variant, action, n });
    }
    await api.readout.flush();
    const tally: VariantTally = await readVariantStats(s.redis, s.keys, new Date());
    expect(tally).toEqual(expected);
  });

  it('when a user toggles a like and a collect, double-taps, retries a share and a comment, and a guest retries a share, then each counts once (first success)', async () => {
    const { app } = api;
    const engagement = async () => {
      const sum: Record<string, number> = {};
      for (const action of ['like', 'collect', 'comment', 'share']) {
        for (const variant of ['ring', 'legacy']) sum[`${variant}/${action}`] = await counter('feed_variant_engagement_total', { variant, action });
      }
      return sum;
    };
    const before = await engagement();
    const user = RING_USERS[1];
    const send = (path: string, body: object) => request(app).post(path).set(bearer(user)).send(body).expect(200);
    for (const path of ['like', 'unlike', 'like', 'unlike', 'like']) await send(`/api/app/vid/${path}`, { vid: ids[8] });
    // Double taps: like and unlike at once, then like twice at once.
    await Promise.all([send('/api/app/vid/unlike', { vid: ids[8] }), send('/api/app/vid/like', { vid: ids[8] })]);
    await Promise.all([send('/api/app/vid/like', { vid: ids[8] }), send('/api/app/vid/like', { vid: ids[8] })]);
    for (const path of ['collect', 'uncollect', 'collect']) await send(`/api/app/vid/${path}`, { vid: ids[8] });
    for (let i = 0; i < 3; i++) await send('/api/app/share/output', { videoID: ids[8] });
    for (let i = 0; i < 3; i++) await request(app).post('/api/app/vid/comment').set(bearer(user)).set('Idempotency-Key', 'readout-key-1').send({ vid: ids[8], content: 'again' });
    const guest = { 'X-Device-Id': 'readout-guest-1' };
    for (let i = 0; i < 3; i++) await request(app).post('/api/app/share/output').set(guest).send({ videoID: ids[9] }).expect(200);
    await request(app).post('/api/app/share/output').set(guest).send({ videoID: ids[10] }).expect(200);
    // An old client's share names no video: no engagement.
    await request(app).post('/api/app/share/output').set(guest).send({}).expect(200);

    const after = await engagement();
    const delta = (key: string) => after[key] - before[key];
    // The user's one share, and the guest's one per video for the guest's own variant.
    const { variant: guestVariant } = await api.readState.variantOf(guestIdentity('readout-guest-1'), new Deadline(1000));
    const shares = { ring: 1, legacy: 0 };
    shares[guestVariant] += 2;
    expect(Object.fromEntries(Object.keys(after).map((key) => [key, delta(key)]))).toEqual({
      'ring/like': 1,
      'ring/collect': 1,
      'ring/comment': 1,
      'ring/share': shares.ring,
      'legacy/like': 0,
      'legacy/collect': 0,
      'legacy/comment': 0,
      'legacy/share': shares.legacy,
    });
  });

  it('when the rollout changes, then an action counts for the variant that serves the user at that moment', async () => {
    const before = await readVariantStats(s.redis, s.keys, new Date());
    const admin = { Authorization: `Basic ${Buffer.from(`${s.config.adminUser}:${s.config.adminPassword}`).toString('base64')}` };
    await request(api.app).put('/api/admin/rollout').set(admin).send({ enabled: false }).expect(200);
    try {
      await request(api.app).post('/api/app/vid/view').set(bearer(RING_USERS[0])).send({ vid: ids[5] }).expect(200);
    } finally {
      await request(api.app).delete('/api/admin/rollout').set(admin).expect(200);
    }
    await request(api.app).post('/api/app/vid/view').set(bearer(RING_USERS[0])).send({ vid: ids[6] }).expect(200);
    await api.readout.flush();
    const after = await readVariantStats(s.redis, s.keys, new Date());
    expect({ ring: after.ring.view - before.ring.view, legacy: after.legacy.view - before.legacy.view }).toEqual({ ring: 1, legacy: 1 });
  });

  it('when Redis does not take a batch, then it is kept and written by the next flush', async () => {
    const before = await readVariantStats(s.redis, s.keys, new Date());
    await request(api.app).post('/api/app/vid/view').set(bearer(LEGACY_USERS[0])).send({ vid: ids[7] }).expect(200);
    const gone = jest.spyOn(s.redis, 'hIncrBy').mockRejectedValue(new Error('Redis is gone'));
    try {
      await api.readout.flush();
    } finally {
      gone.mockRestore();
    }
    expect((await readVariantStats(s.redis, s.keys, new Date())).legacy.view).toBe(before.legacy.view);
    await api.readout.flush();
    expect((await readVariantStats(s.redis, s.keys, new Date())).legacy.view).toBe(before.legacy.view + 1);
  });

  it('when a guest views videos, registers watches of them first or after, and repeats, then each video is one view of its variant, and its views, marks and shares are tagged as a new device\'s', async () => {
    const device = { 'X-Device-Id': 'readout-guest-views' };
    await request(api.app).get('/api/app/recommend/vid/list').set(device).expect(200);
    const { variant } = await api.readState.variantOf(guestIdentity('readout-guest-views'), new Deadline(1000));
    const before = await readVariantStats(s.redis, s.keys, new Date());
    await request(api.app).get('/api/app/vid/user/count').query({ vid: ids[10] }).set(device).expect(200);
    await request(api.app).post('/api/app/vid/view').set(device).send({ vid: ids[10] }).expect(200);
    await request(api.app).post('/api/app/vid/view').set(device).send({ vid: ids[11] }).expect(200);
    await request(api.app).get('/api/app/vid/user/count').query({ vid: ids[11] }).set(device).expect(200);
    await request(api.app).post('/api/app/vid/view').set(device).send({ vid: ids[11] }).expect(200);
    await request(api.app).post('/api/app/recommend/vid/not-interested').set(device).send({ vid: ids[12] }).expect(200);
    await request(api.app).post('/api/app/share/output').set(device).send({ videoID: ids[12] }).expect(200);
    await api.readout.flush();
    const after = await readVariantStats(s.redis, s.keys, new Date());
    expect([after[variant].view - before[variant].view, after[variant].share - before[variant].share]).toEqual([2, 1]);
    // New to any step that began before it: left out of the judged counts, reported beside them.
    const step = await readStepReadout(s.redis, s.keys, new Date(), 2, { startedAt: new Date(Date.now() - 3_600_000), percent: 30 });
    expect(step.fresh?.[variant]).toEqual({ views: 2, notInterested: 1 });
    expect([step[variant].views, step[variant].notInterested, step[variant].shares]).toEqual([after[variant].view - 2, after[variant]['not-interested'] - 1, after[variant].share - 1]);
  });
});
