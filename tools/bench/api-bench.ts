/**
 * `pnpm bench api [--seconds S] [--connections C] [--users U] [--pairs N] [--warmup S] [--only ROUTE] [--cluster-users N] [--no-cluster]`:
 * req/s and p50/p99 of an Express hello-world route, the legacy random feed, then N rounds of the
 * ring feed, its limit route and hello-world sending the same page, served by one process with the
 * same data and Redis, with many distinct users; each round's ratios (of req/s, and of the API
 * process's CPU per request: limit/ring) and their medians; then the
 * ring on a 3-master Redis Cluster (R22). Last line:
 * `cluster: hottest_master=<pct> switch_hottest_master=<pct> offsets_b_per_user=<b> ring/limit=<x> ring/hello-page=<y>`
 * (the medians of the one-Redis run).
 */
import { randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import mongoose from 'mongoose';
import { createClient } from 'redis';
import { loadConfig } from '@feed/config';
import { connectRedis, createRedisKeys, offsetBucketKeys, videoModel, type Redis, type RedisKeys, type VideoModel } from '@feed/storage';
import { seedVideos } from '@feed/demo-data';
import { freePort, startProcess, tsx, waitUntil, type Managed } from '../support/processes';
import { startLocalCluster } from '../../test/support/redis-cluster';
import { argValue, benchApiEnv, benchStores, buildBenchVersion, loadWithTokens } from './support';

// Production refuses published or short secrets (D2): private ones per run.
const ROUTES = { hello: '/hello', 'hello-page': '/hello-page', limit: '/limit', legacy: '/legacy/api/app/recommend/vid/list', ring: '/api/app/recommend/vid/list' };
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const SECRET = randomBytes(24).toString('hex');

/** The API process's CPU time so far, in microseconds (its /cpu route). */
const cpuOf = async (url: string) => ((usage: NodeJS.CpuUsage) => usage.user + usage.system)((await (await fetch(`${new URL(url).origin}/cpu`)).json()) as NodeJS.CpuUsage);

/**
 * req/s and latency of `url`, and the API process's CPU microseconds per request: on a loaded
 * machine the rate follows what other processes leave free, the CPU a request costs much less.
 */
async function load(name: string, url: string, tokens: string[], seconds: number, connections: number) {
  const cpuBefore = await cpuOf(url);
  const result = await loadWithTokens(url, tokens, seconds, connections);
  const cpuUs = (await cpuOf(url)) - cpuBefore;
  return { name, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx + result.errors, cpuUs: cpuUs / result.requests.total };
}

export async function runApiBench(): Promise<void> {
  const seconds = Number(argValue('seconds', '10'));
  const connections = Number(argValue('connections', '50'));
  const users = Number(argValue('users', '10000'));
  const { mongoUri, connection, redis, prefix, keys, close } = await benchStores();
  let server: Managed | undefined;
  try {
    const videos = videoModel(connection);
    await videos.init();
    await seedVideos(videos, { videos: 5000, fresh: 100 });
    await buildBenchVersion(redis, keys, videos);

    const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
    server = await startBenchServer(benchApiEnv(SECRET, { MONGO_URL: mongoUri, REDIS_KEY_PREFIX: prefix }), profile);
    const tokens = Array.from({ length: users }, (_, i) => jwt.sign({ sub: `bench-user-${i}` }, SECRET, { algorithm: 'HS256' }));
    const base = baseOf(server);
    // Warm-up: script cache, video cache, JIT; `--warmup S` long enough for every user's token to be verified once (a profile of steady traffic).
    await load('warmup', `${base}/api/app/recommend/vid/list`, tokens, Number(argValue('warmup', '2')), connections);

    const url = (route: string) => `${base}${route}`;
    // --only ring (for profiling one route) runs just that one.
    const only = argValue('only');
    if (only) {
      const r = await load(only, url(ROUTES[only as keyof typeof ROUTES]), tokens, seconds, connections);
      console.log(`${r.name} ${r.rps.toFixed(0)} req/s p50 ${r.p50} ms p99 ${r.p99} ms`);
      return;
    }
    console.log(`${seconds} s a route, ${connections} connections, ${users} distinct users, 20 videos per page`);
    console.log('route        req/s   p50 ms  p99 ms  non-2xx  API CPU us/req');
    const show = (r: Awaited<ReturnType<typeof load>>) => console.log(`${r.name.padEnd(10)} ${r.rps.toFixed(0).padStart(7)}  ${String(r.p50).padStart(6)}  ${String(r.p99).padStart(6)}  ${String(r.non2xx).padStart(7)}  ${r.cpuUs.toFixed(0).padStart(14)}`);
    const once = async (name: keyof typeof ROUTES) => {
      // One unmeasured second first: the video cache (VIDEO_CACHE_MS) is as warm as continuous traffic keeps it.
      await load('warmup', url(ROUTES[name]), tokens, 1, connections);
      const r = await load(name, url(ROUTES[name]), tokens, seconds, connections);
      show(r);
      return r;
    };
    const [hello, legacy] = [await once('hello'), await once('legacy')];
    // Rounds of ring, limit and hello-page back to back: a machine's changing load moves the three
    // alike, so each round's ratios hold better than rates measured minutes apart.
    const toLimit: number[] = [];
    const toPage: number[] = [];
    const cpuToLimit: number[] = [];
    for (let round = 1; round <= Number(argValue('pairs', '5')); round++) {
      const [ring, limit, page] = [await once('ring'), await once('limit'), await once('hello-page')];
      toLimit.push(ring.rps / limit.rps);
      toPage.push(ring.rps / page.rps);
      cpuToLimit.push(limit.cpuUs / ring.cpuUs);
      console.log(`round ${round}: ring/limit=${toLimit.at(-1)!.toFixed(2)} ring/hello-page=${toPage.at(-1)!.toFixed(2)} ring/legacy=${(ring.rps / legacy.rps).toFixed(2)} ring/hello=${(ring.rps / hello.rps).toFixed(2)} cpu limit/ring=${cpuToLimit.at(-1)!.toFixed(2)}`);
    }
    const ratios = `ring/limit=${median(toLimit).toFixed(2)} ring/hello-page=${median(toPage).toFixed(2)} cpu limit/ring=${median(cpuToLimit).toFixed(2)}`;
    console.log(`median of ${toLimit.length} rounds: ${ratios} (limit: request id, CORS, error handler, one EVALSHA of 20 ids, the same body; hello-page: the same body alone)`);
    await server.stop();
    server = undefined;
    if (process.argv.includes('--no-cluster')) return;
    const cluster = await clusterRun(mongoUri, Number(argValue('cluster-users', '4000')));
    console.log(`cluster: hottest_master=${cluster.hottestPct.toFixed(0)}% switch_hottest_master=${cluster.switchHottestPct.toFixed(0)}% offsets_b_per_user=${cluster.offsetBytesPerUser.toFixed(1)} ${ratios}`);
  } finally {
    await server?.stop();
    await close();
  }
}

/** API processes on the cluster at the switch moment: the queue copy is loaded once per instance. */
const SWITCH_INSTANCES = 3;
/** Seconds of reads measured after the switch: CURRENT_CACHE_MS (2 s) plus the preload jitter (5 s) plus slack. */
const SWITCH_WINDOW_S = 10;
/** Commands of the daily build, not of the read path: left out of the switch window's figures. */
const BUILD_COMMANDS = new Set(['rpush', 'del', 'unlink', 'rename', 'hset', 'set', 'expire', 'sadd', 'pexpire', 'eval', 'script']);

/** api-server.ts in a process of its own (`nodeArgs` before it, e.g. a profiler's), once it listens. */
async function startBenchServer(env: Record<string, string>, nodeArgs: string[] = []): Promise<Managed> {
  const server = startProcess([...nodeArgs, ...tsx('tools/bench/api-server.ts')], { BENCH_PORT: String(await freePort()), ...env });
  await waitUntil('bench server', async () => /listening \d+/.test(server.output.join('')), 30_000);
  return server;
}

const baseOf = (server: Managed) => `http://127.0.0.1:${/listening (\d+)/.exec(server.output.join(''))![1]}`;

const clusterPage = (base: string, user: string) =>
  fetch(`${base}/api/app/recommend/vid/list`, { headers: { authorization: `Bearer ${jwt.sign({ sub: user }, SECRET, { algorithm: 'HS256' })}` } }).then((r) => r.arrayBuffer());

/** Per read command (`cmdstat_<name>`): calls and usec, from INFO commandstats. */
function readCommandStats(info: string): Map<string, { calls: number; usec: number }> {
  const stats = new Map<string, { calls: number; usec: number }>();
  for (const m of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+),usec=(\d+),/g)) if (!BUILD_COMMANDS.has(m[1])) stats.set(m[1], { calls: Number(m[2]), usec: Number(m[3]) });
  return stats;
}

