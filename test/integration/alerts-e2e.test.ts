/**
 * The alerts hold against a real Prometheus (D5): Debian's `prometheus` scrapes both running
 * deployables every second and evaluates infra/observability/alerts.yml every second, with only
 * `for:` shortened to 0 s (the expressions untouched). Under steady feed traffic, a quiet phase
 * fires nothing; then each fault is caused for real and its alert must fire: slow pages (MongoDB
 * answers held), four repairs of the same loss (FeedRepairsNotHolding at the 4th, not the 3rd),
 * a Redis stall (its own redis-server, SIGSTOP), a version older than 26 h (the meta aged),
 * MongoDB gone (the first failed build, and the API's 5xx). The time from fault to firing of
 * each alert is printed.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import mongoose, { type Connection } from 'mongoose';
import { seedVideos } from '@feed/demo-data';
import { connectRedis, createRedisKeys, videoModel, type Redis } from '@feed/storage';
import { freePort, ROOT, startProcess, startRedis, tsx, waitUntil, type Managed } from '../../tools/support/processes';
import { startTestDeployable } from '../support/deployables';
import { bearer } from '../support/feed-fixtures';
import { testMongoUrl } from '../support/mongo';
import { delayingProxy, type DelayingProxy } from '../support/tcp-proxies';

const keys = createRedisKeys('');
const mongoUrl = testMongoUrl('alerts_e2e');
const running: Managed[] = [];
const timings: Record<string, number> = {};
let dir: string;
let redis: Redis;
let redisServer: Managed;
let mongo: Connection;
let mongoProxy: DelayingProxy;
let api: string;
let worker: string;
let prometheus: string;
let traffic: { stop(): Promise<void> } | undefined;

/** Feed reads by a few users in parallel until stopped (errors are answers too: counted by the API). */
function startTraffic(base: string, loops = 2): { stop(): Promise<void> } {
  let stopped = false;
  const loop = async (n: number) => {
    for (let i = 0; !stopped; i++) {
      // Paced, not as fast as the machine allows: the 5 min rates then mean the same on a fast
      // machine and a busy one (unpaced traffic before a fault hid its errors for minutes).
      const pace = new Promise((resolve) => setTimeout(resolve, 200));
      await fetch(`${base}/api/app/recommend/vid/list`, { headers: bearer(`alerts-user-${n}-${i % 50}`), signal: AbortSignal.timeout(5_000) })
        .then((res) => res.arrayBuffer())
        .catch(() => undefined);
      await pace;
    }
  };
  const loops_ = Array.from({ length: loops }, (_, n) => loop(n));
  return {
    stop: async () => {
      stopped = true;
      await Promise.all(loops_);
    },
  };
}

async function firing(): Promise<string[]> {
  const body = (await (await fetch(`${prometheus}/api/v1/alerts`)).json()) as { data: { alerts: Array<{ labels: { alertname: string }; state: string }> } };
  return [...new Set(body.data.alerts.filter((a) => a.state === 'firing').map((a) => a.labels.alertname))].sort();
}

/** Waits for `alert` to fire and records the seconds since `faultAt`. */
async function firesAfter(alert: string, faultAt: number, timeoutMs = 60_000): Promise<void> {
  await waitUntil(`${alert} firing`, async () => (await firing()).includes(alert), timeoutMs);
  timings[alert] = (Date.now() - faultAt) / 1000;
}

