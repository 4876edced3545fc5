/**
 * Degradation under Redis faults (SPEC R17), with a Redis process of the test's own on 127.0.0.1:
 * never started, killed, and stopped with SIGSTOP. Every wait is bounded.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import mongoose, { type Connection } from 'mongoose';
import { createApp } from '@feed/api';
import { loadConfig } from '@feed/config';
import { closeRedis, connectRedis, createRedisKeys, videoModel, type Redis } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { cli, freePort, holdPort, startRedis, tsx, waitUntil, type Managed } from '../../tools/support/processes';
import { contractFetch } from '../support/contract';
import { bearer, offsetOf, publishQueue } from '../support/feed-fixtures';
import { delayingProxy } from '../support/tcp-proxies';
import { startTestDeployable } from '../support/deployables';
import { testMongoUrl } from '../support/mongo';

const VERSION = '20260724';
const DEADLINE_MS = 250;
const mongoUrl = testMongoUrl('redis_faults');
let mongo: Connection;
let ids: string[];
let dir: string;
const running: Managed[] = [];
/** Clients a test opened, closed after it (also when it fails: an open client would hold Jest). */
const clients: Redis[] = [];
/** APIs a test started in this process, closed after it. */
const servers: Server[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'feed-redis-faults-'));
  mongo = await mongoose.createConnection(mongoUrl).asPromise();
  ids = (await videoModel(mongo).insertMany(Array.from({ length: 60 }, () => demoVideo({ reviewAt: new Date('2026-07-20T00:00:00Z') })))).map((d) => d._id.toHexString());
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => (p.child.signalCode === null && p.child.kill('SIGCONT'), p.stop('SIGKILL'))));
  for (const server of servers.splice(0)) server.close();
  await Promise.all(clients.splice(0).map((client) => closeRedis(client)));
});

afterAll(async () => {
  await mongo.dropDatabase();
  await mongo.close();
  rmSync(dir, { recursive: true, force: true });
});

const feed = async (base: string, user = 'fault-user') => {
  const res = await contractFetch(`${base}/api/app/recommend/vid/list`, { headers: bearer(user) });
  return { status: res.status, body: (await res.json()) as { queueVersion: string; vInfos: unknown[] } };
};

async function ownRedis(): Promise<{ port: number; server: Managed; client: Redis }> {
  const port = await freePort();
  const server = await startRedis(port, mkdtempSync(path.join(dir, 'r')));
  running.push(server);
  const client = await connectRedis({ redisUrl: `redis://127.0.0.1:${port}` });
  clients.push(client);
  return { port, server, client };
}

describe('the API without Redis', () => {
  it('when Redis was never started, then the API listens, is ready (degraded) and serves MongoDB pages; when Redis comes, ring pages return', async () => {
    // Held (connections reset) until Redis starts on it: no parallel test's server can take it.
    const held = await holdPort();
    const redisPort = held.port;
    const { process: api, base } = await startTestDeployable(tsx('tools/start-one.ts', 'api'), { redisUrl: `redis://127.0.0.1:${redisPort}`, mongoUrl }, { CURRENT_CACHE_MS: '200', LOG_LEVEL: 'error' }, { startupMs: 60_000 });
    running.push(api);
    const ready = await contractFetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'degraded', redis: 'down', mongo: 'ok' });
    const page = await feed(base);
    expect(page.status).toBe(200);
    expect(page.body.queueVersion).toBe('fallback');
    expect(page.body.vInfos).toHaveLength(20);

    await held.release();
    const server = await startRedis(redisPort, mkdtempSync(path.join(dir, 'r')));
    running.push(server);
    const client = await connectRedis({ redisUrl: `redis://127.0.0.1:${redisPort}` });
    await publishQueue(client, createRedisKeys(), VERSION, ids);
    await client.close();
    await waitUntil('ring pages after redis came up', async () => (await feed(base)).body.queueVersion === VERSION, 15_000);
    expect((await (await contractFetch(`${base}/readyz`)).json())).toMatchObject({ status: 'ready', redis: 'ok' });
  }, 60_000);
});