/**
 * R22 at the daily switch (issue 32, item 5): SWITCH_INSTANCES API processes serve steady reads
 * while the next day's version is built and switched; from the switch on, every master's read
 * commands (the build's own writes left out) are summed over SWITCH_WINDOW_S, and the LRANGE
 * calls (the queue copies' loads, which all go to the master owning `{V}`) are counted with the
 * second they ran in. Returns the busiest master's share of the read CPU in that window.
 */
async function switchMoment(redis: Redis, keys: RedisKeys, videos: VideoModel, masters: Array<ReturnType<typeof createClient>>, bases: string[]): Promise<number> {
  let stop = false;
  let pages = 0;
  const readers = Array.from({ length: 30 }, async (_, i) => {
    for (let n = 0; !stop; n++) {
      await clusterPage(bases[i % bases.length], `switch-user-${i}-${n % 200}`);
      pages++;
    }
  });
  const tomorrow = new Date(Date.now() + 24 * 3600_000);
  await buildBenchVersion(redis, keys, videos, { at: tomorrow, switch: true });
  await Promise.all(masters.map((m) => m.configResetStat()));
  const lrangeBySecond: number[][] = masters.map(() => []);
  for (let second = 0; second < SWITCH_WINDOW_S; second++) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const stats = await Promise.all(masters.map(async (m) => readCommandStats(await m.info('commandstats'))));
    stats.forEach((s, i) => lrangeBySecond[i].push(s.get('lrange')?.calls ?? 0));
  }
  stop = true;
  await Promise.all(readers);
  const stats = await Promise.all(masters.map(async (m) => readCommandStats(await m.info('commandstats'))));
  const usec = stats.map((s) => [...s.values()].reduce((sum, c) => sum + c.usec, 0));
  const total = usec.reduce((a, b) => a + b, 0);
  console.log(`switch: ${bases.length} API instances, ${pages} pages in the ${SWITCH_WINDOW_S} s after the switch; read CPU per master ${usec.map((x) => `${((100 * x) / total).toFixed(0)}%`).join(' ')} (${(total / 1000).toFixed(0)} ms)`);
  // Cumulative LRANGE calls per master at the end of each second: when the copies loaded, and where.
  masters.forEach((_, i) => console.log(`switch: master ${i + 1} LRANGE calls by second ${lrangeBySecond[i].join(' ')} (${((stats[i].get('lrange')?.usec ?? 0) / 1000).toFixed(1)} ms of its CPU)`));
  return (100 * Math.max(...usec)) / total;
}

