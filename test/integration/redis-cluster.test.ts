/**
 * The service unchanged on a real 3-master Redis Cluster: the build writes and switches a version,
 * the API reads the ring, records views and watches. Each test has a key prefix of its own and
 * builds what it reads, and its keys are deleted after it. Without redis-server the tests are skipped with a warning; under CI
 * (.ci/run installs it) a missing redis-server is a failure.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import mongoose, { type Connection } from 'mongoose';
import request from '../support/contract';
import { loadConfig, type Config } from '@feed/config';
import { createLogger } from '@feed/logger';
import { auditTrail, BuildStore, changeRolloutOverRamp, connectRedis, createRedisKeys, deleteKeysWithPrefix, migrateRampKey, observeRollout, offsetSlot, readRamp, readRingVersion, startStoredRamp, videoModel, type Redis } from '@feed/storage';
import { seedVideos } from '@feed/demo-data';
import { createApp } from '@feed/api';
import { BUILD_QUEUE, bullConnectionFactory, createWorkerMetrics, reportVersion, runDailyBuild, startBuildQueue } from '@feed/worker';
import { QueueEvents } from 'bullmq';
import { testBuildDeps } from '../support/build-deps';
import { bearer } from '../support/feed-fixtures';
import { startLocalCluster, type LocalCluster } from '../support/redis-cluster';
import { testMongoUrl } from '../support/mongo';

const BASE_PORT = 7100 + (process.pid % 50) * 3;
const available = ['redis-server', 'redis-cli'].every((tool) => spawnSync(tool, ['--version']).status === 0);
if (!available && process.env.CI) throw new Error('redis-server/redis-cli not installed: the Redis Cluster tests are required under CI');
if (!available) console.warn('redis-server/redis-cli not installed: skipping the Redis Cluster tests');
/** `it` when redis-server is installed, `it.skip` otherwise. */
const clusterIt = available ? it : it.skip;

let cluster: LocalCluster;
let redis: Redis;
let mongo: Connection;
let mongoUrl: string;
/** This test's configuration: the cluster, and a key prefix of its own. */
let config: Config;
let keys: ReturnType<typeof createRedisKeys>;

beforeAll(async () => {
  if (!available) return;
  cluster = await startLocalCluster(BASE_PORT);
  mongoUrl = testMongoUrl('cluster');
  redis = await connectRedis(loadConfig({ NODE_ENV: 'test', REDIS_CLUSTER_NODES: cluster.nodes.join(',') }));
  mongo = await mongoose.createConnection(mongoUrl).asPromise();
  // Read-only for every test: the videos the builds read.
  await seedVideos(videoModel(mongo), { videos: 57, fresh: 3, now: new Date('2026-07-24T01:00:00+08:00') });
}, 60_000);

beforeEach(() => {
  if (!available) return;
  config = loadConfig({
    NODE_ENV: 'test',
    REDIS_CLUSTER_NODES: cluster.nodes.join(','),
    REDIS_KEY_PREFIX: `t${randomBytes(3).toString('hex')}:`,
    MONGO_URL: mongoUrl,
    CURRENT_CACHE_MS: '0',
    // As in useTestServices: the deadline is the fault tests' subject; here a busy machine
    // must not turn a slow claim into a fallback page (which claims nothing).
    REDIS_DEADLINE_MS: '5000',
  });
  keys = createRedisKeys(config.redisKeyPrefix);
});

afterEach(async () => {
  if (available) await deleteKeysWithPrefix(redis, config.redisKeyPrefix);
});

afterAll(async () => {
  if (!available) return;
  await redis.close();
  await mongo.dropDatabase();
  await mongo.close();
  await cluster.stop();
});

/** A build of the day `at` names, run in this process as the worker runs it. */
async function build(at: string) {
  return runDailyBuild(testBuildDeps({ config, redis, keys }, videoModel(mongo)), { at: new Date(at) });
}

