/**
 * The server side of `pnpm bench api`, in its own process: one process serving, on the same
 * connections and data, a hello-world route, the legacy random feed and the ring feed.
 */
import express from 'express';
import mongoose from 'mongoose';
import { loadConfig } from '@feed/config';
import { connectRedis } from '@feed/storage';
import { createApp } from '../../apps/api/src/app';

async function main(): Promise<void> {
  const config = loadConfig();
  const redis = await connectRedis(config, { failFast: true });
  const mongo = await mongoose.createConnection(config.mongoUrl!).asPromise();
  const ring = createApp({ config, redis, mongo });
  const legacy = createApp({ config: { ...config, shortRecommendV2Enabled: false }, redis, mongo });
  const outer = express();
  outer.disable('x-powered-by');
  outer.get('/hello', (_req, res) => {
    res.json({ hello: 'world' });
  });
  outer.use('/legacy', legacy.app);
  outer.use(ring.app);
  const server = outer.listen(0, '127.0.0.1', () => {
    process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`);
  });
  process.once('SIGTERM', () => process.exit(0));
}

void main();
