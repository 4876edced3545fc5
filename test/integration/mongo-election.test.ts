/**
 * A MongoDB replica-set election (SPEC R17 end, issue 51): 12 s of NotWritablePrimary (10107) on
 * writes and primary reads, connections closed at its start, injected with MongoDB's own
 * `configureFailPoint`/`failCommand` into the real API and worker processes only (by their
 * appName), under 20 readers (known and new devices) and 20 likers, while the day's build runs.
 * Counted as the clients see it: every answer 2xx or 503 with Retry-After, each device's pages are
 * its version's ring positions in order (none served twice, none lost), each user's last answered
 * like state is what the counters hold once the tally converges, the build completes; /readyz is
 * logged every 0.5 s. Against a real mongod when TEST_MONGO_URL names one (test commands enabled;
 * its fail point names this file's appName, so other files' clients are not touched).
 */
import { randomBytes } from 'node:crypto';
import mongoose, { type Connection } from 'mongoose';
import { Queue } from 'bullmq';
import { loadConfig } from '@feed/config';
import { demoVideo } from '@feed/demo-data';
import { versionFor } from '@feed/domain';
import { startEmbeddedMongo, type EmbeddedMongo } from '@feed/embedded-mongo';
import { closeRedis, connectRedis, createRedisKeys, deleteKeysWithPrefix, videoModel, type Redis } from '@feed/storage';
import { BUILD_QUEUE, buildJobOptions, bullConnectionFactory } from '@feed/worker';
import { freePort, tsx, waitUntil } from '../../tools/support/processes';
import { startTestDeployable, type TestDeployable } from '../support/deployables';
import { bearer, publishQueue } from '../support/feed-fixtures';
import { onRealMongo, testMongoUrl } from '../support/mongo';

const ELECTION_MS = 12_000;
const APP_NAME = `feed-election-${randomBytes(2).toString('hex')}`;
/** What a primary stepping down refuses: writes and reads that need the primary. */
const FAIL_COMMANDS = ['insert', 'update', 'delete', 'findAndModify', 'find', 'aggregate', 'count', 'distinct', 'getMore'];
const TIME_ZONE = 'Asia/Shanghai';
const READERS = 20;
const LIKERS = 20;
const PAGE = 5;
const PACE_MS = 100;
/** Retries at +5 s (still in the election) and +15 s (after it): the job's third attempt must build the day. */
const BUILD_RETRY_DELAY_MS = 5_000;
const LIKED_VIDEOS = 6;
const prefix = `melect:${randomBytes(3).toString('hex')}:`;
const keys = createRedisKeys(prefix);

let embedded: EmbeddedMongo | undefined;
const { MongoClient } = mongoose.mongo;
let admin: InstanceType<typeof MongoClient>;
let db: Connection;
let redis: Redis;
let api: TestDeployable;
let worker: TestDeployable;
let ids: string[];
const yesterday = versionFor(new Date(Date.now() - 86_400_000), TIME_ZONE);
const today = () => versionFor(new Date(), TIME_ZONE);

beforeAll(async () => {
  embedded = onRealMongo ? undefined : await startEmbeddedMongo({ port: await freePort() });
  const mongoUrl = embedded ? `${embedded.uri}/election` : testMongoUrl('election');
  const serviceUrl = new URL(mongoUrl);
  serviceUrl.searchParams.set('appName', APP_NAME);
  admin = await new MongoClient(mongoUrl).connect();
  db = await mongoose.createConnection(mongoUrl).asPromise();
  redis = await connectRedis(loadConfig({ NODE_ENV: 'test', REDIS_URL: process.env.TEST_REDIS_URL!, REDIS_KEY_PREFIX: prefix, MONGO_URL: mongoUrl }));
  const docs = await videoModel(db).insertMany(Array.from({ length: 300 }, () => demoVideo({ reviewAt: new Date('2026-07-20T00:00:00Z'), likeCount: 0, recommendLikeCount: 0 })));
  ids = docs.map((d) => d._id.toHexString());
  // Yesterday's ring is current; today's is due only at 23:59, so nothing builds until the test asks.
  await publishQueue(redis, keys, yesterday, ids.slice(0, 200));
  await redis.sAdd(keys.legacyIds, ids);
  const scope = { prefix, mongoUrl: serviceUrl.toString() };
  const env = { TZ_BUSINESS: TIME_ZONE, SHORT_RECOMMEND_CRON: '59 23 * * *', REDIS_DEADLINE_MS: '5000' };
  [api, worker] = await Promise.all([
    startTestDeployable(tsx('apps/api/src/main.ts'), scope, { ...env, NODE_ENV: 'development', LOG_LEVEL: 'error', VIDEO_CACHE_MS: '3000' }, { until: '/readyz', startupMs: 120_000 }),
    startTestDeployable(tsx('apps/worker/src/main.ts'), scope, { ...env, NODE_ENV: 'development', LOG_LEVEL: 'info', BUILD_RETRY_DELAY_MS: String(BUILD_RETRY_DELAY_MS) }, { startupMs: 120_000 }),
  ]);
}, 240_000);