/** Sum of the `usec` of every command in INFO commandstats: the Redis CPU a master spent. */
const commandUsec = (info: string) => [...info.matchAll(/usec=(\d+),/g)].reduce((sum, m) => sum + Number(m[1]), 0);

/**
 * R22 on a real 3-master Redis Cluster started here (as the tests start it): one API process,
 * `users` distinct users reading 3 pages each, 50 at a time. Reports the share of the read
 * path's Redis CPU (commandstats usec) on the busiest master, and the Redis memory of the
 * offsets per user (MEMORY USAGE of every offset bucket).
 */
async function clusterRun(mongoUri: string, users: number): Promise<{ hottestPct: number; offsetBytesPerUser: number; switchHottestPct: number }> {
  const cluster = await startLocalCluster(7300 + (process.pid % 50) * 3);
  const redis = await connectRedis(loadConfig({ NODE_ENV: 'test', REDIS_CLUSTER_NODES: cluster.nodes.join(',') }));
  const prefix = `bench:${randomBytes(3).toString('hex')}:`;
  const connection = await mongoose.createConnection(mongoUri).asPromise();
  const masters = cluster.nodes.map((node) => createClient({ url: `redis://${node}` }));
  const keys = createRedisKeys(prefix);
  let server: Managed | undefined;
  const extra: Managed[] = [];
  try {
    await Promise.all(masters.map((m) => m.connect()));
    const built = await buildBenchVersion(redis, keys, videoModel(connection));
    const apiEnv = benchApiEnv(SECRET, { MONGO_URL: mongoUri, REDIS_CLUSTER_NODES: cluster.nodes.join(','), REDIS_KEY_PREFIX: prefix });
    server = await startBenchServer(apiEnv);
    const base = baseOf(server);
    const page = (user: number) => clusterPage(base, `cluster-user-${user}`);
    // One warm-up page (script cache, the queue copy) by a user of its own, then the measured reads.
    await page(-1);
    await waitUntil('the queue copy loaded', async () => /feed_queue_copy_loads_total [1-9]/.test(await (await fetch(`${base}/metrics`)).text()), 30_000);
    await Promise.all(masters.map((m) => m.configResetStat()));
    for (let round = 0; round < 3; round++) {
      for (let u = 0; u < users; u += 50) await Promise.all(Array.from({ length: Math.min(50, users - u) }, (_, i) => page(u + i)));
    }
    const usec = await Promise.all(masters.map(async (m) => commandUsec(await m.info('commandstats'))));
    // The offsets' memory: MEMORY USAGE of every offset bucket of the version read (key, value and
    // its entry in the keyspace; the bucket's expiry entry, ~32 B a bucket, is not counted), each
    // asked of the master that holds it. used_memory before and after moves by the clients'
    // buffers as much as by 100 KB of offsets.
    let offsets = 0;
    for (const key of offsetBucketKeys(keys, built.meta!)) offsets += Number(await redis.memoryUsage(key, { SAMPLES: 0 }));
    const total = usec.reduce((a, b) => a + b, 0);
    console.log(`cluster: ${users} users x 3 pages on ${cluster.nodes.length} masters; Redis CPU per master ${usec.map((x) => `${((100 * x) / total).toFixed(0)}%`).join(' ')} (${(total / 1000).toFixed(0)} ms in all)`);
    const instances = [server, ...(await Promise.all(Array.from({ length: SWITCH_INSTANCES - 1 }, () => startBenchServer(apiEnv))))];
    extra.push(...instances.slice(1));
    const switched = await switchMoment(redis, keys, videoModel(connection), masters, instances.map(baseOf));
    return { hottestPct: (100 * Math.max(...usec)) / total, offsetBytesPerUser: offsets / users, switchHottestPct: switched };
  } finally {
    await Promise.all(extra.map((s) => s.stop()));
    await server?.stop();
    await Promise.all(masters.map((m) => m.quit().catch(() => undefined)));
    await redis.close();
    await connection.close();
    await cluster.stop();
  }
}
