/**
 * Scrapes and probes that never hang (SPEC R17 end): the API and the worker as processes over a
 * Redis and an embedded MongoDB of the test's own, each frozen in turn with SIGSTOP. Every
 * `/metrics` of both answers within 1 s and says the store is down (`feed_dependency_up` 0; the
 * worker's build gauges keep their last values, `feed_build_meta_up` 0); `/readyz`, sampled every
 * 0.5 s and logged, stays in rotation while a store is down for a moment and acts once it has
 * failed for a few seconds (FAILING_AFTER_MS).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { demoVideo } from '@feed/demo-data';
import { versionFor } from '@feed/domain';
import { closeRedis, connectMongo, connectRedis, createRedisKeys, FAILING_AFTER_MS, videoModel, type MongoHandle, type Redis } from '@feed/storage';
import { freePort, startMongoProcess, startRedis, tsx, waitUntil, type Managed } from '../../tools/support/processes';
import { publishQueue } from '../support/feed-fixtures';
import { startTestDeployable, type TestDeployable } from '../support/deployables';

const SCRAPE_BOUND_MS = 1_000;
/** How long each store stays frozen: past FAILING_AFTER_MS, so readiness acts before it resumes. */
const FREEZE_MS = FAILING_AFTER_MS + 2_000;
const prefix = `sstall:${randomBytes(3).toString('hex')}:`;
const keys = createRedisKeys(prefix);
const VERSION = versionFor(new Date(), 'Asia/Shanghai');

let dir: string;
let redisServer: Managed;
let mongoServer: Managed;
let mongo: MongoHandle;
let client: Redis;
let api: TestDeployable;
let worker: TestDeployable;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'feed-scrape-stall-'));
  const [redisPort, mongoPort] = [await freePort(), await freePort()];
  [redisServer, mongoServer] = await Promise.all([startRedis(redisPort, dir), startMongoProcess(mongoPort)]);
  const scope = { redisUrl: `redis://127.0.0.1:${redisPort}`, mongoUrl: `mongodb://127.0.0.1:${mongoPort}/scrape_stall`, prefix };
  mongo = await connectMongo({ mongoUrl: scope.mongoUrl });
  const ids = (await videoModel(mongo.connection).insertMany(Array.from({ length: 40 }, () => demoVideo({ reviewAt: new Date('2026-07-30T00:00:00Z') })))).map((d) => d._id.toHexString());
  client = await connectRedis({ redisUrl: scope.redisUrl });
  await publishQueue(client, keys, VERSION, ids);
  await client.sAdd(keys.legacyIds, ids);
  await client.hSet(keys.meta(VERSION), { finalCount: '40' });
  [api, worker] = await Promise.all([
    startTestDeployable(tsx('apps/api/src/main.ts'), scope, { LOG_LEVEL: 'error' }, { until: '/readyz', startupMs: 120_000 }),
    startTestDeployable(tsx('apps/worker/src/main.ts'), scope, { LOG_LEVEL: 'error' }, { until: '/readyz', startupMs: 120_000 }),
  ]);
}, 180_000);

afterAll(async () => {
  for (const server of [redisServer, mongoServer]) if (server?.child.signalCode === null) server.child.kill('SIGCONT');
  await Promise.all([api?.process.stop('SIGKILL'), worker?.process.stop('SIGKILL')]);
  await Promise.all([client && closeRedis(client), mongo?.close()]);
  await Promise.all([redisServer?.stop('SIGKILL'), mongoServer?.stop('SIGKILL')]);
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 30_000);

/** A gauge's value in a scrape (`name{labels} value`), NaN when absent. */
const sample = (text: string, series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);

async function scrape(base: string) {
  const started = performance.now();
  const res = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(30_000) });
  return { status: res.status, text: await res.text(), ms: Math.round(performance.now() - started) };
}

async function ready(base: string) {
  const res = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(30_000) });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

/**
 * Freezes `server` for FREEZE_MS; every 0.5 s meanwhile scrapes both deployables and asks their
 * readiness, all printed; resumes it. What each sample saw, by ms since the freeze.
 */