describe('a stalled Redis (SIGSTOP)', () => {
  let api: Server;
  afterEach(() => api?.close());

  it('when Redis stops answering, then every feed request degrades within the deadline; when it resumes, the ring serves again', async () => {
    const { port, server, client } = await ownRedis();
    const prefix = `stall:${randomBytes(3).toString('hex')}:`;
    await publishQueue(client, createRedisKeys(prefix), VERSION, ids);
    const config = loadConfig({ NODE_ENV: 'test', MONGO_URL: mongoUrl, REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_KEY_PREFIX: prefix, REDIS_DEADLINE_MS: String(DEADLINE_MS), CURRENT_CACHE_MS: '5000' });
    const redis = await connectRedis(config, { failFast: true });
    clients.push(redis);
    api = createApp({ config, redis, mongo }).app.listen(0, '127.0.0.1');
    await new Promise((resolve) => api.once('listening', resolve));
    const base = `http://127.0.0.1:${(api.address() as { port: number }).port}`;
    // A ring page first: the cached `current` is then valid (on a loaded machine the very first
    // request's cold reads may overrun the deadline and degrade: a precondition, not the subject).
    await waitUntil('a ring page before the stall', async () => (await feed(base)).body.queueVersion === VERSION, 15_000);

    server.child.kill('SIGSTOP');
    const stalled = await Promise.all(Array.from({ length: 20 }, (_, i) => feed(base, `stalled-${i}`)));
    for (const page of stalled) {
      expect(page.status).toBe(200);
      // Answered while Redis is still stopped (SIGCONT comes after every answer): the deadline cut
      // the wait, the stall did not end it.
      expect(page.body.queueVersion).toBe('fallback');
    }
    const ready = await contractFetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'degraded', redis: 'down' });

    server.child.kill('SIGCONT');
    await waitUntil('ring after the stall', async () => (await feed(base)).body.queueVersion === VERSION, 10_000);
    // R11: a claim Redis ran after the stall moved the offset and is given back once its answer
    // reaches the API, asynchronously: no stalled user's offset stays moved, none was served.
    const keys = createRedisKeys(prefix);
    const unmoved = async () => (await Promise.all(stalled.map((_, i) => offsetOf(client, keys, VERSION, `u:stalled-${i}`)))).every((offset) => offset === null || offset === '0');
    await waitUntil('every stalled claim moved nothing or was given back', unmoved, 5_000);
    // So each user's next ring page starts right after its last served one (here: at the start).
    for (const user of ['stalled-0', 'stalled-7', 'stalled-19']) {
      const next = await feed(base, user);
      expect({ user, version: next.body.queueVersion, first: (next.body.vInfos as Array<{ vid: string }>).map((v) => v.vid) }).toEqual({ user, version: VERSION, first: ids.slice(0, 20) });
    }
  }, 60_000);
});

/** An API in this process on a Redis of the test's own, with `queue` published; closed after the test. */
async function apiOnOwnRedis(name: string, queue = true) {
  const { port, server, client } = await ownRedis();
  const prefix = `${name}:${randomBytes(3).toString('hex')}:`;
  if (queue) await publishQueue(client, createRedisKeys(prefix), VERSION, ids);
  const config = loadConfig({ NODE_ENV: 'test', MONGO_URL: mongoUrl, REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_KEY_PREFIX: prefix, REDIS_DEADLINE_MS: String(DEADLINE_MS), CURRENT_CACHE_MS: '5000' });
  const redis = await connectRedis(config, { failFast: true });
  clients.push(redis);
  const app = createApp({ config, redis, mongo });
  const api = app.app.listen(0, '127.0.0.1');
  servers.push(api);
  await new Promise((resolve) => api.once('listening', resolve));
  return { server, client, redis, config, prefix, app, base: `http://127.0.0.1:${(api.address() as { port: number }).port}` };
}

