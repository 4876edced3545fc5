/**
 * Starts one embedded MongoDB-protocol server for the whole run (each test file uses its own
 * database on it) and checks that Redis answers, so a missing service fails loudly up front.
 */
import { createClient } from 'redis';
import { startEmbeddedMongo } from '@feed/embedded-mongo';

export default async function globalSetup(): Promise<void> {
  const mongo = await startEmbeddedMongo();
  (globalThis as { __EMBEDDED_MONGO__?: unknown }).__EMBEDDED_MONGO__ = mongo;
  process.env.TEST_MONGO_URI = mongo.uri;
  const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  process.env.TEST_REDIS_URL = redisUrl;
  const redis = createClient({ url: redisUrl });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    throw new Error(`tests need Redis at ${redisUrl} (start redis-server, or run .ci/run): ${String(err)}`);
  } finally {
    if (redis.isOpen) await redis.quit();
  }
}
