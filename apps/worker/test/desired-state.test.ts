/**
 * R21: the controller's checks and repairs against a real Redis and real BullMQ queues (no
 * worker processes the jobs here: the test reads what the controller queued).
 */
import { Queue, Worker } from 'bullmq';
import { createLogger } from '@feed/logger';
import { BuildStore, videoModel } from '@feed/storage';
import { seedVideos } from '@feed/demo-data';
import type { BullConnections } from '../src/jobs/bull-connection';
import { SCHEDULER_ID, toBuildOptions, type BuildJobData } from '../src/jobs/build-queue';
import { runDailyBuild } from '../src/daily-build/daily-build';
import { COUNTER_REPAIR_SCHEDULER_ID } from '../src/jobs/counter-repair';
import { CHECK_DEADLINE_MS, checkDesiredState, dueVersion, LEASE_MS, MAX_REPAIR_ATTEMPTS, startController, type ControllerDeps } from '../src/controller/desired-state';
import { buildSchedule } from '../src/inspect/inspect-versions';
import { publishQueue } from '../../../test/support/feed-fixtures';
import { waitUntil } from '../../../tools/support/processes';
import { useTestServices } from '../../../test/support/services';
import { controllerUnderTest } from './support/controller-under-test';
import { testBuildDeps } from '../../../test/support/build-deps';

const CRON = '30 4 * * *';
const TZ = 'Asia/Shanghai';
const AFTER_CRON = new Date('2026-07-24T05:00:00+08:00');
const BEFORE_CRON = new Date('2026-07-24T03:00:00+08:00');
const IDS = Array.from({ length: 30 }, (_, i) => i.toString(16).padStart(24, '0'));

const s = useTestServices('controller');
let connections: BullConnections;
let buildQueue: Queue<BuildJobData>;
let counterQueue: Queue;
let now: Date;
let deps: ControllerDeps;

beforeEach(() => {
  now = AFTER_CRON;
  ({ deps, connections, buildQueue, counterQueue } = controllerUnderTest(s, { cron: CRON, timeZone: TZ, now: () => now }));
});

const reasons = async () => (await checkDesiredState(deps)).map((r) => r.reason).sort();
const repairJob = (version: string) => buildQueue.getJob(`repair-${version}`);

