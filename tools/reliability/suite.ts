/**
 * The reliability suite's shared state: a Redis of its own and the embedded MongoDB, the API
 * and the worker deployables on ports of their own (restartable on the same ports: clients keep
 * their URLs), the checks' results. Each check group (a file beside this one) takes a `Suite`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import jwt from 'jsonwebtoken';
import mongoose, { type Connection } from 'mongoose';
import { createClient } from 'redis';
import { loadConfig } from '@feed/config';
import { versionFor } from '@feed/domain';
import { COUNTER_KINDS, createRedisKeys, offsetSlot, videoModel, type CounterKind } from '@feed/storage';
import { BUILD_QUEUE, buildJobOptions, bullConnectionFactory, type BuildJobData } from '@feed/worker';
import { freePort, startMongoProcess, startRedis, tsx, waitUntil, type Managed } from '../support/processes';
import { startTestDeployable } from '../support/deployables';

/** The groups of checks, in the order they run; `--only` names some of them. */
export const GROUPS = ['self-healing', 'load', 'bad input', 'counters', 'toggles', 'security', 'faults', 'kill', 'ramp', 'held'] as const;
export type Group = (typeof GROUPS)[number];

export interface SuiteOptions {
  /** Shorter load, fewer videos and runs, likes only in the counter burst, no kill checks (unless `only` names them). */
  quick: boolean;
  /** These groups only (absent: all). */
  only?: Group[];
}