afterAll(async () => {
  await admin?.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
  await Promise.all([api?.process.stop('SIGKILL'), worker?.process.stop('SIGKILL')]);
  if (redis) await deleteKeysWithPrefix(redis, prefix);
  await Promise.all([redis && closeRedis(redis), db?.dropDatabase().then(() => db.close()), admin?.close()]);
  await embedded?.stop();
});

const failCommand = (mode: unknown, data: Record<string, unknown> = {}) =>
  admin.db('admin').command({ configureFailPoint: 'failCommand', mode, data: { failCommands: FAIL_COMMANDS, appName: APP_NAME, ...data } });

/** What the clients saw. */
const failures: string[] = [];
const statuses = new Map<string, number>();
const count = (what: string) => statuses.set(what, (statuses.get(what) ?? 0) + 1);

/** A 503 must say when to come back; anything but 2xx or such a 503 is a failure. */
function judge(what: string, res: Response): 'ok' | 'retry' | 'failed' {
  count(`${what} ${res.status}`);
  if (res.ok) return 'ok';
  if (res.status === 503 && res.headers.get('retry-after')) return 'retry';
  failures.push(`${what}: ${res.status} retry-after=${res.headers.get('retry-after')}`);
  return 'failed';
}

/** Ring pages per device and version, in the order they were served. */
const served = new Map<string, string[]>();

