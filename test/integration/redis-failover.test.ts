/**
 * Failover is routine (SPEC R22, issue 42 part 1): the API and the worker run as processes on a
 * real 3 master + 3 replica Redis Cluster (cluster-node-timeout 2 s) while guests read pages; the
 * master that owns the current version's pointer is SIGKILLed, failed over by hand, comes back as
 * a replica, a replica is lost. Counted from what the clients see: every 5xx, every page not
 * from the ring once the cluster has been whole for HEAL_BOUND_MS, every position served twice.
 * Then both /readyz say ready with Redis ok, and the controller (through BullMQ) rebuilds a
 * current queue deleted after the failover. No restart of either process. The same for a primary
 * and its replica behind three Sentinels (the third topology): primary SIGKILLed, back as replica.
 * Both with an ACL user, passwords and TLS on every node, cluster bus, replication and Sentinel
 * included, the certificate naming a host, not 127.0.0.1 (REDIS_TLS_SERVERNAME; issue 51 part 1;
 * plain Redis is the rest of the suite's). /readyz is logged every 0.5 s
 * during each fault. Ports: blocks in CHILD_PORT_RANGE.
 */
import { spawnSync } from 'node:child_process';
import mongoose, { type Connection } from 'mongoose';
import { versionFor } from '@feed/domain';
import { createRedisKeys, videoModel } from '@feed/storage';
import { seedVideos } from '@feed/demo-data';
import { freePortBlock, tsx, waitUntil, type Managed } from '../../tools/support/processes';
import { startTestDeployable } from '../support/deployables';
import { startLocalCluster, type LocalCluster } from '../support/redis-cluster';
import { SENTINEL_MASTER, startLocalSentinels, type LocalSentinels } from '../support/redis-sentinel';
import { testMongoUrl } from '../support/mongo';
import { readThrough, sampleReadiness, type Reading } from '../support/page-readers';
import { secureEnv, secureRedis, type SecureRedis } from '../support/redis-tls';

/** Ring pages again within this long of the cluster saying cluster_state:ok (SPEC R22: "within seconds"). */
const HEAL_BOUND_MS = 5_000;
const available = ['redis-server', 'redis-cli'].every((tool) => spawnSync(tool, ['--version']).status === 0) && spawnSync('openssl', ['version']).status === 0;
if (!available && process.env.CI) throw new Error('redis-server/redis-cli/openssl not installed: the Redis failover tests are required under CI');
/** `it` when redis-server is installed, `it.skip` otherwise. */
const clusterIt = available ? it : it.skip;

/**
 * Budgets wider than production's: on a 2-core machine running both deployables, six Redis nodes
 * and the readers, a starved event loop alone can spend 250 ms of Redis budget (a degraded page
 * that is no failover's doing) and MongoDB's first fallback query can overrun 1 s. The bounds
 * themselves are the subject of redis-faults and the MongoDB stall tests, not of this one.
 */
const SERVICE_ENV = { LOG_LEVEL: 'warn', CURRENT_CACHE_MS: '1000', REDIS_DEADLINE_MS: '1000', MONGO_DEADLINE_MS: '5000' };
const VIDEOS = 1000;
const keys = createRedisKeys();
const mongoUrl = testMongoUrl('failover');
let mongo: Connection;
let secure: SecureRedis;
const running: Managed[] = [];
let api: string;
let worker: string;
const today = versionFor(new Date(), 'Asia/Shanghai');

beforeAll(async () => {
  mongo = await mongoose.createConnection(mongoUrl).asPromise();
  await seedVideos(videoModel(mongo), { videos: VIDEOS, fresh: 10 });
  // A certificate for a host name only: every connection (reconnects to promoted nodes too) must send REDIS_TLS_SERVERNAME.
  if (available) secure = secureRedis('failover-data-secret', 'failover-sentinel-secret');
}, 60_000);

afterAll(async () => {
  secure?.tls.remove();
  await mongo.dropDatabase();
  await mongo.close();
});