/** The worker's feed_repairs_total for `reason`, as it exports it (0 while it has no series). */
async function repairs(reason: string): Promise<number> {
  const text = await (await fetch(`${worker}/metrics`)).text();
  return Number(new RegExp(`^feed_repairs_total\\{reason="${reason}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'alerts-e2e-'));
  const redisPort = await freePort();
  redisServer = await startRedis(redisPort, dir);
  running.push(redisServer);
  redis = await connectRedis({ redisUrl: `redis://127.0.0.1:${redisPort}` });
  mongo = await mongoose.createConnection(mongoUrl).asPromise();
  await seedVideos(videoModel(mongo), { videos: 200, fresh: 10 });
  const target = new URL(mongoUrl);
  mongoProxy = await delayingProxy({ host: target.hostname, port: Number(target.port || 27017) });
  const proxied = new URL(mongoUrl);
  proxied.host = `127.0.0.1:${mongoProxy.port}`;
  // A Redis budget a busy machine meets (the default 250 ms would degrade pages with no fault); a stall still misses it.
  const env = { REDIS_URL: `redis://127.0.0.1:${redisPort}`, REDIS_KEY_PREFIX: '', VIDEO_CACHE_MS: '0', CURRENT_CACHE_MS: '0', BUILD_RETRY_DELAY_MS: '200', REDIS_DEADLINE_MS: '2000' };
  const scope = { prefix: '', mongoUrl: proxied.toString() };
  const [apiDeployable, workerDeployable] = await Promise.all([
    startTestDeployable(tsx('tools/start-one.ts', 'api'), scope, env, { startupMs: 90_000 }),
    startTestDeployable(tsx('tools/start-one.ts', 'worker'), scope, env, { startupMs: 90_000 }),
  ]);
  running.push(apiDeployable.process, workerDeployable.process);
  [api, worker] = [apiDeployable.base, workerDeployable.base];
  // The first start's build, and a warm API (its first requests are slow), before Prometheus looks.
  await waitUntil('a ring page', async () => /^\d{8}$/.test(((await (await fetch(`${api}/api/app/recommend/vid/list`, { headers: bearer('warm-up') })).json()) as { queueVersion: string }).queueVersion), 90_000);
  for (let i = 0; i < 40; i++) await (await fetch(`${api}/api/app/recommend/vid/list`, { headers: bearer(`warm-${i}`) })).arrayBuffer();

  const rules = readFileSync(path.join(ROOT, 'infra/observability/alerts.yml'), 'utf8').replace(/^(\s*)for: \S+$/gm, '$1for: 0s');
  writeFileSync(path.join(dir, 'alerts.yml'), rules);
  const target_ = (base: string) => new URL(base).host;
  writeFileSync(
    path.join(dir, 'prometheus.yml'),
    `global: { scrape_interval: 1s, evaluation_interval: 1s }\nrule_files: [alerts.yml]\nscrape_configs:\n  - job_name: feed\n    static_configs: [{ targets: ['${target_(api)}', '${target_(worker)}'] }]\n`,
  );
  const promPort = await freePort();
  const server = startProcess(['--config.file', path.join(dir, 'prometheus.yml'), '--storage.tsdb.path', path.join(dir, 'tsdb'), '--web.listen-address', `127.0.0.1:${promPort}`], {}, 'prometheus');
  running.push(server);
  prometheus = `http://127.0.0.1:${promPort}`;
  await waitUntil('prometheus ready', () => fetch(`${prometheus}/-/ready`).then((r) => r.ok, () => false), 30_000);
  await waitUntil('both targets up', async () => {
    const body = (await (await fetch(`${prometheus}/api/v1/targets`)).json()) as { data: { activeTargets: Array<{ health: string }> } };
    return body.data.activeTargets.length === 2 && body.data.activeTargets.every((t) => t.health === 'up');
  }, 30_000);
}, 240_000);

afterAll(async () => {
  await traffic?.stop();
  console.log(`alerts e2e, seconds from fault to firing: ${JSON.stringify(timings)}`);
  for (const p of running.reverse()) await p.stop('SIGKILL');
  await redis?.close().catch(() => undefined);
  await mongoProxy?.close().catch(() => undefined);
  await mongo?.dropDatabase();
  await mongo?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('alerts on a real Prometheus (D5)', () => {
  it('when each fault happens for real under traffic, then its alert fires, and none fires without a fault', async () => {
    traffic = startTraffic(api);
    // Quiet: traffic, no fault, 20 evaluations.
    const quietUntil = Date.now() + 20_000;
    const firedWhileQuiet = new Set<string>();
    await waitUntil('the quiet phase over', async () => {
      for (const alert of await firing()) firedWhileQuiet.add(alert);
      return Date.now() > quietUntil;
    }, 40_000);
    expect([...firedWhileQuiet]).toEqual([]);

    // Slow pages: every MongoDB answer held 800 ms.
    mongoProxy.replyDelayMs = 800;
    await firesAfter('FeedApiLatencyP99', Date.now());
    mongoProxy.replyDelayMs = 0;

    // The same loss four times: the current queue deleted, repaired by the controller each time.
    const version = (await redis.get(keys.current))!;
    for (let n = 1; n <= 4; n++) {
      const before = await repairs('queue-incomplete');
      await redis.del(keys.queue(version));
      const lostAt = Date.now();
      await waitUntil(`repair ${n}`, async () => (await repairs('queue-incomplete')) === before + 1 && (await redis.exists(keys.queue(version))) === 1, 60_000);
      if (n === 3) {
        // Three more evaluations after the 3rd repair: still quiet.
        const until = Date.now() + 3_000;
        await waitUntil('three evaluations after the 3rd repair', async () => {
          expect(await firing()).not.toContain('FeedRepairsNotHolding');
          return Date.now() > until;
        }, 10_000);
      }
      if (n === 4) await firesAfter('FeedRepairsNotHolding', lostAt);
    }

    // A Redis stall under traffic: its own server stopped, then resumed.
    const stalledAt = Date.now();
    redisServer.child.kill('SIGSTOP');
    try {
      // Each stalled request takes its whole Redis deadline: few requests a second reach the rates.
      await firesAfter('FeedRedisFailures', stalledAt, 150_000);
      await firesAfter('FeedDegradedSustained', stalledAt, 150_000);
    } finally {
      redisServer.child.kill('SIGCONT');
    }

    // No switch for 27 h: the current meta's switch time aged (the worker reads it at each scrape).
    await redis.hSet(keys.meta(version), 'switchedAt', new Date(Date.now() - 27 * 3600_000).toISOString());
    await firesAfter('FeedNoVersionSwitch', Date.now());

    // MongoDB gone: the next build (a repair of the deleted queue) fails, and the API answers 5xx.
    await mongoProxy.close();
    const goneAt = Date.now();
    await redis.del(keys.queue(version));
    await firesAfter('FeedBuildFailed', goneAt, 90_000);
    await firesAfter('FeedApiErrorRate', goneAt);
  }, 400_000);
});
