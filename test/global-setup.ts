/**
 * The MongoDB of the run: the real one TEST_MONGO_URL names (e.g. the compose file's `mongo`
 * service: TEST_MONGO_URL=mongodb://127.0.0.1:27017), or else one embedded MongoDB-protocol
 * server started here. Each test file uses databases of its own on it (test/support/mongo.ts).
 * Checks that both answer, so a missing service fails loudly up front.
 */
import mongoose from 'mongoose';
import { createClient } from 'redis';
import { startEmbeddedMongo } from '@feed/embedded-mongo';

export default async function globalSetup(): Promise<void> {
  if (process.env.TEST_MONGO_URL) {
    const probe = await mongoose
      .createConnection(process.env.TEST_MONGO_URL, { serverSelectionTimeoutMS: 5000 })
      .asPromise()
      .catch((err: unknown) => {
        throw new Error(`TEST_MONGO_URL=${process.env.TEST_MONGO_URL} does not answer: ${String(err)}`);
      });
    await probe.close();
    process.env.TEST_MONGO_URI = process.env.TEST_MONGO_URL;
    process.env.TEST_MONGO_KIND = 'real';
  } else {
    const mongo = await startEmbeddedMongo();
    (globalThis as { __EMBEDDED_MONGO__?: unknown }).__EMBEDDED_MONGO__ = mongo;
    process.env.TEST_MONGO_URI = mongo.uri;
    process.env.TEST_MONGO_KIND = 'embedded';
  }
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
