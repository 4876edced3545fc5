/**
 * The deployables as SRE runs them (SPEC D2, D3, D4, R16): real processes, real signals, a real
 * Redis and the embedded MongoDB server of the test run, all on 127.0.0.1.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { videoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { versionFor } from '@feed/domain';
import { cli, exited, freePort, listening, ROOT, startProcess, tsx, waitUntil, type Managed } from '../../tools/support/processes';
import { bearer, publishQueue } from '../support/feed-fixtures';
import { startTestDeployable, type TestDeployable } from '../support/deployables';
import { useTestServices } from '../support/services';

const run = promisify(execFile);
// Today's version, complete with the legacy set: the worker's controller (R21) has nothing to repair.
const VERSION = versionFor(new Date(), 'Asia/Shanghai');
const s = useTestServices('deployables');
/** The environment of a deployable on the running test's key prefix. */
const baseEnv = () => ({ NODE_ENV: 'test', REDIS_URL: process.env.TEST_REDIS_URL!, MONGO_URL: s.config.mongoUrl!, REDIS_KEY_PREFIX: s.prefix, LOG_LEVEL: 'warn' });
let queue: string[];
/** Killed after the test, before its keys are deleted. */
const stopAfter = (...processes: Managed[]) => processes.forEach((p) => s.disposeAfter(() => p.stop('SIGKILL')));

beforeAll(async () => {
  const docs = await videoModel(s.mongo).insertMany(Array.from({ length: 60 }, () => demoVideo({ reviewAt: new Date('2026-07-20T00:00:00Z') })));
  queue = docs.map((d) => d._id.toHexString());
});

beforeEach(async () => {
  await publishQueue(s.redis, s.keys, VERSION, queue);
  await s.redis.sAdd(s.keys.legacyIds, queue);
});

const portClosed = async (port: number) => !(await listening(port));

/** `tools/start-one.ts <name>` on the running test's prefix, killed after the test. */
async function startDeployable(name: 'api' | 'worker', env: Record<string, string> = {}): Promise<TestDeployable> {
  const deployable = await startTestDeployable(tsx('tools/start-one.ts', name), { prefix: s.prefix, mongoUrl: s.config.mongoUrl! }, { LOG_LEVEL: 'warn', ...env });
  stopAfter(deployable.process);
  return deployable;
}

/**
 * A POST in flight: its headers (with `Expect: 100-continue`) have reached the server, which
 * answered `100 Continue`; the body is sent only when `finish` is called.
 */
async function requestInFlight(port: number, route: string, headers: Record<string, string>, body: string) {
  const socket = net.connect(port, '127.0.0.1');
  let response = '';
  socket.on('data', (chunk) => (response += chunk.toString()));
  const done = new Promise<string>((resolve) => socket.once('close', () => resolve(response)));
  const head = Object.entries({ ...headers, 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)), Expect: '100-continue' })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.write(`POST ${route} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${head}\r\n`);
  await waitUntil('the server took the request', async () => response.startsWith('HTTP/1.1 100 Continue'), 5_000);
  return { finish: () => socket.write(body), done };
}

describe('production configuration (D2)', () => {
  it.each(['api', 'worker'])('when the %s starts in production without MONGO_URL, then it exits non-zero naming it and never listens', async (name) => {
    const port = await freePort();
    const child = startProcess(tsx(`apps/${name}/src/main.ts`), { ...baseEnv(), NODE_ENV: 'production', MONGO_URL: '', AUTH_JWT_SECRET: randomBytes(24).toString('base64url'), ADMIN_PASSWORD: randomBytes(24).toString('base64url'), PORT: String(port), WORKER_PORT: String(port) });
    stopAfter(child);
    expect(await exited(child)).not.toBe(0);
    expect(child.output.join('')).toMatch(/MONGO_URL/);
    expect(await portClosed(port)).toBe(true);
  });
});

