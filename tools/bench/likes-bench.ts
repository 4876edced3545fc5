/**
 * `pnpm bench likes [--users U] [--rounds N]`: the reliability suite's toggles burst (issue 49)
 * against the API process (production, LOG_LEVEL=info, MONGO_DEADLINE_MS=1000, pool 100/100) and
 * against a limit server (likes-limit-server.ts: a bare upsert and `$inc`), on the embedded
 * MongoDB in a process of its own. Each round: U users at once on one video, each a like; an
 * unlike and a like together; a like; every other user an unlike. Prints per server its
 * process's CPU microseconds per request (/proc, user + system), the MongoDB process's, and p50/p99.
 * BENCH_CPU_PROF=<dir> runs the API under --cpu-prof, and the MongoDB process too (in <dir>/mongo).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import jwt from 'jsonwebtoken';
import { isEligible } from '@feed/domain';
import { seedVideos } from '@feed/demo-data';
import { videoModel } from '@feed/storage';
import { freePort, startMongoProcess, startProcess, tsx, waitUntil, type Managed } from '../support/processes';
import { percentile } from '../support/percentile';
import { toggleBurst } from '../support/toggle-burst';
import { argValue, benchStores } from './support';

const SECRET = randomBytes(24).toString('hex');

/** A process's CPU time so far (user + system), in microseconds, from /proc (clock ticks of 10 ms). */
const cpuUs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
};

/** One round of the toggles burst by `users` distinct users on `vid`: latencies and statuses. */
async function burst(base: string, vid: string, users: string[]) {
  const latencies: number[] = [];
  let not2xx = 0;
  // One token per user, signed before the round, as an app holds its token: signing a new one per
  // request (a new `iat` each second) made the API verify about half the requests' tokens anew.
  const tokens = new Map(users.map((user) => [user, jwt.sign({ sub: user }, SECRET, { algorithm: 'HS256', expiresIn: '1h' })]));
  const tap = async (user: string, action: 'like' | 'unlike') => {
    const started = performance.now();
    const res = await fetch(`${base}/api/app/vid/${action}`, { method: 'POST', headers: { Authorization: `Bearer ${tokens.get(user)!}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ vid }) }).catch(() => null);
    await res?.arrayBuffer();
    latencies.push(performance.now() - started);
    if (!res || res.status >= 300) not2xx++;
  };
  await toggleBurst(users, tap);
  return { latencies: latencies.sort((a, b) => a - b), not2xx };
}

async function measure(name: string, server: Managed, mongo: Managed, base: string, vid: string, users: number, rounds: number) {
  await burst(base, vid, Array.from({ length: users }, (_, i) => `${name}-warm-${i}`));
  const cpuBefore = cpuUs(server.child.pid!);
  const mongoBefore = cpuUs(mongo.child.pid!);
  const all: number[] = [];
  let not2xx = 0;
  for (let round = 0; round < rounds; round++) {
    const r = await burst(base, vid, Array.from({ length: users }, (_, i) => `${name}-${round}-${i}-${randomBytes(3).toString('hex')}`));
    all.push(...r.latencies);
    not2xx += r.not2xx;
    console.log(`${name} round ${round}: ${r.latencies.length} requests, not 2xx ${r.not2xx}, p50 ${percentile(r.latencies, 50).toFixed(0)} ms, p99 ${percentile(r.latencies, 99).toFixed(0)} ms`);
  }
  const perRequest = (cpuUs(server.child.pid!) - cpuBefore) / all.length;
  const mongoPerRequest = (cpuUs(mongo.child.pid!) - mongoBefore) / all.length;
  all.sort((a, b) => a - b);
  return { perRequest, mongoPerRequest, p50: percentile(all, 50), p99: percentile(all, 99), not2xx };
}

export async function runLikesBench(): Promise<void> {
  const users = Number(argValue('users', '200'));
  const rounds = Number(argValue('rounds', '3'));
  // The embedded MongoDB started here, not by benchStores: its process's CPU is measured too.
  const mongoPort = await freePort();
  const profiles = process.env.BENCH_CPU_PROF;
  const profile = (dir: string | undefined) => (dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : []);
  const mongo = await startMongoProcess(mongoPort, profile(profiles && `${profiles}/mongo`));
  process.env.MONGO_URL = `mongodb://127.0.0.1:${mongoPort}/likes`;
  const { mongoUri, connection, prefix, close } = await benchStores();
  const servers: Managed[] = [];
  try {
    const videos = videoModel(connection);
    await videos.init();
    await seedVideos(videos, { videos: 200, fresh: 10 });
    const vid = String((await videos.find().limit(100).lean()).find((v) => isEligible(v))!._id);
    const [apiPort, limitPort] = [await freePort(), await freePort()];
    const env = { NODE_ENV: 'production', LOG_LEVEL: 'info', AUTH_JWT_SECRET: SECRET, ADMIN_PASSWORD: randomBytes(24).toString('hex'), MONGO_URL: mongoUri, REDIS_KEY_PREFIX: prefix, MONGO_DEADLINE_MS: '1000', MONGO_MIN_POOL_SIZE: '100', MONGO_MAX_POOL_SIZE: '100', NEW_DEVICES_PER_ADDRESS: '1000000' };
    const api = startProcess([...profile(profiles), ...tsx('apps/api/src/main.ts')], { ...env, PORT: String(apiPort) });
    servers.push(api);
    const limit = startProcess(tsx('tools/bench/likes-limit-server.ts'), { ...env, PORT: String(limitPort) });
    servers.push(limit);
    await waitUntil('the API ready', () => fetch(`http://127.0.0.1:${apiPort}/readyz`).then((r) => r.ok, () => false), 60_000);
    await waitUntil('the limit server', async () => limit.output.join('').includes('listening'), 60_000);
    console.log(`${users} users a round, ${rounds} rounds after one unmeasured, ${users * 4.5} requests a round`);
    const results = [] as Array<[string, Awaited<ReturnType<typeof measure>>]>;
    for (const [name, port, server] of [['api', apiPort, api], ['limit', limitPort, limit]] as const) results.push([name, await measure(name, server, mongo, `http://127.0.0.1:${port}`, vid, users, rounds)]);
    for (const [name, r] of results) console.log(`${name}: cpu_us_per_request=${r.perRequest.toFixed(0)} mongo_cpu_us_per_request=${r.mongoPerRequest.toFixed(0)} p50=${r.p50.toFixed(0)} ms p99=${r.p99.toFixed(0)} ms not_2xx=${r.not2xx}`);
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await close();
    await mongo.stop();
  }
}
