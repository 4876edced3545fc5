/**
 * The service's whole configuration: one joi schema over the environment (SPEC D2, R16).
 * A bad value stops start-up with a message naming the variable.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { CronExpressionParser } from 'cron-parser';
import Joi from 'joi';

/** Parsed by cron-parser, the parser BullMQ's job scheduler itself uses. */
const cronExpression = Joi.string().custom((value: string, helpers) => {
  try {
    CronExpressionParser.parse(value);
    return value;
  } catch {
    return helpers.error('any.invalid');
  }
}, 'cron expression');
/** Comma list of origins (scheme://host[:port]), as a browser sends them in `Origin`. */
const originList = Joi.string()
  .allow('')
  .pattern(/^(https?:\/\/[^,/\s]+)(,https?:\/\/[^,/\s]+)*$/, 'comma list of http(s)://host[:port] origins');
/** Comma list of host:port (Redis seeds or Sentinels). */
const hostPorts = Joi.string().pattern(/^[^,:\s]+:\d+(,[^,:\s]+:\d+)*$/, 'host:port list');
const booleanString = Joi.boolean().truthy('true', '1', 'yes').falsy('false', '0', 'no');
const isProduction = (env: NodeJS.ProcessEnv) => env.NODE_ENV === 'production';

/** Shortest secret production accepts (D2). */
export const PRODUCTION_SECRET_MIN_LENGTH = 32;

/** Every development, test and example secret carries it; production refuses it (as Django does `django-insecure-`). */
export const INSECURE_SECRET_MARKER = 'feed-insecure-';

/** A secret production refuses: it carries the marker, or names itself a placeholder. */
function isPublishedSecret(value: string): boolean {
  return value.toLowerCase().includes(INSECURE_SECRET_MARKER) || /replace[-_ ]?me|change[-_ ]?me|placeholder|example/i.test(value);
}

/** Outside production, the repository's `.env` fills in what the environment does not set. */
export function loadDotEnv(env: NodeJS.ProcessEnv = process.env, file = path.resolve(__dirname, '../../../.env')): void {
  if (isProduction(env) || !existsSync(file)) return;
  for (const [name, value] of Object.entries(parseEnv(readFileSync(file, 'utf8')))) if (env[name] === undefined) env[name] = value;
}

function isValidTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

/** One setting: its variable, its joi schema (default, description, rules) and how it lands in `Config`. */
interface Setting<Raw, Value> {
  env: string;
  schema: Joi.Schema<Raw>;
  toValue: (raw: Raw) => Value;
}

const setting = <Raw>(env: string, schema: Joi.Schema<Raw>): Setting<Raw, Raw> => ({ env, schema, toValue: (raw) => raw });
/** A setting with no default: absent unless set. */
const optional = <Raw>(env: string, schema: Joi.Schema<Raw>): Setting<Raw | undefined, Raw | undefined> => ({ env, schema, toValue: (raw) => raw });
/** A comma list, split. */
const list = (env: string, schema: Joi.StringSchema): Setting<string | undefined, string[]> => ({ env, schema, toValue: (raw) => (raw ? raw.split(',') : []) });
/** A comma list with no default, split: absent unless set. */
const optionalList = (env: string, schema: Joi.StringSchema) => ({ env, schema, toValue: (raw: string | undefined) => (raw ? raw.split(',') : undefined) });

type NodeEnv = 'development' | 'production' | 'test';

