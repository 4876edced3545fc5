/**
 * A frozen MongoDB (SPEC R17 end, R11, C): the embedded server as a process of the test's own,
 * stopped with SIGSTOP (a primary frozen by a disk or a VM pause). Every MongoDB wait of a request
 * ends within MONGO_DEADLINE_MS: each answer arrives while the server is still stopped (SIGCONT
 * comes after every answer, so a request that waited for the stall would never be answered), a
 * page that could not be completed gives its claimed positions back, HEAD answers GET's status,
 * and documents the instance holds are still served. Redis is a private server with an ACL user,
 * a password and TLS (the standalone topology with both on, issue 51 part 1); /readyz is logged
 * every 0.5 s during the first stall.
 */
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { createApp } from '@feed/api';
import { loadConfig } from '@feed/config';
import { demoVideo } from '@feed/demo-data';
import { closeRedis, connectMongo, connectRedis, createRedisKeys, deleteKeysWithPrefix, videoModel, type MongoHandle, type Redis } from '@feed/storage';
import { freePort, startMongoProcess, waitUntil, type Managed } from '../../tools/support/processes';
import { bearer, offsetOf, publishQueue, setOffset } from '../support/feed-fixtures';
import { sampleReadiness } from '../support/page-readers';
import { secureEnv, secureRedis, startSecureRedis, type SecureRedis } from '../support/redis-tls';

const VERSION = '20260801';
const MONGO_DEADLINE_MS = 500;
/** The stall the issue measured (every page waited it whole): each answer must come well before. */
const STALL_MS = 5_000;
const prefix = `mstall:${randomBytes(3).toString('hex')}:`;
const keys = createRedisKeys(prefix);

let mongoServer: Managed;
let secure: SecureRedis;
let redisServer: Awaited<ReturnType<typeof startSecureRedis>>;
let mongo: MongoHandle;
let redis: Redis;
let client: Redis;
let api: Server;
let base: string;
let ids: string[];
let admin: Record<string, string>;

beforeAll(async () => {
  const port = await freePort();
  mongoServer = await startMongoProcess(port);
  const mongoUrl = `mongodb://127.0.0.1:${port}/mongo_stall`;
  secure = secureRedis('mongo-stall-redis-secret');
  redisServer = await startSecureRedis(secure);
  const config = loadConfig({
    NODE_ENV: 'test',
    MONGO_URL: mongoUrl,
    REDIS_URL: redisServer.url,
    ...secureEnv(secure),
    REDIS_KEY_PREFIX: prefix,
    MONGO_DEADLINE_MS: String(MONGO_DEADLINE_MS),
    // Long enough that the documents of served pages are still held at the second stall.
    VIDEO_CACHE_MS: '60000',
  });
  admin = { Authorization: `Basic ${Buffer.from(`${config.adminUser}:${config.adminPassword}`).toString('base64')}` };
  mongo = await connectMongo(config);
  ids = (await videoModel(mongo.connection).insertMany(Array.from({ length: 40 }, () => demoVideo({ reviewAt: new Date('2026-07-30T00:00:00Z') })))).map((d) => d._id.toHexString());
  client = await connectRedis(config);
  await publishQueue(client, keys, VERSION, ids);
  redis = await connectRedis(config, { failFast: true });
  api = createApp({ config, redis, mongo: mongo.connection }).app.listen(0, '127.0.0.1');
  await new Promise((resolve) => api.once('listening', resolve));
  base = `http://127.0.0.1:${(api.address() as { port: number }).port}`;
  // The instance warm (read state, queue copy) on positions the tests' devices never reach: the
  // stalled pages then claim at once, and their documents (positions 0-9) are not held.
  await setOffset(client, keys, VERSION, `g:${device('warm-up')['X-Device-Id']}`, 20);
  expect(await page(device('warm-up'))).toMatchObject({ status: 200, vids: ids.slice(20, 25) });
}, 90_000);

afterAll(async () => {
  if (mongoServer.child.signalCode === null) mongoServer.child.kill('SIGCONT');
  api?.close();
  if (client) await deleteKeysWithPrefix(client, prefix);
  await Promise.all([redis && closeRedis(redis), client && closeRedis(client), mongo?.close()]);
  await mongoServer.stop('SIGKILL');
  await redisServer?.stop();
  secure?.tls.remove();
});

const device = (name: string) => ({ 'X-Device-Id': `${name}-${prefix.slice(7, 13)}` });

/** One request, its status, its videos and how long it took. */
async function call(method: 'GET' | 'HEAD', path: string, headers: Record<string, string>) {
  const started = performance.now();
  const res = await fetch(`${base}${path}`, { method, headers });
  const body = method === 'GET' ? ((await res.json()) as { vInfos?: Array<{ vid: string }> }) : {};
  return { status: res.status, vids: (body.vInfos ?? []).map((v) => v.vid), ms: Math.round(performance.now() - started) };
}
const page = (headers: Record<string, string>, method: 'GET' | 'HEAD' = 'GET') => call(method, '/api/app/recommend/vid/list?pageSize=5', headers);
/** Likes the readout counted (D7), over every variant and hour. */
async function likesCounted(): Promise<number> {
  let total = 0;
  for await (const batch of client.scanKeys(`${prefix}recommend:short:variant-stats:*`)) {
    for (const key of batch) for (const [field, n] of Object.entries(await client.hGetAll(key))) if (field.endsWith(':like')) total += Number(n);
  }
  return total;
}
const offset = (name: string) => offsetOf(client, keys, VERSION, `g:${device(name)['X-Device-Id']}`);

