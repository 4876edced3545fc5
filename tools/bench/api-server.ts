/**
 * The server side of `pnpm bench api`, in its own process: one process serving, on the same
 * connections and data, a hello-world route, the legacy random feed and the ring feed.
 */
import express from 'express';
import mongoose from 'mongoose';
import { loadConfig } from '@feed/config';
import { connectRedis } from '@feed/storage';
import { createApp } from '@feed/api';

async function main(): Promise<void> {
  const config = loadConfig();
  const redis = await connectRedis(config, { failFast: true });
  const mongo = await mongoose.createConnection(config.mongoUrl!).asPromise();
  const ring = createApp({ config, redis, mongo });
  const legacy = createApp({ config: { ...config, shortRecommendV2Enabled: false }, redis, mongo });
  const outer = express();
  outer.disable('x-powered-by');
  outer.set('etag', false);
  outer.get('/hello', (_req, res) => {
    res.json({ hello: 'world' });
  });
  // The same route answering a feed-sized body (one real page, captured once): separates the cost
  // of writing ~7 KB per response from the cost of the ring read itself.
  let page: unknown;
  outer.get('/hello-page', async (_req, res) => {
    page ??= await ring.feed.nextPage({ key: 'u:bench-page-template', userId: 'bench-page-template' }, 20);
    res.json(page);
  });
  outer.use('/legacy', legacy.app);
  outer.use(ring.app);
  const server = outer.listen(0, '127.0.0.1', () => {
    process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`);
  });
  process.once('SIGTERM', () => process.exit(0));
}

void main();
