/**
 * D4 for the worker with a build under way (R21 item 6): the deployable over ~300k seeded videos,
 * MongoDB behind a throttled proxy so the build's read outlasts the shutdown grace, real signals.
 * The first SIGTERM hands the build over at once (it cannot finish within the grace): aborted, its
 * lock released, `current` as it was, its job back to waiting (not failed), and exits 0; the next
 * worker takes the job. (A second signal's exit at once: deployables.test.ts, on the API's drain.)
 */
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import mongoose, { type Connection } from 'mongoose';
import { versionFor } from '@feed/domain';
import { seedVideos } from '@feed/demo-data';
import { videoModel } from '@feed/storage';
import { BUILD_QUEUE, buildJobOptions, bullConnectionFactory, type BuildJobData } from '@feed/worker';
import { exited, freePort, startMongoProcess, tsx, waitUntil, type Managed } from '../../tools/support/processes';
import { startTestDeployable } from '../support/deployables';
import { publishQueue } from '../support/feed-fixtures';
import { throttledProxy, type ThrottledProxy } from '../support/tcp-proxies';
import { onRealMongo } from '../support/mongo';
import { useTestServices } from '../support/services';

const VIDEOS = 300_000;
/** The read of ~45 MB of projected documents takes ~20 s at this rate: far past the 6 s grace. */
const MONGO_BYTES_PER_SECOND = 2_000_000;
const RETRY_DELAY_MS = 500;
const VERSION = versionFor(new Date(), 'Asia/Shanghai');
const s = useTestServices('shutdown');
let mongoUrl: string;
let mongoHost: URL;
/** Seeding and reading 306k videos is heavy: on the embedded server, one of this test's own, so other test files' MongoDB stays responsive. */
let ownMongo: Managed | undefined;

let mongo: Connection;
let proxy: ThrottledProxy;
let queue: Queue<BuildJobData>;
let connection: ReturnType<ReturnType<typeof bullConnectionFactory>>;
const fixture = Array.from({ length: 40 }, () => randomBytes(12).toString('hex'));

beforeAll(async () => {
  if (onRealMongo) mongoUrl = s.config.mongoUrl!;
  else {
    const port = await freePort();
    ownMongo = await startMongoProcess(port);
    mongoUrl = `mongodb://127.0.0.1:${port}/shutdown`;
  }
  mongoHost = new URL(mongoUrl);
  mongo = await mongoose.createConnection(mongoUrl).asPromise();
  await seedVideos(videoModel(mongo), { videos: VIDEOS, fresh: VIDEOS / 50 });
  proxy = await throttledProxy({ host: mongoHost.hostname, port: Number(mongoHost.port || 27017) }, MONGO_BYTES_PER_SECOND);
}, 120_000);

beforeEach(async () => {
  // Today's version, complete with the legacy set: the controller has nothing to repair, and
  // the forced rebuild below is the only build.
  await publishQueue(s.redis, s.keys, VERSION, fixture);
  await s.redis.sAdd(s.keys.legacyIds, fixture);
  connection = bullConnectionFactory(s.config)();
  queue = new Queue<BuildJobData>(BUILD_QUEUE, { connection, prefix: s.keys.bullPrefix, defaultJobOptions: buildJobOptions(RETRY_DELAY_MS) });
  s.disposeAfter(async () => {
    await queue.close();
    await connection.quit();
  });
});

afterAll(async () => {
  await proxy.close();
  await mongo.dropDatabase();
  await mongo.close();
  await ownMongo?.stop();
});


/** The test's database through the throttled proxy (one direct connection: a replica set's members would bypass it). */
function throughProxy(): string {
  const url = new URL(mongoUrl);
  url.host = `127.0.0.1:${proxy.port}`;
  url.searchParams.set('directConnection', 'true');
  return url.toString();
}

async function startWorker(workerMongoUrl: string): Promise<{ worker: Managed }> {
  const { process: worker } = await startTestDeployable(tsx('tools/start-one.ts', 'worker'), { prefix: s.prefix, mongoUrl: workerMongoUrl }, { LOG_LEVEL: 'warn', BUILD_RETRY_DELAY_MS: String(RETRY_DELAY_MS) });
  s.disposeAfter(() => worker.stop('SIGKILL'));
  return { worker };
}

/** A forced rebuild of today's version, taken by the worker: its lock is held and it is reading. */
async function buildUnderWay(jobId: string): Promise<void> {
  await queue.add('manual', { force: true }, { jobId });
  await waitUntil('the build reading under its lock', async () => {
    const job = await queue.getJob(jobId);
    return (await s.redis.exists(s.keys.buildLock(VERSION))) === 1 && (job?.progress as { phase?: string } | undefined)?.phase === 'read';
  }, 30_000);
}

describe('worker shutdown during a build (D4)', () => {
  it('when the worker gets SIGTERM mid-build it cannot finish, then the build is handed over: lock released, current untouched, the job back to waiting, taken by the next worker', async () => {
    const { worker } = await startWorker(throughProxy());
    await buildUnderWay('shutdown-sigterm');
    worker.child.kill('SIGTERM');
    // Exit 0 is the in-process bound: the process exits 1 when its shutdown misses the 9.5 s
    // deadline (packages/lifecycle), so no wall-clock measure of the test's own is needed.
    expect(await exited(worker)).toBe(0);
    // Released by the aborted build, not left to expire (its TTL is minutes).
    expect(await s.redis.exists(s.keys.buildLock(VERSION))).toBe(0);
    expect(await s.redis.get(s.keys.current)).toBe(VERSION);
    expect(await s.redis.lRange(s.keys.queue(VERSION), 0, -1)).toEqual(fixture);
    // Back to waiting, not failed (no attempt spent, no retry backoff): the next worker takes it at once.
    const handedOver = (await queue.getJob('shutdown-sigterm'))!;
    expect(await handedOver.getState()).toBe('waiting');
    expect(handedOver.attemptsMade).toBe(0);
    expect(handedOver.failedReason).toBeUndefined();

    // The next worker (MongoDB at full speed) takes the job and publishes the rebuild.
    await startWorker(mongoUrl);
    await waitUntil('the retried build to complete', async () => (await queue.getJob('shutdown-sigterm'))?.finishedOn !== undefined, 60_000);
    const retried = (await queue.getJob('shutdown-sigterm'))!;
    expect(await retried.getState()).toBe('completed');
    expect(retried.returnvalue).toMatchObject({ status: 'built', version: VERSION });
    expect(await s.redis.lLen(s.keys.queue(VERSION))).toBeGreaterThan(VIDEOS / 2);
  }, 150_000);
});
