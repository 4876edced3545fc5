/**
 * R21: the controller's checks and repairs against a real Redis and real BullMQ queues (no
 * worker processes the jobs here: the test reads what the controller queued).
 */
import { Queue, Worker } from 'bullmq';
import { createLogger } from '@feed/logger';
import { bullConnectionFactory, BullConnections } from '../src/jobs/bull-connection';
import { buildJobOptions, SCHEDULER_ID, type BuildJobData } from '../src/jobs/build-queue';
import { COUNTER_REPAIR_QUEUE, COUNTER_REPAIR_SCHEDULER_ID } from '../src/jobs/counter-repair';
import { checkDesiredState, dueVersion, type ControllerDeps } from '../src/controller/desired-state';
import { createWorkerMetrics } from '../src/metrics';
import { publishQueue } from '../../../test/support/feed-fixtures';
import { waitUntil } from '../../../tools/support/processes';
import { useTestServices } from '../../../test/support/services';

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
  connections = new BullConnections(bullConnectionFactory(s.config));
  buildQueue = new Queue<BuildJobData>('short-recommend-build', { connection: connections.next(), prefix: s.keys.bullPrefix, defaultJobOptions: buildJobOptions(30_000) });
  counterQueue = new Queue(COUNTER_REPAIR_QUEUE, { connection: connections.next(), prefix: s.keys.bullPrefix });
  deps = {
    redis: s.redis,
    keys: s.keys,
    logger: createLogger({ silent: true }),
    metrics: createWorkerMetrics(),
    buildQueue,
    ensureBuildScheduler: async () => void (await buildQueue.upsertJobScheduler(SCHEDULER_ID, { pattern: CRON, tz: TZ }, { name: 'daily-build' })),
    counterRepairQueue: counterQueue,
    ensureCounterRepairScheduler: async () => void (await counterQueue.upsertJobScheduler(COUNTER_REPAIR_SCHEDULER_ID, { every: 60_000 }, { name: 'counter-repair' })),
    cron: CRON,
    timeZone: TZ,
    now: () => now,
  };
  s.disposeAfter(() =>
    connections.closeWithin(2_000, async () => {
      await buildQueue.close();
      await counterQueue.close();
    }, deps.logger),
  );
});

const reasons = async () => (await checkDesiredState(deps)).map((r) => r.reason).sort();
const repairJob = (version: string) => buildQueue.getJob(`repair-${version}`);

describe('the desired-state controller (R21)', () => {
  it('when Redis is empty, then it upserts both schedulers and queues one build of today; a second check queues nothing more', async () => {
    expect(await reasons()).toEqual(['counter-scheduler-missing', 'no-version', 'scheduler-missing']);
    expect(await buildQueue.getJobScheduler(SCHEDULER_ID)).toMatchObject({ pattern: CRON, tz: TZ });
    expect(await counterQueue.getJobScheduler(COUNTER_REPAIR_SCHEDULER_ID)).toBeTruthy();
    expect((await repairJob('20260724'))?.data).toEqual({});
    expect(await reasons()).toEqual([]);
    expect(await buildQueue.getJobCountByTypes('waiting')).toBe(1);
    expect(await s.redis.hGet(s.keys.lastRepair, 'reason')).toBe('no-version');
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
    await publishQueue(s.redis, s.keys, '20260724', IDS);
    expect(await reasons()).toEqual(['legacy-missing']);
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
});