/** The worker, then the API, on the topology `env` names; until the API serves a ring page. */
async function startService(env: Record<string, string>): Promise<void> {
  for (const name of ['worker', 'api'] as const) {
    const deployable = await startTestDeployable(tsx('tools/start-one.ts', name), { mongoUrl }, { ...SERVICE_ENV, ...env }, { startupMs: 90_000 });
    running.push(deployable.process);
    if (name === 'api') api = deployable.base;
    else worker = deployable.base;
  }
  await waitUntil('a first ring page', async () => (await readThrough(api, { clients: 1, pages: 1 })).pages[0]?.version === today, 120_000).catch((err: unknown) => {
    throw new Error(`${String(err)}; their output: ${running.map((p) => p.output.join('').slice(-3000)).join('\n---\n')}`);
  });
  // Ready as a balancer would have seen them before any fault (an API is warming until /readyz is first asked).
  await waitUntil('both /readyz ready with Redis ok before the faults', bothReady, 60_000);
}

const stopService = () => Promise.all(running.splice(0).map((p) => p.stop('SIGKILL')));

const countBy = (values: string[]) => values.reduce<Record<string, number>>((counts, v) => ({ ...counts, [v]: (counts[v] ?? 0) + 1 }), {});

/** Both deployables say ready with Redis ok. */
async function bothReady(): Promise<boolean> {
  const [a, w] = await Promise.all([fetch(`${api}/readyz`), fetch(`${worker}/readyz`)]);
  const body = (await a.json()) as { redis: string };
  return a.status === 200 && body.redis === 'ok' && w.status === 200;
}

/** Guests read pages while `fault` runs; `fault` resolves with when the cluster was whole again. */
async function readAcross(what: string, fault: () => Promise<number>): Promise<Reading & { healedAt: number }> {
  let healedAt: number | undefined;
  // The queue holds every seeded video: a device served more than that has wrapped (R11).
  const reading = readThrough(api, { clients: 8, wrapAfter: VIDEOS, until: () => healedAt !== undefined && performance.now() > healedAt + HEAL_BOUND_MS + 3_000 });
  const readiness = sampleReadiness({ api, worker });
  const faultStarted = performance.now();
  healedAt = await fault();
  const result = await reading;
  console.info(`failover ${what}:\n${await readiness.stop()}`);
  const late = result.pages.filter((p) => p.at > healedAt! + HEAL_BOUND_MS);
  const lastNonRing = result.pages.filter((p) => p.version !== today).at(-1);
  console.info(
    `failover ${what}: cluster ok ${((healedAt - faultStarted) / 1000).toFixed(1)} s after the fault; pages ${result.pages.length}, 5xx ${result.errors.length}, ` +
      `not ring ${result.pages.filter((p) => p.version !== today).length}, not ring ${HEAL_BOUND_MS / 1000} s after ok ${late.filter((p) => p.version !== today).length}/${late.length}, ` +
      `ring again ${lastNonRing ? ((lastNonRing.at - healedAt) / 1000).toFixed(1) : '0.0'} s after ok, positions twice ${result.servedTwice}, ` +
      `not ring by kind ${JSON.stringify(countBy(result.pages.filter((p) => p.version !== today).map((p) => p.version)))}`,
  );
  return { ...result, healedAt };
}

/** No 5xx, no position twice, and only ring pages once the cluster has been whole for HEAL_BOUND_MS. */
const expectHealed = (result: Reading & { healedAt: number }) => {
  expect(result.errors).toEqual([]);
  expect(result.servedTwice).toBe(0);
  expect(result.pages.filter((p) => p.at > result.healedAt + HEAL_BOUND_MS && p.version !== today).length).toBe(0);
};

