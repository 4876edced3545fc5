/**
 * Issue 52's attack replayed over the real API and the worker's ramp driver (R23): 150 signed-in
 * users at a 50 % step, and a crowd of fresh guest device ids chosen into the ring, each with its
 * own X-Forwarded-For from a trusted proxy (a botnet: the new-device limit never trips, so the
 * judge itself is tested), each a page, a view and a "not interested". The crowd never halts or
 * rolls back the ramp: the sample-ratio check pauses it. A regression among the users halts it,
 * with the crowd or alone.
 */
import http from 'node:http';
import { createLogger } from '@feed/logger';
import type { RampState } from '@feed/domain';
import { auditTrail, Deadline, guestSlot, observeRollout, registerGuest, RolloutStore, startStoredRamp } from '@feed/storage';
import { guestIdentity, userIdentity, type Api } from '@feed/api';
import { createWorkerMetrics, driveRamp } from '@feed/worker';
import request from '../support/contract';
import { useTestServices } from '../support/services';
import { testApi, useSplitRollout } from '../support/api';
import { bearer } from '../support/feed-fixtures';

const s = useTestServices('ramp-crowd', { CURRENT_CACHE_MS: '0', TRUST_PROXY: 'loopback' });
const split = useSplitRollout(s, '20260724');
const ENVIRONMENT = { enabled: true, percent: 30 };
const USERS = Array.from({ length: 150 }, (_, u) => `crowd-user-${u}`);
const VIEWS_EACH = 5;
/** One listening server per test: supertest would listen anew for every request of thousands. */
let server: http.Server;

/** Runs `jobs` at most `width` at once. */
async function inParallel(jobs: Array<() => Promise<unknown>>, width = 10): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < jobs.length) await jobs[next++]();
  }));
}

async function startRamp(): Promise<void> {
  const who = { actor: 'oncall@host', via: 'cli' as const };
  const started = await startStoredRamp({ redis: s.redis, keys: s.keys, environment: ENVIRONMENT, trail: auditTrail(s.mongo, s.prefix), who, now: () => new Date() }, { steps: [50, 100], dwellMs: 60_000, guards: { minViews: 300, minRequests: 200 } });
  if (!started.ok) throw new Error(started.error);
}

/** The users: 3 pages, 5 views each; "not interested" 3 % of each arm's views, the ring's `ringTimes` that. */
async function genuineTraffic(api: Api, ringTimes: number): Promise<void> {
  const app = server;
  const arms = await Promise.all(USERS.map(async (user) => (await api.readState.variantOf(userIdentity(user), new Deadline(1000))).variant));
  await inParallel(USERS.flatMap((user) => [0, 1, 2].map(() => () => request(app).get('/api/app/recommend/vid/list').set(bearer(user)).expect(200))));
  await inParallel(USERS.flatMap((user, u) => Array.from({ length: VIEWS_EACH }, (_, v) => () => request(app).post('/api/app/vid/view').set(bearer(user)).send({ vid: split.ids[(u + v) % 30] }).expect(200))));
  for (const arm of ['ring', 'legacy'] as const) {
    const members = USERS.filter((_, u) => arms[u] === arm);
    const marks = Math.round(members.length * VIEWS_EACH * 0.03 * (arm === 'ring' ? ringTimes : 1));
    await inParallel(members.slice(0, marks).map((user) => () => request(app).post('/api/app/recommend/vid/not-interested').set(bearer(user)).send({ vid: split.ids[USERS.indexOf(user) % 30] }).expect(200)));
  }
}

/** `count` fresh device ids the ring serves at 50 %, each from an address of its own: a page, a view, a "not interested". */
async function crowd(api: Api, count: number): Promise<void> {
  const app = server;
  const devices: string[] = [];
  for (let i = 0; devices.length < count; i++) if ((await api.readState.variantOf(guestIdentity(`crowd-device-${i}`), new Deadline(1000))).variant === 'ring') devices.push(`crowd-device-${i}`);
  await inParallel(devices.map((device, d) => async () => {
    const headers = { 'X-Device-Id': device, 'X-Forwarded-For': `10.${d >> 16}.${(d >> 8) & 255}.${d & 255}` };
    expect((await request(app).get('/api/app/recommend/vid/list').set(headers).expect(200)).body.queueVersion).toBe('20260724');
    await request(app).post('/api/app/vid/view').set(headers).send({ vid: split.ids[d % 30] }).expect(200);
    await request(app).post('/api/app/recommend/vid/not-interested').set(headers).send({ vid: split.ids[d % 30] }).expect(200);
  }));
}

/**
 * `perArm` device ids in each arm, registered two hours before the ramp (trusted: seen before the
 * step), one address for all (within the new-device limit's default budget): the legacy ones each
 * a view and a "not interested", the ring ones a view. The arms' units stay balanced.
 */
