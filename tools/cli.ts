/**
 * `pnpm cli <command>` (SPEC D3), parsed by commander: `--help` for the whole CLI and for each
 * command. A usage error (unknown command or flag, bad value) exits 2 naming it; a failure exits 1
 * with a clear message. Commands that only read Redis (`inspect`, `rollout`) never need MongoDB;
 * commands that need it refuse a throwaway embedded server (its data would vanish on exit).
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { loadConfig, type Config } from '@feed/config';
import { startEmbeddedMongo } from '@feed/embedded-mongo';
import { MAX_RAMP_STEPS, parseBuildAt, type RampState } from '@feed/domain';
import { configureLogger, createLogger } from '@feed/logger';
import { hostname, userInfo } from 'node:os';
import {
  auditTrail,
  BuildStore,
  closeRedis,
  connectMongo,
  connectRedis,
  createRedisKeys,
  initRecommendHistory,
  changeRolloutOverRamp,
  DURATION_RANGE,
  MAX_MIN_SAMPLES,
  pauseStoredRamp,
  rampAskOf,
  rampAskSchema,
  RequestBudget,
  readRamp,
  readRolloutOverride,
  resumeStoredRamp,
  startStoredRamp,
  resolveRollout,
  UserHistory,
  VERSION_PATTERN,
  VersionStore,
  videoModel,
  type AuditTrail,
  type MongoHandle,
  type RampCommandResult,
  type Redis,
  type RedisKeys,
} from '@feed/storage';
import { seedVideos } from '@feed/demo-data';
import { explainNextPage, guestIdentity, userIdentity, VideoCatalog } from '@feed/api';
import { Queue } from 'bullmq';
import { BUILD_QUEUE, buildDepsFrom, buildSchedule, bullConnectionFactory, promoteHeldVersion, runDailyBuild, summarizeVersions } from '@feed/worker';
import { useLocalMongo } from './support/local-mongo';

/** A usage error found after parsing (e.g. two options that exclude each other): exit 2. */
class UsageError extends Error {}

/** A command fails within 10 s, naming the setting, when Redis is unreachable. */
const REDIS_CONNECT_MS = 5_000;

const nonNegativeInt = (name: string) => (value: string) => {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`--${name} must be a non-negative integer.`);
  return Number(value);
};
const versionArg = (value: string) => {
  if (!VERSION_PATTERN.test(value)) throw new InvalidArgumentError('a version is YYYYMMDD.');
  return value;
};

/** Redis only, with the configuration (read now) and its keys. */
async function withRedis<T>(fn: (stores: { config: Config; redis: Redis; keys: RedisKeys }) => Promise<T>): Promise<T> {
  if (process.env.MONGO_URL === '') delete process.env.MONGO_URL; // `MONGO_URL=` in a shell means unset
  const config = loadConfig();
  configureLogger(config);
  const redis = await connectRedis(config, { connectWithinMs: REDIS_CONNECT_MS });
  try {
    return await fn({ config, redis, keys: createRedisKeys(config.redisKeyPrefix) });
  } finally {
    await closeRedis(redis);
  }
}

/** Redis and MongoDB: MONGO_URL, or the embedded server `pnpm start` / `pnpm cli mongo` runs (never a new, throwaway one). */
async function withStores<T>(fn: (stores: { config: Config; redis: Redis; keys: RedisKeys; mongo: MongoHandle }) => Promise<T>): Promise<T> {
  await useLocalMongo(process.env, { reuseOnly: true });
  return withRedis(async (stores) => {
    // A command serves no burst: it does not wait for an instance's minimum pool.
    const mongo = await connectMongo({ ...stores.config, mongoMinPoolSize: 0 });
    try {
      return await fn({ ...stores, mongo });
    } finally {
      await mongo.close();
    }
  });
}

/** The rollout the environment sets (R16), under any override. */
const environmentRollout = (config: Config) => ({ enabled: config.shortRecommendV2Enabled, percent: config.shortRecommendV2Percent });

/** Who ran this command, for the audit trail (D6). */
const cliActor = { actor: `${userInfo().username}@${hostname()}`, via: 'cli' } as const;