describe('on a Redis Cluster', () => {
  clusterIt('when the build runs and users read, then the version switches and the ring serves across slots', async () => {
    const result = await build('2026-07-24T01:00:00+08:00');
    expect(result.status).toBe('built');
    expect(await redis.get(keys.current)).toBe('20260724');
    expect(await redis.lLen(keys.queue('20260724'))).toBe(60);
    expect(await redis.sCard(keys.legacyIds)).toBe(60);

    const { app } = createApp({ config, redis, mongo });
    const first = await request(app).get('/api/app/recommend/vid/list').set(bearer('cluster-user')).expect(200);
    expect(first.body.queueVersion).toBe('20260724');
    expect(first.body.vInfos).toHaveLength(20);
    const queue = await redis.lRange(keys.queue('20260724'), 0, -1);
    expect(first.body.vInfos.map((v: { vid: string }) => v.vid)).toEqual(queue.slice(0, 20));

    await request(app).post('/api/app/vid/view').set(bearer('cluster-user')).send({ vid: queue[20] }).expect(200);
    const second = await request(app).get('/api/app/recommend/vid/list').set(bearer('cluster-user')).expect(200);
    expect(second.body.vInfos.map((v: { vid: string }) => v.vid)).toEqual(queue.slice(21, 41));
    await request(app).get(`/api/app/vid/user/count?vid=${queue[0]}`).set(bearer('cluster-user')).expect(200, { watchCount: 9, totalWatchCount: 10 });

    const concurrent = await Promise.all(Array.from({ length: 30 }, () => request(app).get('/api/app/recommend/vid/list?pageSize=2').set(bearer('cluster-many'))));
    const served = concurrent.flatMap((r) => r.body.vInfos.map((v: { vid: string }) => v.vid));
    expect(new Set(served).size).toBe(60);
  });

  clusterIt("when many users read, then their offsets land on every master and each master's share of the claims is about a third (R22)", async () => {
    expect((await build('2026-07-24T01:00:00+08:00')).status).toBe('built');
    const api = createApp({ config, redis, mongo });
    const ring = (await readRingVersion(redis, keys, '20260724'))!;
    await api.reader.copies!.ensure(ring);
    const users = Array.from({ length: 300 }, (_, i) => `spread-${i}`);
    for (let i = 0; i < users.length; i += 30) {
      const pages = await Promise.all(users.slice(i, i + 30).map((u) => request(api.app).get('/api/app/recommend/vid/list?pageSize=3').set(bearer(u)).expect(200)));
      for (const page of pages) expect(page.body.queueVersion).toBe('20260724');
    }
    // Which master holds each user's offset bucket (the claims' one key each): asked of every
    // master, a bucket is 1 on the one that holds it and MOVED on the others.
    const buckets = [...new Set(users.map((u) => offsetSlot(keys, ring, `u:${u}`).key))];
    const owner = new Map<string, number>();
    for (const node of cluster.nodes) {
      const [host, port] = node.split(':');
      // One line a reply (redis-cli follows an error reply with a blank line).
      const answers = spawnSync('redis-cli', ['-h', host, '-p', port], { input: buckets.map((key) => `EXISTS ${key}`).join('\n'), encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
      buckets.forEach((key, i) => {
        if (answers[i] === '1') owner.set(key, Number(port));
      });
    }
    const perMaster = cluster.nodes.map((node) => users.filter((u) => owner.get(offsetSlot(keys, ring, `u:${u}`).key) === Number(node.split(':')[1])).length);
    expect(perMaster.reduce((a, b) => a + b, 0)).toBe(users.length);
    for (const share of perMaster) expect(share / users.length).toBeGreaterThan(0.2);
    for (const share of perMaster) expect(share / users.length).toBeLessThan(0.45);
  });

  clusterIt('when a build job is added through BullMQ with the hash-tag prefix, then the worker runs it', async () => {
    const videos = videoModel(mongo);
    const logger = createLogger({ silent: true });
    const jobs = await startBuildQueue({
      connection: bullConnectionFactory(config),
      prefix: keys.bullPrefix,
      cron: '30 4 * * *',
      timeZone: 'Asia/Shanghai',
      retryDelayMs: config.buildRetryDelayMs,
      logger,
      metrics: createWorkerMetrics(),
      deps: testBuildDeps({ config, redis, keys }, videos),
    });
    const eventsConnection = bullConnectionFactory(config)();
    const events = new QueueEvents(BUILD_QUEUE, { connection: eventsConnection, prefix: keys.bullPrefix });
    try {
      await events.waitUntilReady();
      const job = await jobs.queue.add('cluster-build', { at: '2026-07-25T01:00:00+08:00' });
      expect(await job.waitUntilFinished(events, 30_000)).toMatchObject({ version: '20260725', status: 'built' });
      expect(await redis.get(keys.current)).toBe('20260725');
    } finally {
      await events.close();
      await jobs.close();
      await eventsConnection.quit();
    }
  });

  clusterIt('when versions are inspected (pnpm cli inspect, the inspector), then every master is scanned', async () => {
    expect((await build('2026-07-24T01:00:00+08:00')).status).toBe('built');
    await request(createApp({ config, redis, mongo }).app).get('/api/app/recommend/vid/list').set(bearer('inspected-user')).expect(200);
    expect((await build('2026-07-25T01:00:00+08:00')).status).toBe('built');
    const store = new BuildStore(redis, keys);
    const pointers = await store.pointers();
    expect(pointers.current).toBe('20260725');
    // Each version's keys live in their own slot, on whichever master owns it: every master is scanned.
    const versions = await store.versions.listVersions();
    expect(versions).toEqual(['20260725', '20260724']);
    const report = await reportVersion(store, '20260724', pointers);
    expect(report).toMatchObject({ version: '20260724', role: ['previous'], queueLength: 60 });
    expect(report.usersWithOffset).toBeGreaterThan(0);
  });

  clusterIt("when a ramp starts, a human changes the rollout and a past version's key is moved, then each is one script over the rollout's slot (no CROSSSLOT)", async () => {
    const environment = { enabled: false, percent: 100 };
    const deps = { redis, keys, environment, trail: auditTrail(mongo, config.redisKeyPrefix), who: { actor: 'oncall', via: 'cli' as const } };
    expect(await startStoredRamp(deps, { steps: [1, 100], dwellMs: 3_600_000 })).toMatchObject({ ok: true, state: { status: 'running' } });
    expect(await observeRollout(redis, keys, environment)).toMatchObject({ enabled: true, percent: 1 });
    await changeRolloutOverRamp(deps, { percent: 40 });
    expect((await readRamp(redis, keys)).state).toMatchObject({ status: 'paused', pause: { cause: 'manual-percent' } });
    await redis.del(keys.ramp);
    await redis.hSet(keys.legacyRamp, { revision: '3', state: '{}' });
    expect(await migrateRampKey(redis, keys)).toBe(true);
    expect(await redis.hGet(keys.ramp, 'revision')).toBe('3');
  });
});