/** Every setting of the service, each declared once (SPEC D2). Production tightens some rules. */
function settingsFor(env: NodeJS.ProcessEnv) {
  // Production has no toy fallbacks: a missing value stops the process, naming the variable.
  const required = (schema: Joi.StringSchema) => (isProduction(env) ? schema.required() : schema);
  const secret = (description: string, devDefault: `${typeof INSECURE_SECRET_MARKER}${string}`) => {
    const base = Joi.string().min(8).description(description);
    if (!isProduction(env)) return base.default(devDefault);
    // Production: never a value anyone can read in the repository (README, .env.example, infra placeholders, tests).
    return base
      .required()
      .min(PRODUCTION_SECRET_MIN_LENGTH)
      .custom((value: string, helpers) => (isPublishedSecret(value) ? helpers.error('any.invalid') : value), 'a private secret')
      .messages({ 'any.invalid': '{{#label}} is a value published in the repository (it carries the feed-insecure- marker or is a placeholder): set a private secret' });
  };
  // Managed Redis issues tokens shorter than 32 characters: only published values are refused.
  const redisSecret = (description: string) =>
    isProduction(env)
      ? Joi.string()
          .custom((value: string, helpers) => (isPublishedSecret(value) ? helpers.error('any.invalid') : value), 'a private secret')
          .messages({ 'any.invalid': '{{#label}} is a value published in the repository: set a private secret' })
          .description(description)
      : Joi.string().description(description);
  return {
    nodeEnv: setting('NODE_ENV', Joi.string<NodeEnv>().valid('development', 'production', 'test').default('development').description('Runtime mode: JSON logs and required secrets in production')),
    logLevel: setting('LOG_LEVEL', Joi.string().valid('error', 'warn', 'info', 'http', 'debug').default('info').description('Lowest log level written')),
    port: setting('PORT', Joi.number().port().default(3000).description('HTTP port of the API')),
    workerPort: setting('WORKER_PORT', Joi.number().port().default(3001).description('HTTP port of the worker (job dashboard, /metrics, health)')),
    httpHeadersTimeoutMs: setting('HTTP_HEADERS_TIMEOUT_MS', Joi.number().integer().min(100).max(120_000).default(10_000).description('Both deployables: time a client has to send its request headers, then 408 (slow clients)')),
    httpRequestTimeoutMs: setting('HTTP_REQUEST_TIMEOUT_MS', Joi.number().integer().min(100).max(600_000).default(30_000).description('Both deployables: time a client has to send a whole request, body included, then 408')),
    apiWarmUpRequests: setting('API_WARM_UP_REQUESTS', Joi.number().integer().min(0).max(100_000).default(1_000).description('API: 404 likes it sends itself before it listens (at most 5 s), so its first burst runs compiled code; 0: none')),
    httpMaxConnections: setting('HTTP_MAX_CONNECTIONS', Joi.number().integer().min(1).max(1_000_000).default(4096).description('Both deployables: connections an instance holds at once; more are refused')),
    shutdownDelayMs: setting(
      'SHUTDOWN_DELAY_MS',
      Joi.number().integer().min(0).max(60_000).default(5_000).description('API: after SIGTERM, how long /readyz says 503 while the instance still serves (every answer with Connection: close) before it stops accepting; covers the orchestrator\'s endpoint propagation. The manifests\' grace must exceed it + 4.5 s'),
    ),
    mongoUrl: optional(
      'MONGO_URL',
      required(Joi.string().uri({ scheme: ['mongodb', 'mongodb+srv'] })).description(
        'MongoDB connection string with database. Required in production (the process exits naming it); unset in development = the embedded server that pnpm start, start:api, start:worker and cli start',
      ),
    ),
    mongoMinPoolSize: setting(
      'MONGO_MIN_POOL_SIZE',
      Joi.number().integer().min(0).max(Joi.ref('MONGO_MAX_POOL_SIZE')).default(20).description('MongoDB connections an instance opens before it listens and keeps open (the driver opens 2 at a time): a burst on a new instance does not wait for its pool to grow. Unset, 20 or MONGO_MAX_POOL_SIZE when that is smaller'),
    ),
    mongoMaxPoolSize: setting('MONGO_MAX_POOL_SIZE', Joi.number().integer().min(1).max(10_000).default(100).description('MongoDB connections an instance holds at most; more concurrent operations wait (within their budget) for one')),
    embeddedMongoPort: setting('EMBEDDED_MONGO_PORT', Joi.number().port().default(27018).description('Development only: port of that embedded server (shared by api and worker on one machine)')),
    redisUrl: setting('REDIS_URL', Joi.string().uri({ scheme: ['redis', 'rediss'] }).default('redis://127.0.0.1:6379').description('Redis URL; a /N database index is honoured')),
    redisClusterNodes: optionalList('REDIS_CLUSTER_NODES', hostPorts.description('Comma-separated host:port seeds; when set, Redis Cluster mode is used instead of REDIS_URL')),
    redisSentinels: optionalList(
      'REDIS_SENTINELS',
      hostPorts
        .when('REDIS_CLUSTER_NODES', { is: Joi.exist(), then: Joi.forbidden() })
        .messages({ 'any.unknown': '{{#label}} and REDIS_CLUSTER_NODES are two topologies: set one' })
        .description('Comma-separated host:port of Redis Sentinels; when set, the primary of REDIS_SENTINEL_MASTER is used instead of REDIS_URL (not with REDIS_CLUSTER_NODES)'),
    ),
    redisSentinelMaster: setting('REDIS_SENTINEL_MASTER', Joi.string().default('mymaster').description('With REDIS_SENTINELS: the name the Sentinels monitor the primary under')),
    redisUsername: optional('REDIS_USERNAME', Joi.string().description('Redis ACL user of the data nodes, on every topology (not beside a REDIS_URL that names one)')),
    redisPassword: optional('REDIS_PASSWORD', redisSecret('Password or auth token of the data nodes, on every topology (not beside a REDIS_URL that carries one)')),
    redisTls: setting('REDIS_TLS', booleanString.default(false).description('TLS to the data nodes, on every topology (a rediss:// REDIS_URL turns it on too)')),
    redisTlsCaFile: optional('REDIS_TLS_CA_FILE', Joi.string().description('PEM file of the CA that signs the Redis certificates (data nodes, and Sentinels with REDIS_SENTINEL_TLS); unset = the system CAs')),
    redisTlsCertFile: optional('REDIS_TLS_CERT_FILE', Joi.string().description('PEM client certificate, for a Redis that asks for one (with REDIS_TLS_KEY_FILE)')),
    redisTlsKeyFile: optional('REDIS_TLS_KEY_FILE', Joi.string().description('PEM key of REDIS_TLS_CERT_FILE')),
    redisTlsServername: optional('REDIS_TLS_SERVERNAME', Joi.string().description('Name the Redis certificates are checked against (and sent as SNI); unset = the host connected to')),
    redisSentinelUsername: optional('REDIS_SENTINEL_USERNAME', Joi.string().description('With REDIS_SENTINELS: ACL user on the Sentinels (their own, apart from the data nodes\')')),
    redisSentinelPassword: optional('REDIS_SENTINEL_PASSWORD', redisSecret('With REDIS_SENTINELS: password of the Sentinels (their requirepass or ACL user)')),
    redisSentinelTls: setting('REDIS_SENTINEL_TLS', booleanString.default(false).description('With REDIS_SENTINELS: TLS to the Sentinels (the REDIS_TLS_* files)')),
    redisKeyPrefix: setting('REDIS_KEY_PREFIX', Joi.string().allow('').pattern(/^[A-Za-z0-9:_-]*$/).default('').description('Prefix for every Redis key (isolates tests or tenants); empty in production')),
    authJwtSecret: setting('AUTH_JWT_SECRET', secret('HS256 secret of user tokens; the token sub is the user id', 'feed-insecure-local-jwt-secret')),
    adminUser: setting('ADMIN_USER', Joi.string().default('admin').description('User name for the job dashboard and admin endpoints')),
    adminPassword: setting('ADMIN_PASSWORD', secret('Password for the job dashboard and admin endpoints', 'feed-insecure-local-admin-password')),
    businessTimeZone: setting(
      'TZ_BUSINESS',
      Joi.string().custom((v: string, helpers) => (isValidTimeZone(v) ? v : helpers.error('any.invalid'))).default('Asia/Shanghai').description('Time zone that names versions and runs the daily cron'),
    ),
    shortRecommendV2Enabled: setting('SHORT_RECOMMEND_V2_ENABLED', booleanString.default(true).description('Serve the ring queue (false = legacy random feed)')),
    shortRecommendV2Percent: setting('SHORT_RECOMMEND_V2_PERCENT', Joi.number().integer().min(0).max(100).default(100).description('Share of users (stable hash of the user id) served by the ring queue')),
    shortRecommendCron: setting('SHORT_RECOMMEND_CRON', cronExpression.default('30 4 * * *').description('When the daily build runs, in TZ_BUSINESS')),
    shortRecommendKeyTTLHours: setting('SHORT_RECOMMEND_KEY_TTL_HOURS', Joi.number().integer().min(1).max(24 * 30).default(72).description("Expiry of a version's Redis keys, counted from when they are written")),
    totalWatch: setting('TOTAL_WATCH', Joi.number().integer().min(0).max(100000).default(10).description('Free watches per user per day')),
    currentCacheMs: setting('CURRENT_CACHE_MS', Joi.number().integer().min(0).max(5000).default(2000).description('How long an API instance caches the current version (at most 5 s)')),
    videoCacheMs: setting('VIDEO_CACHE_MS', Joi.number().integer().min(0).max(60000).default(2000).description('How long an API instance caches video documents: the delay before a takedown hides a video')),
    videoCacheMax: setting('VIDEO_CACHE_MAX', Joi.number().integer().min(0).max(10_000_000).default(100_000).description('Most video documents an API instance caches (least recently used dropped first); 0 = no cache')),
    queueCopiesMax: setting(
      'QUEUE_COPIES_MAX',
      Joi.number().integer().min(0).max(10).default(3).description('Published queues an API instance keeps in memory (12 MB per million videos each, R22); 0 = read positions from Redis'),
    ),
    apiMemoryBudgetMb: setting(
      'API_MEMORY_BUDGET_MB',
      Joi.number()
        .integer()
        // Below 128 the old space (half) cannot hold the API's own ~27 MB beside the caches' shares: 64 died at start.
        .min(128)
        .max(65536)
        .default(256)
        .description("Memory an API instance is sized for (its container's request; the default fits a 384Mi limit): V8's old space gets half, verified tokens 12.5%, the video cache 10%, queue copies 15%, in bytes"),
    ),
    viewHistorySize: setting('VIEW_HISTORY_SIZE', Joi.number().integer().min(10).max(5000).default(200).description('Recent views kept per user (skipped by the feed)')),
    viewHistoryTtlDays: setting('VIEW_HISTORY_TTL_DAYS', Joi.number().min(0.0001).max(90).default(7).description('Days the recent-views list lives after the last view')),
    notInterestedMax: setting('NOT_INTERESTED_MAX', Joi.number().integer().min(10).max(10000).default(500).description('"Not interested" marks kept per user; the oldest are dropped first')),
    // Guest devices (issue 52): what a made-up device id costs, and how fast one address may make them.
    guestBuckets: setting(
      'GUEST_BUCKETS',
      Joi.number()
        .integer()
        .min(16)
        .max(1 << 20)
        .custom((v: number, helpers) => ((v & (v - 1)) === 0 ? v : helpers.error('any.invalid')), 'a power of two')
        .default(4096)
        .description("Hashes the guest devices' recent views are spread over (a power of two; R22's bucketing): about 64 devices a day per bucket keeps each one compact, 4096 fits 260,000"),
    ),
    newDevicesPerAddress: setting('NEW_DEVICES_PER_ADDRESS', Joi.number().integer().min(1).max(1_000_000).default(100).description('New guest device ids one client address may start per NEW_DEVICES_WINDOW_S; past it 429 with Retry-After (known devices and users never)')),
    newDevicesWindowS: setting('NEW_DEVICES_WINDOW_S', Joi.number().integer().min(1).max(86_400).default(3600).description('The window of NEW_DEVICES_PER_ADDRESS, in seconds')),
    trustProxy: {
      env: 'TRUST_PROXY',
      schema: Joi.string().allow('').pattern(/^(\d{1,2}|[0-9a-fA-F.:/]+(,[0-9a-fA-F.:/]+)*|loopback|linklocal|uniquelocal)$/, 'hop count or comma list of proxy addresses')
        .default('')
        .description("Express's trust proxy: the proxies whose X-Forwarded-For names the client address (a hop count, or a comma list of addresses, subnets, loopback, uniquelocal); empty = trust none, the socket's peer is the client"),
      toValue: (raw: string): number | string | false => (raw === '' ? false : /^\d+$/.test(raw) ? Number(raw) : raw),
    },
    buildLockTtlMs: setting('BUILD_LOCK_TTL_MS', Joi.number().integer().min(1000).default(30_000).description("Lease of the build lock, renewed every third of it while the build lives: a killed worker's lock lapses within it")),
    buildRetryDelayMs: setting(
      'BUILD_RETRY_DELAY_MS',
      Joi.number().integer().min(100).max(3_600_000).default(30_000).description("Delay before a failed build's first retry (doubled for the second); after the last, the controller queues it again"),
    ),
    shortRecommendHoldDrop: setting(
      'SHORT_RECOMMEND_HOLD_DROP',
      Joi.number().min(0).max(1).default(0.5).description("Release gate (R23): a new version whose queue length or candidate count fell by more than this share of current's, or that has a duplicate, is held as a shadow until on-call promotes it"),
    ),
    redisDeadlineMs: setting('REDIS_DEADLINE_MS', Joi.number().integer().min(10).max(5000).default(250).description('Redis budget of one API request (all its Redis calls together); past it the request degrades (R17)')),
    mongoDeadlineMs: setting(
      'MONGO_DEADLINE_MS',
      Joi.number().integer().min(10).max(10_000).default(1000).description("MongoDB budget of one API request (all its MongoDB calls together: a ring page's video look-ups, the fallback query, an interaction's writes); past it the request answers 503 and a ring page gives its claimed positions back (R17)"),
    ),
    corsAllowedOrigins: list('CORS_ALLOWED_ORIGINS', originList.default('').description('Comma list of origins an H5 page may call /api/app/* from; empty = no cross-origin access; admin endpoints never')),
  };
}