async function frozen(server: Managed, store: 'redis' | 'mongo') {
  const samples: Array<{ at: number; api: Awaited<ReturnType<typeof scrape>>; worker: Awaited<ReturnType<typeof scrape>>; apiReady: Awaited<ReturnType<typeof ready>>; workerReady: Awaited<ReturnType<typeof ready>> }> = [];
  server.child.kill('SIGSTOP');
  const frozenAt = performance.now();
  try {
    while (performance.now() - frozenAt < FREEZE_MS) {
      const tickAt = performance.now();
      const [a, w, ar, wr] = await Promise.all([scrape(api.base), scrape(worker.base), ready(api.base), ready(worker.base)]);
      samples.push({ at: Math.round(tickAt - frozenAt), api: a, worker: w, apiReady: ar, workerReady: wr });
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 500 - (performance.now() - tickAt))));
    }
  } finally {
    server.child.kill('SIGCONT');
  }
  for (const s of samples) {
    console.log(`${store} frozen +${s.at} ms: /metrics api ${s.api.status} in ${s.api.ms} ms (up ${sample(s.api.text, `feed_dependency_up{dependency="${store}"}`)}), worker ${s.worker.status} in ${s.worker.ms} ms (up ${sample(s.worker.text, `feed_dependency_up{dependency="${store}"}`)}); /readyz api ${s.apiReady.status} ${JSON.stringify(s.apiReady.body)}, worker ${s.workerReady.status} ${JSON.stringify(s.workerReady.body)}`);
  }
  return samples;
}

describe('scrapes and probes with a store frozen', () => {
  it('when Redis is frozen, then both /metrics answer within 1 s saying so, the worker keeps its build gauges marked stale, the API stays ready (degraded) and the worker leaves rotation only after FAILING_AFTER_MS', async () => {
    const before = await scrape(worker.base);
    expect([sample(before.text, 'feed_build_meta_up'), sample(before.text, 'feed_build_queue_length')]).toEqual([1, 40]);
    const samples = await frozen(redisServer, 'redis');
    for (const s of samples) expect([s.at, s.api.status, s.worker.status, s.api.ms < SCRAPE_BOUND_MS, s.worker.ms < SCRAPE_BOUND_MS]).toEqual([s.at, 200, 200, true, true]);
    const last = samples.at(-1)!;
    expect([sample(last.api.text, 'feed_dependency_up{dependency="redis"}'), sample(last.worker.text, 'feed_dependency_up{dependency="redis"}')]).toEqual([0, 0]);
    expect([sample(last.worker.text, 'feed_build_meta_up'), sample(last.worker.text, 'feed_build_queue_length')]).toEqual([0, 40]);
    expect(samples.every((s) => s.apiReady.status === 200)).toBe(true);
    expect(samples.filter((s) => s.at < FAILING_AFTER_MS - 1_000).every((s) => s.workerReady.status === 200)).toBe(true);
    expect(last.workerReady).toEqual({ status: 503, body: { status: 'unavailable', redis: 'down', mongo: 'ok' } });
    await waitUntil('both deployables see Redis again', async () => {
      const [a, w] = await Promise.all([scrape(api.base), scrape(worker.base)]);
      return sample(a.text, 'feed_dependency_up{dependency="redis"}') === 1 && sample(w.text, 'feed_build_meta_up') === 1 && (await ready(worker.base)).status === 200;
    }, 15_000);
  }, 60_000);

  it('when MongoDB is frozen, then both /metrics answer within 1 s saying so, and both stay ready until it has failed for FAILING_AFTER_MS', async () => {
    const samples = await frozen(mongoServer, 'mongo');
    for (const s of samples) expect([s.at, s.api.status, s.worker.status, s.api.ms < SCRAPE_BOUND_MS, s.worker.ms < SCRAPE_BOUND_MS]).toEqual([s.at, 200, 200, true, true]);
    const last = samples.at(-1)!;
    expect([sample(last.api.text, 'feed_dependency_up{dependency="mongo"}'), sample(last.worker.text, 'feed_dependency_up{dependency="mongo"}')]).toEqual([0, 0]);
    const early = samples.filter((s) => s.at < FAILING_AFTER_MS - 1_000);
    expect(early.length).toBeGreaterThan(0);
    expect(early.every((s) => s.apiReady.status === 200 && s.workerReady.status === 200)).toBe(true);
    expect([last.apiReady.status, last.apiReady.body.status, last.apiReady.body.mongo, last.workerReady.status]).toEqual([503, 'unavailable', 'down', 503]);
    await waitUntil('both ready after MongoDB resumed', async () => (await ready(api.base)).status === 200 && (await ready(worker.base)).status === 200, 15_000);
  }, 60_000);
});
