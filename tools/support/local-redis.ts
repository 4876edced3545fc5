/**
 * Development tooling only (`pnpm start`): when no Redis is configured (REDIS_URL, REDIS_CLUSTER_NODES
 * and REDIS_SENTINELS unset, not production) and nothing answers on the default 127.0.0.1:6379
 * (LOCAL_REDIS_PROBE_PORT names another port to probe, for tests), starts a private redis-server
 * on a free loopback port, without persistence, and sets REDIS_URL for what starts next; without
 * the binary it stops naming the package to install. Its `stop` ends that server.
 */
import { spawn, spawnSync } from 'node:child_process';
import { loadDotEnv } from '@feed/config';
import { logger } from '@feed/logger';
import { freePort, listening, waitUntil } from './processes';

export async function useLocalRedis(env: NodeJS.ProcessEnv = process.env): Promise<{ stop(): Promise<void> }> {
  const none = { stop: async () => undefined };
  if (env === process.env) loadDotEnv(env);
  if (env.REDIS_URL === '') delete env.REDIS_URL; // `REDIS_URL=` in a shell means unset
  if (env.REDIS_URL || env.REDIS_CLUSTER_NODES || env.REDIS_SENTINELS || env.NODE_ENV === 'production') return none;
  const probe = Number(env.LOCAL_REDIS_PROBE_PORT ?? 6379);
  if (await listening(probe)) return none;
  if (spawnSync('redis-server', ['--version']).status !== 0) {
    throw new Error(`REDIS_URL is unset and nothing answers on 127.0.0.1:${probe}: install Redis (\`apt-get install redis-server\`, or \`brew install redis\`) or set REDIS_URL`);
  }
  const port = await freePort();
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => redis.once('exit', () => resolve()));
  // Ctrl-C is the caller's to handle (a graceful stop, then `stop`); a crash or exit still takes the server along.
  process.once('exit', () => redis.kill('SIGKILL'));
  await waitUntil(`the private redis-server on ${port}`, () => listening(port), 10_000).catch((err: unknown) => {
    redis.kill('SIGKILL');
    throw err;
  });
  env.REDIS_URL = `redis://127.0.0.1:${port}`;
  logger.info('private redis-server started (nothing on the default port)', { url: env.REDIS_URL });
  return {
    stop: async () => {
      if (redis.exitCode === null && redis.signalCode === null) redis.kill('SIGTERM');
      await exited;
    },
  };
}