describe('a frozen MongoDB (SIGSTOP)', () => {
  it('when MongoDB is stopped, then first pages of new devices are 503 within the budget, HEAD says the same, no offset moves, readiness says MongoDB is down; after SIGCONT all is normal', async () => {
    const devices = ['first-a', 'first-b', 'first-c', 'first-d'];
    await waitUntil('ready (warm) before the stall', async () => (await call('GET', '/readyz', {})).status === 200, 15_000);
    const readiness = sampleReadiness({ api: base });
    mongoServer.child.kill('SIGSTOP');
    const stalled = await Promise.all(devices.map((name) => page(device(name))));
    const heads = await Promise.all(devices.map((name) => page(device(name), 'HEAD')));
    const ready = await fetch(`${base}/readyz`).then(async (r) => ({ status: r.status, body: (await r.json()) as unknown }));
    const auditStarted = performance.now();
    const audit = { status: (await fetch(`${base}/api/admin/audit`, { headers: admin })).status, ms: performance.now() - auditStarted };
    const liked = await fetch(`${base}/api/app/vid/like`, { method: 'POST', headers: { ...bearer('stall-liker'), 'Content-Type': 'application/json' }, body: JSON.stringify({ vid: ids[0] }) });
    const offsets = await Promise.all(devices.map(offset));
    mongoServer.child.kill('SIGCONT');
    console.log(`first pages during the stall (MONGO_DEADLINE_MS=${MONGO_DEADLINE_MS}): ${stalled.map((p) => `${p.status} in ${p.ms} ms`).join(', ')}; HEAD: ${heads.map((p) => p.status).join(', ')}; offsets: ${offsets.join(', ')}`);

    for (const [i, p] of stalled.entries()) {
      expect({ device: devices[i], status: p.status, headStatus: heads[i].status, offset: offsets[i] ?? '0' }).toEqual({ device: devices[i], status: 503, headStatus: 503, offset: '0' });
      expect(p.ms).toBeLessThan(STALL_MS);
    }
    // MongoDB down for a moment: said in the body, the instance still in rotation (StoreHealth's FAILING_AFTER_MS).
    expect(ready).toEqual({ status: 200, body: { status: 'ready', redis: 'ok', mongo: 'down' } });
    expect(liked.status).toBe(503);
    // The audit trail's read has the request's MongoDB budget too (an admin page never hangs).
    expect([audit.status, audit.ms < STALL_MS]).toEqual([503, true]);

    // After the stall: each device's first page is the ring's start, as if nothing had happened.
    await waitUntil('ready after the stall', async () => (await call('GET', '/readyz', {})).status === 200, 15_000);
    console.log(`MongoDB stopped, then resumed:\n${await readiness.stop()}`);
    // The like answered 503 was cut at the budget (its socket closed): if its write reached MongoDB,
    // it lands once MongoDB resumes and the service counts its first success for D7 then; the
    // client's retry finds it made (or makes it). Either way the readout counts one like.
    const retried = await fetch(`${base}/api/app/vid/like`, { method: 'POST', headers: { ...bearer('stall-liker'), 'Content-Type': 'application/json' }, body: JSON.stringify({ vid: ids[0] }) });
    expect(await retried.json()).toMatchObject({ active: true });
    await waitUntil('the like counted by the readout', async () => (await likesCounted()) === 1, 15_000);
    expect(await likesCounted()).toBe(1);
    for (const name of devices) {
      expect((await page(device(name), 'HEAD')).status).toBe(200);
      expect({ name, ...(await page(device(name))) }).toMatchObject({ name, status: 200, vids: ids.slice(0, 5) });
      expect(await offset(name)).toBe('5');
    }
  }, 60_000);

  it('when MongoDB is stopped again, then a page whose documents the instance holds is served (and consumed); one that needs MongoDB is a prompt 503 that consumes nothing', async () => {
    // Positions 0-4 of the ring were loaded by the previous test's pages: held for VIDEO_CACHE_MS.
    expect(await page(device('second'))).toMatchObject({ status: 200, vids: ids.slice(0, 5) });
    mongoServer.child.kill('SIGSTOP');
    const held = await page(device('held'));
    const heldOffset = await offset('held');
    // The second page needs positions 5-9, never loaded: MongoDB is asked and does not answer.
    const second = await page(device('second'));
    const secondOffset = await offset('second');
    mongoServer.child.kill('SIGCONT');
    expect({ ...held, offset: heldOffset }).toMatchObject({ status: 200, vids: ids.slice(0, 5), offset: '5' });
    expect({ status: second.status, offset: secondOffset }).toEqual({ status: 503, offset: '5' });
    expect(second.ms).toBeLessThan(STALL_MS);
    // MongoDB back: the second page is positions 5-9, none lost.
    await waitUntil('a page after the stall', async () => (await page(device('after'), 'HEAD')).status === 200, 15_000);
    expect(await page(device('second'))).toMatchObject({ status: 200, vids: ids.slice(5, 10) });
  }, 60_000);
});
