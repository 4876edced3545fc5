/**
 * Test access to the real services: Redis, with a key prefix of its own per test (deleted after
 * it), and the MongoDB of the run (global setup), with a database per test file (dropped after).
 */
import { randomBytes } from 'node:crypto';
import mongoose, { type Connection } from 'mongoose';
import { loadConfig, type Config } from '@feed/config';
import { connectRedis, createRedisKeys, deleteKeysWithPrefix, type Redis, type RedisKeys } from '@feed/storage';
import { testMongoUrl } from './mongo';

export interface TestServices {
  /** The key prefix of the running test (in beforeAll: the file's). */
  prefix: string;
  keys: RedisKeys;
  /** The configuration on `prefix`. */
  config: Config;
  redis: Redis;
  mongo: Connection;
  cleanup(): Promise<void>;
}

export interface PerTestServices extends TestServices {
  /** Runs `dispose` after the running test, before its keys are deleted (also when it fails). */
  disposeAfter(dispose: () => unknown): void;
}

const filePrefix = (name: string) => `test:${name}:${process.pid}:${randomBytes(3).toString('hex')}:`;

function testConfig(name: string, prefix: string, env: Record<string, string>): Config {
  return loadConfig({
    NODE_ENV: 'test',
    REDIS_URL: process.env.TEST_REDIS_URL!,
    MONGO_URL: testMongoUrl(name),
    REDIS_KEY_PREFIX: prefix,
    // The read path's Redis deadline is the subject of the fault tests only (they set their own):
    // elsewhere a busy CI machine must not turn a slow answer into a fallback page.
    REDIS_DEADLINE_MS: '5000',
    ...env,
  });
}

/** The services on one key prefix and one database, for a caller that manages its own lifetime. */
export async function startTestServices(name: string, env: Record<string, string> = {}): Promise<TestServices> {
  const prefix = filePrefix(name);
  const config = testConfig(name, prefix, env);
  const redis = await connectRedis(config);
  const mongo = await mongoose.createConnection(config.mongoUrl!).asPromise();
  return {
    prefix,
    redis,
    keys: createRedisKeys(prefix),
    mongo,
    config,
    async cleanup() {
      await deleteKeysWithPrefix(redis, prefix);
      await redis.close();
      await mongo.dropDatabase();
      await mongo.close();
    },
  };
}

/**
 * The file's services with Redis isolated per test, through Jest hooks registered here (call it
 * at the top of the file, before the file's own hooks): before each test, `prefix`, `keys` and
 * `config` move to a prefix of the test's own; after it, the disposals run and then that prefix's
 * keys are deleted. Whatever holds the config (an app, a queue) is built in `beforeEach`.
 * The connections and the database stay the file's: seed MongoDB in `beforeAll`, Redis per test.
 */
export function useTestServices(name: string, env: Record<string, string> = {}): PerTestServices {
  const disposals: Array<() => unknown> = [];
  let file: TestServices;
  let tests = 0;
  const s = { disposeAfter: (dispose: () => unknown) => void disposals.push(dispose) } as PerTestServices;
  const moveTo = (prefix: string) =>
    Object.assign(s, { prefix, keys: createRedisKeys(prefix), config: { ...file.config, redisKeyPrefix: prefix } });

  beforeAll(async () => {
    file = await startTestServices(name, env);
    Object.assign(s, file);
  });
  beforeEach(() => moveTo(`${file.prefix}t${++tests}:`));
  afterEach(async () => {
    for (const dispose of disposals.splice(0).reverse()) await dispose();
    await deleteKeysWithPrefix(s.redis, s.prefix);
    moveTo(file.prefix);
  });
  afterAll(() => file?.cleanup());
  return s;
}