describe('a Redis Cluster with an ACL user, passwords and TLS failing over under the API and the worker (R22, issue 51)', () => {
  let cluster: LocalCluster;
  beforeAll(async () => {
    if (!available) return;
    // Six nodes from the base, their cluster bus ports 10 above.
    cluster = await startLocalCluster(await freePortBlock(16), { replicas: 1, nodeTimeoutMs: 2000, busOffset: 10, secure });
    await startService({ REDIS_CLUSTER_NODES: cluster.nodes.join(','), ...secureEnv(secure) });
  }, 240_000);

  afterAll(async () => {
    if (!available) return;
    await stopService();
    await cluster.stop();
  });

  clusterIt("when the master owning the current pointer's slot is SIGKILLed, then within seconds of cluster_state:ok the ring serves, both are ready, and the controller repairs", async () => {
    const victim = await cluster.masterOf(keys.current);
    const result = await readAcross('SIGKILL master', async () => {
      await cluster.kill(victim);
      await waitUntil('a replica promoted', async () => (await cluster.masterOf(keys.current)) !== victim, 30_000);
      return cluster.untilOk();
    });
    expectHealed(result);
    await waitUntil('both /readyz ready with Redis ok', bothReady, HEAL_BOUND_MS);
    // The controller's checks and repairs, and BullMQ under them, work on the new topology.
    const owner = () => cluster.masterOf(keys.queue(today));
    expect(await cluster.cli(await owner(), 'del', keys.queue(today))).toBe('1');
    await waitUntil('the deleted queue rebuilt', async () => (await cluster.cli(await owner(), 'exists', keys.queue(today))) === '1', 90_000);

    // The failed master comes back, as a replica.
    const back = await readAcross('old master back as replica', async () => {
      await cluster.restart(victim);
      await waitUntil('the old master a replica', async () => (await cluster.cli(victim, 'role')).startsWith('slave'), 30_000);
      return cluster.untilOk();
    });
    expectHealed(back);
  }, 300_000);

  clusterIt('when the owner is failed over by hand (CLUSTER FAILOVER), then the ring serves throughout', async () => {
    const master = await cluster.masterOf(keys.current);
    const replica = Number(/slave\d*:ip=[^,]+,port=(\d+)/.exec(await cluster.cli(master, 'info', 'replication'))![1]);
    const result = await readAcross('CLUSTER FAILOVER', async () => {
      expect(await cluster.cli(replica, 'cluster', 'failover')).toBe('OK');
      await waitUntil('the replica promoted', async () => (await cluster.masterOf(keys.current)) === replica, 30_000);
      return cluster.untilOk();
    });
    expectHealed(result);
    await waitUntil('both /readyz ready with Redis ok', bothReady, HEAL_BOUND_MS);
  }, 120_000);

  clusterIt('when a replica is lost, then the ring serves throughout', async () => {
    const master = await cluster.masterOf(keys.current);
    const replica = Number(/slave\d*:ip=[^,]+,port=(\d+)/.exec(await cluster.cli(master, 'info', 'replication'))![1]);
    const result = await readAcross('replica lost', async () => {
      await cluster.kill(replica);
      return performance.now();
    });
    expectHealed(result);
    expect(result.pages.filter((p) => p.version !== today)).toEqual([]);
    await cluster.restart(replica);
  }, 120_000);
});

describe('a primary behind Redis Sentinels, with an ACL user, passwords and TLS on both, failing over under the API and the worker (R22, issue 51)', () => {
  let sentinels: LocalSentinels;
  beforeAll(async () => {
    if (!available) return;
    // Data nodes on the base and the next port, Sentinels 10-12 above.
    sentinels = await startLocalSentinels(await freePortBlock(13), secure);
    await startService({ REDIS_SENTINELS: sentinels.sentinels.join(','), REDIS_SENTINEL_MASTER: SENTINEL_MASTER, ...secureEnv(secure) });
  }, 240_000);

  afterAll(async () => {
    if (!available) return;
    await stopService();
    await sentinels.stop();
  });

  clusterIt('when the primary is SIGKILLed and the Sentinels promote the replica, then within seconds the ring serves, both are ready, and the controller repairs', async () => {
    const victim = await sentinels.primary();
    const result = await readAcross('Sentinel: SIGKILL primary', async () => {
      await sentinels.kill(victim);
      await waitUntil('the replica promoted', async () => (await sentinels.primary()) !== victim, 30_000);
      await waitUntil('the new primary writable', async () => (await sentinels.cli(await sentinels.primary(), 'role')).startsWith('master'), 10_000);
      return performance.now();
    });
    expectHealed(result);
    await waitUntil('both /readyz ready with Redis ok', bothReady, HEAL_BOUND_MS);
    const primary = await sentinels.primary();
    expect(await sentinels.cli(primary, 'del', keys.queue(today))).toBe('1');
    await waitUntil('the deleted queue rebuilt', async () => (await sentinels.cli(primary, 'exists', keys.queue(today))) === '1', 90_000);

    const back = await readAcross('Sentinel: old primary back as replica', async () => {
      await sentinels.restart(victim);
      // Back means in sync, as in sentinel-switch.test.ts: the bound runs from there, not from its first ROLE.
      await waitUntil('the old primary a replica in sync', async () => /master_link_status:up/.test(await sentinels.cli(victim, 'info', 'replication')), 60_000);
      return performance.now();
    });
    expectHealed(back);
  }, 300_000);
});
