/**
 * R23's gated daily switch, wired: a catalogue cut by 80 % between two days is held as a shadow
 * (current unchanged, `shadow` set, the held record, `feed_builds_total{result="held"}`, the
 * audit entry), the controller treats the held day as handled, and each of on-call's three
 * promote actions (the shared function, the worker's admin endpoint, the dashboard's job)
 * switches current to it. The CLI's `--promote` and `--skip-gate` are in tools/test/cli.test.ts.
 */
import fc from 'fast-check';
import { Queue, QueueEvents } from 'bullmq';
import request from '../../../test/support/contract';
import { auditTrail, BuildStore, makeCurrent, readHeldVersion, readMeta, videoModel, type AuditTrail, type VideoModel } from '@feed/storage';
import { seedVideos } from '@feed/demo-data';
import { runDailyBuild, type BuildDeps } from '../src/daily-build/daily-build';
import { promoteHeldVersion, PromoteRefusedError } from '../src/daily-build/promote-held';
import { createWorkerApp, INSPECTOR_PATH } from '../src/app';
import { workerStores } from './support/worker-app-under-test';
import { BUILD_QUEUE, PROMOTE_JOB, startBuildQueue, type BuildJobData } from '../src/jobs/build-queue';
import { bullConnectionFactory } from '../src/jobs/bull-connection';
import { checkDesiredState, MAX_REPAIR_ATTEMPTS, type ControllerDeps } from '../src/controller/desired-state';
import { createWorkerMetrics, type WorkerMetrics } from '../src/metrics';
import { useTestServices } from '../../../test/support/services';
import { testBuildDeps } from '../../../test/support/build-deps';
import { scheduledRedis } from '../../../test/support/scheduled-redis';
import { controllerUnderTest } from './support/controller-under-test';
import { browserIt, launchBrowser } from '../../../test/support/browser';

const TZ = 'Asia/Shanghai';
const DAY1 = new Date('2026-07-24T05:00:00+08:00');
const DAY2 = new Date('2026-07-25T05:00:00+08:00');
const V1 = '20260724';
const V2 = '20260725';

const s = useTestServices('gate');
let videos: VideoModel;
let trail: AuditTrail;
let deps: BuildDeps;
let now: Date;

beforeAll(async () => {
  videos = videoModel(s.mongo);
  await videos.init();
});

beforeEach(async () => {
  await videos.deleteMany({});
  now = DAY1;
  trail = auditTrail(s.mongo, s.prefix);
  deps = testBuildDeps(s, videos, { now: () => now, audit: trail });
});

const promoteDeps = () => ({ store: new BuildStore(s.redis, s.keys), logger: deps.logger, keyTtlHours: deps.keyTtlHours, lockTtlMs: deps.lockTtlMs, audit: trail });

/** Day one: 200 videos, built and current. Then 80 % of the catalogue goes (a bad migration) and the clock moves to day two. */
async function cutCatalogueAfterDayOne(): Promise<void> {
  const ids = await seedVideos(videos, { videos: 200, fresh: 0, now: new Date(DAY1.getTime() - 86_400_000), seed: 3 });
  expect((await runDailyBuild(deps, { at: DAY1 })).status).toBe('built');
  await videos.deleteMany({ _id: { $in: ids.slice(0, 160) } });
  now = DAY2;
}

/** Day two's build, held: what every promote test starts from. */
async function heldDayTwo(): Promise<void> {
  await cutCatalogueAfterDayOne();
  expect((await runDailyBuild(deps)).status).toBe('held');
}

