/** Shared pieces of the benchmarks: an embedded MongoDB in a child process, Redis, cleanup. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { connectRedis, createRedisKeys, type Redis } from '@feed/storage';
import { freePort, ROOT } from '../support/processes';

export { ROOT };

/**
 * The embedded server in its own process, so the benchmark's RSS and CPU are the build's
 * (or the API's) alone, as they would be against a real MongoDB. Uses MONGO_URL when set.
 */
export async function benchMongo(): Promise<{ uri: string; stop(): void }> {
  if (process.env.MONGO_URL) return { uri: process.env.MONGO_URL, stop: () => undefined };
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'tools/cli.ts'), 'mongo', '--port', String(port)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('listening') && resolve());
    child.once('exit', (code) => reject(new Error(`embedded mongo exited with ${code}`)));
  });
  return { uri: `mongodb://127.0.0.1:${port}/bench`, stop: () => child.kill('SIGTERM') };
}

/** `pnpm cli seed` in a child process against `mongoUri`. */
export async function seedInChild(mongoUri: string, videos: number, fresh: number): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'tools/cli.ts'), 'seed', '--videos', String(videos), '--fresh', String(fresh)], {
    cwd: ROOT,
    env: { ...process.env, MONGO_URL: mongoUri, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`seeding failed with exit code ${code}`);
}

export async function benchRedis(): Promise<{ redis: Redis; prefix: string; keys: ReturnType<typeof createRedisKeys>; cleanup(): Promise<void> }> {
  const prefix = `bench:${randomBytes(3).toString('hex')}:`;
  const redis = await connectRedis({ redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
  return {
    redis,
    prefix,
    keys: createRedisKeys(prefix),
    async cleanup() {
      for (const pattern of [`${prefix}*`, `{${prefix}*`]) {
        for await (const batch of redis.scanIterator({ MATCH: pattern, COUNT: 1000 })) if (batch.length) await redis.del(batch);
      }
      await redis.close();
    },
  };
}

/** Samples RSS while the benchmark runs; `peakMb()` is the highest seen. */
export function rssSampler(): { peakMb(): number; stop(): void } {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  return { peakMb: () => Math.round(Math.max(peak, process.memoryUsage().rss) / 1048576), stop: () => clearInterval(timer) };
}

export function argValue(name: string, fallback?: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

export const seconds = (ms: number) => (ms / 1000).toFixed(2);
