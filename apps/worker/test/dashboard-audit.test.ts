/**
 * The audit trail is complete and durable (D6): every build job the job dashboard starts is
 * recorded with the signed-in admin, whatever route or button started it (Add job, with a
 * trailing slash or in capitals, the per-job and bulk Retry and Promote, a scheduler's "run
 * now"), and the trail lives in MongoDB: a FLUSHALL of Redis leaves it, the inspector and
 * `pnpm cli rollout --history` read it there. The scheduler's and the controller's jobs are not on it.
 */
import { execFile } from 'node:child_process';
import type { Server } from 'node:http';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Worker, type Job } from 'bullmq';
import request from '../../../test/support/contract';
import mongoose, { type Connection } from 'mongoose';
import { startEmbeddedMongo } from '@feed/embedded-mongo';
import { createLogger } from '@feed/logger';
import { auditTrail, connectRedis, createRedisKeys, videoModel, type AuditRecord, type Redis } from '@feed/storage';
import type { Config } from '@feed/config';
import { createWorkerApp, DASHBOARD_PATH, INSPECTOR_PATH } from '../src/app';
import { workerStores } from './support/worker-app-under-test';
import { BUILD_QUEUE, SCHEDULER_ID, startBuildQueue } from '../src/jobs/build-queue';
import { bullConnectionFactory } from '../src/jobs/bull-connection';
import { createWorkerMetrics } from '../src/metrics';
import { cli, freePort, startRedis, waitUntil, type Managed } from '../../../tools/support/processes';
import { useTestServices } from '../../../test/support/services';
import { testBuildDeps } from '../../../test/support/build-deps';

const s = useTestServices('dashboard_audit');
const logger = createLogger({ silent: true });
const QUEUE_API = `${DASHBOARD_PATH}/api/queues/${BUILD_QUEUE}`;
let server: Server;
let jobs: Awaited<ReturnType<typeof startBuildQueue>>;

/** The worker's queue (not processing) and its admin app over `config`'s Redis and prefix. */
async function startAdmin(config: Config, redis: Redis, mongo: Connection = s.mongo) {
  const keys = createRedisKeys(config.redisKeyPrefix);
  const videos = videoModel(mongo);
  jobs = await startBuildQueue({ connection: bullConnectionFactory(config), prefix: keys.bullPrefix, cron: '30 4 * * *', timeZone: 'Asia/Shanghai', retryDelayMs: config.buildRetryDelayMs, logger, metrics: createWorkerMetrics(), deps: testBuildDeps({ config, redis, keys }, videos), process: false });
  const app = createWorkerApp({ config: { ...config, adminUser: 'oncall', adminPassword: 'inspect-pass' }, queue: jobs.queue, metrics: createWorkerMetrics(), ...workerStores(redis, keys, mongo), videos });
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  s.disposeAfter(async () => {
    await new Promise((resolve) => server.close(resolve));
    await jobs.close();
  });
  return keys;
}

const trail = () => auditTrail(s.mongo, s.config.redisKeyPrefix);
const dashboard = (method: 'post' | 'put' | 'patch', url: string) => request(server)[method](url).auth('oncall', 'inspect-pass');

/** A job of the build queue that failed (its one attempt threw), as a failed build on the dashboard's Failed tab. */
async function failedJob(id: string): Promise<Job> {
  const job = await jobs.queue.add('daily-build', {}, { jobId: id, attempts: 1 });
  const connection = bullConnectionFactory(s.config)();
  const failing = new Worker(
    BUILD_QUEUE,
    async () => {
      throw new Error('injected build failure');
    },
    { connection, prefix: s.keys.bullPrefix },
  );
  try {
    await waitUntil(`job ${id} failed`, async () => (await job.getState()) === 'failed', 15_000);
  } finally {
    await failing.close();
    await connection.quit();
  }
  return job;
}

/** Runs `click` and returns the entries it added to the trail, newest first. */
async function entriesOf(click: () => Promise<unknown>): Promise<AuditRecord[]> {
  const before = new Set((await trail().read(1000)).map((entry) => entry.id));
  await click();
  return (await trail().read(1000)).filter((entry) => !before.has(entry.id));
}

