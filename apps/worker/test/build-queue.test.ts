import { QueueEvents } from 'bullmq';
import request from '../../../test/support/contract';
import { createLogger } from '@feed/logger';
import { auditTrail, VersionStore, videoModel, type VideoModel } from '@feed/storage';
import { seedVideos } from '@feed/demo-data';
import { createWorkerApp, DASHBOARD_PATH } from '../src/app';
import { workerStores } from './support/worker-app-under-test';
import { BUILD_QUEUE, SCHEDULER_ID, startBuildQueue } from '../src/jobs/build-queue';
import { bullConnectionFactory } from '../src/jobs/bull-connection';
import { asDashboardRequest, auditedQueue } from '../src/jobs/audited-queue';
import { createWorkerMetrics, type WorkerMetrics } from '../src/metrics';
import { useTestServices } from '../../../test/support/services';
import { testBuildDeps } from '../../../test/support/build-deps';

const s = useTestServices('queue');
let videos: VideoModel;
let jobs: Awaited<ReturnType<typeof startBuildQueue>>;
let events: QueueEvents;
let metrics: WorkerMetrics;
/** The worker's clock: after the day the manual job builds, so no test depends on the real date. */
const NOW = new Date('2026-08-01T08:00:00+08:00');
const TODAY = '20260801';

beforeAll(async () => {
  videos = videoModel(s.mongo);
  await seedVideos(videos, { videos: 57, fresh: 3, now: new Date('2026-07-24T01:00:00+08:00') });
});

/**
 * The daily cron at 04:MM in Shanghai, MM half an hour from now: its next run is never seconds away,
 * so it cannot come due while a test reads it (a fixed 04:30 failed every CI run at 20:29-20:30 UTC).
 */
const CRON = `${(new Date().getUTCMinutes() + 30) % 60} 4 * * *`;

/** A worker's build queue, its metrics and a QueueEvents reader on the test's prefix. */
beforeEach(async () => {
  const logger = createLogger({ silent: true });
  metrics = createWorkerMetrics();
  jobs = await startBuildQueue({
    connection: bullConnectionFactory(s.config),
    prefix: s.keys.bullPrefix,
    cron: CRON,
    timeZone: 'Asia/Shanghai',
    retryDelayMs: s.config.buildRetryDelayMs,
    logger,
    metrics,
    deps: testBuildDeps(s, videos, { now: () => NOW }),
  });
  const eventsConnection = bullConnectionFactory(s.config)();
  events = new QueueEvents(BUILD_QUEUE, { connection: eventsConnection, prefix: s.keys.bullPrefix });
  s.disposeAfter(async () => {
    await events.close();
    await eventsConnection.quit();
    await jobs.close();
  });
  await events.waitUntilReady();
});

/** feed_builds_total for one result. */
async function counted(result: string): Promise<number> {
  const metric = await metrics.builds.get();
  return metric.values.find((v) => v.labels.result === result)?.value ?? 0;
}

