/**
 * `pnpm cli <command>` (SPEC D3). Every command exits non-zero with a clear message on failure.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '@feed/config';
import { startEmbeddedMongo } from '@feed/embedded-mongo';
import { parseBuildAt } from '@feed/domain';
import { createLogger } from '@feed/logger';
import { clearRolloutOverride, closeRedis, connectMongo, connectRedis, createRedisKeys, initRecommendHistory, readRolloutOverride, resolveRollout, VERSION_PATTERN, videoModel, writeRolloutOverride } from '@feed/storage';
import { seedVideos } from '@feed/demo-data';
import { explainNextPage, guestIdentity, userIdentity, UserHistory, VideoCatalog } from '@feed/api';
import { Queue } from 'bullmq';
import { BUILD_QUEUE, buildDepsFrom, buildSchedule, bullConnectionFactory, runDailyBuild, summarizeVersions } from '@feed/worker';
import { useLocalMongo } from './support/local-mongo';

const USAGE = `usage: pnpm cli <command> [options]
  mongo [--port P]                         run the embedded MongoDB-protocol server in the foreground
  seed --videos N [--fresh M]              insert demo videos (N older than a day, M approved in the last 24 h)
  build [--at ISO-8601] [--force] [--shadow] [--switch]
                                           run one build now; --at without an offset is in TZ_BUSINESS;
                                           a day older than current or later than today is built as a
                                           shadow unless --switch
  inspect [--version V]                    versions, meta, block composition, shadow diff
  explain (--user U | --device D) [--version V] [--page-size N]
                                           the user's offset and next page, with block, pool, score and skip reasons
  init-history                             one-time, idempotent recommend* counter initialisation (R5)
  rollout [--enabled true|false] [--percent N] [--clear]
                                           the run-time rollout override (R16); no flag: the values in force
`;

class UsageError extends Error {}

/** A command fails within 10 s, naming the setting, when Redis is unreachable. */
const REDIS_CONNECT_MS = 5_000;

function versionOption(value: string | undefined): string | undefined {
  if (value !== undefined && !VERSION_PATTERN.test(value)) throw new UsageError(`--version must be YYYYMMDD, got "${value}"`);
  return value;
}

function intOption(value: string | undefined, name: string, fallback?: number): number {
  if (value === undefined) {
    if (fallback === undefined) throw new UsageError(`--${name} is required`);
    return fallback;
  }
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a non-negative integer, got "${value}"`);
  return Number(value);
}

async function withStores<T>(fn: (stores: { config: ReturnType<typeof loadConfig>; redis: Awaited<ReturnType<typeof connectRedis>>; mongo: Awaited<ReturnType<typeof connectMongo>> }) => Promise<T>): Promise<T> {
  const localMongo = await useLocalMongo();
  const config = loadConfig();
  try {
    const redis = await connectRedis(config, { connectWithinMs: REDIS_CONNECT_MS });
    try {
      const mongo = await connectMongo(config);
      try {
        return await fn({ config, redis, mongo });
      } finally {
        await mongo.close();
      }
    } finally {
      await closeRedis(redis);
    }
  } finally {
    await localMongo.stop();
  }
}

const print = (value: unknown) => process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`);