describe('the dashboard on the audit trail (D6)', () => {
  beforeEach(() => startAdmin(s.config, s.redis));

  it.each([
    ['Add job', `${QUEUE_API}/add`],
    ['Add job with a trailing slash', `${QUEUE_API}/add/`],
    ['Add job in capitals', `${QUEUE_API}/ADD`],
  ])('when %s starts a build, then one entry names the admin and the job', async (_button, url) => {
    const added = await entriesOf(async () => dashboard('post', url).send({ name: 'manual-rebuild', data: { force: true }, options: {} }).expect(200));
    const [job] = await jobs.queue.getJobs(['waiting']);
    expect(added).toEqual([expect.objectContaining({ action: 'build-requested', actor: 'oncall', via: 'dashboard', after: expect.objectContaining({ how: 'add', jobId: job.id, name: 'manual-rebuild', data: { force: true }, request: `POST ${url}` }) })]);
  });

  it('when a failed build is retried with its Retry button, then one entry names the admin and the job', async () => {
    const job = await failedJob('failed-1');
    const added = await entriesOf(async () => dashboard('put', `${QUEUE_API}/${job.id}/retry`).expect(204));
    expect(await job.getState()).toBe('waiting');
    expect(added).toEqual([expect.objectContaining({ actor: 'oncall', via: 'dashboard', before: expect.objectContaining({ state: 'failed' }), after: expect.objectContaining({ how: 'retry', jobId: 'failed-1' }) })]);
  });

  it('when the failed builds are retried all at once, then each job has its entry', async () => {
    await failedJob('failed-a');
    await failedJob('failed-b');
    const added = await entriesOf(async () => dashboard('put', `${QUEUE_API}/retry/failed`).expect(200));
    expect(added.map((entry) => [entry.actor, (entry.after as { how: string; jobId: string }).how, (entry.after as { jobId: string }).jobId]).sort()).toEqual([['oncall', 'retry', 'failed-a'], ['oncall', 'retry', 'failed-b']]);
  });

  it('when a delayed build is promoted, one by one or all at once, then each promoted job has its entry', async () => {
    await jobs.queue.add('daily-build', {}, { jobId: 'delayed-1', delay: 3_600_000 });
    await jobs.queue.add('daily-build', {}, { jobId: 'delayed-2', delay: 3_600_000 });
    const one = await entriesOf(async () => dashboard('put', `${QUEUE_API}/delayed-1/promote`).expect(204));
    expect(one).toEqual([expect.objectContaining({ actor: 'oncall', before: expect.objectContaining({ state: 'delayed' }), after: expect.objectContaining({ how: 'promote', jobId: 'delayed-1' }) })]);
    const all = await entriesOf(async () => dashboard('put', `${QUEUE_API}/promote`).expect(200));
    // Promote all also starts the scheduler's next run now: by hand, so on the trail too.
    expect(all.map((entry) => [entry.actor, (entry.after as { how: string }).how, (entry.after as { jobId: string }).jobId.replace(/^repeat:.*/, 'the scheduler run')]).sort()).toEqual([
      ['oncall', 'promote', 'delayed-2'],
      ['oncall', 'promote', 'the scheduler run'],
    ]);
  });

  it('when a delayed build is rescheduled to run now (its delay edited), then one entry names the admin and the job', async () => {
    await jobs.queue.add('daily-build', {}, { jobId: 'delayed-3', delay: 3_600_000 });
    const added = await entriesOf(async () => dashboard('patch', `${QUEUE_API}/delayed-3/delay`).send({ runAt: Date.now() }).expect(200));
    // Due now: the next worker to look takes it (none processes here).
    expect((await jobs.queue.getJob('delayed-3'))?.delay).toBe(0);
    expect(added).toEqual([expect.objectContaining({ actor: 'oncall', via: 'dashboard', before: expect.objectContaining({ state: 'delayed' }), after: expect.objectContaining({ how: 'reschedule', jobId: 'delayed-3' }) })]);
  });

  it("when a pending build's data is replaced (a scheduled build turned into a forced one), then one entry names the admin with the data before and after", async () => {
    await jobs.queue.add('daily-build', { force: false }, { jobId: 'delayed-4', delay: 3_600_000 });
    const added = await entriesOf(async () => dashboard('patch', `${QUEUE_API}/delayed-4/update-data`).send({ jobData: { force: true } }).expect(200));
    expect((await jobs.queue.getJob('delayed-4'))?.data).toEqual({ force: true });
    expect(added).toEqual([expect.objectContaining({ actor: 'oncall', via: 'dashboard', before: expect.objectContaining({ data: { force: false } }), after: expect.objectContaining({ how: 'update-data', jobId: 'delayed-4', data: { force: true } }) })]);
  });

  it("when the daily scheduler's run-now starts a build, then one entry names the admin and the job; the scheduler's own jobs are not on the trail", async () => {
    const added = await entriesOf(async () => dashboard('put', `${QUEUE_API}/job-schedulers/${SCHEDULER_ID}/run`).expect(200));
    expect(added).toEqual([expect.objectContaining({ actor: 'oncall', via: 'dashboard', after: expect.objectContaining({ how: 'add', name: 'daily-build', request: `PUT ${QUEUE_API}/job-schedulers/${SCHEDULER_ID}/run` }) })]);
    // The scheduler's next run (added by upsertJobScheduler, not by the dashboard) is no entry.
    expect((await jobs.queue.getJobs(['delayed'])).length).toBeGreaterThan(0);
    expect(await trail().read(1000)).toHaveLength(1);
  });

  it('when the dashboard is asked without credentials, then nothing is added and nothing recorded', async () => {
    const added = await entriesOf(async () => request(server).post(`${QUEUE_API}/add`).send({ name: 'x', data: {}, options: {} }).expect(401));
    expect(added).toEqual([]);
    expect(await jobs.queue.getJobs(['waiting'])).toEqual([]);
  });
});

