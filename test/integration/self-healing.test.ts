/**
 * R21 with the deployables as SRE runs them: `start:worker` and `start:api` over seeded data on a
 * Redis server of this test's own (it is flushed), no build triggered by hand. The ring comes
 * back by itself after a first start on an empty Redis, a FLUSHALL, and the loss of the current
 * version's queue; the daily job scheduler is put back. And a build whose every attempt fails
 * while MongoDB is down is queued again by the controller once MongoDB answers.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import mongoose, { type Connection } from 'mongoose';
import { versionFor } from '@feed/domain';
import { createRedisKeys, videoModel } from '@feed/storage';
import { seedVideos } from '@feed/demo-data';
import { BUILD_QUEUE, SCHEDULER_ID, bullConnectionFactory } from '@feed/worker';
import { freePort, startMongoProcess, startRedis, tsx, waitUntil, type Managed } from '../../tools/support/processes';
import { startTestDeployable } from '../support/deployables';
import { contractFetch } from '../support/contract';
import { testMongoUrl } from '../support/mongo';

const run = promisify(execFile);
const mongoUrl = testMongoUrl('self_healing');
const keys = createRedisKeys();
/** R21: after a loss of data or of the current queue the ring serves again within 2 minutes, unaided. */
const R21_REPAIR_MS = 120_000;

let redisPort: number;
let redisDir: string;
let mongo: Connection;
const running: Managed[] = [];
let redisServer: Managed;
let apiPort: number;

const redisCli = (...args: string[]) => run('redis-cli', ['-p', String(redisPort), ...args]).then((r) => r.stdout.trim());

async function startDeployable(name: 'api' | 'worker', extraEnv: Record<string, string> = {}): Promise<number> {
  const deployable = await startTestDeployable(tsx('tools/start-one.ts', name), { redisUrl: `redis://127.0.0.1:${redisPort}`, mongoUrl }, { LOG_LEVEL: 'warn', CURRENT_CACHE_MS: '1000', ...extraEnv });
  running.push(deployable.process);
  return deployable.port;
}

/** The version of the page a guest gets: a YYYYMMDD when the ring served it. */
async function pageVersion(): Promise<string> {
  const res = await contractFetch(`http://127.0.0.1:${apiPort}/api/app/recommend/vid/list`, { headers: { 'X-Device-Id': `healing-${randomBytes(4).toString('hex')}` } });
  return ((await res.json()) as { queueVersion: string }).queueVersion;
}

/** Seconds until a ring page of `version` is served. */
/**
 * Until the ring is back in Redis (the version's queue published again) and serves a page of it.
 * The queue's presence is part of the condition: an API instance serves from its in-process
 * copy of the queue (R22) for up to CURRENT_CACHE_MS after Redis lost it.
 */
async function secondsUntilRingPage(version: string, timeoutMs: number): Promise<number> {
  const started = Date.now();
  await waitUntil(`a ring page of ${version}`, async () => Number(await redisCli('exists', keys.queue(version))) === 1 && (await pageVersion()) === version, timeoutMs);
  return (Date.now() - started) / 1000;
}

beforeAll(async () => {
  redisPort = await freePort();
  redisDir = mkdtempSync(path.join(os.tmpdir(), 'feed-healing-'));
  redisServer = await startRedis(redisPort, redisDir);
  mongo = await mongoose.createConnection(mongoUrl).asPromise();
  await seedVideos(videoModel(mongo), { videos: 200, fresh: 10 });
}, 60_000);

// A test's deployables end with it (a worker left running would repair the next test's faults),
// and so does its data: the deployables run on this Redis without a key prefix.
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop('SIGKILL')));
  await redisCli('flushall');
});

afterAll(async () => {
  await redisServer.stop('SIGKILL');
  await mongo.dropDatabase();
  await mongo.close();
  rmSync(redisDir, { recursive: true, force: true });
});