export function expect(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** What every check group takes: the suite's settings, processes, clients and helpers (see createSuite). */
export type Suite = Awaited<ReturnType<typeof createSuite>>;

/** The suite's stores started, nothing else yet (`startDeployables`: the API and the worker). */
export async function createSuite(options: SuiteOptions) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'feed-reliability-'));
  const [redisPort, mongoPort, apiPort, workerPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  // Production refuses published or short secrets (D2): private ones per run.
  const secret = randomBytes(24).toString('hex');
  const adminPassword = randomBytes(24).toString('hex');
  const env: Record<string, string> = {
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    MONGO_URL: `mongodb://127.0.0.1:${mongoPort}/reliability`,
    PORT: String(apiPort),
    WORKER_PORT: String(workerPort),
    AUTH_JWT_SECRET: secret,
    ADMIN_PASSWORD: adminPassword,
    CURRENT_CACHE_MS: '500',
    VIDEO_CACHE_MS: '500',
    BUILD_LOCK_TTL_MS: '4000',
    // The largest budget allowed, for the checks that load the embedded MongoDB (a test double serving
    // every client from one event loop); the toggles burst runs with production's 1 s, a frozen
    // MongoDB's bound is mongo-stall.test.ts's.
    MONGO_DEADLINE_MS: '10000',
    // Every check's clients are new guest devices from 127.0.0.1 (a fresh id per page probe): the
    // new-device limit (issue 52) is apps/api/test/new-device-limit.test.ts's subject, not theirs.
    NEW_DEVICES_PER_ADDRESS: '1000000',
  };
  // The time zone the started processes read from this environment (TZ_BUSINESS or its default).
  const { businessTimeZone } = loadConfig({ ...process.env, ...env });
  const api = `http://127.0.0.1:${apiPort}`;
  const keys = createRedisKeys('');
  const processes: Managed[] = [];
  const redis = await startRedis(redisPort, dir);
  const mongoServer = await startMongoProcess(mongoPort);
  processes.push(mongoServer);
  const redisClient = createClient({ url: env.REDIS_URL, socket: { reconnectStrategy: () => 100 } });
  redisClient.on('error', () => undefined);
  // No whole-suite time budget (a timed test fails on a loaded machine): each wait is bounded by
  // what it waits for (waitUntil's bound, a CLI child's exitWithin, fetch's own 300 s headers and
  // body timeouts), and the report prints the time the suite took.
  const scope = { redisUrl: env.REDIS_URL, mongoUrl: env.MONGO_URL };
  const started = (deployable: { process: Managed }) => (processes.push(deployable.process), deployable.process);
  const token = (sub: string, signOptions: jwt.SignOptions = {}) => jwt.sign({ sub }, secret, { algorithm: 'HS256', expiresIn: '1h', ...signOptions });
  const pageVersion = async () =>
    ((await (await fetch(`${api}/api/app/recommend/vid/list`, { headers: { 'X-Device-Id': `healing-${randomBytes(4).toString('hex')}` } })).json()) as { queueVersion: string }).queueVersion;
  const runs = (group: Group) => !options.only || options.only.includes(group);
  let connection: Promise<Connection> | undefined;
  const mongo = () => (connection ??= mongoose.createConnection(env.MONGO_URL).asPromise());
  let buildQueue: { queue: Queue<BuildJobData>; close(): Promise<unknown> } | undefined;
  const openBuildQueue = () => {
    const bull = bullConnectionFactory({ redisUrl: env.REDIS_URL, redisClusterNodes: undefined })();
    const queue = new Queue<BuildJobData>(BUILD_QUEUE, { connection: bull, prefix: keys.bullPrefix, defaultJobOptions: buildJobOptions(500) });
    return { queue, close: () => queue.close().then(() => bull.quit()) };
  };

  const suite = {
    options,
    /** The environment of every process the suite starts (production, the suite's stores and ports, private secrets). */
    env,
    secret,
    adminPassword,
    /** http://127.0.0.1:<port> of the API and of the worker. */
    api,
    worker: `http://127.0.0.1:${workerPort}`,
    keys,
    redisClient,
    /** Every process started, for the log scan and the cleanup. */
    processes,
    redis,
    mongoServer,
    apiProcess: undefined as Managed | undefined,
    workerProcess: undefined as Managed | undefined,
    /** The version current after the first start, and its queue. */
    current: '',
    queue: [] as string[],
    results: [] as Array<{ group: Group; name: string; ok: boolean; detail: string }>,
    /** The figures of the summary lines. */
    summary: {} as Record<string, string>,
    /** When the suite started (the report prints the time it took). */
    startedAt: Date.now(),
    runs,
    /** Runs the check unless `--only` leaves its group out; records and prints its outcome. */
    async check(group: Group, name: string, fn: () => Promise<string | void>): Promise<void> {
      if (!runs(group)) return;
      const startedAt = Date.now();
      try {
        const detail = (await fn()) ?? '';
        suite.results.push({ group, name, ok: true, detail: `${detail} (${((Date.now() - startedAt) / 1000).toFixed(1)} s)`.trim() });
        console.log(`ok    ${group}: ${name} ${detail}`);
      } catch (err) {
        suite.results.push({ group, name, ok: false, detail: err instanceof Error ? err.message : String(err) });
        console.log(`FAIL  ${group}: ${name}: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
    token,
    /** The version a build `--at` this instant makes. */
    businessDay: (at: string) => versionFor(new Date(at), businessTimeZone),
    /** A user's stored offset in `version`, in the bucket its meta names (R22). */
    async offsetOf(version: string, userKey: string) {
      const offsetBuckets = Number(await redisClient.hGet(keys.meta(version), 'offsetBuckets'));
      const { key, field } = offsetSlot(keys, { version, offsetBuckets }, userKey);
      return redisClient.hGet(key, field);
    },
    /** The version of a guest's page: a YYYYMMDD when the ring served it. */
    pageVersion,
    async untilRingPage(timeoutMs: number) {
      const startedAt = Date.now();
      await waitUntil('a ring page', async () => /^\d{8}$/.test(await pageVersion()), timeoutMs);
      return `ring page after ${((Date.now() - startedAt) / 1000).toFixed(1)} s`;
    },
    /** A MongoDB connection of the suite's own, opened at the first call (closed with the suite). */
    mongo,
    /** A video's two counters of `kind` (R3), as stored in MongoDB. */
    async counters(vid: string, kind: CounterKind) {
      const fields = COUNTER_KINDS[kind];
      const doc = (await videoModel(await mongo()).findById(vid).select({ [fields.recommend]: 1, [fields.display]: 1 }).lean()) as Record<string, number> | null;
      return { recommend: Number(doc?.[fields.recommend] ?? 0), display: Number(doc?.[fields.display] ?? 0) };
    },
    /** The worker's build queue, to add jobs as the dashboard adds them (opened at the first call, closed with the suite). */
    buildQueue: () => (buildQueue ??= openBuildQueue()).queue,
    /** The suite's Redis started again on its port and directory (its append-only file keeps the data). */
    restartRedis: () => startRedis(redisPort, dir),
    /** The API on its port (with `extraEnv` over the suite's), once /readyz answers. */
    startApi: async (extraEnv: Record<string, string> = {}) => started(await startTestDeployable(tsx('apps/api/src/main.ts'), scope, { ...env, ...extraEnv }, { port: apiPort, until: '/readyz' })),
    /** The worker on its port (or `port`, with `env` over the suite's), once /healthz answers. */
    startWorker: async (port = workerPort, extraEnv: Record<string, string> = {}) => started(await startTestDeployable(tsx('apps/worker/src/main.ts'), scope, { ...env, ...extraEnv }, { port })),
    async close() {
      await buildQueue?.close();
      await (await connection)?.close();
      await Promise.all(processes.map((p) => p.stop()));
      await redisClient.quit().catch(() => undefined);
      await suite.redis.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return suite;
}

/** The summary table and lines; the exit code (1 when any check failed). */
export function report(suite: Suite): number {
  const { results, summary } = suite;
  const failed = results.filter((r) => !r.ok);
  console.log('\n| group | check | result |');
  console.log('|---|---|---|');
  for (const r of results) console.log(`| ${r.group} | ${r.name} | ${r.ok ? 'ok' : 'FAILED'}: ${r.detail} |`);
  console.log(`\nload held: ${summary.load ?? 'n/a'}`);
  console.log(`faults survived: ${results.filter((r) => r.group === 'faults' && r.ok).length}/${results.filter((r) => r.group === 'faults').length}`);
  console.log(`bad inputs: ${summary.badInput ?? 'n/a'}`);
  console.log(`data lost: ${summary.dataLost ?? 'n/a'}`);
  console.log(`time to repair after a SIGKILL per phase: ${summary.killTable ?? 'n/a'}`);
  console.log(`reliability: ${results.length - failed.length} passed, ${failed.length} failed in ${((Date.now() - suite.startedAt) / 1000).toFixed(0)} s`);
  return failed.length ? 1 : 0;
}
