/**
 * `pnpm bench sentinel-fence [--writes N] [--concurrency C]`: the cost of the write fence (issue
 * 51: behind Sentinels a write is answered once a replica confirms it, WAIT 1). On a primary +
 * replica behind three Sentinels of its own (ports from CHILD_PORT_RANGE), N increments C at a
 * time through the storage client in Sentinel mode (fenced), then the same through a client of
 * the same primary by REDIS_URL (standalone, no fence). Prints writes/s and latency p50/p99 of
 * each and the ratio; run it twice and state the machine's load with the figures.
 */
import { closeRedis, connectRedis, type Redis } from '@feed/storage';
import { percentile } from '../support/percentile';
import { freePort } from '../support/processes';
import { startLocalSentinels, SENTINEL_MASTER } from '../../test/support/redis-sentinel';
import { argValue } from './support';

async function measure(redis: Redis, writes: number, concurrency: number) {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < writes) {
        const at = performance.now();
        await redis.hIncrBy('sentinel-fence-bench', 'n', 1);
        latencies.push(performance.now() - at);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { perSecond: Math.round(writes / seconds), p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

export async function runSentinelFenceBench(): Promise<void> {
  const writes = Number(argValue('writes', '20000'));
  const concurrency = Number(argValue('concurrency', '50'));
  const sentinels = await startLocalSentinels(await freePort());
  try {
    const primary = await sentinels.primary();
    const fenced = await connectRedis({ redisUrl: '', redisClusterNodes: undefined, redisSentinels: sentinels.sentinels, redisSentinelMaster: SENTINEL_MASTER }, { failFast: true });
    const plain = await connectRedis({ redisUrl: `redis://127.0.0.1:${primary}`, redisClusterNodes: undefined }, { failFast: true });
    const show = (name: string, r: Awaited<ReturnType<typeof measure>>) => `${name}: ${r.perSecond} writes/s p50=${r.p50.toFixed(2)} ms p99=${r.p99.toFixed(2)} ms`;
    await measure(plain, 2_000, concurrency); // warm-up
    const standalone = await measure(plain, writes, concurrency);
    const sentinel = await measure(fenced, writes, concurrency);
    process.stdout.write(`${show('standalone (no fence)', standalone)}\n${show('sentinel (WAIT 1 fence)', sentinel)}\n`);
    process.stdout.write(`fenced_vs_plain_throughput=${(sentinel.perSecond / standalone.perSecond).toFixed(2)} p99_added_ms=${(sentinel.p99 - standalone.p99).toFixed(2)}\n`);
    await Promise.all([closeRedis(fenced), closeRedis(plain)]);
  } finally {
    await sentinels.stop();
  }
}