async function reader(index: number, until: () => boolean): Promise<void> {
  // Even readers keep one device (known before the election); odd ones come back as a new device every 2 pages.
  let device = `reader-${index}-${prefix.slice(7, 13)}`;
  for (let page = 0; !until(); page++) {
    if (index % 2 === 1 && page % 2 === 0) device = `new-${index}-${page}-${prefix.slice(7, 13)}`;
    try {
      const res = await fetch(`${api.base}/api/app/recommend/vid/list?pageSize=${PAGE}`, { headers: { 'X-Device-Id': device } });
      const body = (await res.json()) as { queueVersion?: string; vInfos?: Array<{ vid: string }> };
      if (judge('page', res) === 'ok') {
        // Fallback pages (no version) consume no ring position.
        if (body.queueVersion) {
          const key = `${device} ${body.queueVersion}`;
          served.set(key, [...(served.get(key) ?? []), ...body.vInfos!.map((v) => v.vid)]);
        } else count('page fallback');
      }
    } catch (err) {
      failures.push(`page: ${String(err)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, PACE_MS));
  }
}

/** Each user's last answered like state per video. */
const likeState = new Map<string, boolean>();

/** A like or unlike; a 503 is retried, as its Retry-After asks, until it is answered: the retry must be idempotent. */
async function act(user: string, action: 'like' | 'unlike', vid: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    try {
      const res = await fetch(`${api.base}/api/app/vid/${action}`, { method: 'POST', headers: { ...bearer(user), 'Content-Type': 'application/json' }, body: JSON.stringify({ vid }) });
      const verdict = judge(action, res);
      const body = (await res.json()) as { active?: boolean };
      if (verdict === 'ok') likeState.set(`${user} ${vid}`, body.active!);
      if (verdict !== 'retry') return;
    } catch (err) {
      failures.push(`${action}: ${String(err)}`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function liker(index: number, until: () => boolean): Promise<void> {
  const user = `liker-${index}-${prefix.slice(7, 13)}`;
  while (!until()) {
    await act(user, Math.random() < 0.6 ? 'like' : 'unlike', ids[Math.floor(Math.random() * LIKED_VIDEOS)]);
    await new Promise((resolve) => setTimeout(resolve, PACE_MS));
  }
}

/** /readyz every 0.5 s, run-length encoded for the log: "200x4 503x24 200x3". */
function sampleReadiness(until: () => boolean): Promise<string> {
  const samples: string[] = [];
  return (async () => {
    while (!until()) {
      const res = await fetch(`${api.base}/readyz`).then((r) => String(r.status), (err: unknown) => String((err as { cause?: { code?: string } }).cause?.code ?? err));
      samples.push(res);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const runs: Array<[string, number]> = [];
    for (const s of samples) if (runs.at(-1)?.[0] === s) runs.at(-1)![1]++;
    else runs.push([s, 1]);
    return runs.map(([s, n]) => `${s}x${n}`).join(' ');
  })();
}

describe('a MongoDB replica-set election (failCommand)', () => {
  it('when writes and primary reads answer NotWritablePrimary for 12 s after closed connections, then nothing is lost or counted twice, every answer is 2xx or 503 with Retry-After, and the day\'s build completes', async () => {
    let stopped = false;
    const until = () => stopped;
    const readiness = sampleReadiness(until);
    const clients = Promise.all([...Array.from({ length: READERS }, (_, i) => reader(i, until)), ...Array.from({ length: LIKERS }, (_, i) => liker(i, until))]);
    try {
      await new Promise((resolve) => setTimeout(resolve, 2_000)); // known devices and likes before
      // The election: the primary drops its connections, then refuses for 12 s.
      await failCommand({ times: 40 }, { closeConnection: true });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await failCommand('alwaysOn', { errorCode: 10107, errorLabels: ['RetryableWriteError'] });
      const electedAt = Date.now();
      // The day's build is asked for as the election starts (as the scheduler would): it must retry, not fail the day.
      const connection = bullConnectionFactory(loadConfig({ NODE_ENV: 'test', REDIS_URL: process.env.TEST_REDIS_URL! }))();
      const buildQueue = new Queue(BUILD_QUEUE, { connection, prefix: keys.bullPrefix });
      await buildQueue.add('election-build', {}, buildJobOptions(BUILD_RETRY_DELAY_MS));
      await buildQueue.close();
      await connection.quit();
      await new Promise((resolve) => setTimeout(resolve, ELECTION_MS - (Date.now() - electedAt)));
      await failCommand('off');
      // A new primary: the clients go on for a while, then the build and the tally must converge.
      await waitUntil("today's build switched", async () => (await redis.get(keys.current)) === today() && Boolean(await redis.hExists(keys.meta(today()), 'completedAt')), 40_000).catch((err: unknown) => {
        const buildLines = worker.process.output.join('').split('\n').filter((line) => /build/i.test(line));
        throw new Error(`${String(err)}; the worker's build lines: ${buildLines.slice(-12).join('\n')}`);
      });
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    } finally {
      await failCommand('off');
      stopped = true;
      await clients;
    }
    const readyz = await readiness;
    console.log(`election of ${ELECTION_MS / 1000} s: answers ${JSON.stringify(Object.fromEntries(statuses))}; /readyz every 0.5 s: ${readyz}; failures: ${failures.length}`);
    // A 500's cause is in the API's log: shown with the failures.
    const bugs = api.process.output.join('').split('\n').filter((line) => line.includes('request failed'));
    expect({ failures, bugs: bugs.slice(-3).map((line) => line.slice(0, 1500)) }).toEqual({ failures: [], bugs: [] });
    expect(statuses.get('page 503') ?? 0).toBeGreaterThan(0); // the election was felt
    // The build met it (its first attempt failed on a refused read) and retried rather than failed the day.
    expect(worker.process.output.join('')).toMatch(/build job failed.*failCommand/);

    // Each device's pages are its version's ring from the start, in order: none twice, none skipped.
    const rings = new Map([
      [yesterday, ids.slice(0, 200)],
      [today(), await redis.lRange(keys.queue(today()), 0, -1)],
    ]);
    for (const [key, vids] of served) {
      const ring = rings.get(key.split(' ')[1])!;
      const first = vids.findIndex((vid, i) => vid !== ring[i % ring.length]);
      expect({ key, served: vids.length, firstOutOfOrder: first }).toEqual({ key, served: vids.length, firstOutOfOrder: -1 });
    }

    // Every user's last answered state is what the counters say, once the tally has converged. A
    // record whose tally the election cut stays dirty until the video's next tally (or the repair
    // job, every minute, past this test's bound): one more user likes and unlikes each video.
    for (const vid of ids.slice(0, LIKED_VIDEOS)) {
      await act(`settler-${prefix.slice(7, 13)}`, 'like', vid);
      await act(`settler-${prefix.slice(7, 13)}`, 'unlike', vid);
    }
    const expected = ids.slice(0, LIKED_VIDEOS).map((vid) => [...likeState].filter(([key, active]) => key.endsWith(` ${vid}`) && active).length);
    const videosLiked = async () => (await videoModel(db).find({ _id: { $in: ids.slice(0, LIKED_VIDEOS) } }).lean()).sort((a, b) => ids.indexOf(String(a._id)) - ids.indexOf(String(b._id)));
    const counters = async () => (await videosLiked()).map((v) => v.likeCount);
    await waitUntil('the like counters converged', async () => JSON.stringify(await counters()) === JSON.stringify(expected), 20_000).catch(() => undefined);
    // The records are the truth the counters follow: active ones per video for likeCount, every
    // record (a first like, counted once however often it was retried) for recommendLikeCount.
    const records = await db.collection('likes').find({ videoId: { $in: ids.slice(0, LIKED_VIDEOS).map((id) => new mongoose.Types.ObjectId(id)) } }).toArray();
    const perVideo = (where: (r: (typeof records)[number]) => boolean) => ids.slice(0, LIKED_VIDEOS).map((vid) => records.filter((r) => String(r.videoId) === vid && where(r)).length);
    const liked = await videosLiked();
    expect({ likeCount: liked.map((v) => v.likeCount), recommendLikeCount: liked.map((v) => v.recommendLikeCount), activeRecords: perVideo((r) => r.active === true) }).toEqual({
      likeCount: expected,
      recommendLikeCount: perVideo(() => true),
      activeRecords: expected,
    });
    // No restart: both processes still answer, ready.
    expect((await fetch(`${api.base}/readyz`)).status).toBe(200);
    expect((await fetch(`${worker.base}/readyz`)).status).toBe(200);
  }, 180_000);
});
