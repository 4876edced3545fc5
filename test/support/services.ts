/**
 * Test access to the real services: Redis (a unique key prefix per test file, deleted after)
 * and the embedded MongoDB server started by global setup (a database per test file, dropped after).
 */
import { randomBytes } from 'node:crypto';
import mongoose, { type Connection } from 'mongoose';
import { loadConfig, type Config } from '@feed/config';
import { connectRedis, createRedisKeys, deleteKeysWithPrefix, type Redis, type RedisKeys } from '@feed/storage';
import { testMongoUrl } from './mongo';

export interface TestServices {
  prefix: string;
  redis: Redis;
  keys: RedisKeys;
  mongo: Connection;
  config: Config;
  cleanup(): Promise<void>;
}

export async function startTestServices(name: string, env: Record<string, string> = {}): Promise<TestServices> {
  const prefix = `test:${name}:${process.pid}:${randomBytes(3).toString('hex')}:`;
  const config = loadConfig({
    NODE_ENV: 'test',
    REDIS_URL: process.env.TEST_REDIS_URL!,
    MONGO_URL: testMongoUrl(name),
    REDIS_KEY_PREFIX: prefix,
    // The read path's Redis deadline is the subject of the fault tests only (they set their own):
    // elsewhere a busy CI machine must not turn a slow answer into a fallback page.
    REDIS_DEADLINE_MS: '5000',
    ...env,
  });
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
