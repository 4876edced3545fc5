// One daily build in a process of its own, from the compiled packages (`pnpm build`: what the
// worker runs in production), so its peak RSS is the build's and the worker code's alone.
// Started by build-bench.ts: BENCH_MONGO_URI, BENCH_REDIS_PREFIX, BENCH_AT (ISO), BENCH_SWITCH.
// Prints one JSON line: the build result, the peak RSS in MB, and (BENCH_LIMIT=1) the limits,
// measured after the build in this same process: the seconds of bare pipelined RPUSHes of the same
// ids in 5000-id commands (three runs), and of one bare SADD of them (the legacy set's own limit).
const { createLogger } = require('@feed/logger');
const { connectMongo, connectRedis, createRedisKeys, videoModel } = require('@feed/storage');
const { runDailyBuild } = require('@feed/worker');

/** Seconds to write `ids` to `key` with `command` ('rPush' or 'sAdd') in 5000-id commands, all pipelined; the key is deleted after. */
async function barePush(redis, key, ids, command) {
  const started = performance.now();
  const writes = [];
  for (let i = 0; i < ids.length; i += 5000) writes.push(redis[command](key, ids.slice(i, i + 5000)));
  await Promise.all(writes);
  const seconds = (performance.now() - started) / 1000;
  await redis.del(key);
  return seconds;
}

async function limits(redis, keys, version) {
  const ids = await redis.lRange(keys.queue(version), 0, -1);
  const rPush = [];
  for (let run = 0; run < 3; run++) rPush.push(await barePush(redis, keys.queue('limit'), ids, 'rPush'));
  return { rPush, sAdd: await barePush(redis, keys.queue('sadd-limit'), ids, 'sAdd') };
}

async function main() {
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const redis = await connectRedis({ redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
  const mongo = await connectMongo({ mongoUrl: process.env.BENCH_MONGO_URI });
  const keys = createRedisKeys(process.env.BENCH_REDIS_PREFIX);
  const startRss = process.memoryUsage().rss;
  const peakBefore = {};
  const started = performance.now();
  const result = await runDailyBuild(
    {
      redis,
      keys,
      videos: videoModel(mongo.connection),
      logger: createLogger({ silent: true }),
      businessTimeZone: 'Asia/Shanghai',
      keyTtlHours: 1,
      lockTtlMs: 30 * 60_000,
    },
    {
      at: new Date(process.env.BENCH_AT),
      switch: process.env.BENCH_SWITCH === '1',
      // The peak so far at the start of each phase: shows which phase raised it.
      onProgress: (phase) => void (peakBefore[phase] ??= Math.round(Math.max(peak, process.memoryUsage().rss) / 1048576)),
    },
  );
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  const limitSeconds = process.env.BENCH_LIMIT === '1' ? await limits(redis, keys, result.version) : undefined;
  process.stdout.write(`${JSON.stringify({ result, seconds, limitSeconds, peakRssMb: Math.round(peak / 1048576), peakBefore, startRssMb: Math.round(startRss / 1048576) })}\n`);
  await mongo.close();
  await redis.close();
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