const commands: Record<string, (args: string[]) => Promise<void>> = {
  async mongo(args) {
    const { values } = parseArgs({ args, options: { port: { type: 'string' } } });
    const embedded = await startEmbeddedMongo({ port: intOption(values.port, 'port', 27018) });
    print(`embedded MongoDB-protocol server listening at ${embedded.uri} (in memory; Ctrl-C to stop)`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await embedded.stop();
  },

  async seed(args) {
    const { values } = parseArgs({ args, options: { videos: { type: 'string' }, fresh: { type: 'string' } } });
    const videos = intOption(values.videos, 'videos');
    const fresh = intOption(values.fresh, 'fresh', 0);
    await withStores(async ({ mongo }) => {
      const model = videoModel(mongo.connection);
      await model.init();
      const ids = await seedVideos(model, { videos, fresh, seed: Date.now() });
      print(`seeded ${ids.length} videos (${fresh} approved in the last 24 h)`);
    });
  },

  async build(args) {
    const { values } = parseArgs({ args, options: { at: { type: 'string' }, force: { type: 'boolean' }, shadow: { type: 'boolean' }, switch: { type: 'boolean' } } });
    await withStores(async ({ config, redis, mongo }) => {
      const at = values.at === undefined ? undefined : parseBuildAt(values.at, config.businessTimeZone);
      if (at === null) throw new UsageError(`--at must be an ISO-8601 date or date-time (without an offset: in ${config.businessTimeZone}), got "${values.at}"`);
      const logger = createLogger({ silent: false, level: 'warn' });
      const result = await runDailyBuild(
        buildDepsFrom(config, { redis, keys: createRedisKeys(config.redisKeyPrefix), videos: videoModel(mongo.connection), logger }),
        { at, force: values.force, shadow: values.shadow, switch: values.switch, onProgress: (phase, percent) => void process.stderr.write(`[${String(percent).padStart(3)}%] ${phase}\n`) },
      );
      print({
        version: result.version,
        status: result.status,
        ...(result.reason ? { reason: result.reason } : {}),
        length: result.meta?.length,
        high: result.meta?.highCount,
        new: result.meta?.newCount,
        scoresWritten: result.scoresWritten,
        timings: result.timings,
      });
      if (result.status === 'locked') throw new Error(`another build of ${result.version} holds the lock; try again when it finishes`);
    });
  },

  async explain(args) {
    const { values } = parseArgs({ args, options: { user: { type: 'string' }, device: { type: 'string' }, version: { type: 'string' }, 'page-size': { type: 'string' } } });
    if (Boolean(values.user) === Boolean(values.device)) throw new UsageError('give exactly one of --user U or --device D');
    const requested = versionOption(values.version);
    const pageSize = intOption(values['page-size'], 'page-size', 20);
    await withStores(async ({ config, redis, mongo }) => {
      const keys = createRedisKeys(config.redisKeyPrefix);
      const videos = videoModel(mongo.connection);
      const identity = values.user ? userIdentity(values.user) : guestIdentity(values.device!);
      const version = requested ?? (await redis.get(keys.current));
      if (!version) throw new Error('no current version: run pnpm cli build first');
      const explanation = await explainNextPage(
        { redis, keys, videos, catalog: new VideoCatalog(videos, 0), history: new UserHistory(redis, keys, config) },
        identity,
        version,
        pageSize,
      );
      if (!explanation) throw new Error(`version ${version} has no queue in Redis (expired or never built)`);
      print(`user ${explanation.user}  version ${explanation.version}  offset ${explanation.offset}/${explanation.queueLength}  generatedAt ${explanation.generatedAt}`);
      print('position  block  pool  score  verdict       vid');
      for (const c of explanation.candidates) {
        print(`${String(c.position).padStart(8)}  ${String(c.block).padStart(5)}  ${c.pool.padEnd(4)}  ${String(c.score ?? '-').padStart(5)}  ${c.verdict.padEnd(12)}  ${c.vid}`);
      }
    });
  },

  async 'init-history'() {
    await withStores(async ({ mongo }) => {
      const videos = videoModel(mongo.connection);
      const result = await initRecommendHistory(mongo.connection, videos, (done) => process.stderr.write(`initialised ${done} videos\n`));
      if (result.previouslyCompletedAt) print(`version ${result.version} was completed at ${result.previouslyCompletedAt.toISOString()}; this run initialised ${result.initialised} new videos`);
      else print(`initialised ${result.initialised} videos (version ${result.version})`);
    });
  },

  async rollout(args) {
    const { values } = parseArgs({ args, options: { enabled: { type: 'string' }, percent: { type: 'string' }, clear: { type: 'boolean' } } });
    if (values.enabled !== undefined && values.enabled !== 'true' && values.enabled !== 'false') throw new UsageError(`--enabled must be true or false, got "${values.enabled}"`);
    const percent = values.percent === undefined ? undefined : intOption(values.percent, 'percent');
    if (percent !== undefined && percent > 100) throw new UsageError(`--percent must be 0-100, got ${percent}`);
    if (values.clear && (values.enabled !== undefined || percent !== undefined)) throw new UsageError('--clear takes no other option');
    const config = loadConfig();
    const redis = await connectRedis(config, { connectWithinMs: REDIS_CONNECT_MS });
    try {
      const keys = createRedisKeys(config.redisKeyPrefix);
      if (values.clear) await clearRolloutOverride(redis, keys);
      else await writeRolloutOverride(redis, keys, { enabled: values.enabled === undefined ? undefined : values.enabled === 'true', percent });
      const inForce = resolveRollout({ enabled: config.shortRecommendV2Enabled, percent: config.shortRecommendV2Percent }, await readRolloutOverride(redis, keys));
      print(`enabled ${inForce.enabled} (${inForce.source.enabled})`);
      print(`percent ${inForce.percent} (${inForce.source.percent})`);
      if (values.clear || values.enabled !== undefined || percent !== undefined) print(`every API instance applies this within CURRENT_CACHE_MS (${config.currentCacheMs} ms)`);
    } finally {
      await closeRedis(redis);
    }
  },

  async inspect(args) {
    const { values } = parseArgs({ args, options: { version: { type: 'string' } } });
    const requested = versionOption(values.version);
    await withStores(async ({ config, redis }) => {
      const keys = createRedisKeys(config.redisKeyPrefix);
      const summary = await summarizeVersions(redis, keys, requested ? [requested] : undefined);
      if (requested && !summary.versions[0].meta && summary.shadow?.version !== requested) throw new Error(`version ${requested} has no meta in Redis (expired or never built)`);
      // The schedule as BullMQ holds it: a missing scheduler is an error, not a computed date.
      const connection = bullConnectionFactory(config)();
      const queue = new Queue(BUILD_QUEUE, { connection, prefix: keys.bullPrefix });
      try {
        const schedule = await buildSchedule(queue, redis, keys, config.businessTimeZone);
        print({ ...summary, schedule });
        if (schedule.error) process.stderr.write(`error: ${schedule.error}\n`);
      } finally {
        await queue.close();
        await connection.quit();
      }
    });
  },
};

async function main(): Promise<void> {
  const [name, ...args] = process.argv.slice(2);
  const command = name ? commands[name] : undefined;
  if (!command) {
    process.stderr.write(name ? `unknown command "${name}"\n${USAGE}` : USAGE);
    process.exit(2);
  }
  await command(args);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    if (err instanceof UsageError || (err as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') process.stderr.write(USAGE);
    process.exit(1);
  },
);