describe('BullMQ build job', () => {
  it("when on-call promotes the scheduler's delayed job (bull-board's Promote), then it runs now as today's build, audited, and the scheduler keeps its next run (not the cron time after it)", async () => {
    const next = (await jobs.queue.getJobScheduler(SCHEDULER_ID))!.next!;
    const scheduled = (await jobs.queue.getJobs(['delayed'])).filter((job) => job.repeatJobKey === SCHEDULER_ID);
    expect(scheduled.map((job) => job.timestamp + job.delay)).toEqual([next]);
    // The queue as bull-board has it: its Promote button calls job.promote() on the job it got.
    const trail = auditTrail(s.mongo, s.prefix);
    const board = auditedQueue(jobs.queue, { trail, versions: new VersionStore(s.redis, s.keys) });
    const ran = scheduled[0].waitUntilFinished(events, 60_000);
    await asDashboardRequest({ actor: 'oncall', request: 'PUT promote' }, async () => (await board.getJob(scheduled[0].id!))!.promote());
    expect(await ran).toMatchObject({ version: TODAY });
    expect((await trail.read(1))[0]).toMatchObject({ action: 'build-requested', actor: 'oncall', via: 'dashboard', after: { how: 'promote', jobId: scheduled[0].id } });
    const after = (await jobs.queue.getJobs(['delayed'])).filter((job) => job.repeatJobKey === SCHEDULER_ID);
    expect({ next: (await jobs.queue.getJobScheduler(SCHEDULER_ID))?.next, delayed: after.map((job) => job.timestamp + job.delay) }).toEqual({ next, delayed: [next] });
  });

  it('when the worker starts, then the daily job scheduler exists with the configured cron and time zone', async () => {
    const scheduler = await jobs.queue.getJobScheduler(SCHEDULER_ID);
    expect(scheduler).toMatchObject({ pattern: CRON, tz: 'Asia/Shanghai' });
  });

  it('when on-call adds a build job, then it runs, reports progress by phase and switches current', async () => {
    const progress: unknown[] = [];
    events.on('progress', ({ data }) => progress.push(data));
    const job = await jobs.queue.add('manual-rebuild', { at: '2026-07-24T01:00:00+08:00' }, { jobId: 'manual-20260724' });
    const result = await job.waitUntilFinished(events, 30_000);
    expect(result).toMatchObject({ version: '20260724', status: 'built' });
    expect(await s.redis.get(s.keys.current)).toBe('20260724');
    expect(progress).toEqual(expect.arrayContaining([expect.objectContaining({ phase: 'read' }), expect.objectContaining({ phase: 'done', percent: 100 })]));
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/feed_build_queue_length 60/);
    expect(text).toMatch(/feed_build_full_17_3_block_ratio 0\.3333/);
    expect(text).toMatch(/feed_builds_total\{result="built"\} 1/);
  });

  it("when a crashed worker's lock blocks the due build, then the job fails as locked and its retry builds once the lock expires", async () => {
    const today = TODAY;
    await s.redis.set(s.keys.buildLock(today), 'crashed-worker', { PX: 1500 });
    const failures: string[] = [];
    events.on('failed', ({ failedReason }) => failures.push(failedReason));
    const job = await jobs.queue.add('daily-build', {}, { attempts: 2 });
    const result = await job.waitUntilFinished(events, 30_000);
    expect(result).toMatchObject({ version: today, status: 'built' });
    expect(failures).toEqual([]); // a retried attempt is not a final failure...
    expect((await jobs.queue.getJob(job.id!))?.attemptsMade).toBe(2); // ...but it took a second attempt
    expect(await s.redis.get(s.keys.current)).toBe(today);
    expect(await metrics.registry.metrics()).toMatch(/feed_builds_total\{result="locked"\} 1/);
  });

  it('when a lock blocks a build of another day, then the job completes as locked without a retry', async () => {
    await s.redis.set(s.keys.buildLock('20260720'), 'crashed-worker', { PX: 60_000 });
    const job = await jobs.queue.add('replay', { at: '2026-07-20' }, { attempts: 2 });
    expect(await job.waitUntilFinished(events, 30_000)).toMatchObject({ version: '20260720', status: 'locked' });
    expect((await jobs.queue.getJob(job.id!))?.attemptsMade).toBe(1);
  });

  it.each([
    [{ at: 'garbage' }, /'at' must be an ISO-8601 date/],
    [{ at: 12345 }, /'at' must be an ISO-8601 date or date-time string .* got 12345/],
    [{ force: 'yes' }, /'force' must be true or false/],
    [{ version: '20260724' }, /unknown field\(s\) version/],
  ])('when the dashboard adds a job with bad data %j, then it fails once with a clear reason, counts as invalid, not failed', async (data, reason) => {
    const before = await s.redis.get(s.keys.current);
    const failedBefore = await counted('failed');
    const invalidBefore = await counted('invalid');
    // The dashboard's "Add job" gets the queue's default options: three attempts.
    const job = await jobs.queue.add('manual-rebuild', data as never);
    await expect(job.waitUntilFinished(events, 30_000)).rejects.toThrow(reason);
    const finished = await jobs.queue.getJob(job.id!);
    expect(finished?.attemptsMade).toBe(1);
    expect(await finished?.getState()).toBe('failed');
    expect(await counted('invalid')).toBe(invalidBefore + 1);
    expect(await counted('failed')).toBe(failedBefore);
    expect(await s.redis.get(s.keys.current)).toBe(before);
  });
});

describe('worker HTTP surface', () => {
  const app = () => createWorkerApp({ config: { ...s.config, adminUser: 'oncall', adminPassword: 'secret-pass' }, queue: jobs.queue, metrics, ...workerStores(s.redis, s.keys, s.mongo), videos });

  it('when the dashboard is opened without credentials, then it answers 401 with a challenge', async () => {
    const res = await request(app()).get(`${DASHBOARD_PATH}/`).expect(401);
    expect(res.headers['www-authenticate']).toMatch(/^Basic/);
    await request(app()).get(`${DASHBOARD_PATH}/`).auth('oncall', 'wrong').expect(401);
  });

  it('when the dashboard is opened with credentials, then bull-board lists the build queue with what Promote does to the scheduled build', async () => {
    const page = await request(app()).get(`${DASHBOARD_PATH}/`).auth('oncall', 'secret-pass').expect(200);
    expect(page.text).toMatch(/<html/i);
    const queues = await request(app()).get(`${DASHBOARD_PATH}/api/queues`).auth('oncall', 'secret-pass').expect(200);
    expect(JSON.stringify(queues.body)).toContain(BUILD_QUEUE);
    // What its buttons do to the daily build, beside the queue.
    expect(queues.body.queues.find((queue: { name: string }) => queue.name === BUILD_QUEUE)?.description).toMatch(/Promote on the scheduler's delayed daily-build job runs today's build now .* keeps the schedule's next run/);
  });

  it('when /metrics and /healthz are read, then they answer without credentials', async () => {
    await request(app()).get('/healthz').expect(200, { status: 'ok' });
    const res = await request(app()).get('/metrics').expect(200);
    expect(res.text).toContain('feed_build_duration_seconds');
  });
});