async function trustedMask(api: Api, perArm: number): Promise<void> {
  const app = server;
  const chosen = { ring: [] as string[], legacy: [] as string[] };
  for (let i = 0; chosen.ring.length < perArm || chosen.legacy.length < perArm; i++) {
    const device = `mask-device-${i}`;
    const arm = chosen[(await api.readState.variantOf(guestIdentity(device), new Deadline(1000))).variant as 'ring' | 'legacy'];
    if (arm.length < perArm) arm.push(device);
  }
  const options = { ttlMs: s.config.viewHistoryTtlDays * 86_400_000, maxViews: s.config.viewHistorySize, hourlyCap: 1000 };
  for (const device of [...chosen.ring, ...chosen.legacy]) await registerGuest(s.redis, guestSlot(s.keys, s.config.guestBuckets, `g:${device}`), options, new Date(Date.now() - 7_200_000));
  await inParallel([...chosen.ring, ...chosen.legacy].map((device, d) => async () => {
    const headers = { 'X-Device-Id': device, 'X-Forwarded-For': '203.0.113.50' };
    await request(app).post('/api/app/vid/view').set(headers).send({ vid: split.ids[d % 30] }).expect(200);
    if (chosen.legacy.includes(device)) await request(app).post('/api/app/recommend/vid/not-interested').set(headers).send({ vid: split.ids[d % 30] }).expect(200);
  }));
}

/** The worker's check once the dwell is over: the step judged on what the API tallied. */
async function judge(api: Api): Promise<{ state: RampState; percent: number }> {
  await api.readout.flush();
  const state = await driveRamp({ store: new RolloutStore(s.redis, s.keys), logger: createLogger({ silent: true }), metrics: createWorkerMetrics(), environment: ENVIRONMENT, trail: auditTrail(s.mongo, s.prefix), now: () => new Date(Date.now() + 61_000) });
  return { state: state!, percent: (await observeRollout(s.redis, s.keys, ENVIRONMENT)).percent };
}

describe('a crowd of made-up devices against a ramp (R23, issue 52)', () => {
  let api: Api;
  beforeEach(async () => {
    await startRamp();
    api = testApi(s, { shortRecommendV2Percent: 30, trustProxy: 'loopback' });
    server = http.createServer(api.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    s.disposeAfter(() => new Promise((resolve) => server.close(resolve)));
  });

  it('when only the 150 users read and engage alike, then the step passes and the ramp is done', async () => {
    await genuineTraffic(api, 1);
    const { state, percent } = await judge(api);
    expect([state.status, percent, state.steps[0].verdict?.sampleRatio?.mismatch]).toEqual(['done', 100, false]);
  }, 120_000);

  it.each([400, 2000])('when %i fresh devices in the ring join them, then the ramp pauses at 50 % on the sample ratio, the crowd reported beside the verdict, never halted', async (fakes) => {
    await genuineTraffic(api, 1);
    await crowd(api, fakes);
    const { state, percent } = await judge(api);
    expect([state.status, state.pause?.cause, percent]).toEqual(['paused', 'sample-ratio', 50]);
    const verdict = state.steps[0].verdict!;
    expect(verdict.fresh?.ring).toEqual({ views: fakes, notInterested: fakes });
    expect(verdict.sampleRatio?.units.ring).toBeGreaterThan(fakes);
    // The verdict's counts are the users' alone: 5 views each.
    expect(verdict.guards.find((g) => g.guard === 'not-interested')?.ring?.trials).toBeLessThan(150 * VIEWS_EACH);
    expect(state.notices.map((n) => n.kind)).not.toContain('halted');
  }, 240_000);

  it('when the users\' "not interested" on the ring is three times legacy\'s, then the ramp halts back to 0 %', async () => {
    await genuineTraffic(api, 3);
    const { state, percent } = await judge(api);
    expect([state.status, percent]).toEqual(['halted', 0]);
    expect(state.haltReasons[0]).toMatch(/^not-interested: /);
  }, 120_000);

  it('when 50 devices registered before the ramp in each arm mark legacy\'s videos, then the users\' regression still halts the ramp', async () => {
    await genuineTraffic(api, 3);
    await trustedMask(api, 50);
    const { state, percent } = await judge(api);
    expect([state.status, percent]).toEqual(['halted', 0]);
    // Over the trusted units the mask holds (legacy's rate lifted); the users alone show the regression.
    expect(state.haltReasons).toEqual([expect.stringMatching(/^not-interested among signed-in users: /)]);
  }, 120_000);

  it('when the crowd of 400 comes with the users\' regression, then the ramp halts back to 0 %, mismatch or not', async () => {
    await genuineTraffic(api, 3);
    await crowd(api, 400);
    const { state, percent } = await judge(api);
    expect([state.status, percent]).toEqual(['halted', 0]);
    expect(state.haltReasons[0]).toMatch(/^not-interested: /);
  }, 240_000);
});
