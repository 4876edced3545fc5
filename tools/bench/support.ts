/** Shared pieces of the benchmarks: an embedded MongoDB in a child process, Redis, a built version, cleanup. */
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import mongoose from 'mongoose';
import { createLogger } from '@feed/logger';
import { BuildStore, connectRedis, createRedisKeys, deleteKeysWithPrefix, type Redis, type RedisKeys, type VideoModel } from '@feed/storage';
import { buildDepsFrom, runDailyBuild, type BuildOptions } from '@feed/worker';
import { cli, freePort, startMongoProcess } from '../support/processes';

/**
 * The embedded server in its own process, so the benchmark's RSS and CPU are the build's
 * (or the API's) alone, as they would be against a real MongoDB. Uses MONGO_URL when set.
 */
export async function benchMongo(): Promise<{ uri: string; stop(): void }> {
  if (process.env.MONGO_URL) return { uri: process.env.MONGO_URL, stop: () => undefined };
  const port = await freePort();
  const mongo = await startMongoProcess(port);
  return { uri: `mongodb://127.0.0.1:${port}/bench`, stop: () => void mongo.stop() };
}

/** `pnpm cli seed` in a child process against `mongoUri`. */
export async function seedInChild(mongoUri: string, videos: number, fresh: number): Promise<void> {
  const { code, output } = await cli({ MONGO_URL: mongoUri, LOG_LEVEL: 'warn' }, 'seed', '--videos', String(videos), '--fresh', String(fresh));
  if (code !== 0) throw new Error(`seeding failed with exit code ${code}: ${output}`);
}

export async function benchRedis() {
  const prefix = `bench:${randomBytes(3).toString('hex')}:`;
  const redis = await connectRedis({ redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
  return {
    redis,
    prefix,
    keys: createRedisKeys(prefix),
    async cleanup() {
      await deleteKeysWithPrefix(redis, prefix);
      await redis.close();
    },
  };
}

/** Both stores of a benchmark: MongoDB (a connection to it) and Redis under a prefix of its own; `close` undoes all. */
export async function benchStores() {
  const mongo = await benchMongo();
  const stores = await benchRedis();
  const connection = await mongoose.createConnection(mongo.uri).asPromise();
  return {
    ...stores,
    mongoUri: mongo.uri,
    connection,
    async close() {
      await connection.close();
      await stores.cleanup();
      mongo.stop();
    },
  };
}

/** The worker's build settings for a bench, except that the keys live an hour. */
const BENCH_BUILD = { businessTimeZone: 'Asia/Shanghai', shortRecommendKeyTTLHours: 1, buildLockTtlMs: 60_000, shortRecommendHoldDrop: 0.5 };

/** A version of `videos` (today's unless `options` say), built and made current as the worker builds it (its keys live an hour). */
export function buildBenchVersion(redis: Redis, keys: RedisKeys, videos: VideoModel, options: BuildOptions = {}) {
  return runDailyBuild(buildDepsFrom(BENCH_BUILD, { store: new BuildStore(redis, keys), videos, logger: createLogger({ silent: true }) }), options);
}

/** The environment of an API a bench starts: production, quiet, private secrets (production refuses published or short ones, D2). */
export const benchApiEnv = (secret: string, env: Record<string, string>) => ({ NODE_ENV: 'production', LOG_LEVEL: 'error', AUTH_JWT_SECRET: secret, ADMIN_PASSWORD: randomBytes(24).toString('hex'), ...env });

/** autocannon on `url` for `seconds`, each request signed in as the next of `tokens` (many distinct users). */
export function loadWithTokens(url: string, tokens: string[], seconds: number, connections: number) {
  let next = 0;
  const signedIn = (req: autocannon.Request) => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${tokens[next++ % tokens.length]}` } });
  return autocannon({ url, connections, duration: seconds, requests: [{ setupRequest: signedIn }] });
}

export function argValue(name: string, fallback?: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