const print = (value: unknown) => process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`);

const program = new Command('pnpm cli')
  .description('Operate the short-video feed: seed, build, inspect, explain, roll out.')
  .showHelpAfterError('(add --help for usage)')
  .exitOverride();

program
  .command('mongo')
  .description('run the embedded MongoDB-protocol server in the foreground (in memory; Ctrl-C to stop)')
  .option('--port <P>', 'port to listen on', nonNegativeInt('port'), 27018)
  .action(async ({ port }: { port: number }) => {
    const embedded = await startEmbeddedMongo({ port });
    print(`embedded MongoDB-protocol server listening at ${embedded.uri} (in memory; Ctrl-C to stop)`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await embedded.stop();
  });

program
  .command('seed')
  .description('insert demo videos: N approved more than a day ago, M in the last 24 h')
  .requiredOption('--videos <N>', 'older videos', nonNegativeInt('videos'))
  .option('--fresh <M>', 'videos approved in the last 24 h', nonNegativeInt('fresh'), 0)
  .action(async ({ videos, fresh }: { videos: number; fresh: number }) => {
    await withStores(async ({ mongo }) => {
      const model = videoModel(mongo.connection);
      await model.init();
      const ids = await seedVideos(model, { videos, fresh, seed: Date.now() });
      print(`seeded ${ids.length} videos (${fresh} approved in the last 24 h)`);
    });
  });

program
  .command('build')
  .description('run one build now; a day older than current or later than today is built as a shadow unless --switch')
  .option('--at <ISO-8601>', 'generatedAt (its date in TZ_BUSINESS names the version; without an offset it is read in TZ_BUSINESS)')
  .option('--force', 'rebuild a version that is already current')
  .option('--shadow', 'build onto keys of its own; current stays (R20)')
  .option('--switch', 'make this version current even when it is older than current or later than today')
  .option('--skip-gate', "switch whatever the release gate would say (R23: on-call's forced rebuild; audited)")
  .option('--promote <V>', 'no build: make the version the release gate held current (R23; audited); a day older than current stays published, not current', versionArg)
  .option('--dismiss <V>', 'no build: drop the hold of a day older than current, publishing nothing (R23; audited)', versionArg)
  .action(async (options: { at?: string; force?: boolean; shadow?: boolean; switch?: boolean; skipGate?: boolean; promote?: string; dismiss?: string }) => {
    const held = options.promote ?? options.dismiss;
    if (held && (options.at !== undefined || options.force || options.shadow || options.switch || options.skipGate || (options.promote && options.dismiss))) throw new UsageError('--promote and --dismiss take no other option');
    if (options.skipGate && options.shadow) throw new UsageError('--skip-gate switches current; --shadow never does');
    await withStores(async ({ config, redis, keys, mongo }) => {
      const trail = auditTrail(mongo.connection, config.redisKeyPrefix);
      const logger = createLogger({ silent: false, level: 'warn' });
      if (held) {
        // A refusal (PromoteRefusedError) exits 1 with its message, as any failure.
        const result = await promoteHeldVersion({ store: new BuildStore(redis, keys), logger, audit: trail, keyTtlHours: config.shortRecommendKeyTTLHours, lockTtlMs: config.buildLockTtlMs }, held, cliActor, options.dismiss ? 'dismiss' : 'promote');
        return print({ version: result.version, status: result.status, replaced: result.replaced, current: result.current, reasons: result.held.verdict.reasons.map((r) => r.message) });
      }
      const at = options.at === undefined ? undefined : parseBuildAt(options.at, config.businessTimeZone);
      if (at === null) throw new UsageError(`--at must be an ISO-8601 date or date-time (without an offset: in ${config.businessTimeZone}), got "${options.at}"`);
      const asked = { at: at?.toISOString() ?? null, force: Boolean(options.force), shadow: Boolean(options.shadow), switch: Boolean(options.switch), skipGate: Boolean(options.skipGate) };
      const current = await redis.get(keys.current);
      const audit = async (after: Record<string, unknown>) =>
        trail.record({ action: 'build-requested', ...cliActor, before: { current, asked }, after: { current: await redis.get(keys.current), ...after } });
      let result: Awaited<ReturnType<typeof runDailyBuild>>;
      try {
        result = await runDailyBuild(buildDepsFrom(config, { store: new BuildStore(redis, keys), videos: videoModel(mongo.connection), logger, audit: trail }), {
          at,
          force: options.force,
          shadow: options.shadow,
          switch: options.switch,
          ...(options.skipGate ? { skipGate: { by: cliActor.actor } } : {}),
          onProgress: (phase, percent) => void process.stderr.write(`[${String(percent).padStart(3)}%] ${phase}\n`),
        });
      } catch (err) {
        await audit({ status: 'failed', error: err instanceof Error ? err.message : String(err) }).catch(() => undefined);
        throw err;
      }
      const gate = result.verdict ? { gate: result.verdict.outcome, gateReasons: result.verdict.reasons.map((r) => r.message) } : {};
      const outcome = { version: result.version, status: result.status, ...(result.reason ? { reason: result.reason } : {}), ...gate };
      await audit(outcome);
      print({
        ...outcome,
        ...(result.status === 'held' ? { promote: `pnpm cli build --promote ${result.version}` } : {}),
        length: result.meta?.length,
        high: result.meta?.highCount,
        new: result.meta?.newCount,
        scoresWritten: result.scoresWritten,
        timings: result.timings,
      });
      if (result.status === 'locked') throw new Error(`another build of ${result.version} holds the lock; try again when it finishes`);
    });
  });

program
  .command('inspect')
  .description('versions, meta, block composition, the shadow build and its diff, the build schedule (Redis only)')
  .option('--version <V>', 'one version (YYYYMMDD)', versionArg)
  .action(async ({ version }: { version?: string }) => {
    await withRedis(async ({ config, redis, keys }) => {
      const summary = await summarizeVersions(new BuildStore(redis, keys), version ? [version] : undefined);
      if (version && !summary.versions[0].meta && summary.shadow?.version !== version) throw new Error(`version ${version} has no meta in Redis (expired or never built)`);
      // The schedule as BullMQ holds it: a missing scheduler is an error, not a computed date.
      const connection = bullConnectionFactory(config)();
      const queue = new Queue(BUILD_QUEUE, { connection, prefix: keys.bullPrefix });
      try {
        const schedule = await buildSchedule(queue, new BuildStore(redis, keys), config.businessTimeZone);
        print({ ...summary, schedule });
        if (schedule.error) process.stderr.write(`error: ${schedule.error}\n`);
      } finally {
        await queue.close();
        await connection.quit();
      }
    });
  });

program
  .command('explain')
  .description("a user's offset and next page, with block, pool, score and skip reason per candidate (read-only)")
  .option('--user <U>', 'a signed-in user id')
  .option('--device <D>', "a guest's device id")
  .option('--version <V>', 'a version other than current (YYYYMMDD)', versionArg)
  .option('--page-size <N>', 'candidates to explain', nonNegativeInt('page-size'), 20)
  .action(async (options: { user?: string; device?: string; version?: string; pageSize: number }) => {
    if (Boolean(options.user) === Boolean(options.device)) throw new UsageError('give exactly one of --user U or --device D');
    await withStores(async ({ config, redis, keys, mongo }) => {
      const videos = videoModel(mongo.connection);
      const identity = options.user ? userIdentity(options.user) : guestIdentity(options.device!);
      const version = options.version ?? (await redis.get(keys.current));
      if (!version) throw new Error('no current version: run pnpm cli build first');
      const explanation = await explainNextPage(
        { versions: new VersionStore(redis, keys), catalog: new VideoCatalog({ model: videos, ttlMs: 0 }), history: new UserHistory(redis, keys, config) },
        identity,
        version,
        options.pageSize,
        new RequestBudget({ redisMs: config.redisDeadlineMs, mongoMs: config.mongoDeadlineMs }),
      );
      if (!explanation) throw new Error(`version ${version} has no queue in Redis (expired or never built)`);
      print(`user ${explanation.user}  version ${explanation.version}  offset ${explanation.offset}/${explanation.queueLength}  generatedAt ${explanation.generatedAt}`);
      print('position  block  pool  score  verdict       vid');
      for (const c of explanation.candidates) {
        print(`${String(c.position).padStart(8)}  ${String(c.block).padStart(5)}  ${c.pool.padEnd(4)}  ${String(c.score ?? '-').padStart(5)}  ${c.verdict.padEnd(12)}  ${c.vid}`);
      }
    });
  });

program
  .command('init-history')
  .description('R5, once and idempotent: recommendXCount = max(XCount, 0) per video, never lowering a counter; progress on stderr')
  .action(async () => {
    await withStores(async ({ mongo }) => {
      const videos = videoModel(mongo.connection);
      const result = await initRecommendHistory(mongo.connection, videos, (done) => process.stderr.write(`initialised ${done} videos\n`));
      if (result.previouslyCompletedAt) print(`version ${result.version} was completed at ${result.previouslyCompletedAt.toISOString()}; this run initialised ${result.initialised} new videos`);
      else print(`initialised ${result.initialised} videos (version ${result.version})`);
    });
  });

/** The ramp's options as storage's schema takes them (the API's body): out of range is a usage error (exit 2) naming the option. */
function rampAsk(options: { ramp: string; dwell?: string; recheck?: string; minViews?: string }) {
  const number = (text: string) => (/^\s*\d+\s*$/.test(text) ? Number(text) : text);
  const input = { steps: options.ramp.split(',').map(number), dwell: options.dwell, recheck: options.recheck, minViews: options.minViews === undefined ? undefined : number(options.minViews) };
  const { value, error } = rampAskSchema.validate(input);
  if (error) throw new UsageError(`--ramp: ${error.message.replace(/^"(\w+)/, (_m, key: string) => `"--${key === 'minViews' ? 'min-views' : key === 'steps' ? 'ramp' : key}`)}`);
  return rampAskOf(value);
}

