/**
 * `pnpm start:api` / `pnpm start:worker`: one deployable from its TypeScript sources, with the
 * embedded MongoDB started (or shared) when MONGO_URL is unset. Production runs `node dist/main.js`
 * of the deployed package instead, which requires MONGO_URL.
 */
import './support/telemetry-first';
import { startApi } from '@feed/api';
import { loadConfig } from '@feed/config';
import { exitOnSignals } from '@feed/lifecycle';
import { logger } from '@feed/logger';
import { startWorker } from '@feed/worker';
import { useLocalMongo } from './support/local-mongo';

const deployables = { api: startApi, worker: startWorker };

async function main(): Promise<void> {
  const name = process.argv[2];
  if (name !== 'api' && name !== 'worker') throw new Error('usage: start-one.ts api|worker');
  const localMongo = await useLocalMongo();
  const running = await deployables[name](loadConfig());
  exitOnSignals(name, async () => {
    await running.stop();
    await localMongo.stop();
  }, 'deadlineMs' in running ? running.deadlineMs : undefined);
}

main().catch((err: unknown) => {
  logger.error('start failed', { err: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