describe('shutdown on a signal (D4)', () => {
  it('when the API gets SIGTERM with a request in flight, then it stops accepting, answers that request and exits 0 within 10 s', async () => {
    const { process: api, port } = await startDeployable('api');
    const inFlight = await requestInFlight(port, '/api/app/vid/view', bearer('shutdown-user'), JSON.stringify({ vid: queue[0] }));
    api.child.kill('SIGTERM');
    // Within D4's 10 s from the signal (on a loaded machine the signal can take seconds to be handled).
    await waitUntil('api stops accepting', () => portClosed(port), 10_000);
    inFlight.finish();
    expect(await inFlight.done).toMatch(/HTTP\/1\.1 200 OK[\s\S]*"ok":true/);
    // Exit 0 is the in-process bound: the process exits 1 when its shutdown misses the 9.5 s
    // deadline (packages/lifecycle), so no wall-clock measure of the test's own is needed.
    expect(await exited(api)).toBe(0);
  });

  it('when the API gets SIGTERM, then it is unready at once yet serves new connections, each answer with Connection: close; a second signal exits at once with 130', async () => {
    const { process: api, base } = await startDeployable('api');
    api.child.kill('SIGTERM');
    // Draining: unready, still serving for SHUTDOWN_DELAY_MS (5 s).
    await waitUntil('the first signal taken', async () => (await fetch(`${base}/readyz`)).status === 503, 5_000);
    const page = await fetch(`${base}/api/app/recommend/vid/list?pageSize=2`, { headers: bearer('draining-user') });
    expect(page.status).toBe(200);
    // A keep-alive client takes its answer and opens its next connection elsewhere.
    expect(page.headers.get('connection')).toBe('close');
    api.child.kill('SIGTERM');
    expect(await exited(api)).toBe(130);
  });

  it('when the worker gets SIGTERM with a half-sent request open, then it exits 0 within 10 s and its port is closed', async () => {
    const { process: worker, port } = await startDeployable('worker');
    const halfSent = net.connect(port, '127.0.0.1');
    halfSent.on('error', () => undefined); // the server cuts it at shutdown
    halfSent.write('GET /admin/inspector/api/summary HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    worker.child.kill('SIGTERM');
    // Exit 0 is the in-process bound: the process exits 1 when its shutdown misses the 9.5 s
    // deadline (packages/lifecycle), so no wall-clock measure of the test's own is needed.
    expect(await exited(worker)).toBe(0);
    expect(await portClosed(port)).toBe(true);
    halfSent.destroy();
  });

  it('when pnpm start gets Ctrl-C (SIGINT to its process group), then every process is gone and every port closed within 10 s', async () => {
    const [apiPort, workerPort, mongoPort] = await Promise.all([freePort(), freePort(), freePort()]);
    const start = startProcess(['start'], {
      ...baseEnv(),
      NODE_ENV: 'development',
      MONGO_URL: '',
      EMBEDDED_MONGO_PORT: String(mongoPort),
      // An empty prefix of its own (under the test's): pnpm start seeds and builds on it.
      REDIS_KEY_PREFIX: `${s.prefix}start:`,
      PORT: String(apiPort),
      WORKER_PORT: String(workerPort),
    }, 'pnpm', { detached: true });
    stopAfter(start);
    await waitUntil('pnpm start serving pages', async () => (await fetch(`http://127.0.0.1:${apiPort}/api/app/recommend/vid/list`, { headers: { 'X-Device-Id': 'ctrl-c-device' } })).ok, 60_000);
    process.kill(-start.child.pid!, 'SIGINT');
    await exited(start);
    // Every process of the group (pnpm, its shell, node) is gone: signal 0 finds none.
    await waitUntil('the process group gone', async () => {
      try {
        process.kill(-start.child.pid!, 0);
        return false;
      } catch {
        return true;
      }
    }, 10_000);
    for (const port of [apiPort, workerPort, mongoPort]) expect(await portClosed(port)).toBe(true);
  }, 90_000);
});

describe('the start-up warm-up (issue 49)', () => {
  it('when the API starts with a warm-up, then it logs the 404s it sent itself, logs no rejection and counts no answer of them, and listens where it serves with its HTTP limits', async () => {
    const { process: api, port, base } = await startDeployable('api', { NODE_ENV: 'development', API_WARM_UP_REQUESTS: '20', LOG_LEVEL: 'info', HTTP_HEADERS_TIMEOUT_MS: '500' });
    const output = api.output.join('');
    expect(output).toMatch(/api warmed up \{"ms":\d+,"answers":\{"404":20\}\}/);
    expect(output).not.toContain('request rejected');
    expect(await (await fetch(`${base}/metrics`)).text()).not.toMatch(/^feed_http_request_duration_seconds_count\{method="POST",route="\/api\/app\/vid\/(like|unlike)",status="404"\} [1-9]/m);
    // The server closed after the warm-up and listened again: a client that never ends its headers still gets 408.
    const slow = net.connect(port, '127.0.0.1');
    let answer = '';
    slow.on('data', (chunk) => (answer += chunk.toString()));
    slow.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    await waitUntil('the slow client answered', async () => answer.length > 0, 5_000);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    slow.destroy();
  });
});

describe('rollout kill switch (R16)', () => {
  it('when on-call runs pnpm cli rollout --enabled false, then two running APIs serve the legacy feed within 5 s, and the ring again after --clear', async () => {
    const env = { CURRENT_CACHE_MS: '1000' };
    const apis = await Promise.all([startDeployable('api', env), startDeployable('api', env)]);
    const versionsServed = () =>
      Promise.all(apis.map(async ({ port }) => ((await (await fetch(`http://127.0.0.1:${port}/api/app/recommend/vid/list?pageSize=2`, { headers: bearer('rollout-user') })).json()) as { queueVersion: string }).queueVersion));
    expect(await versionsServed()).toEqual([VERSION, VERSION]);

    const off = await cli(baseEnv(), 'rollout', '--enabled', 'false');
    expect(off.code).toBe(0);
    expect(off.output).toContain('enabled false (override)');
    // waitUntil fails the test when the switch takes longer than 5 s.
    await waitUntil('both APIs on the legacy feed', async () => (await versionsServed()).every((v) => v === 'legacy'), 5_000);
    const metrics = await (await fetch(`http://127.0.0.1:${apis[1].port}/metrics`)).text();
    expect(metrics).toMatch(/^feed_rollout_enabled 0$/m);

    const bad = await cli(baseEnv(), 'rollout', '--percent', '101');
    expect(bad.code).not.toBe(0);
    expect(bad.output).toMatch(/--percent must be 0-100/);

    const cleared = await cli(baseEnv(), 'rollout', '--clear');
    expect(cleared.output).toContain('enabled true (environment)');
    await waitUntil('both APIs on the ring again', async () => (await versionsServed()).every((v) => v === VERSION), 5_000);
  }, 60_000);
});

describe('compiled deployables (D3 pnpm build, pnpm deploy)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'feed-deploy-'));
    // Built in a copy of the work tree (its files as git sees them, installed from the local
    // store), so the test never writes dist/ into the checkout it runs from.
    const source = path.join(dir, 'source');
    const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
    for (const file of stdout.split('\0').filter((f) => f && existsSync(path.join(ROOT, f)))) cpSync(path.join(ROOT, file), path.join(source, file), { recursive: true });
    await run('pnpm', ['install', '--offline', '--frozen-lockfile'], { cwd: source });
    await run('pnpm', ['build'], { cwd: source });
    await Promise.all(['api', 'worker'].map((name) => run('pnpm', ['--filter', `@feed/${name}`, 'deploy', '--prod', path.join(dir, name)], { cwd: source })));
  }, 240_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(['api', 'worker'])('when the deployed %s starts in production with the secrets printed in the repository, then it exits non-zero naming them and never listens; with private ones it starts', async (name) => {
    const port = await freePort();
    const main = path.join(dir, name, require(path.join(dir, name, 'package.json')).main as string);
    const child = startProcess([main], {
      ...baseEnv(),
      NODE_OPTIONS: '',
      NODE_ENV: 'production',
      AUTH_JWT_SECRET: 'feed-insecure-local-jwt-secret',
      ADMIN_PASSWORD: 'feed-insecure-local-admin-password',
      PORT: String(port),
      WORKER_PORT: String(port),
    });
    stopAfter(child);
    expect(await exited(child)).not.toBe(0);
    expect(child.output.join('')).toMatch(/AUTH_JWT_SECRET[^;]*published in the repository/);
    expect(child.output.join('')).toMatch(/ADMIN_PASSWORD[^;]*published in the repository/);
    expect(await portClosed(port)).toBe(true);

    // The same deployable with private secrets of 32+ characters starts and serves.
    const { process: privately } = await startTestDeployable([main], { prefix: s.prefix, mongoUrl: s.config.mongoUrl! }, {
      LOG_LEVEL: 'warn',
      NODE_OPTIONS: '',
      NODE_ENV: 'production',
      AUTH_JWT_SECRET: randomBytes(24).toString('base64url'),
      ADMIN_PASSWORD: randomBytes(24).toString('base64url'),
    }, { port });
    stopAfter(privately);
    privately.child.kill('SIGTERM');
    expect(await exited(privately)).toBe(0);
  }, 60_000);

  it('when the deployed folders start with node <main>, then the API serves a full page and neither holds tsx or the embedded server', async () => {
    for (const name of ['api', 'worker']) {
      const installed = (await run('ls', [path.join(dir, name, 'node_modules/.pnpm')])).stdout;
      expect(installed).not.toMatch(/^(tsx|typescript|@feed\+embedded-mongo)@/m);
    }
    const main = (name: string) => path.join(dir, name, require(path.join(dir, name, 'package.json')).main as string);
    const deployed = (name: string) => startTestDeployable([main(name)], { prefix: s.prefix, mongoUrl: s.config.mongoUrl! }, { LOG_LEVEL: 'warn', NODE_OPTIONS: '' });
    const [{ process: api, port: apiPort }, { process: worker }] = await Promise.all([deployed('api'), deployed('worker')]);
    stopAfter(api, worker);
    const page = (await (await fetch(`http://127.0.0.1:${apiPort}/api/app/recommend/vid/list`, { headers: bearer('deployed-user') })).json()) as { queueVersion: string; vInfos: unknown[] };
    expect(page.queueVersion).toBe(VERSION);
    expect(page.vInfos).toHaveLength(20);
    api.child.kill('SIGTERM');
    worker.child.kill('SIGTERM');
    expect(await Promise.all([exited(api), exited(worker)])).toEqual([0, 0]);
  }, 60_000);
});
