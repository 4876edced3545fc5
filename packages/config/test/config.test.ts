import { ConfigError, describeConfig, loadConfig } from '@feed/config';

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
  ])('when %s=%s, then start-up stops with a message naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(name));
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
    const production = { NODE_ENV: 'production', MONGO_URL: 'mongodb://db:27017/feed', AUTH_JWT_SECRET: 'a-real-secret', ADMIN_PASSWORD: 'a-real-password' };
    expect(loadConfig(production).nodeEnv).toBe('production');
    expect(() => loadConfig({ ...production, MONGO_URL: undefined })).toThrow(/MONGO_URL/);
  });

  it('when values are given, then they are parsed', () => {
    const config = loadConfig({ SHORT_RECOMMEND_V2_ENABLED: 'false', SHORT_RECOMMEND_V2_PERCENT: '30', REDIS_CLUSTER_NODES: 'a:7000,b:7001', REDIS_URL: 'redis://127.0.0.1:6379/3' });
    expect(config).toMatchObject({ shortRecommendV2Enabled: false, shortRecommendV2Percent: 30, redisClusterNodes: ['a:7000', 'b:7001'], redisUrl: 'redis://127.0.0.1:6379/3' });
  });

  it('when the schema is described, then every variable has a description', () => {
    const described = describeConfig();
    expect(described.length).toBeGreaterThan(20);
    for (const entry of described) expect(entry.description.length).toBeGreaterThan(5);
  });
});