describe('interactions during a stalled Redis (R17)', () => {
  it("when Redis stops answering, then a user's first like, collect, comment and share are answered while it is still stopped (their records are MongoDB's; the readout goes uncounted)", async () => {
    const { server, redis, base } = await apiOnOwnRedis('stall-act');
    await waitUntil('a ring page before the stall', async () => (await feed(base, 'actor')).body.queueVersion === VERSION, 15_000);
    const act = async (path: string, body: object) => {
      // The bound only ends a test that would otherwise wait for SIGCONT: an answer past it is "no answer".
      const res = await fetch(`${base}${path}`, { method: 'POST', headers: { ...bearer('actor'), 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(5_000) }).catch(() => null);
      return { path, status: res?.status ?? 'no answer' };
    };

    server.child.kill('SIGSTOP');
    let answers: Array<{ path: string; status: number | string }>;
    try {
      answers = await Promise.all([
        act('/api/app/vid/like', { vid: ids[0] }),
        act('/api/app/vid/collect', { vid: ids[1] }),
        act('/api/app/vid/comment', { vid: ids[2], content: 'during the stall' }),
        act('/api/app/share/output', { videoID: ids[3] }),
      ]);
    } finally {
      server.child.kill('SIGCONT');
    }
    expect(answers).toEqual([
      { path: '/api/app/vid/like', status: 200 },
      { path: '/api/app/vid/collect', status: 200 },
      { path: '/api/app/vid/comment', status: 201 },
      { path: '/api/app/share/output', status: 200 },
    ]);
    // Closed while Redis is up: the given-up admissions (and the API's timers' reads) are answered, not left queued.
    await closeRedis(redis);
  }, 60_000);
});

describe("on-call's rollout during a stalled Redis (R16, R17)", () => {
  it('when Redis stops answering, then reading and changing the rollout and the ramp, and explaining a page, answer 503 with Retry-After while it is still stopped', async () => {
    const { server, redis, config, base } = await apiOnOwnRedis('stall-admin', false);
    const admin = { Authorization: `Basic ${Buffer.from(`${config.adminUser}:${config.adminPassword}`).toString('base64')}`, 'content-type': 'application/json' };
    const ask = async (method: string, path: string, body?: object) => {
      // The bound only ends a test that would otherwise wait for SIGCONT: an answer past it is "no answer".
      const res = await fetch(`${base}${path}`, { method, headers: admin, body: body && JSON.stringify(body), signal: AbortSignal.timeout(5_000) }).catch(() => null);
      return { ask: `${method} ${path}`, status: res?.status ?? 'no answer', retryAfter: res?.headers.get('retry-after') ?? null };
    };
    expect((await ask('GET', '/api/admin/rollout')).status).toBe(200);

    server.child.kill('SIGSTOP');
    let answers: Array<{ ask: string; status: number | string; retryAfter: string | null }>;
    try {
      answers = await Promise.all([ask('GET', '/api/admin/rollout'), ask('PUT', '/api/admin/rollout', { enabled: false }), ask('GET', '/api/admin/rollout/ramp'), ask('POST', '/api/admin/rollout/ramp/pause'), ask('GET', '/api/admin/explain?user=stalled')]);
    } finally {
      server.child.kill('SIGCONT');
    }
    expect(answers).toEqual(['GET /api/admin/rollout', 'PUT /api/admin/rollout', 'GET /api/admin/rollout/ramp', 'POST /api/admin/rollout/ramp/pause', 'GET /api/admin/explain?user=stalled'].map((asked) => ({ ask: asked, status: 503, retryAfter: expect.any(String) })));
    // Closed while Redis is up: the given-up commands are answered, not left queued.
    await closeRedis(redis);
  }, 60_000);
});

describe('concurrent pages of one user during a stall (R11)', () => {
  it('when each user sends three pages at once while Redis is stopped, then all three are fallback pages and no position is lost: the next ring page starts where the last served one ended', async () => {
    const { server, client, prefix, app, base } = await apiOnOwnRedis('stall3');
    const keys = createRedisKeys(prefix);
    const page = async (user: string) => {
      const res = await contractFetch(`${base}/api/app/recommend/vid/list?pageSize=5`, { headers: bearer(user) });
      const body = (await res.json()) as { queueVersion: string; vInfos: Array<{ vid: string }> };
      return { version: body.queueVersion, vids: body.vInfos.map((v) => v.vid) };
    };
    const users = Array.from({ length: 10 }, (_, i) => `three-${i}`);
    await waitUntil('a ring page before the stall', async () => (await page('warm-up')).version === VERSION, 15_000);
    for (const user of users) expect(await page(user)).toEqual({ version: VERSION, vids: ids.slice(0, 5) });

    server.child.kill('SIGSTOP');
    const stalled = await Promise.all(users.flatMap((user) => [page(user), page(user), page(user)]));
    server.child.kill('SIGCONT');
    expect(stalled.map((p) => p.version).filter((v) => v === VERSION)).toEqual([]);

    // Every stalled claim ran once Redis resumed and was given back, each its own positions.
    const counted = async (pattern: RegExp) => Number(pattern.exec(await app.metrics.registry.metrics())?.[1] ?? 0);
    await waitUntil('the 30 stalled claims given back', async () => (await counted(/feed_claims_given_back_total\{result="given-back"\} (\d+)/)) === 30, 10_000);
    expect(await counted(/feed_claims_given_back_total\{result="lost"\} (\d+)/)).toBe(0);
    expect(await counted(/feed_late_claims_total (\d+)/)).toBe(30);
    for (const user of users) expect({ user, offset: await offsetOf(client, keys, VERSION, `u:${user}`) }).toEqual({ user, offset: '5' });
    for (const user of users) expect(await page(user)).toEqual({ version: VERSION, vids: ids.slice(5, 10) });
  }, 60_000);
});

describe('a claim answered after the deadline (R11)', () => {
  // Wide enough that an undelayed page (settings cached, filter, claim, read) fits it on a busy CI
  // machine: at 100 ms the page after the give-back fell back once and the test read a fallback.
  const LATE_DEADLINE_MS = 400;
  it('when Redis makes the claim in time but its answer reaches the API after the deadline, then the API serves a fallback page and gives the claim back', async () => {
    const { port, client } = await ownRedis();
    const proxy = await delayingProxy({ host: '127.0.0.1', port });
    const prefix = `late:${randomBytes(3).toString('hex')}:`;
    const keys = createRedisKeys(prefix);
    await publishQueue(client, keys, VERSION, ids);
    const config = loadConfig({ NODE_ENV: 'test', MONGO_URL: mongoUrl, REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_KEY_PREFIX: prefix, REDIS_DEADLINE_MS: String(LATE_DEADLINE_MS), CURRENT_CACHE_MS: '5000' });
    const redis = await connectRedis(config, { failFast: true });
    const api = createApp({ config, redis, mongo });
    const server = api.app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      expect((await feed(base, 'warm-up')).body.queueVersion).toBe(VERSION); // `current` cached
      proxy.replyDelayMs = 3 * LATE_DEADLINE_MS;
      const late = await feed(base, 'late-user');
      expect(late.body.queueVersion).toBe('fallback');
      await waitUntil('the late claim given back', async () => /feed_claims_given_back_total\{result="given-back"\} 1/.test(await api.metrics.registry.metrics()), 5_000);
      proxy.replyDelayMs = 0;
      // The given-back positions are the next ring page's. On a busy machine an undelayed page can
      // still miss the deadline and fall back; its claim is then given back too: read again once
      // the offset is back at 0, until a ring page comes.
      let next = await feed(base, 'late-user');
      await waitUntil('a ring page after the give-back', async () => {
        if (next.body.queueVersion === VERSION) return true;
        if (((await offsetOf(client, keys, VERSION, 'u:late-user')) ?? '0') === '0') next = await feed(base, 'late-user');
        return false;
      }, 10_000);
      expect((next.body.vInfos as Array<{ vid: string }>).map((v) => v.vid)).toEqual(ids.slice(0, 20));
    } finally {
      server.close();
      await redis.close();
      await client.close();
      await proxy.close();
    }
  }, 30_000);
});

