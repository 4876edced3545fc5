// The limit of the build's queue write: bare pipelined RPUSHes of the same ids, in a process of its
// own started like the build's (build-bench.ts), so its first run is, like the build's write, the
// process's first bulk write: node-redis's encoder and the socket path not yet optimised by V8.
// Started with BENCH_REDIS_PREFIX and BENCH_QUEUE (the built queue's key); the ids are read from it
// first (flat strings, as ready-made as ids get). Prints one JSON line: the seconds of three RPUSH
// runs (the first is the cold one) and of one SADD after them (the legacy set's own limit, warm as
// the build's legacy refill is, which comes after its queue write).
const { connectRedis, createRedisKeys } = require('@feed/storage');

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

async function main() {
  const redis = await connectRedis({ redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
  const keys = createRedisKeys(process.env.BENCH_REDIS_PREFIX);
  const ids = await redis.lRange(process.env.BENCH_QUEUE, 0, -1);
  const rPush = [];
  for (let run = 0; run < 3; run++) rPush.push(await barePush(redis, keys.queue('limit'), ids, 'rPush'));
  const sAdd = await barePush(redis, keys.queue('sadd-limit'), ids, 'sAdd');
  process.stdout.write(`${JSON.stringify({ rPush, sAdd })}\n`);
  await redis.close();
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