describe('MongoDB down while the dashboard starts a build (D6)', () => {
  it('when the trail cannot be written, then the click tells the truth: no build is queued without its entry', async () => {
    // A MongoDB of this test's own, stopped after the app connected (the driver then waits out its server selection).
    const mongo = await startEmbeddedMongo();
    const connection = await mongoose.createConnection(`${mongo.uri}/audit_down`, { serverSelectionTimeoutMS: 30_000 }).asPromise();
    try {
      await startAdmin(s.config, s.redis, connection);
      await mongo.stop();
      const click = await dashboard('post', `${QUEUE_API}/add`).send({ name: 'manual-rebuild', data: { force: true }, options: {} });
      expect(click.status).toBe(503);
      expect((await jobs.queue.getJobs(['waiting', 'delayed', 'active'])).map((job) => job.name)).not.toContain('manual-rebuild');
      // Retry likewise: a failed build stays failed rather than running off the trail.
      const job = await failedJob('failed-down');
      expect((await dashboard('put', `${QUEUE_API}/${job.id}/retry`)).status).toBe(503);
      expect(await job.getState()).toBe('failed');
    } finally {
      await connection.close(true);
      await mongo.stop();
    }
  }, 60_000);
});

describe('a durable trail (D6)', () => {
  let ownRedis: Managed;
  let dir: string;
  let redis: Redis;
  let config: Config;
  let redisCli: (...args: string[]) => Promise<string>;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'audit-redis-'));
    const port = await freePort();
    ownRedis = await startRedis(port, dir);
    redisCli = (...args) => promisify(execFile)('redis-cli', ['-p', String(port), ...args]).then((r) => r.stdout.trim());
    config = { ...s.config, redisUrl: `redis://127.0.0.1:${port}` };
    redis = await connectRedis(config);
  });

  afterAll(async () => {
    await redis.close();
    await ownRedis.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('when Redis loses everything (FLUSHALL of its own server), then the inspector and pnpm cli rollout --history still show the dashboard build', async () => {
    const scoped = { ...config, redisKeyPrefix: s.config.redisKeyPrefix };
    await startAdmin(scoped, redis);
    await dashboard('post', `${QUEUE_API}/add`).send({ name: 'manual-rebuild', data: { force: true }, options: {} }).expect(200);
    expect(await redisCli('flushall')).toBe('OK');
    expect(await redisCli('dbsize')).toBe('0');
    const summary = await request(server).get(`${INSPECTOR_PATH}/api/summary`).auth('oncall', 'inspect-pass').expect(200);
    expect(summary.body.audit).toEqual([expect.objectContaining({ actor: 'oncall', via: 'dashboard', action: 'build-requested' })]);
    const history = await cli({ NODE_ENV: 'test', REDIS_URL: config.redisUrl, MONGO_URL: config.mongoUrl!, REDIS_KEY_PREFIX: scoped.redisKeyPrefix }, 'rollout', '--history');
    expect(history).toMatchObject({ code: 0 });
    expect(history.output).toMatch(/oncall \(dashboard\) {2}build-requested .*"name":"manual-rebuild"/);
  }, 60_000);
});