describe('the worker and the CLI with Redis gone', () => {
  it('when Redis is killed, then the worker answers admin requests 503 within its deadline and still stops on SIGTERM within 10 s', async () => {
    const { port, server, client } = await ownRedis();
    await client.close();
    const { process: worker, base } = await startTestDeployable(tsx('tools/start-one.ts', 'worker'), { redisUrl: `redis://127.0.0.1:${port}`, mongoUrl }, { LOG_LEVEL: 'warn' });
    running.push(worker);
    await server.stop('SIGKILL');
    const auth = { Authorization: `Basic ${Buffer.from('admin:feed-insecure-local-admin-password').toString('base64')}` };
    // The inspector's storage client fails fast; bull-board's ioredis queues, so the worker's
    // 2 s deadline answers for it. Either way a 503 that says why, not a hang.
    const expected: Record<string, RegExp> = {
      // The client's reason depends on when it noticed: 'The client is offline', 'Socket closed unexpectedly'.
      '/admin/inspector/api/summary': /^a store this request needs is unavailable \((The client is offline|Socket closed unexpectedly)\)/,
      '/admin/queues/api/queues': /^no answer from the stores within 2000 ms/,
    };
    for (const route of Object.keys(expected)) {
      const res = await contractFetch(`${base}${route}`, { headers: auth });
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(expected[route]);
    }
    // The outage is logged as JSON-able lines, never as raw multi-line stack traces.
    expect(worker.output.join('')).not.toMatch(/^\s+at .+\(.+:\d+:\d+\)$/m);
    await worker.stop('SIGTERM');
    // Exit 0 is the in-process bound: the process exits 1 when its shutdown misses the 9.5 s
    // deadline (packages/lifecycle), so no wall-clock measure of the test's own is needed.
    if (worker.child.exitCode !== 0) console.error(worker.output.join('').slice(-3000));
    expect(worker.child.exitCode).toBe(0);
  }, 60_000);

  it('when Redis is unreachable, then a CLI command gives up after its 5 s connect bound, naming REDIS_URL', async () => {
    const port = await freePort();
    const { code, output } = await cli({ NODE_ENV: 'test', MONGO_URL: mongoUrl, REDIS_URL: `redis://127.0.0.1:${port}` }, 'inspect');
    expect(code).not.toBe(0);
    // It gives up after its bound (5 s), not at the test's timeout: the message says so.
    expect(output).toContain(`Redis unreachable at REDIS_URL=redis://127.0.0.1:${port}: no connection within 5000 ms`);
  }, 30_000);
});