describe('the gated daily switch (R23)', () => {
  it('when nothing is current, then the first version is never held, however small', async () => {
    await seedVideos(videos, { videos: 3, fresh: 0, now: DAY1, seed: 1 });
    const result = await runDailyBuild(deps, { at: DAY1 });
    expect({ status: result.status, outcome: result.verdict?.outcome }).toEqual({ status: 'built', outcome: 'first-version' });
    expect(await s.redis.get(s.keys.current)).toBe(V1);
    expect(await readHeldVersion(s.redis, s.keys)).toBeNull();
  });

  it('when the catalogue is cut by 80 % between two days, then the second build is held as a shadow: current unchanged, shadow set, reasons recorded and audited', async () => {
    await cutCatalogueAfterDayOne();
    const result = await runDailyBuild(deps);
    expect(result).toMatchObject({ version: V2, status: 'held' });
    expect(result.verdict?.reasons.map((r) => r.code)).toEqual(['length-drop', 'candidate-drop']);
    expect(await s.redis.get(s.keys.current)).toBe(V1);
    expect(await s.redis.get(s.keys.shadow)).toBe(V2);
    // Its own keys (R20): nothing a reader of V2 would use exists.
    expect(await s.redis.exists(s.keys.queue(V2))).toBe(0);
    expect(await s.redis.lLen(s.keys.shadowQueue(V2))).toBe(40);
    const held = await readHeldVersion(s.redis, s.keys);
    expect(held).toMatchObject({ version: V2, current: V1, buildId: (await readMeta(s.redis, s.keys, V2, 'shadow'))!.buildId });
    expect(held!.verdict.compared.find((f) => f.figure === 'length')).toMatchObject({ next: 40, current: 200, holds: true });
    const [entry] = await trail.read(1);
    expect(entry).toMatchObject({ action: 'build-held', via: 'worker', before: { current: V1 }, after: { held: V2 } });
  });

  it('when on-call skips the gate on a forced build, then the cut version switches and the verdict it would have had is returned', async () => {
    await cutCatalogueAfterDayOne();
    const result = await runDailyBuild(deps, { skipGate: { by: 'oncall@host' } });
    expect({ status: result.status, outcome: result.verdict?.outcome, by: result.verdict?.skippedBy }).toEqual({ status: 'built', outcome: 'skipped', by: 'oncall@host' });
    expect(result.verdict?.reasons.length).toBeGreaterThan(0);
    expect(await s.redis.get(s.keys.current)).toBe(V2);
  });

  it('when the held version is promoted, then current switches to its queue, the legacy set is refilled from it, the record is cleared and the promote audited', async () => {
    await heldDayTwo();
    const shadowQueue = await s.redis.lRange(s.keys.shadowQueue(V2), 0, -1);
    const result = await promoteHeldVersion(promoteDeps(), V2, { actor: 'oncall@host', via: 'cli' });
    expect(result).toMatchObject({ version: V2, status: 'promoted', replaced: V1 });
    expect(await s.redis.get(s.keys.current)).toBe(V2);
    expect(await s.redis.get(s.keys.previous)).toBe(V1);
    expect(await s.redis.lRange(s.keys.queue(V2), 0, -1)).toEqual(shadowQueue);
    expect(await readMeta(s.redis, s.keys, V2)).toMatchObject({ length: 40, shadow: false, completedAt: expect.any(String) });
    expect(new Set(await s.redis.sMembers(s.keys.legacyIds))).toEqual(new Set(shadowQueue));
    expect(await readHeldVersion(s.redis, s.keys)).toBeNull();
    const [entry] = await trail.read(1);
    expect(entry).toMatchObject({ action: 'build-promoted', actor: 'oncall@host', via: 'cli', before: { current: V1, held: V2 }, after: { current: V2 } });
    // Promoted once: a second promote is refused.
    await expect(promoteHeldVersion(promoteDeps(), V2, { actor: 'oncall@host', via: 'cli' })).rejects.toMatchObject({ status: 404 });
  });

  it('when the catalogue is restored and the next day builds, then that day switches and the stale held record is gone (nothing old to promote)', async () => {
    await heldDayTwo();
    await seedVideos(videos, { videos: 160, fresh: 0, now: DAY1, seed: 4 });
    now = new Date('2026-07-26T05:00:00+08:00');
    expect((await runDailyBuild(deps)).status).toBe('built');
    expect(await s.redis.get(s.keys.current)).toBe('20260726');
    expect(await readHeldVersion(s.redis, s.keys)).toBeNull();
    await expect(promoteHeldVersion(promoteDeps(), V2, { actor: 'oncall', via: 'cli' })).rejects.toMatchObject({ status: 404 });
  });

  it("when the held build's shadow queue was lost and its meta stayed, then a promote is refused 409 and nothing moves (the meta still says shadow)", async () => {
    await heldDayTwo();
    await s.redis.del(s.keys.shadowQueue(V2));
    await expect(promoteHeldVersion(promoteDeps(), V2, { actor: 'oncall', via: 'api' })).rejects.toMatchObject({ status: 409, message: expect.stringContaining('not whole') });
    expect(await s.redis.get(s.keys.current)).toBe(V1);
    expect(await s.redis.hGet(s.keys.shadowMeta(V2), 'shadow')).toBe('1');
    expect((await readHeldVersion(s.redis, s.keys))?.version).toBe(V2);
  });

  it("when another shadow build replaces the held build's keys between the promote's checks and its publish, then the publish script refuses it (409) and nothing moves", async () => {
    await heldDayTwo();
    // Just before the publish script runs, another build's meta lands on the shadow keys.
    const racing = new Proxy(s.redis, {
      get(target, name, receiver) {
        const value: unknown = Reflect.get(target, name, receiver);
        if (name !== 'evalSha' || typeof value !== 'function') return value;
        return async (sha: string, options: { keys: string[] }) => {
          if (options.keys.includes(s.keys.shadowMeta(V2))) await target.hSet(s.keys.shadowMeta(V2), 'buildId', 'another-build');
          return (value as (...a: unknown[]) => unknown).call(target, sha, options);
        };
      },
    });
    await expect(promoteHeldVersion({ ...promoteDeps(), store: new BuildStore(racing, s.keys) }, V2, { actor: 'oncall', via: 'api' })).rejects.toMatchObject({ status: 409, message: expect.stringContaining('BUILD_CHANGED') });
    expect({ current: await s.redis.get(s.keys.current), live: await s.redis.exists(s.keys.queue(V2)), held: (await readHeldVersion(s.redis, s.keys))?.version, shadow: await s.redis.get(s.keys.shadow) }).toEqual({ current: V1, live: 0, held: V2, shadow: V2 });
  });

  it('when a later shadow build replaced the held build\'s keys, then a promote is refused and current stays', async () => {
    await heldDayTwo();
    expect((await runDailyBuild(deps, { shadow: true })).status).toBe('shadow');
    const refused = await promoteHeldVersion(promoteDeps(), V2, { actor: 'oncall', via: 'api' }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(PromoteRefusedError);
    expect(refused).toMatchObject({ status: 409 });
    expect(await s.redis.get(s.keys.current)).toBe(V1);
  });
});

const DAY0 = new Date('2026-07-23T05:00:00+08:00');
const V0 = '20260723';
const heldGauge = async () => {
  const metrics = createWorkerMetrics({ heldVersion: async () => (await readHeldVersion(s.redis, s.keys))?.version ?? null });
  return (await metrics.registry.getSingleMetric('feed_version_held')!.get()).values[0]?.value;
};
/** Current V1; on-call's `--switch` replay of the day before, over the cut catalogue, is held: V0 is held and older than current. */
async function heldOlderDay(): Promise<{ liveBefore: string[] }> {
  await cutCatalogueAfterDayOne();
  now = DAY1;
  const liveBefore = await s.redis.lRange(s.keys.queue(V0), 0, -1);
  expect((await runDailyBuild(deps, { at: DAY0, switch: true })).status).toBe('held');
  expect({ held: (await readHeldVersion(s.redis, s.keys))?.version, current: await s.redis.get(s.keys.current), gauge: await heldGauge() }).toEqual({ held: V0, current: V1, gauge: 1 });
  return { liveBefore };
}

describe('a held day older than current (R23, D6)', () => {
  it('when it is promoted, then it is published (its live keys are the held build) and current stays, the hold and feed_version_held are cleared, and the promote is audited', async () => {
    await heldOlderDay();
    const shadowQueue = await s.redis.lRange(s.keys.shadowQueue(V0), 0, -1);
    const result = await promoteHeldVersion(promoteDeps(), V0, { actor: 'oncall@host', via: 'cli' });
    expect(result).toMatchObject({ version: V0, status: 'published', replaced: V1, current: V1 });
    expect(await s.redis.get(s.keys.current)).toBe(V1);
    expect(await s.redis.lRange(s.keys.queue(V0), 0, -1)).toEqual(shadowQueue);
    expect(await readMeta(s.redis, s.keys, V0)).toMatchObject({ length: shadowQueue.length, shadow: false });
    expect({ held: await readHeldVersion(s.redis, s.keys), shadow: await s.redis.get(s.keys.shadow), gauge: await heldGauge() }).toEqual({ held: null, shadow: null, gauge: 0 });
    expect((await trail.read(1))[0]).toMatchObject({ action: 'build-promoted', actor: 'oncall@host', before: { current: V1, held: V0 }, after: { current: V1, published: V0 } });
  });

  it('when it is dismissed, then nothing is published, the hold and feed_version_held are cleared, and the dismiss is audited; a dismiss of the due day is refused and changes nothing', async () => {
    const { liveBefore } = await heldOlderDay();
    const result = await promoteHeldVersion(promoteDeps(), V0, { actor: 'oncall@host', via: 'cli' }, 'dismiss');
    expect(result).toMatchObject({ version: V0, status: 'dismissed', current: V1 });
    expect(await s.redis.lRange(s.keys.queue(V0), 0, -1)).toEqual(liveBefore);
    expect({ held: await readHeldVersion(s.redis, s.keys), shadow: await s.redis.get(s.keys.shadow), gauge: await heldGauge() }).toEqual({ held: null, shadow: null, gauge: 0 });
    expect((await trail.read(1))[0]).toMatchObject({ action: 'build-dismissed', before: { current: V1, held: V0 }, after: { current: V1, dismissed: V0 } });

    now = DAY2;
    expect((await runDailyBuild(deps)).status).toBe('held');
    const entries = (await trail.read(10)).length;
    await expect(promoteHeldVersion(promoteDeps(), V2, { actor: 'oncall', via: 'api' }, 'dismiss')).rejects.toMatchObject({ status: 409, message: expect.stringContaining('not older than current') });
    expect({ held: (await readHeldVersion(s.redis, s.keys))?.version, shadow: await s.redis.get(s.keys.shadow), current: await s.redis.get(s.keys.current), entries: (await trail.read(10)).length }).toEqual({ held: V2, shadow: V2, current: V1, entries });
  });

});

describe('a promote racing a newer day (R23: decided before it acts)', () => {
  const seed = process.env.CI ? 43_23 : Date.now() % 2 ** 31;
  const V3 = '20260726';

  it('when a newer day switches at any point of a promote, then the promote is never refused after acting: promoted or published, the held build live, the hold cleared, the newer day current', async () => {
    console.log(`release-gate promote race fast-check seed ${seed}`);
    await heldDayTwo();
    const build = (await readHeldVersion(s.redis, s.keys))!.buildId;
    const [held, queue, meta, scores] = await Promise.all([s.redis.get(s.keys.held), s.redis.lRange(s.keys.shadowQueue(V2), 0, -1), s.redis.hGetAll(s.keys.shadowMeta(V2)), s.redis.lRange(s.keys.shadowScores(V2), 0, -1)]);
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), async (scheduler) => {
        // Back to V2 held and V1 current.
        await s.redis.del([s.keys.queue(V2), s.keys.meta(V2), s.keys.scores(V2), s.keys.shadowQueue(V2), s.keys.shadowMeta(V2), s.keys.shadowScores(V2)]);
        await s.redis.set(s.keys.current, V1);
        await s.redis.set(s.keys.held, held!);
        await s.redis.set(s.keys.shadow, V2);
        await s.redis.rPush(s.keys.shadowQueue(V2), queue);
        await s.redis.rPush(s.keys.shadowScores(V2), scores);
        await s.redis.hSet(s.keys.shadowMeta(V2), meta);

        const promoting = promoteHeldVersion({ ...promoteDeps(), store: new BuildStore(scheduledRedis(s.redis, scheduler, 'promote'), s.keys) }, V2, { actor: 'oncall', via: 'api' });
        const newer = makeCurrent(scheduledRedis(s.redis, scheduler, 'newer day'), s.keys, V3);
        const [result] = await scheduler.waitFor(Promise.all([promoting, newer]));

        expect(['promoted', 'published']).toContain(result.status);
        expect({ current: await s.redis.get(s.keys.current), held: await readHeldVersion(s.redis, s.keys), build: await s.redis.hGet(s.keys.meta(V2), 'buildId'), live: await s.redis.hGet(s.keys.meta(V2), 'shadow') }).toEqual({ current: V3, held: null, build, live: '0' });
      }),
      { seed, numRuns: 25 },
    );
  });
});

