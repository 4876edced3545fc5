import { randomBytes } from 'node:crypto';
/**
 * `pnpm bench api [--seconds S] [--connections C] [--users U]`: req/s and p50/p99 of an Express
 * hello-world route, the legacy random feed and the ring feed, served by one process with the
 * same data and Redis, with many distinct users (plus hello-world sending a feed-sized body). Last line: `ring/legacy=<x> ring/hello=<y>`.
 */
import autocannon from 'autocannon';
import jwt from 'jsonwebtoken';
import mongoose from 'mongoose';
import { createLogger } from '@feed/logger';
import { videoModel } from '@feed/storage';
import { seedVideos } from '@feed/demo-data';
import { runDailyBuild } from '@feed/worker';
import { startProcess, tsx, waitUntil, type Managed } from '../support/processes';
import { argValue, benchMongo, benchRedis } from './support';

// Production refuses published or short secrets (D2): private ones per run.
const SECRET = randomBytes(24).toString('hex');

interface Result {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
}

async function load(name: string, url: string, tokens: string[], seconds: number, connections: number): Promise<Result> {
  let next = 0;
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${tokens[next++ % tokens.length]}` } }) }],
  });
  return { name, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx + result.errors };
}

export async function runApiBench(): Promise<void> {
  const seconds = Number(argValue('seconds', '10'));
  const connections = Number(argValue('connections', '50'));
  const users = Number(argValue('users', '10000'));
  const mongo = await benchMongo();
  const { redis, prefix, keys, cleanup } = await benchRedis();
  const connection = await mongoose.createConnection(mongo.uri).asPromise();
  let server: Managed | undefined;
  try {
    const videos = videoModel(connection);
    await videos.init();
    await seedVideos(videos, { videos: 5000, fresh: 100 });
    await runDailyBuild({ redis, keys, videos, logger: createLogger({ silent: true }), businessTimeZone: 'Asia/Shanghai', keyTtlHours: 1, lockTtlMs: 60_000 });

    const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
    server = startProcess([...profile, ...tsx('tools/bench/api-server.ts')], {
      NODE_ENV: 'production',
      LOG_LEVEL: 'error',
      MONGO_URL: mongo.uri,
      REDIS_KEY_PREFIX: prefix,
      AUTH_JWT_SECRET: SECRET,
      ADMIN_PASSWORD: randomBytes(24).toString('hex'),
    });
    const output = () => server!.output.join('');
    await waitUntil('bench server', async () => /listening \d+/.test(output()), 30_000);
    const port = Number(/listening (\d+)/.exec(output())![1]);
    const tokens = Array.from({ length: users }, (_, i) => jwt.sign({ sub: `bench-user-${i}` }, SECRET, { algorithm: 'HS256' }));
    const base = `http://127.0.0.1:${port}`;
    // Warm-up: script cache, video cache, JIT.
    await load('warmup', `${base}/api/app/recommend/vid/list`, tokens, 2, connections);

    const routes: Array<[string, string]> = [
      ['hello', '/hello'],
      ['hello-page', '/hello-page'],
      ['legacy', '/legacy/api/app/recommend/vid/list'],
      ['ring', '/api/app/recommend/vid/list'],
    ];
    // --only ring (for profiling one route) runs just that one.
    const only = argValue('only');
    const results: Result[] = [];
    for (const [name, route] of routes) if (!only || only === name) results.push(await load(name, `${base}${route}`, tokens, seconds, connections));
    if (only) {
      for (const r of results) console.log(`${r.name} ${r.rps.toFixed(0)} req/s p50 ${r.p50} ms p99 ${r.p99} ms`);
      return;
    }
    console.log(`${seconds} s each, ${connections} connections, ${users} distinct users, 20 videos per page`);
    console.log('route        req/s   p50 ms  p99 ms  non-2xx');
    for (const r of results) console.log(`${r.name.padEnd(10)} ${r.rps.toFixed(0).padStart(7)}  ${String(r.p50).padStart(6)}  ${String(r.p99).padStart(6)}  ${r.non2xx}`);
    const [hello, helloPage, legacy, ring] = results;
    console.log(`ring/hello-page=${(ring.rps / helloPage.rps).toFixed(2)} (hello-page: the hello route sending a feed-sized body)`);
    console.log(`ring/legacy=${(ring.rps / legacy.rps).toFixed(2)} ring/hello=${(ring.rps / hello.rps).toFixed(2)}`);
  } finally {
    await server?.stop();
    await connection.close();
    await cleanup();
    mongo.stop();
  }
}
