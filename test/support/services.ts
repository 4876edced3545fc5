/**
 * Test access to the real services: Redis, with a key prefix of its own per test (deleted after
 * it), and the MongoDB of the run (global setup), with a database per test file (dropped after).
 * With `secureRedis`, Redis is a private TLS-only server with an ACL user instead (issue 51 part 1).
 */
import { randomBytes } from 'node:crypto';
import mongoose, { type Connection } from 'mongoose';
import { loadConfig, type Config } from '@feed/config';
import { connectRedis, createRedisKeys, deleteKeysWithPrefix, type Redis, type RedisKeys } from '@feed/storage';
import { testMongoUrl } from './mongo';
import { secureEnv, secureRedis, startSecureRedis, type SecureRedis } from './redis-tls';

export interface TestServices {
  /** The key prefix of the running test (outside a test: the file's). */
  prefix: string;
  keys: RedisKeys;
  /** The configuration on `prefix`. */
  config: Config;
  redis: Redis;
  mongo: Connection;
  /** REDIS_URL and, with `secureRedis`, the credentials and TLS settings: a deployable's env on these services. */
  redisEnv: Record<string, string>;
  /** Runs `dispose` after the running test, before its keys are deleted (also when it fails). */
  disposeAfter(dispose: () => unknown): void;
}

/**
 * The file's services with Redis isolated per test, through Jest hooks registered here (call it
 * at the top of the file, before the file's own hooks): before each test, `prefix`, `keys` and
 * `config` move to a prefix of the test's own; after it, the disposals run, newest first, and
 * then that prefix's keys are deleted. Whatever holds the config (an app, a queue) is built in
 * `beforeEach`. The connections and the database are the file's: seed MongoDB in `beforeAll`.
 */
export function useTestServices(name: string, env: Record<string, string> = {}, options: { secureRedis?: boolean } = {}): TestServices {
  const filePrefix = `test:${name}:${process.pid}:${randomBytes(3).toString('hex')}:`;
  const configOn = (redisEnv: Record<string, string>) => loadConfig({
    NODE_ENV: 'test',
    ...redisEnv,
    MONGO_URL: testMongoUrl(name),
    REDIS_KEY_PREFIX: filePrefix,
    // The read path's Redis deadline is the subject of the fault tests only (they set their own):
    // elsewhere a busy CI machine must not turn a slow answer into a fallback page.
    REDIS_DEADLINE_MS: '5000',
    // The same for MongoDB's (mongo-stall.test.ts): the run's embedded server serves every worker.
    MONGO_DEADLINE_MS: '10000',
    ...env,
  });
  let fileConfig = configOn({ REDIS_URL: process.env.TEST_REDIS_URL! });
  let secure: { settings: SecureRedis; server?: Awaited<ReturnType<typeof startSecureRedis>> } | undefined;
  const disposals: Array<() => unknown> = [];
  let tests = 0;
  const s = { disposeAfter: (dispose: () => unknown) => void disposals.push(dispose) } as TestServices;
  s.redisEnv = { REDIS_URL: process.env.TEST_REDIS_URL! };
  const moveTo = (prefix: string) => Object.assign(s, { prefix, keys: createRedisKeys(prefix), config: { ...fileConfig, redisKeyPrefix: prefix } });
  moveTo(filePrefix);

  beforeAll(async () => {
    if (options.secureRedis) {
      secure = { settings: secureRedis(`${name}-redis-secret`) };
      secure.server = await startSecureRedis(secure.settings);
      s.redisEnv = { REDIS_URL: secure.server.url, ...secureEnv(secure.settings) };
      fileConfig = configOn(s.redisEnv);
      moveTo(filePrefix);
    }
    s.redis = await connectRedis(fileConfig);
    s.mongo = await mongoose.createConnection(fileConfig.mongoUrl!).asPromise();
  });
  beforeEach(() => moveTo(`${filePrefix}t${++tests}:`));
  afterEach(async () => {
    for (const dispose of disposals.splice(0).reverse()) await dispose();
    await deleteKeysWithPrefix(s.redis, s.prefix);
    moveTo(filePrefix);
  });
  afterAll(async () => {
    // Anything written under the file's prefix outside a test (a beforeAll, a late write).
    await deleteKeysWithPrefix(s.redis, filePrefix);
    await s.redis.close();
    await s.mongo.dropDatabase();
    await s.mongo.close();
    await secure?.server?.stop();
    secure?.settings.tls.remove();
  });
  return s;
}