describe('the controller over a held day (R23, R21)', () => {
  let buildQueue: Queue<BuildJobData>;
  let controller: ControllerDeps;

  beforeEach(() => {
    ({ deps: controller, buildQueue } = controllerUnderTest(s, { cron: '30 4 * * *', timeZone: TZ, now: () => now }));
  });

  it('when the due day is held, then several checks queue no build of it and report no repair of the version', async () => {
    await heldDayTwo();
    const versionRepairs = [];
    for (let check = 0; check < 3; check++) versionRepairs.push(...(await checkDesiredState(controller)).filter((r) => r.version !== undefined));
    expect(versionRepairs).toEqual([]);
    expect(await buildQueue.getJob(`repair-${V2}`)).toBeUndefined();
    // Only the scheduler's next daily run waits (the upsert adds it); no repair build.
    expect((await buildQueue.getJobs(['waiting', 'delayed', 'active'])).map((job) => job.name)).toEqual(['daily-build']);
    // Once promoted, the state is the desired one: still nothing to repair.
    await promoteHeldVersion(promoteDeps(), V2, { actor: 'oncall', via: 'api' });
    expect((await checkDesiredState(controller)).filter((r) => r.version !== undefined)).toEqual([]);
  });

  it('when the due day is held and the version users still read loses its queue, then that version is repaired as itself, not the held day', async () => {
    await heldDayTwo();
    await s.redis.del(s.keys.queue(V1));
    const repairs = (await checkDesiredState(controller)).filter((r) => r.version !== undefined);
    expect(repairs.map((r) => ({ reason: r.reason, version: r.version }))).toEqual([{ reason: 'queue-incomplete', version: V1 }]);
    expect((await buildQueue.getJob(`repair-${V1}`))?.data).toEqual({ at: '2026-07-24', force: true });
    expect(await buildQueue.getJob(`repair-${V2}`)).toBeUndefined();
  });

  it('when each repair of that version runs and is held over the cut catalogue too, then the due day stays the held one (and the shadow), no build of it is queued, and the repairs stop after their attempts', async () => {
    await heldDayTwo();
    await s.redis.del(s.keys.queue(V1));
    const repaired: string[] = [];
    for (let check = 0; check <= MAX_REPAIR_ATTEMPTS; check++) {
      const [repair] = (await checkDesiredState(controller)).filter((r) => r.version !== undefined);
      if (!repair) break;
      repaired.push(repair.version!);
      const job = (await buildQueue.getJob(`repair-${repair.version}`))!;
      const { at, force } = job.data;
      expect(await runDailyBuild(deps, { at: new Date(`${at}T12:00:00+08:00`), force })).toMatchObject({ version: V1, status: 'held' });
      await job.remove(); // as the worker's run would leave it: no longer waiting
      expect((await readHeldVersion(s.redis, s.keys))?.version).toBe(V2);
      expect(await s.redis.get(s.keys.shadow)).toBe(V2);
    }
    expect(repaired).toEqual(Array<string>(MAX_REPAIR_ATTEMPTS).fill(V1));
    expect(await s.redis.hGetAll(s.keys.repairStopped)).toMatchObject({ reason: 'queue-incomplete', version: V1 });
    expect(await buildQueue.getJob(`repair-${V2}`)).toBeUndefined();
  });
});