describe('the desired-state controller (R21)', () => {
  it('when Redis is empty, then it upserts both schedulers and queues one build of today; a second check queues nothing more', async () => {
    const lastRepair = async () => (await buildSchedule(buildQueue, new BuildStore(s.redis, s.keys), TZ)).lastRepair;
    expect(await lastRepair()).toBeNull();
    expect(await reasons()).toEqual(['counter-scheduler-missing', 'no-version', 'scheduler-missing']);
    expect(await buildQueue.getJobScheduler(SCHEDULER_ID)).toMatchObject({ pattern: CRON, tz: TZ });
    expect(await counterQueue.getJobScheduler(COUNTER_REPAIR_SCHEDULER_ID)).toBeTruthy();
    expect((await repairJob('20260724'))?.data).toEqual({});
    expect(await reasons()).toEqual([]);
    expect(await buildQueue.getJobCountByTypes('waiting')).toBe(1);
    expect(await s.redis.hGet(s.keys.lastRepair, 'reason')).toBe('no-version');
    // The inspector shows the controller's last repair (BuildStore.lastRepair).
    expect(await lastRepair()).toMatchObject({ reason: 'no-version' });
  });

  it('when the repair build failed for good (MongoDB was down), then the next check queues it again', async () => {
    await deps.ensureBuildScheduler();
    await deps.ensureCounterRepairScheduler();
    await buildQueue.add('repair-build', {}, { jobId: 'repair-20260724', attempts: 1 });
    // A worker whose every build fails, as with MongoDB down through all attempts.
    const worker = new Worker('short-recommend-build', () => Promise.reject(new Error('MongoDB down')), { connection: connections.next(), prefix: s.keys.bullPrefix });
    try {
      await waitUntil('the repair build to fail', async () => (await (await repairJob('20260724'))?.getState()) === 'failed', 10_000);
    } finally {
      await worker.close();
    }
    expect(await reasons()).toEqual(['no-version']);
    expect(await (await repairJob('20260724'))!.getState()).toBe('waiting');
  });

  it('when repair builds read the whole catalog and then fail every time (an empty eligible queue), then after the bounded attempts the controller stops queueing them', async () => {
    await deps.ensureBuildScheduler();
    await deps.ensureCounterRepairScheduler();
    // A worker whose builds get past the catalog read, then fail for good: a state no retry fixes.
    const worker = new Worker(
      'short-recommend-build',
      async (job) => {
        await job.updateProgress({ phase: 'verify', percent: 70 });
        throw new Error('no eligible videos: refusing to publish an empty queue');
      },
      // BullMQ's own retries of each job at once (the worker's backoff is not under test here).
      { connection: connections.next(), prefix: s.keys.bullPrefix, settings: { backoffStrategy: () => 0 } },
    );
    s.disposeAfter(() => worker.close());
    for (let attempt = 1; attempt <= MAX_REPAIR_ATTEMPTS; attempt++) {
      expect({ attempt, reasons: await reasons() }).toEqual({ attempt, reasons: ['no-version'] });
      await waitUntil(`repair build ${attempt} to fail`, async () => (await (await repairJob('20260724'))?.getState()) === 'failed', 20_000);
    }
    expect(await reasons()).toEqual([]);
    expect(await (await repairJob('20260724'))?.getState()).toBe('failed');
    expect(await s.redis.hGetAll(s.keys.repairStopped)).toMatchObject({ reason: 'no-version', version: '20260724' });
  });

  it('when the current version is complete, then nothing is repaired; when its queue vanishes, then a forced rebuild of it is queued', async () => {
    await deps.ensureBuildScheduler();
    await deps.ensureCounterRepairScheduler();
    await publishQueue(s.redis, s.keys, '20260724', IDS);
    await s.redis.sAdd(s.keys.legacyIds, IDS);
    expect(await reasons()).toEqual([]);
    await s.redis.del(s.keys.queue('20260724'));
    expect(await reasons()).toEqual(['queue-incomplete']);
    expect((await repairJob('20260724'))?.data).toEqual({ force: true });
  });

  it('when the legacy set is missing, then a forced rebuild of the current version refills it', async () => {
    await deps.ensureBuildScheduler();
    await deps.ensureCounterRepairScheduler();
    const videos = videoModel(s.mongo);
    await videos.deleteMany({});
    await seedVideos(videos, { videos: 40, fresh: 3, now, seed: 5 });
    const build = testBuildDeps(s, videos, { now: () => now });
    expect((await runDailyBuild(build)).version).toBe('20260724');
    const queue = await s.redis.lRange(s.keys.queue('20260724'), 0, -1);
    await s.redis.del(s.keys.legacyIds);
    expect(await reasons()).toEqual(['legacy-missing']);
    const job = await repairJob('20260724');
    expect(job?.data).toEqual({ force: true });
    // The job run as the worker runs it: forced, it rebuilds the current version in place and
    // refills the set (a plain build would complete as already current and refill nothing).
    expect((await runDailyBuild(build, toBuildOptions(job!.data, TZ))).status).toBe('built');
    expect(new Set(await s.redis.sMembers(s.keys.legacyIds))).toEqual(new Set(queue));
    expect(await reasons()).toEqual([]);
  });

  it("when yesterday's version is current, then before today's cron time nothing is due and after it today's build is queued", async () => {
    await deps.ensureBuildScheduler();
    await deps.ensureCounterRepairScheduler();
    await publishQueue(s.redis, s.keys, '20260723', IDS);
    await s.redis.sAdd(s.keys.legacyIds, IDS);
    now = BEFORE_CRON;
    expect(dueVersion(CRON, TZ, now)).toBe('20260723');
    expect(await reasons()).toEqual([]);
    now = AFTER_CRON;
    expect(await reasons()).toEqual(['version-behind']);
  });

  it('when a build of the due version holds its lock, then the controller lets it finish', async () => {
    await deps.ensureBuildScheduler();
    await deps.ensureCounterRepairScheduler();
    await s.redis.set(s.keys.buildLock('20260724'), 'scheduled-build', { PX: 60_000 });
    expect(await reasons()).toEqual([]);
    expect(await repairJob('20260724')).toBeUndefined();
  });

  it('when current is later than today (on-call switched ahead) and its queue vanishes, then the current version is repaired in place, not today\'s as a shadow', async () => {
    await deps.ensureBuildScheduler();
    await deps.ensureCounterRepairScheduler();
    await publishQueue(s.redis, s.keys, '20260725', IDS);
    await s.redis.sAdd(s.keys.legacyIds, IDS);
    expect(await reasons()).toEqual([]);
    await s.redis.del(s.keys.queue('20260725'));
    expect(await reasons()).toEqual(['queue-incomplete']);
    expect((await repairJob('20260725'))?.data).toEqual({ at: '2026-07-25', force: true, switch: true });
    expect(await repairJob('20260724')).toBeUndefined();
  });

  describe.each([
    ['no-version', async () => undefined, '20260724'],
    ['version-behind', async () => publishComplete('20260723'), '20260724'],
    ['queue-incomplete', async () => publishComplete('20260724').then(() => s.redis.del(s.keys.queue('20260724'))), '20260724'],
    ['legacy-missing', async () => publishQueue(s.redis, s.keys, '20260724', IDS), '20260724'],
    ['queue-incomplete', async () => publishComplete('20260725').then(() => s.redis.del(s.keys.queue('20260725'))), '20260725'],
  ])('a %s state that no repair fixes', (reason, breakState, target) => {
    it(`when ${MAX_REPAIR_ATTEMPTS} repair builds of ${target} completed and the state stays wrong, then the controller stops queueing, says why, and resumes when the state changes`, async () => {
      await deps.ensureBuildScheduler();
      await deps.ensureCounterRepairScheduler();
      await breakState();
      const errors: string[] = [];
      deps.logger = Object.assign(Object.create(createLogger({ silent: true })) as ControllerDeps['logger'], { error: (message: string) => void errors.push(message) });
      // A worker whose builds complete and fix nothing: a repair that cannot hold.
      const worker = new Worker('short-recommend-build', async () => ({ status: 'shadow' }), { connection: connections.next(), prefix: s.keys.bullPrefix });
      s.disposeAfter(() => worker.close());
      for (let attempt = 1; attempt <= MAX_REPAIR_ATTEMPTS; attempt++) {
        expect({ attempt, reasons: await reasons() }).toEqual({ attempt, reasons: [reason] });
        await waitUntil(`repair build ${attempt} to complete`, async () => (await (await repairJob(target))?.getState()) === 'completed', 10_000);
      }
      expect(await reasons()).toEqual([]);
      expect(await reasons()).toEqual([]);
      expect(await (await repairJob(target))?.getState()).toBe('completed');
      expect(await s.redis.hGetAll(s.keys.repairStopped)).toMatchObject({ reason, version: target, detail: expect.stringContaining('repairs stopped') });
      expect(await deps.metrics.registry.metrics()).toContain(`feed_repair_stopped{reason="${reason}"} 1`);
      expect(errors).toEqual(['desired state repair stopped']);
      expect((await buildSchedule(buildQueue, new BuildStore(s.redis, s.keys), TZ)).error).toMatch(new RegExp(`^repair stopped: .*${MAX_REPAIR_ATTEMPTS} repair builds of \\d+ completed today without fixing it`));
      // The state changes (on-call made another version current): the controller repairs again.
      await publishComplete('20260722');
      await s.redis.del(s.keys.legacyIds);
      expect(await reasons()).toEqual([expect.any(String)]);
      expect(await s.redis.exists(s.keys.repairStopped)).toBe(0);
      expect(await deps.metrics.registry.metrics()).toContain(`feed_repair_stopped{reason="${reason}"} 0`);
    });
  });

  it('when a check is abandoned at its deadline, which is shorter than the lease, then it acts no more, also after another replica took the lease', async () => {
    expect(CHECK_DEADLINE_MS).toBeLessThan(LEASE_MS);
    let resume!: () => void;
    let resumed = false;
    const gate = new Promise<void>((resolve) => (resume = resolve));
    let upserts = 0;
    const hanging: ControllerDeps = {
      ...deps,
      // The first Redis read of the check hangs (ioredis queueing while Redis is away), then answers "no scheduler".
      buildQueue: Object.assign(Object.create(buildQueue) as Queue<BuildJobData>, { getJobScheduler: async () => gate.then(() => ((resumed = true), undefined)) }),
      ensureBuildScheduler: async () => void upserts++,
    };
    const controller = startController(hanging, 3_600_000, { leaseMs: LEASE_MS, checkDeadlineMs: 200 });
    s.disposeAfter(() => controller.stop());
    await controller.tick();
    await waitUntil('the check to be abandoned', async () => /feed_controller_failures_total 1/.test(await deps.metrics.registry.metrics()), 5_000);
    await s.redis.set(s.keys.controllerLease, 'another-replica', { PX: LEASE_MS });
    resume();
    await waitUntil('the abandoned check to resume', async () => resumed, 5_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(upserts).toBe(0);
    expect(await repairJob('20260724')).toBeUndefined();
    expect(await s.redis.get(s.keys.controllerLease)).toBe('another-replica');
  });
});

async function publishComplete(version: string) {
  await publishQueue(s.redis, s.keys, version, IDS);
  await s.redis.sAdd(s.keys.legacyIds, IDS);
}