type Settings = ReturnType<typeof settingsFor>;

type Values = { [K in keyof Settings]: ReturnType<Settings[K]['toValue']> };
/** Settings that may be absent (no default): optional fields. */
type AbsentKeys = { [K in keyof Values]: undefined extends Values[K] ? K : never }[keyof Values];

/** The validated configuration: one field per setting above, typed by its declaration. */
export type Config = { [K in Exclude<keyof Values, AbsentKeys>]: Values[K] } & { [K in AbsentKeys]?: Values[K] };

export class ConfigError extends Error {}

/** NODE_ENV and LOG_LEVEL for the logger before the whole configuration: a bad value reads as its default. */
export function loggingConfig(env: NodeJS.ProcessEnv = process.env): Pick<Config, 'nodeEnv' | 'logLevel'> {
  const { nodeEnv, logLevel } = settingsFor(env);
  const valid = <T>({ env: name, schema }: Setting<T, T>): T => (schema.validate(env[name]).error ? schema.validate(undefined) : schema.validate(env[name])).value as T;
  return { nodeEnv: valid(nodeEnv), logLevel: valid(logLevel) };
}

/** Validates the environment; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  if (env === process.env) loadDotEnv(env);
  const settings = Object.entries(settingsFor(env)) as Array<[keyof Settings, Setting<unknown, unknown>]>;
  const schema = Joi.object(Object.fromEntries(settings.map(([, { env: name, schema: rule }]) => [name, rule])));
  const { value, error } = schema.validate(env, { allowUnknown: true, abortEarly: false, convert: true });
  if (error) throw new ConfigError(`invalid configuration: ${error.details.map((d) => `${String(d.path[0])}: ${d.message}`).join('; ')}`);
  const validated = value as Record<string, unknown>;
  // joi checks min <= max only on a set value; the driver refuses min > max (MONGO_MAX_POOL_SIZE=10 alone).
  if (env.MONGO_MIN_POOL_SIZE === undefined) validated.MONGO_MIN_POOL_SIZE = Math.min(Number(validated.MONGO_MIN_POOL_SIZE), Number(validated.MONGO_MAX_POOL_SIZE));
  // Equal or nested secrets would let anyone with the admin password sign user tokens.
  if (validated.NODE_ENV === 'production' && oneHoldsTheOther(String(validated.AUTH_JWT_SECRET).trim(), String(validated.ADMIN_PASSWORD).trim())) {
    throw new ConfigError('invalid configuration: AUTH_JWT_SECRET: must differ from ADMIN_PASSWORD and not contain it; ADMIN_PASSWORD: must differ from AUTH_JWT_SECRET and not contain it');
  }
  if ((validated.REDIS_USERNAME ?? validated.REDIS_PASSWORD) !== undefined && /\/\/[^@/]+@/.test(String(validated.REDIS_URL))) {
    throw new ConfigError('invalid configuration: REDIS_URL: carries credentials while REDIS_USERNAME/REDIS_PASSWORD are set: ambiguous, set them in one place');
  }
  // A password inside REDIS_URL is a Redis secret like REDIS_PASSWORD: production refuses a published one.
  if (validated.NODE_ENV === 'production' && isPublishedSecret(urlPassword(String(validated.REDIS_URL)))) {
    throw new ConfigError('invalid configuration: REDIS_URL: its password is a value published in the repository: set a private secret');
  }
  // Each field is its declaration's toValue of the validated variable: the types line up by construction.
  return Object.fromEntries(settings.map(([key, { env: name, toValue }]) => [key, toValue(validated[name])])) as Config;
}

const oneHoldsTheOther = (a: string, b: string) => a.includes(b) || b.includes(a);

/** The password a Redis URL carries (`redis://user:password@host`), decoded; empty when none. */
function urlPassword(url: string): string {
  try {
    return decodeURIComponent(new URL(url).password);
  } catch {
    return '';
  }
}

/** Every variable with its default and description, from the declarations (README table, .env.example). */
export function describeConfig(): Array<{ name: string; description: string; default?: unknown }> {
  return Object.values(settingsFor({})).map(({ env: name, schema }) => {
    const { flags } = schema.describe() as { flags?: { description?: string; default?: unknown } };
    return { name, description: flags?.description ?? '', default: flags?.default };
  });
}

/** The README's configuration table, generated from the declarations (a test keeps the README equal to it). */
export function renderConfigTable(): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  const rows = describeConfig().map(({ name, description, default: fallback }) => `| \`${name}\` | ${fallback === undefined ? '—' : `\`${String(fallback)}\``} | ${cell(description)} |`);
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

/** One setting validated alone, for a step before the process (the image derives V8's heap flag from API_MEMORY_BUDGET_MB). */
export function loadSetting<K extends keyof Settings>(key: K, env: NodeJS.ProcessEnv = process.env): Values[K] {
  const declared = settingsFor(env)[key] as Setting<unknown, Values[K]>;
  const { value, error } = declared.schema.validate(env[declared.env], { convert: true });
  if (error) throw new ConfigError(`invalid configuration: ${declared.env}: ${error.message}`);
  return declared.toValue(value);
}
