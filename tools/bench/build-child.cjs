// One daily build in a process of its own, from the compiled packages (`pnpm build`: what the
// worker runs in production), so its peak RSS is the build's and the worker code's alone.
// Started by build-bench.ts: BENCH_MONGO_URI, BENCH_REDIS_PREFIX, BENCH_AT (ISO), BENCH_SWITCH.
// Prints one JSON line: the build result and the peak RSS in MB (limit-child.cjs measures the
// write's limit).
const { createLogger } = require('@feed/logger');
const { BuildStore, connectMongo, connectRedis, createRedisKeys, videoModel } = require('@feed/storage');
const { runDailyBuild } = require('@feed/worker');

async function main() {
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const redis = await connectRedis({ redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
  const mongo = await connectMongo({ mongoUrl: process.env.BENCH_MONGO_URI });
  const keys = createRedisKeys(process.env.BENCH_REDIS_PREFIX);
  const startRss = process.memoryUsage().rss;
  const peakBefore = {};
  const started = performance.now();
  // The build process's own CPU: the worker's cost, whatever the database (the embedded one or a real one).
  const cpuStart = process.cpuUsage();
  const result = await runDailyBuild(
    {
      store: new BuildStore(redis, keys),
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
  const cpu = process.cpuUsage(cpuStart);
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  process.stdout.write(`${JSON.stringify({ result, seconds, cpuUserSeconds: cpu.user / 1e6, cpuSystemSeconds: cpu.system / 1e6, peakRssMb: Math.round(peak / 1048576), peakBefore, startRssMb: Math.round(startRss / 1048576) })}\n`);
  await mongo.close();
  await redis.close();
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
