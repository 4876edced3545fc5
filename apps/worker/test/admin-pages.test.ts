/**
 * The worker's admin pages in a real headless Chromium (Debian's, driven by playwright-core):
 * the queue inspector renders versions, the block chart, the score chart, the shadow diff, the
 * V2 vs legacy readout and the audit trail; the runbook's clicks (docs/operations.md) in the job dashboard add a
 * rebuild job, recorded in the audit trail. Both behind credentials.
 */
import type { Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { Types } from 'mongoose';
import { PNG } from 'pngjs';
import request from '../../../test/support/contract';
import { createLogger } from '@feed/logger';
import { addVariantStats, auditTrail, changeRolloutOverRamp, commit, variantField, VersionStore, videoModel, type VideoModel } from '@feed/storage';
import { advanceRamp, emptyReadout, startRamp, type RampState } from '@feed/domain';
import { demoVideo, seedVideos } from '@feed/demo-data';
import { createWorkerApp, DASHBOARD_PATH, INSPECTOR_PATH } from '../src/app';
import { workerStores } from './support/worker-app-under-test';
import { runDailyBuild } from '../src/daily-build/daily-build';
import { SCHEDULER_ID, startBuildQueue } from '../src/jobs/build-queue';
import { bullConnectionFactory } from '../src/jobs/bull-connection';
import { createWorkerMetrics } from '../src/metrics';
import { browserIt, hasBrowser, launchBrowser } from '../../../test/support/browser';
import { waitUntil } from '../../../tools/support/processes';
import { useTestServices } from '../../../test/support/services';
import { testBuildDeps } from '../../../test/support/build-deps';


const s = useTestServices('inspector');
const logger = createLogger({ silent: true });
const DAY_1 = new Date('2026-07-24T01:00:00+08:00');
let videos: VideoModel;
/** Ten videos reviewed after day 1's build: offline for it, approved for day 2's shadow. */
let later: string[];
let server: Server;
let base: string;
let browser: Browser | undefined;
let jobs: Awaited<ReturnType<typeof startBuildQueue>>;

const buildDeps = () => testBuildDeps(s, videos);

beforeAll(async () => {
  videos = videoModel(s.mongo);
  await seedVideos(videos, { videos: 340, fresh: 60, now: DAY_1 });
  const reviewed = new Date(DAY_1.getTime() + 3600_000);
  later = (await videos.insertMany(Array.from({ length: 10 }, () => demoVideo({ reviewAt: reviewed })))).map((d) => d._id.toHexString());
  if (hasBrowser) browser = await launchBrowser();
}, 60_000);

/** Day 1 built and current (400 videos), day 2 built as a shadow with the 10 later videos (410). */
async function buildCurrentAndShadow() {
  await videos.updateMany({ _id: { $in: later } }, { $set: { status: 'offline' } });
  await runDailyBuild(buildDeps(), { at: DAY_1 });
  await videos.updateMany({ _id: { $in: later } }, { $set: { status: 'approved' } });
  await runDailyBuild(buildDeps(), { at: new Date('2026-07-25T01:00:00+08:00'), shadow: true });
}

/** The worker's queue (not processing) and its admin app on the test's prefix. */
beforeEach(async () => {
  jobs = await startBuildQueue({ connection: bullConnectionFactory(s.config), prefix: s.keys.bullPrefix, cron: '30 4 * * *', timeZone: 'Asia/Shanghai', retryDelayMs: s.config.buildRetryDelayMs, logger, metrics: createWorkerMetrics(), deps: buildDeps(), process: false });
  const app = createWorkerApp({ config: { ...s.config, adminUser: 'oncall', adminPassword: 'inspect-pass' }, queue: jobs.queue, metrics: createWorkerMetrics(), ...workerStores(s.redis, s.keys, s.mongo), videos });
  server = app.listen(0, '127.0.0.1');
  s.disposeAfter(async () => {
    await new Promise((resolve) => server.close(resolve));
    await jobs.close();
  });
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(() => browser?.close());

describe('queue inspector', () => {
  it('when opened without credentials, then 401 (page and its API)', async () => {
    await request(base).get(`${INSPECTOR_PATH}/`).expect(401);
    await request(base).get(`${INSPECTOR_PATH}/api/summary`).expect(401);
  });

  it('when the runbook URL without a trailing slash is opened, then it redirects to the page', async () => {
    const res = await request(base).get(INSPECTOR_PATH).auth('oncall', 'inspect-pass').expect(301);
    expect(res.headers.location).toBe(`${INSPECTOR_PATH}/`);
  });

  it('when the summary is read, then it has the versions, blocks, scores and the shadow diff', async () => {
    await buildCurrentAndShadow();
    const res = await request(base).get(`${INSPECTOR_PATH}/api/summary`).auth('oncall', 'inspect-pass').expect(200);
    expect(res.body.pointers).toMatchObject({ current: '20260724', shadow: '20260725' });
    expect(res.body.versions.map((v: { version: string }) => v.version)).toEqual(['20260724']);
    expect(res.body.shadow).toMatchObject({ version: '20260725', role: ['shadow'], queueLength: 410 });
    expect(res.body.scores.sampled).toBe(400);
    expect(res.body.shadowDiff).toMatchObject({ base: '20260724', other: '20260725', baseLength: 400, otherLength: 410, onlyInOther: 10, duplicatesInOther: 0 });
    expect(res.body.rollout).toEqual({ enabled: true, percent: 100, source: { enabled: 'environment', percent: 'environment' } });
    // BullMQ's scheduler '30 4 * * *' in Asia/Shanghai: 04:30 there, 20:30 UTC.
    expect(res.body.schedule.nextBuildAt).toMatch(/T20:30:00\.000Z$/);
    expect(res.body.schedule.nextBuildAtLocal).toMatch(/ 04:30:00 Asia\/Shanghai$/);
    expect(res.body.schedule.error).toBeUndefined();
  });

  it('when queued videos hold a string, Infinity or NaN recommendScore, then the summary answers 200 and shows them as odd (R1a, R23)', async () => {
    await buildCurrentAndShadow();
    const queued = (await new VersionStore(s.redis, s.keys).readQueue('20260724', 'live', 0, 2)).map((id) => new Types.ObjectId(id));
    const odd: unknown[] = ['high', Infinity, NaN];
    await Promise.all(queued.map((_id, i) => videos.collection.updateOne({ _id }, { $set: { recommendScore: odd[i] } })));
    const res = await request(base).get(`${INSPECTOR_PATH}/api/summary`).auth('oncall', 'inspect-pass').expect(200);
    expect(res.body.scores.odd).toEqual({ count: 3, ids: expect.arrayContaining(queued.map(String)) });
    expect(res.body.scores.buckets.reduce((n: number, b: { count: number }) => n + b.count, 0)).toBe(397);
  });

  it('when the daily job scheduler is missing, then the summary says so as an error instead of a next run', async () => {
    await jobs.queue.removeJobScheduler(SCHEDULER_ID);
    const res = await request(base).get(`${INSPECTOR_PATH}/api/summary`).auth('oncall', 'inspect-pass').expect(200);
    expect(res.body.schedule).toMatchObject({ nextBuildAt: null, error: expect.stringContaining('is missing') });
  });

  /** A ramp stored after its first step (1 %) was judged and failed on likes: halted back to 0 %. */
  async function storeHaltedRamp(): Promise<RampState> {
    const t0 = Date.parse('2026-07-24T00:00:00Z');
    const started = startRamp({ id: 'ramp-x', steps: [1, 5, 100], dwellMs: 3600_000, guards: { minViews: 1000, minRequests: 100 }, by: 'oncall', now: new Date(t0) });
    const inForce = { enabled: true, percent: 1, source: { enabled: 'override', percent: 'override' } } as const;
    const readout = emptyReadout();
    Object.assign(readout.ring, { requests: 1000, views: 5000, likes: 100, collects: 100, shares: 50, notInterested: 150 });
    Object.assign(readout.legacy, { requests: 1000, views: 5000, likes: 250, collects: 100, shares: 50, notInterested: 150 });
    const { state } = advanceRamp(started.state, { now: new Date(t0 + 2 * 3600_000), rollout: inForce, readout });
    expect(state.status).toBe('halted');
    expect(await commit(s.redis, s.keys, { rampRevision: '0', state })).toBe(true);
    return state;
  }

  it('when a ramp is stored, then the summary has its steps, the current one and per guard the samples, rates and intervals', async () => {
    const res0 = await request(base).get(`${INSPECTOR_PATH}/api/summary`).auth('oncall', 'inspect-pass').expect(200);
    expect(res0.body.ramp).toBeNull();
    await storeHaltedRamp();
    const res = await request(base).get(`${INSPECTOR_PATH}/api/summary`).auth('oncall', 'inspect-pass').expect(200);
    expect(res.body.ramp).toMatchObject({ id: 'ramp-x', status: 'halted', current: 0, lastGoodPercent: 0, haltReasons: [expect.stringMatching(/^likes: /)] });
    expect(res.body.ramp.steps.map((st: { percent: number; outcome: string }) => `${st.percent} ${st.outcome}`)).toEqual(['1 failed', '5 pending', '100 pending']);
    const likes = res.body.ramp.steps[0].verdict.guards.find((g: { guard: string }) => g.guard === 'likes');
    expect(likes).toMatchObject({ outcome: 'fail', ring: { successes: 100, trials: 5000, rate: 0.02 }, legacy: { successes: 250, trials: 5000, rate: 0.05 }, difference: expect.closeTo(-0.03, 6) });
    expect(likes.ring.interval[0]).toBeLessThan(0.02);
    expect(likes.differenceInterval[1]).toBeLessThan(0);
  });

  /** A ramp whose 50 % step met 400 new ring devices beside 150 users: paused on the sample ratio (issue 52). */
  async function storeMismatchedRamp(): Promise<void> {
    const t0 = Date.parse('2026-07-24T00:00:00Z');
    const started = startRamp({ id: 'ramp-srm', steps: [50, 100], dwellMs: 60_000, guards: { minViews: 300, minRequests: 200 }, by: 'oncall', now: new Date(t0) });
    const readout = emptyReadout();
    for (const arm of [readout.ring, readout.legacy]) Object.assign(arm, { requests: 225, views: 375, notInterested: 11 });
    const crowd = { ...readout, units: { ring: 475, legacy: 75 }, fresh: { ring: { views: 400, notInterested: 400 }, legacy: { views: 0, notInterested: 0 } } };
    const { state } = advanceRamp(started.state, { now: new Date(t0 + 61_000), rollout: { enabled: true, percent: 50, source: { enabled: 'override', percent: 'override' } }, readout: crowd });
    expect(await commit(s.redis, s.keys, { rampRevision: '0', state })).toBe(true);
  }

  it('when a ramp paused on a sample-ratio mismatch is stored, then the summary has the units per arm and the new devices beside the verdict', async () => {
    await storeMismatchedRamp();
    const res = await request(base).get(`${INSPECTOR_PATH}/api/summary`).auth('oncall', 'inspect-pass').expect(200);
    expect(res.body.ramp).toMatchObject({ status: 'paused', pause: { cause: 'sample-ratio' } });
    expect(res.body.ramp.steps[0].verdict).toMatchObject({ outcome: 'mismatch', sampleRatio: { ringShare: 0.5, units: { ring: 475, legacy: 75 }, mismatch: true }, fresh: { ring: { views: 400, notInterested: 400 } } });
  });

  browserIt('when a ramp paused on a sample-ratio mismatch is stored, then the page shows the units, the mismatch and the new devices', async () => {
    await storeMismatchedRamp();
    const context = await browser!.newContext({ httpCredentials: { username: 'oncall', password: 'inspect-pass' } });
    const page = await context.newPage();
    try {
      await page.goto(`${base}${INSPECTOR_PATH}/`);
      await page.waitForSelector('body[data-ready="true"]', { timeout: 15_000 });
      expect(await page.textContent('#ramp-status')).toMatch(/paused: sample-ratio: 475 ring and 75 legacy/);
      expect(await page.textContent('.ramp-units')).toMatch(/^50%: units ring 475, legacy 75 where 50% ring was asked: p .* mismatch .* new devices, not judged: ring 400 views, 400 not interested/);
    } finally {
      await context.close();
    }
  });

  it('when the stored ramp is a record this version cannot read (a dwell of 100000000d), then the summary shows why instead of failing', async () => {
    const state = await storeHaltedRamp();
    await s.redis.hSet(s.keys.ramp, { state: JSON.stringify({ ...state, dwellMs: 100_000_000 * 86_400_000 }) });
    const res = await request(base).get(`${INSPECTOR_PATH}/api/summary`).auth('oncall', 'inspect-pass').expect(200);
    expect(res.body.ramp).toEqual({ error: expect.stringMatching(/"dwellMs" must be less than or equal to/) });
  });

  browserIt('when a halted ramp is stored, then the page shows its steps, the failed one and each guard with samples, rates and intervals', async () => {
    await storeHaltedRamp();
    const context = await browser!.newContext({ httpCredentials: { username: 'oncall', password: 'inspect-pass' } });
    const page = await context.newPage();
    try {
      await page.goto(`${base}${INSPECTOR_PATH}/`);
      await page.waitForSelector('body[data-ready="true"]', { timeout: 15_000 });
      expect(await page.textContent('#ramp-status')).toMatch(/ramp ramp-x by oncall · halted .*halted: likes: /);
      expect(await page.locator('#ramp-steps tbody tr').count()).toBe(3);
      expect(await page.textContent('#ramp-steps tbody tr.current-step')).toMatch(/^1 \(current\)1%failed/);
      const likes = page.locator('#ramp-guards tbody tr', { hasText: 'likes' });
      expect((await likes.locator('td').allTextContents()).slice(0, 5)).toEqual(['1%', 'likes', 'fail', '5000', expect.stringMatching(/^2\.000% \[1\.\d+%, 2\.\d+%\]$/)]);
      expect(await page.locator('#ramp-guards tbody tr').count()).toBe(7);
    } finally {
      await context.close();
    }
  });

  browserIt('when opened in Chromium with credentials, then the tables and both charts render', async () => {
    await buildCurrentAndShadow();
    // A rollout change on record (D6), and a day's tally of both variants (D7): ring 40 pages,
    // 200 views, 10 likes, 4 not interested; legacy 50 pages, 100 views, 2 likes, 8 not interested.
    await changeRolloutOverRamp({ redis: s.redis, keys: s.keys, environment: { enabled: true, percent: 100 }, trail: auditTrail(s.mongo, s.config.redisKeyPrefix), who: { actor: 'oncall', via: 'api' } }, { percent: 40 });
    const tally: Array<[Parameters<typeof variantField>, number]> = [
      [['ring', 'page'], 40], [['ring', 'view'], 200], [['ring', 'like'], 10], [['ring', 'not-interested'], 4],
      [['legacy', 'page'], 50], [['legacy', 'view'], 100], [['legacy', 'like'], 2], [['legacy', 'not-interested'], 8],
    ];
    await addVariantStats(s.redis, s.keys, new Date(Date.now() - 3 * 3600_000), new Map(tally.map(([[v, e], n]) => [variantField(v, e), n])));
    const context = await browser!.newContext({ httpCredentials: { username: 'oncall', password: 'inspect-pass' } });
    const page = await context.newPage();
    try {
      // The runbook's URL (docs/operations.md), without the trailing slash.
      await page.goto(`${base}${INSPECTOR_PATH}`);
      await page.waitForSelector('body[data-ready="true"]', { timeout: 15_000 });
      expect(await page.textContent('#pointers')).toContain('current 20260724');
      expect(await page.textContent('#settings')).toContain('rollout: enabled (environment) · 40% of users (override)');
      expect(await page.locator('#versions tbody tr').count()).toBe(1);
      // R22: the version's offset buckets (a first day: the minimum, 256).
      expect((await page.locator('#versions tbody tr td').allTextContents())[8]).toBe('256');
      // 400 videos = 20 blocks, each a high bar and a new bar.
      expect(await page.locator('#blocks rect.high').count()).toBe(20);
      expect(await page.locator('#scores rect.bucket').count()).toBe(12);
      // The shadow row: its version, its own queue length (410) and the diff against current.
      expect(await page.textContent('#shadow-diff')).toMatch(/20260725\s*410/);
      // V2 vs legacy side by side: views per page, likes and "not interested" per 100 views.
      const cells = (row: number) => page.locator(`#readout tbody tr:nth-child(${row}) td`).allTextContents();
      expect(await page.locator('#readout tbody tr').count()).toBe(2);
      expect((await cells(1)).slice(0, 6)).toEqual(['ring', '40', '200', '5', '5', '2']);
      expect((await cells(2)).slice(0, 6)).toEqual(['legacy', '50', '100', '2', '2', '8']);
      // The audit trail: who changed the rollout, from what to what.
      const audit = await page.locator('#audit tbody tr').first().textContent();
      expect(audit).toMatch(/oncall\s*api\s*rollout-set/);
      expect(audit).toContain('"percent":100');
      expect(audit).toContain('"percent":40');

      // The chart really painted: its screenshot holds many non-white (bar-coloured) pixels.
      const png = PNG.sync.read(await page.locator('#blocks svg').screenshot());
      let coloured = 0;
      for (let i = 0; i < png.data.length; i += 4) if (png.data[i] < 200 || png.data[i + 1] < 200 || png.data[i + 2] < 200) coloured++;
      expect(coloured / (png.width * png.height)).toBeGreaterThan(0.2);
      await page.screenshot({ path: `${require('node:os').tmpdir()}/feed-inspector.png`, fullPage: true });
    } finally {
      await context.close();
    }
  });

  browserIt('when on-call follows the runbook (docs/operations.md) in the dashboard, then "Add job" queues a forced rebuild with retries', async () => {
    const context = await browser!.newContext({ httpCredentials: { username: 'oncall', password: 'inspect-pass' } });
    const page = await context.newPage();
    try {
      await page.goto(`${base}${DASHBOARD_PATH}/`);
      await page.getByText('short-recommend-build').first().click();
      // The queue's actions menu: the ⋮ at the right end of the status tabs.
      await page.locator('button[aria-haspopup="menu"][class*="trigger"]').click();
      await page.getByRole('menuitem', { name: 'Add job' }).click();
      await page.fill('#job-name', 'manual-rebuild');
      const editors = page.locator('.cm-content');
      await editors.nth(0).click();
      await page.keyboard.press('Control+A');
      await page.keyboard.insertText('{"force": true}');
      await editors.nth(1).click();
      await page.keyboard.press('Control+A');
      await page.keyboard.insertText('{"jobId": "manual-20260724"}');
      await page.getByRole('button', { name: 'Add', exact: true }).click();
      await waitUntil('the added job in the queue', async () => (await jobs.queue.getJob('manual-20260724')) !== undefined, 10_000);
      const job = await jobs.queue.getJob('manual-20260724');
      expect(job!.name).toBe('manual-rebuild');
      expect(job!.data).toEqual({ force: true });
      expect(job!.opts.attempts).toBe(3);
      // The build asked by hand is on record (D6) with who asked it.
      const trail = auditTrail(s.mongo, s.config.redisKeyPrefix);
      await waitUntil('the dashboard build in the audit trail', async () => (await trail.read(1))[0]?.via === 'dashboard', 10_000);
      expect((await trail.read(1))[0]).toMatchObject({ action: 'build-requested', actor: 'oncall', via: 'dashboard', after: { name: 'manual-rebuild', data: { force: true } } });
    } finally {
      await context.close();
    }
  });
});