/** One line per step: its percent, outcome and verdict (R23). */
function printRamp(state: RampState): void {
  print(`ramp ${state.id} by ${state.requestedBy}: ${state.status}${state.pause ? ` (${state.pause.detail})` : ''}${state.haltReasons.length ? ` (${state.haltReasons.join('; ')})` : ''}, dwell ${state.dwellMs / 1000} s, last good ${state.lastGoodPercent} %`);
  state.steps.forEach((step, i) => {
    const verdict = step.verdict ? `  ${step.verdict.outcome}${step.verdict.reasons.length ? `: ${step.verdict.reasons.join('; ')}` : ''}` : '';
    print(`${i === state.current ? '>' : ' '} ${String(step.percent).padStart(3)} %  ${step.outcome.padEnd(7)}${verdict}`);
  });
}

const rampResult = (result: RampCommandResult) => {
  if (!result.ok) throw new Error(result.error);
  printRamp(result.state);
};

program
  .command('rollout')
  .description("R16's run-time override (in Redis; a change is recorded in the audit trail in MongoDB); with no option, the values in force and where each comes from, and the ramp (R23)")
  .addOption(new Option('--enabled <bool>', 'serve the ring queue').choices(['true', 'false']))
  .option('--percent <N>', 'share of users served by the ring (0-100)', (value: string) => {
    const percent = nonNegativeInt('percent')(value);
    if (percent > 100) throw new InvalidArgumentError('--percent must be 0-100.');
    return percent;
  })
  .option('--clear', 'remove the override: the environment rules again')
  .option('--history', "on-call's audit trail: rollout changes, builds requested by hand and the ramp's steps, newest first (D6)")
  .option('--ramp <steps>', `start a ramp (R23): 1-${MAX_RAMP_STEPS} percents 1-100, strictly increasing, e.g. 1,5,25,50,100; its first step is written at once, the worker moves on while the guards hold`)
  .option('--dwell <duration>', `with --ramp: how long each step runs before it is judged, ${DURATION_RANGE} (e.g. 90s, 30m, 1h, 1h30m)`)
  .option('--recheck <duration>', `with --ramp: how long a step short of samples waits before it is judged again, ${DURATION_RANGE} (default: the dwell)`)
  .option('--min-views <N>', `with --ramp: views each variant needs before any verdict, 1-${MAX_MIN_SAMPLES} (default 20000)`)
  .option('--ramp-pause', 'pause the running ramp where it is')
  .option('--ramp-resume', 'resume a paused ramp at its step (a fresh dwell)')
  .action(async (options: { enabled?: 'true' | 'false'; percent?: number; clear?: boolean; history?: boolean; ramp?: string; dwell?: string; recheck?: string; minViews?: string; rampPause?: boolean; rampResume?: boolean }) => {
    const { enabled, percent, clear, history } = options;
    const changes = clear || enabled !== undefined || percent !== undefined;
    const rampCommands = [options.ramp !== undefined, Boolean(options.rampPause), Boolean(options.rampResume)].filter(Boolean).length;
    if (clear && (enabled !== undefined || percent !== undefined)) throw new UsageError('--clear takes no other option');
    if (history && (changes || rampCommands > 0)) throw new UsageError('--history takes no other option');
    if (rampCommands > 1 || (rampCommands > 0 && changes)) throw new UsageError('--ramp, --ramp-pause, --ramp-resume and a manual change exclude each other');
    if (options.ramp !== undefined && options.dwell === undefined) throw new UsageError('--ramp needs --dwell (e.g. --dwell 1h)');
    if (options.ramp === undefined && (options.dwell !== undefined || options.recheck !== undefined || options.minViews !== undefined)) throw new UsageError('--dwell, --recheck and --min-views go with --ramp');
    const ask = options.ramp === undefined ? undefined : rampAsk({ ...options, ramp: options.ramp });
    const show = async ({ config, redis, keys }: { config: Config; redis: Redis; keys: RedisKeys }, trail?: AuditTrail) => {
      const environment = environmentRollout(config);
      const change = clear ? 'clear' : { enabled: enabled === undefined ? undefined : enabled === 'true', percent };
      // A manual percent or the kill switch always wins over a ramp (R23): it pauses it in the same step.
      const inForce = trail ? await changeRolloutOverRamp({ redis, keys, environment, trail, who: cliActor }, change) : resolveRollout(environment, await readRolloutOverride(redis, keys));
      print(`enabled ${inForce.enabled} (${inForce.source.enabled})`);
      print(`percent ${inForce.percent} (${inForce.source.percent})`);
      if (trail) print(`every API instance applies this within CURRENT_CACHE_MS (${config.currentCacheMs} ms)`);
      const ramp = await readRamp(redis, keys);
      if (ramp.state) printRamp(ramp.state);
      else if (ramp.error) print(`ramp unreadable: ${ramp.error}`);
    };
    // Reading the values in force needs Redis only; the trail (history, a change) is in MongoDB (D6).
    if (!history && !changes && rampCommands === 0) return withRedis((stores) => show(stores));
    await withStores(async (stores) => {
      const { config, redis, keys, mongo } = stores;
      const trail = auditTrail(mongo.connection, config.redisKeyPrefix);
      if (rampCommands > 0) {
        const deps = { redis, keys, environment: environmentRollout(config), trail, who: cliActor };
        if (options.rampPause) return rampResult(await pauseStoredRamp(deps));
        if (options.rampResume) return rampResult(await resumeStoredRamp(deps));
        return rampResult(await startStoredRamp(deps, ask!));
      }
      if (!history) return show(stores, trail);
      for (const entry of await trail.read()) {
        print(`${entry.at}  ${entry.actor} (${entry.via})  ${entry.action}  before ${JSON.stringify(entry.before)}  after ${JSON.stringify(entry.after)}`);
      }
    });
  });

program.parseAsync(process.argv).then(
  () => process.exit(0),
  (err: unknown) => {
    if (err instanceof CommanderError) {
      // Help and version are answers (exit 0); everything else commander reports is a usage error.
      process.exit(err.exitCode === 0 ? 0 : 2);
    }
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);