describe("on-call's promote through the worker (R23, D6)", () => {
  let jobs: Awaited<ReturnType<typeof startBuildQueue>>;
  let events: QueueEvents;
  let metrics: WorkerMetrics;

  beforeEach(async () => {
    metrics = createWorkerMetrics();
    jobs = await startBuildQueue({ connection: bullConnectionFactory(s.config), prefix: s.keys.bullPrefix, cron: '30 4 * * *', timeZone: TZ, retryDelayMs: 30_000, logger: deps.logger, metrics, deps });
    const eventsConnection = bullConnectionFactory(s.config)();
    events = new QueueEvents(BUILD_QUEUE, { connection: eventsConnection, prefix: s.keys.bullPrefix });
    s.disposeAfter(async () => {
      await events.close();
      await eventsConnection.quit();
      await jobs.close();
    });
    await events.waitUntilReady();
  });

  const heldCount = async () => (await metrics.builds.get()).values.find((v) => v.labels.result === 'held')?.value;

  it('when the build job is held, then feed_builds_total{result="held"} counts it; the dashboard\'s promote job then switches current', async () => {
    await cutCatalogueAfterDayOne();
    expect(await heldCount()).toBe(0);
    const build = await jobs.queue.add('manual-build', {});
    expect(await build.waitUntilFinished(events, 30_000)).toMatchObject({ version: V2, status: 'held' });
    expect(await heldCount()).toBe(1);
    expect(await s.redis.get(s.keys.current)).toBe(V1);

    const promote = await jobs.queue.add(PROMOTE_JOB, { promote: V2 });
    expect(await promote.waitUntilFinished(events, 30_000)).toMatchObject({ version: V2, status: 'promoted' });
    expect(await s.redis.get(s.keys.current)).toBe(V2);
    expect((await trail.read(1))[0]).toMatchObject({ action: 'build-promoted', via: 'dashboard', actor: `dashboard job ${promote.id}` });
  });

  it('when a job asks to skip the gate, then the cut version switches; a promote job with a bad version or extra fields fails once, unretried, and moves nothing', async () => {
    await cutCatalogueAfterDayOne();
    for (const data of [{ promote: '2026-07-25' }, { promote: V2, force: true }]) {
      const bad = await jobs.queue.add(PROMOTE_JOB, data as BuildJobData);
      await expect(bad.waitUntilFinished(events, 30_000)).rejects.toThrow(/promote/);
      expect((await jobs.queue.getJob(bad.id!))?.attemptsMade).toBe(1);
    }
    expect(await s.redis.get(s.keys.current)).toBe(V1);
    const skipped = await jobs.queue.add('manual-build', { skipGate: true });
    expect(await skipped.waitUntilFinished(events, 30_000)).toMatchObject({ version: V2, status: 'built', verdict: { outcome: 'skipped', skippedBy: `build job ${skipped.id} (manual-build)` } });
    expect(await s.redis.get(s.keys.current)).toBe(V2);
  });

  browserIt('when the inspector page is opened with a held version, then it shows each compared figure beside current and the promote command', async () => {
    await heldDayTwo();
    const app = createWorkerApp({ config: { ...s.config, adminUser: 'oncall', adminPassword: 'gate-pass' }, queue: jobs.queue, metrics, ...workerStores(s.redis, s.keys, s.mongo), videos });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const browser = await launchBrowser();
    try {
      const context = await browser.newContext({ httpCredentials: { username: 'oncall', password: 'gate-pass' } });
      const page = await context.newPage();
      await page.goto(`http://127.0.0.1:${(server.address() as { port: number }).port}${INSPECTOR_PATH}/`);
      await page.waitForSelector('body[data-ready="true"]', { timeout: 15_000 });
      const rows = await page.locator('#held-figures tr').allTextContents();
      expect(rows[0]).toBe(`figureheld ${V2}current ${V1}change`);
      expect(rows[1]).toBe('length40200-80.0%holds');
      expect(rows[2]).toBe('candidateCount40200-80.0%holds');
      expect(await page.textContent('#held')).toContain(`pnpm cli build --promote ${V2}`);
    } finally {
      await browser.close();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 60_000);

  it('when on-call promotes on the admin endpoint, then the inspector showed the held version beside current, and current switches; an unknown or malformed version is a clear 4xx', async () => {
    await heldDayTwo();
    const app = createWorkerApp({ config: { ...s.config, adminUser: 'oncall', adminPassword: 'gate-pass' }, queue: jobs.queue, metrics, ...workerStores(s.redis, s.keys, s.mongo), videos });
    const summary = await request(app).get(`${INSPECTOR_PATH}/api/summary`).auth('oncall', 'gate-pass').expect(200);
    expect(summary.body.pointers.current).toBe(V1);
    expect(summary.body.held).toMatchObject({ version: V2, current: V1, promote: { command: `pnpm cli build --promote ${V2}` } });
    expect(summary.body.held.verdict.compared.map((f: { figure: string }) => f.figure)).toEqual(['length', 'candidateCount', 'fullBlockRatio', 'duplicateRate', 'freshCount']);

    await request(app).post(`${INSPECTOR_PATH}/api/held/${V2}/promote`).expect(401);
    const unknown = await request(app).post(`${INSPECTOR_PATH}/api/held/20260726/promote`).auth('oncall', 'gate-pass').expect(404);
    expect(unknown.body.error).toMatchObject({ code: 'not_held', message: expect.stringContaining(`the held version is ${V2}`) });
    await request(app).post(`${INSPECTOR_PATH}/api/held/2026-07/promote`).auth('oncall', 'gate-pass').expect(400);
    expect(await s.redis.get(s.keys.current)).toBe(V1);

    const promoted = await request(app).post(`${INSPECTOR_PATH}/api/held/${V2}/promote`).auth('oncall', 'gate-pass').expect(200);
    expect(promoted.body).toMatchObject({ version: V2, status: 'promoted', replaced: V1 });
    expect(await s.redis.get(s.keys.current)).toBe(V2);
    expect((await trail.read(1))[0]).toMatchObject({ action: 'build-promoted', actor: 'oncall', via: 'api' });
    await request(app).post(`${INSPECTOR_PATH}/api/held/${V2}/promote`).auth('oncall', 'gate-pass').expect(404);
  });

  it('when on-call dismisses a held day older than current on the admin endpoint, then the hold is gone and a second dismiss is 404; a dismiss of the due day is 409', async () => {
    await heldOlderDay();
    const app = createWorkerApp({ config: { ...s.config, adminUser: 'oncall', adminPassword: 'gate-pass' }, queue: jobs.queue, metrics, ...workerStores(s.redis, s.keys, s.mongo), videos });
    const dismissed = await request(app).post(`${INSPECTOR_PATH}/api/held/${V0}/dismiss`).auth('oncall', 'gate-pass').expect(200);
    expect(dismissed.body).toMatchObject({ version: V0, status: 'dismissed', current: V1 });
    expect(await readHeldVersion(s.redis, s.keys)).toBeNull();
    expect((await trail.read(1))[0]).toMatchObject({ action: 'build-dismissed', actor: 'oncall', via: 'api' });
    await request(app).post(`${INSPECTOR_PATH}/api/held/${V0}/dismiss`).auth('oncall', 'gate-pass').expect(404);
    now = DAY2;
    expect((await runDailyBuild(deps)).status).toBe('held');
    const refused = await request(app).post(`${INSPECTOR_PATH}/api/held/${V2}/dismiss`).auth('oncall', 'gate-pass').expect(409);
    expect(refused.body.error).toMatchObject({ code: 'conflict' });
    expect((await readHeldVersion(s.redis, s.keys))?.version).toBe(V2);
  });
});
