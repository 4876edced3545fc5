/**
 * The Sentinel write fence (issue 51) against what a client sees when a write ran on the primary
 * but no replica confirmed it: the primary is the real one (its replica stalled), so the write
 * stays. A ring claim so answered must be given back, else the user's positions it moved past are
 * never served (skipped). A replica stalled with SIGSTOP stays attached (ROLE) until repl-timeout.
 * Ports: data and Sentinels from the start of CHILD_PORT_RANGE + 100 (else 7500).
 */
import { spawnSync } from 'node:child_process';
import { closeRedis, connectRedis, createRedisKeys, claimPositions, readOffset, readoutStore, statsHour, unclaimPositions, Deadline, type Redis, type RingVersion } from '@feed/storage';
import { VariantReadout } from '../src/feed/variant-readout';
import { RingClaims } from '../src/feed/ring-claims';
import { SENTINEL_MASTER, startLocalSentinels, type LocalSentinels } from '../../../test/support/redis-sentinel';
import { waitUntil } from '../../../tools/support/processes';

const BASE_PORT = Number(/^(\d+)-\d+$/.exec(process.env.CHILD_PORT_RANGE ?? '')?.[1] ?? 7400) + 100;
const available = ['redis-server', 'redis-cli'].every((tool) => spawnSync(tool, ['--version']).status === 0);
const sentinelIt = available ? it : it.skip;

let sentinels: LocalSentinels;
let redis: Redis;
const keys = createRedisKeys('fence-test:');
const ring: RingVersion = { version: '20260101', length: 100, buildId: 'b', offsetBuckets: 4, expiresAt: 0 };

beforeAll(async () => {
  if (!available) return;
  sentinels = await startLocalSentinels(BASE_PORT);
  redis = await connectRedis({ redisUrl: '', redisClusterNodes: undefined, redisSentinels: sentinels.sentinels, redisSentinelMaster: SENTINEL_MASTER }, { failFast: true });
}, 60_000);

afterAll(async () => {
  if (!available) return;
  await closeRedis(redis);
  await sentinels.stop();
});

sentinelIt('a ring claim that ran on the primary but no replica confirmed is given back: no position skipped', async () => {
  const versions = { claim: (r: RingVersion, user: string, count: number) => claimPositions(redis, keys, r, user, count), unclaim: (r: RingVersion, user: string, claim: Parameters<typeof unclaimPositions>[4]) => unclaimPositions(redis, keys, r, user, claim) };
  const counted: string[] = [];
  const metrics = { lateClaims: { inc: () => counted.push('late') }, claimsGivenBack: { inc: ({ result }: { result: string }) => counted.push(result) } };
  const reader = { idsAt: async (_r: RingVersion, offset: number, count: number) => Array.from({ length: count }, (_, i) => `v${offset + i}`) };
  const take = () => new RingClaims({ versions, reader, metrics, ring, userKey: 'user-1', deadline: new Deadline(1000) } as never).take(10, 0);

  await take();
  expect(await readOffset(redis, keys, ring, 'user-1')).toBe(10);

  const replicaPid = Number(/process_id:(\d+)/.exec(await sentinels.cli(BASE_PORT + 1, 'info', 'server'))![1]);
  process.kill(replicaPid, 'SIGSTOP');
  try {
    await expect(take()).rejects.toThrow(/no replica confirmed/);
    // The give-back runs once the claim's answer is known; the user's cursor is where the last served page left it.
    await waitUntil('the failed claim given back', async () => counted.length > 0, 5_000);
    expect(counted).toEqual(['given-back']);
    expect(await readOffset(redis, keys, ring, 'user-1')).toBe(10);
  } finally {
    process.kill(replicaPid, 'SIGCONT');
  }
  await waitUntil('the replica caught up', async () => (await redis.set('fence-test:probe', '1').then(() => true, () => false)), 10_000);
  const next = await take();
  expect(next?.start).toBe(10);
}, 60_000);

sentinelIt('the readout tally counts a batch once when its increments ran on the primary but no replica confirmed them', async () => {
  const readout = new VariantReadout({ store: readoutStore(redis, keys), metrics: {} as never, variantOf: async () => ({ variant: 'ring', percent: 50 }) });
  const hour = keys.variantStats(statsHour(new Date()));
  const replicaPid = Number(/process_id:(\d+)/.exec(await sentinels.cli(BASE_PORT + 1, 'info', 'server'))![1]);
  try {
    for (let i = 0; i < 3; i++) readout.countHealth('ring', 'viewers');
    process.kill(replicaPid, 'SIGSTOP');
    // Three flushes while the replica is stalled: each increment runs on the primary, none is confirmed.
    for (let i = 0; i < 3; i++) await readout.flush();
  } finally {
    process.kill(replicaPid, 'SIGCONT');
  }
  await waitUntil('the replica caught up', async () => (await redis.set('fence-test:probe', '1').then(() => true, () => false)), 10_000);
  await readout.close();
  expect(await redis.hGet(hour, 'ring:viewers')).toBe('3');
}, 60_000);

sentinelIt("an action whose readout admission ran on the primary but no replica confirmed is counted once, not lost to its own admission", async () => {
  const metrics = { variantEngagement: { inc: () => undefined }, variantPages: { inc: () => undefined } };
  const readout = new VariantReadout({ store: readoutStore(redis, keys), metrics: metrics as never, variantOf: async () => ({ variant: 'legacy', percent: 50 }) });
  const hour = keys.variantStats(statsHour(new Date()));
  const replicaPid = Number(/process_id:(\d+)/.exec(await sentinels.cli(BASE_PORT + 1, 'info', 'server'))![1]);
  process.kill(replicaPid, 'SIGSTOP');
  try {
    await readout.record({ key: 'u:fence-user', userId: 'fence-user' }, 'like', new Deadline(10_000), 'video-1');
  } finally {
    process.kill(replicaPid, 'SIGCONT');
  }
  await waitUntil('the replica caught up', async () => (await redis.set('fence-test:probe', '1').then(() => true, () => false)), 10_000);
  // The client's retry of the same like is a repeat (its admission is stored): the first must have counted.
  await readout.record({ key: 'u:fence-user', userId: 'fence-user' }, 'like', new Deadline(10_000), 'video-1');
  await readout.close();
  expect(await redis.hGet(hour, 'legacy:like')).toBe('1');
}, 60_000);