describe('self-healing (R21)', () => {
  it('when the worker starts on an empty Redis, loses all data, then loses the current queue, then the ring comes back each time by itself', async () => {
    const today = versionFor(new Date(), 'Asia/Shanghai');
    const started = Date.now();
    await startDeployable('worker');
    apiPort = await startDeployable('api');
    await secondsUntilRingPage(today, 90_000);
    console.info(`self-healing: first start -> ring page ${((Date.now() - started) / 1000).toFixed(1)} s after the worker was started`);

    expect(await redisCli('flushall')).toBe('OK');
    const afterFlush = await secondsUntilRingPage(today, R21_REPAIR_MS);
    console.info(`self-healing: FLUSHALL -> ring page in ${afterFlush.toFixed(1)} s`);
    const connection = bullConnectionFactory({ redisUrl: `redis://127.0.0.1:${redisPort}`, redisClusterNodes: undefined })();
    const queue = new Queue(BUILD_QUEUE, { connection, prefix: keys.bullPrefix });
    try {
      await waitUntil('the daily job scheduler upserted again', async () => Boolean(await queue.getJobScheduler(SCHEDULER_ID)), 30_000);
    } finally {
      await queue.close();
      await connection.quit();
    }

    expect(Number(await redisCli('del', keys.queue(today)))).toBe(1);
    await waitUntil('the page to degrade', async () => (await pageVersion()) !== today, 10_000);
    const afterDel = await secondsUntilRingPage(today, R21_REPAIR_MS);
    console.info(`self-healing: DEL current queue -> ring page in ${afterDel.toFixed(1)} s`);
  }, 420_000);
});

describe('a build while MongoDB is down (R21)', () => {
  it('when every attempt of a build fails with MongoDB stopped, then once MongoDB answers the controller builds today\'s version', async () => {
    const today = versionFor(new Date(), 'Asia/Shanghai');
    const mongoPort = await freePort();
    const ownMongoUrl = `mongodb://127.0.0.1:${mongoPort}/outage`;
    const seed = async () => {
      const conn = await mongoose.createConnection(ownMongoUrl).asPromise();
      await seedVideos(videoModel(conn), { videos: 200, fresh: 10 });
      await conn.close();
    };
    let mongoServer = await startMongoProcess(mongoPort);
    running.push(mongoServer);
    await seed();
    // The test holds the controller's lease, so the worker's first check waits until MongoDB is down.
    expect(await redisCli('set', keys.controllerLease, 'held-by-the-test', 'PX', '60000')).toBe('OK');
    await startDeployable('worker', { MONGO_URL: ownMongoUrl, BUILD_RETRY_DELAY_MS: '500' });
    await mongoServer.stop('SIGKILL');
    await redisCli('del', keys.controllerLease);

    const connection = bullConnectionFactory({ redisUrl: `redis://127.0.0.1:${redisPort}`, redisClusterNodes: undefined })();
    const queue = new Queue(BUILD_QUEUE, { connection, prefix: keys.bullPrefix });
    try {
      // The controller's repair build runs its 3 attempts against the stopped MongoDB and fails.
      await waitUntil('the repair build to fail all its attempts', async () => {
        const job = await queue.getJob(`repair-${today}`);
        return Boolean(job && (await job.getState()) === 'failed' && job.attemptsMade === 3);
      }, 90_000);
      expect(await redisCli('get', keys.current)).toBe('');

      mongoServer = await startMongoProcess(mongoPort);
      running.push(mongoServer);
      await seed();
      const answering = Date.now();
      await waitUntil(`${today} current`, async () => (await redisCli('get', keys.current)) === today, 120_000);
      console.info(`self-healing: MongoDB back -> ${today} current in ${((Date.now() - answering) / 1000).toFixed(1)} s`);
      expect(Number(await redisCli('llen', keys.queue(today)))).toBeGreaterThan(0);
    } finally {
      await queue.close();
      await connection.quit();
    }
  }, 300_000);
});
