/**
 * BullMQ's connections behind Sentinels (issue 51): a Worker's blocking connection is
 * `duplicate()` of the connection it was given. The duplicate must be one of the factory's
 * connections: its writes pass the write fence, its fence asks about the node it is connected to
 * (not the node another connection resolved last), and it keeps following the Sentinels after the
 * connection it was duplicated from has closed. And a master name the Sentinels that answer do not
 * know is a configuration error even while one Sentinel is down (a deploy during its maintenance).
 * Ports: CHILD_PORT_RANGE's start + 200 (else 7600).
 */
import { spawnSync } from 'node:child_process';
import IORedis from 'ioredis';
import { bullConnectionFactory, sentinelOptions } from '../src/redis-connection';
import { askSentinels } from '../src/redis-sentinel';
import { SENTINEL_MASTER, startLocalSentinels, type LocalSentinels } from '../../../test/support/redis-sentinel';
import { waitUntil } from '../../../tools/support/processes';

const BASE_PORT = Number(/^(\d+)-\d+$/.exec(process.env.CHILD_PORT_RANGE ?? '')?.[1] ?? 7400) + 200;
const available = ['redis-server', 'redis-cli'].every((tool) => spawnSync(tool, ['--version']).status === 0);
const sentinelIt = available ? it : it.skip;

let sentinels: LocalSentinels;

beforeAll(async () => {
  if (available) sentinels = await startLocalSentinels(BASE_PORT);
}, 60_000);

afterAll(async () => {
  await sentinels?.stop();
});

const ready = (connection: IORedis) => waitUntil('connection ready', async () => connection.status === 'ready', 15_000);

sentinelIt('a duplicate of a BullMQ connection has its writes fenced and follows the Sentinels after the original closed', async () => {
  const factory = bullConnectionFactory({ redisUrl: '', redisClusterNodes: undefined, redisSentinels: sentinels.sentinels, redisSentinelMaster: SENTINEL_MASTER });
  const original = factory();
  if (!(original instanceof IORedis)) throw new Error('behind Sentinels a BullMQ connection is an ioredis client');
  await ready(original);
  const duplicate = original.duplicate({ connectionName: 'bull:blocking' });
  try {
    await ready(duplicate);
    // A replica stalled (SIGSTOP) stays attached but confirms nothing: a fenced write is not acknowledged.
    const replicaPid = Number(/process_id:(\d+)/.exec(await sentinels.cli(BASE_PORT + 1, 'info', 'server'))![1]);
    process.kill(replicaPid, 'SIGSTOP');
    try {
      await expect(duplicate.eval("return redis.call('INCR', KEYS[1])", 1, 'bull-duplicate-test')).rejects.toThrow(/no replica confirmed/);
    } finally {
      process.kill(replicaPid, 'SIGCONT');
    }
    original.disconnect();
    await waitUntil('the original ended', async () => original.status === 'end', 5_000);
    duplicate.disconnect(true);
    await waitUntil('the duplicate connected again', async () => duplicate.status === 'ready' && (await duplicate.ping()) === 'PONG', 15_000);
  } finally {
    duplicate.disconnect();
    original.disconnect();
  }
}, 90_000);

// Last: it stops a Sentinel.
sentinelIt('a master name that the answering Sentinels do not know, one Sentinel down: a configuration error naming REDIS_SENTINEL_MASTER', async () => {
  const settings = { redisUrl: '', redisClusterNodes: undefined, redisSentinels: sentinels.sentinels, redisSentinelMaster: 'nosuchmaster' };
  await sentinels.kill(BASE_PORT + 12);
  await expect(askSentinels(sentinels.sentinels.map((s) => ({ host: s.split(':')[0], port: Number(s.split(':')[1]) })), 'nosuchmaster', sentinelOptions(settings))).rejects.toThrow(
    /REDIS_SENTINEL_MASTER=nosuchmaster.*know no primary of that name/,
  );
}, 30_000);
