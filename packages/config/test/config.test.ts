import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { ConfigError, describeConfig, loadConfig, loadDotEnv, loggingConfig, renderConfigTable } from '@feed/config';

/** 32 characters made now: a secret no file of the repository holds (a literal here would be published). */
const privateSecret = () => randomBytes(24).toString('base64url');

describe('configuration (D2)', () => {
  it('when the environment is empty, then the documented defaults apply', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      redisUrl: 'redis://127.0.0.1:6379',
      businessTimeZone: 'Asia/Shanghai',
      shortRecommendV2Enabled: true,
      shortRecommendV2Percent: 100,
      shortRecommendKeyTTLHours: 72,
      currentCacheMs: 2000,
      viewHistorySize: 200,
    });
    expect(config.mongoUrl).toBeUndefined();
  });

  it.each([
    ['SHORT_RECOMMEND_V2_PERCENT', '101'],
    ['SHORT_RECOMMEND_V2_ENABLED', 'maybe'],
    ['SHORT_RECOMMEND_CRON', 'every day'],
    ['SHORT_RECOMMEND_KEY_TTL_HOURS', '0'],
    ['TZ_BUSINESS', 'Mars/Olympus'],
    ['REDIS_URL', 'http://localhost'],
    ['REDIS_CLUSTER_NODES', 'host-without-port'],
    ['MONGO_URL', 'postgres://x'],
    ['PORT', '70000'],
    ['TOTAL_WATCH', '-1'],
    ['CURRENT_CACHE_MS', '6000'],
    ['VIEW_HISTORY_SIZE', '9'],
    ['MONGO_MAX_POOL_SIZE', '0'],
    // Above the maximum (100 by default): the pool could never hold it.
    ['MONGO_MIN_POOL_SIZE', '101'],
  ])('when %s=%s, then start-up stops with a message naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(name));
  });

  it('when only MONGO_MAX_POOL_SIZE is set, below the default minimum, then the minimum is that maximum (the driver refuses a pool whose minimum exceeds its maximum)', () => {
    const small = loadConfig({ MONGO_MAX_POOL_SIZE: '10' });
    expect([small.mongoMinPoolSize, small.mongoMaxPoolSize]).toEqual([10, 10]);
    expect(loadConfig({ MONGO_MAX_POOL_SIZE: '50' }).mongoMinPoolSize).toBe(20);
    expect(() => loadConfig({ MONGO_MIN_POOL_SIZE: '11', MONGO_MAX_POOL_SIZE: '10' })).toThrow(/MONGO_MIN_POOL_SIZE/);
  });

  it('when NODE_ENV is production, then MONGO_URL and the secrets are required', () => {
    const error = (() => {
      try {
        loadConfig({ NODE_ENV: 'production' });
      } catch (err) {
        return err as Error;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    for (const name of ['MONGO_URL', 'AUTH_JWT_SECRET', 'ADMIN_PASSWORD']) expect(error!.message).toContain(name);
    const production = { NODE_ENV: 'production', MONGO_URL: 'mongodb://db:27017/feed', AUTH_JWT_SECRET: privateSecret(), ADMIN_PASSWORD: privateSecret() };
    expect(loadConfig(production).nodeEnv).toBe('production');
    expect(() => loadConfig({ ...production, MONGO_URL: undefined })).toThrow(/MONGO_URL/);
  });

  it('when values are given, then they are parsed', () => {
    const config = loadConfig({ SHORT_RECOMMEND_V2_ENABLED: 'false', SHORT_RECOMMEND_V2_PERCENT: '30', REDIS_CLUSTER_NODES: 'a:7000,b:7001', REDIS_URL: 'redis://127.0.0.1:6379/3' });
    expect(config).toMatchObject({ shortRecommendV2Enabled: false, shortRecommendV2Percent: 30, redisClusterNodes: ['a:7000', 'b:7001'], redisUrl: 'redis://127.0.0.1:6379/3' });
  });

  it('when the logger reads NODE_ENV and LOG_LEVEL before the whole configuration, then their declarations validate them: a bad value reads as its default', () => {
    expect(loggingConfig({ NODE_ENV: 'production', LOG_LEVEL: 'debug' })).toEqual({ nodeEnv: 'production', logLevel: 'debug' });
    expect(loggingConfig({ NODE_ENV: 'prod', LOG_LEVEL: 'loud' })).toEqual({ nodeEnv: 'development', logLevel: 'info' });
  });

  it('when REDIS_SENTINELS is given, then it is parsed with the master name, and it is refused beside REDIS_CLUSTER_NODES', () => {
    expect(loadConfig({ REDIS_SENTINELS: 's1:26379,s2:26380', REDIS_SENTINEL_MASTER: 'feed' })).toMatchObject({ redisSentinels: ['s1:26379', 's2:26380'], redisSentinelMaster: 'feed' });
    expect(loadConfig({}).redisSentinels).toBeUndefined();
    expect(() => loadConfig({ REDIS_SENTINELS: 's1:26379', REDIS_CLUSTER_NODES: 'a:7000' })).toThrow(/REDIS_SENTINELS.*REDIS_CLUSTER_NODES/);
    expect(() => loadConfig({ REDIS_SENTINELS: 'no-port' })).toThrow(/REDIS_SENTINELS/);
  });

  it('when the schema is described, then every variable has a description', () => {
    const described = describeConfig();
    expect(described.length).toBeGreaterThan(20);
    for (const entry of described) expect(entry.description.length).toBeGreaterThan(5);
  });
});

describe('Redis credentials and TLS (issue 51 part 1)', () => {
  const production = { NODE_ENV: 'production', MONGO_URL: 'mongodb://db:27017/feed', AUTH_JWT_SECRET: privateSecret(), ADMIN_PASSWORD: privateSecret() };

  it('when given, then they apply to the data nodes and, apart, to the Sentinels; TLS is off unless asked for', () => {
    expect(loadConfig({})).toMatchObject({ redisTls: false, redisSentinelTls: false });
    const env = { REDIS_USERNAME: 'feed', REDIS_PASSWORD: 'tok', REDIS_TLS: 'true', REDIS_TLS_CA_FILE: '/ca.pem', REDIS_SENTINEL_PASSWORD: 'sp', REDIS_SENTINEL_TLS: 'true' };
    expect(loadConfig(env)).toMatchObject({ redisUsername: 'feed', redisPassword: 'tok', redisTls: true, redisTlsCaFile: '/ca.pem', redisSentinelPassword: 'sp', redisSentinelTls: true });
  });

  it('when production is given a published Redis password, then start-up stops naming it; a short private token (managed Redis) starts', () => {
    for (const name of ['REDIS_PASSWORD', 'REDIS_SENTINEL_PASSWORD']) {
      expect(() => loadConfig({ ...production, [name]: 'feed-insecure-redis-password' })).toThrow(new RegExp(`${name}.*published in the repository`));
      expect(loadConfig({ ...production, [name]: privateSecret().slice(0, 16) }).nodeEnv).toBe('production');
    }
  });

  it('when production is given a REDIS_URL whose password is a published one, then start-up stops naming REDIS_URL; a private one starts', () => {
    expect(() => loadConfig({ ...production, REDIS_URL: 'redis://:feed-insecure-redis-password@redis.internal:6379' })).toThrow(/REDIS_URL.*published in the repository/);
    expect(() => loadConfig({ ...production, REDIS_URL: 'rediss://feed:feed-insecure-REPLACE_ME%40x@redis.internal:6380' })).toThrow(/REDIS_URL.*published in the repository/);
    expect(loadConfig({ ...production, REDIS_URL: `rediss://feed:${privateSecret().slice(0, 16)}@redis.internal:6380` }).nodeEnv).toBe('production');
    expect(loadConfig({ REDIS_URL: 'redis://:feed-insecure-redis-password@127.0.0.1:6379' }).nodeEnv).toBe('development');
  });

  it('when REDIS_URL carries credentials and REDIS_USERNAME or REDIS_PASSWORD is set too, then start-up stops as ambiguous; the URL alone still works', () => {
    expect(loadConfig({ REDIS_URL: 'rediss://feed:tok@redis.internal:6380' }).redisUrl).toBe('rediss://feed:tok@redis.internal:6380');
    expect(() => loadConfig({ REDIS_URL: 'redis://:tok@redis.internal:6379', REDIS_PASSWORD: 'other' })).toThrow(/REDIS_URL.*ambiguous/);
    expect(() => loadConfig({ REDIS_URL: 'redis://feed:tok@redis.internal:6379', REDIS_USERNAME: 'feed' })).toThrow(/REDIS_URL.*ambiguous/);
  });
});

describe('the settings as documented: each declared once, README and .env.example follow (D2)', () => {
  const ROOT = path.resolve(__dirname, '../../..');

  it('when the README is read, then its configuration table is the one generated from the declarations', () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const start = readme.indexOf('| variable | default | meaning |');
    const table = readme.slice(start, readme.indexOf('\n\n', start));
    expect(table).toBe(renderConfigTable());
  });

  it('when .env.example is read, then it names every setting once, with its default where it has one, and nothing else', () => {
    const lines = readFileSync(path.join(ROOT, '.env.example'), 'utf8').split('\n');
    // `NAME=value`, or `# NAME=example` for a setting without a default.
    const named = lines.flatMap((line) => {
      const match = /^(#\s*)?([A-Z][A-Z0-9_]+)=(.*)$/.exec(line);
      return match ? [{ name: match[2], value: match[3], commented: Boolean(match[1]) }] : [];
    });
    const described = describeConfig();
    expect(named.map((n) => n.name).sort()).toEqual(described.map((d) => d.name).sort());
    for (const { name, default: fallback } of described) {
      const entry = named.find((n) => n.name === name)!;
      if (fallback === undefined) expect({ name, commented: entry.commented }).toEqual({ name, commented: true });
      else expect({ name, value: entry.value }).toEqual({ name, value: String(fallback) });
    }
  });
});

describe('published secrets (D2)', () => {
  const ROOT = path.resolve(__dirname, '../../..');
  /**
   * Every literal value a tracked file gives a secret, read from the files themselves: `NAME=value`
   * (.env.example), `NAME: value` (manifests), a README table row, `adminPassword: 'value'` (tests).
   */
  const published = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((file) => /\.(ts|md|ya?ml|example)$/.test(file) && file !== 'packages/config/src/index.ts')
    .flatMap((file) =>
      [...readFileSync(path.join(ROOT, file), 'utf8').matchAll(/\b(AUTH_JWT_SECRET|ADMIN_PASSWORD|authJwtSecret|adminPassword|TEST_JWT_SECRET)\b`?\s*(?:[:=]|\|\s*`)\s*(['"]?)([^\s`'"|,;}]+)\2/g)]
        .map(([, name, quote, value]) => ({ file, name: /jwt/i.test(name) ? 'AUTH_JWT_SECRET' : 'ADMIN_PASSWORD', value, quote }))
        // A value in code is a literal only when quoted; `${...}` is compose asking the environment.
        .filter(({ file, value, quote }) => !value.startsWith('$') && (quote !== '' || !file.endsWith('.ts'))),
    );
  const production = { NODE_ENV: 'production', MONGO_URL: 'mongodb://db.internal:27017/feed', AUTH_JWT_SECRET: privateSecret(), ADMIN_PASSWORD: privateSecret() };

  it('when the repository files are read, then they publish the development defaults and the infra placeholders', () => {
    expect(published.map((p) => p.file)).toEqual(expect.arrayContaining(['.env.example', 'infra/k8s/config.yaml', 'README.md', 'test/support/feed-fixtures.ts']));
    for (const { value } of published.filter(({ file }) => !file.endsWith('.ts'))) expect(value).toMatch(/^feed-insecure-/);
  });

  it('when production is given any secret a repository file holds, then start-up stops naming the variable', () => {
    for (const { name, value } of published) expect(() => loadConfig({ ...production, [name]: value })).toThrow(new RegExp(`${name}[^;]*(published in the repository|at least 32)`));
  });

  it('when production is given a secret carrying the marker anywhere, in any case, then start-up stops naming it; a private random one starts', () => {
    const casing = fc.array(fc.boolean(), { minLength: 14, maxLength: 14 }).map((upper) => [...'feed-insecure-'].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join(''));
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), casing, fc.string({ minLength: 32, maxLength: 60 }), (before, marker, after) => {
        expect(() => loadConfig({ ...production, AUTH_JWT_SECRET: `${before}${marker}${after}` })).toThrow(/AUTH_JWT_SECRET[^;]*published in the repository/);
      }),
      { numRuns: 50 },
    );
    expect(loadConfig(production).authJwtSecret).toBe(production.AUTH_JWT_SECRET);
  });

  it('when production is given the same secret for AUTH_JWT_SECRET and ADMIN_PASSWORD, or one inside the other, then start-up stops naming both', () => {
    const shared = privateSecret();
    expect(() => loadConfig({ ...production, AUTH_JWT_SECRET: shared, ADMIN_PASSWORD: shared })).toThrow(/AUTH_JWT_SECRET.*ADMIN_PASSWORD/);
    expect(() => loadConfig({ ...production, AUTH_JWT_SECRET: `${shared} `, ADMIN_PASSWORD: shared })).toThrow(/AUTH_JWT_SECRET.*ADMIN_PASSWORD/);
    expect(() => loadConfig({ ...production, AUTH_JWT_SECRET: shared, ADMIN_PASSWORD: `${shared}!` })).toThrow(/AUTH_JWT_SECRET.*ADMIN_PASSWORD/);
    expect(loadConfig({ ...production, AUTH_JWT_SECRET: privateSecret(), ADMIN_PASSWORD: privateSecret() }).nodeEnv).toBe('production');
  });

  it('when production is given a private secret shorter than 32 characters, then start-up stops naming it; 32 private characters start', () => {
    expect(() => loadConfig({ ...production, ADMIN_PASSWORD: 'k7#Vq9!zR2mW8pL4xT6n' })).toThrow(/ADMIN_PASSWORD/);
    expect(loadConfig({ ...production, AUTH_JWT_SECRET: privateSecret() }).authJwtSecret).toHaveLength(32);
  });
});

describe('.env outside production (D2)', () => {
  it('when a .env file sets PORT, then it applies unless the environment sets PORT itself', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'feed-env-'));
    const file = path.join(dir, '.env');
    writeFileSync(file, 'PORT=3160\nLOG_LEVEL=debug\n');
    const fromFile: NodeJS.ProcessEnv = {};
    loadDotEnv(fromFile, file);
    expect(loadConfig(fromFile)).toMatchObject({ port: 3160, logLevel: 'debug' });
    const exported: NodeJS.ProcessEnv = { PORT: '4000' };
    loadDotEnv(exported, file);
    expect(loadConfig(exported).port).toBe(4000);
    const production: NodeJS.ProcessEnv = { NODE_ENV: 'production' };
    loadDotEnv(production, file);
    expect(production.PORT).toBeUndefined();
    rmSync(dir, { recursive: true, force: true });
  });
});
