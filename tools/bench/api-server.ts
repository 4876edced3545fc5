/**
 * The server side of `pnpm bench api`, in its own process: one process serving, on the same
 * connections and data, a hello-world route, the limit route, the legacy random feed and the ring feed.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import express from 'express';
import mongoose from 'mongoose';
import { loadConfig } from '@feed/config';
import { errorHandler, requestId } from '@feed/http';
import { connectRedis, RequestBudget } from '@feed/storage';
import { clientCors, createApp } from '@feed/api';

async function main(): Promise<void> {
  const config = loadConfig();
  const redis = await connectRedis(config, { failFast: true });
  const mongo = await mongoose.createConnection(config.mongoUrl!).asPromise();
  const ring = createApp({ config, redis, mongo });
  const legacy = createApp({ config: { ...config, shortRecommendV2Enabled: false }, redis, mongo });
  const outer = express();
  outer.disable('x-powered-by');
  outer.set('etag', false);
  // The bench reads this process's CPU time around each run (CPU per request holds on a loaded machine).
  outer.get('/cpu', (_req, res) => {
    res.json(process.cpuUsage());
  });
  outer.get('/hello', (_req, res) => {
    res.json({ hello: 'world' });
  });
  // The same route answering a feed-sized body (one real page, captured once): separates the cost
  // of writing ~7 KB per response from the cost of the ring read itself.
  const page = await ring.feed.nextPage({ key: 'u:bench-page-template', userId: 'bench-page-template' }, 20, new RequestBudget({ redisMs: 5000, mongoMs: 5000 }));
  outer.get('/hello-page', (_req, res) => {
    res.json(page);
  });
  // The limit of a ring page: what every client route must have (request id, CORS, the error
  // handler), one EVALSHA carrying 20 ids and answering them, and the same page, serialised once.
  const limit = express.Router();
  limit.use(requestId());
  limit.use(clientCors(config.corsAllowedOrigins));
  const ids = page.vInfos.map((v) => v.vid);
  const body = JSON.stringify(page);
  const script = 'return ARGV';
  const sha = createHash('sha1').update(script).digest('hex');
  await redis.eval(script, { arguments: ids });
  limit.get('/', async (_req, res) => {
    await redis.evalSha(sha, { arguments: ids });
    res.type('application/json').send(body);
  });
  limit.use(errorHandler());
  // Mounted at its path: its request id and CORS must not run for the other routes' requests.
  outer.use('/limit', limit);
  outer.use('/legacy', legacy.app);
  // The ring app answers its paths at the top, as in production: not mounted in `outer`, whose
  // routes it would otherwise pass first, and whose mount swaps req's and res's prototypes.
  const server = createServer((req, res) => void (req.url!.startsWith('/api/') ? ring.app : outer)(req, res));
  server.listen(Number(process.env.BENCH_PORT ?? 0), '127.0.0.1', () => {
    process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`);
  });
  process.once('SIGTERM', () => process.exit(0));
}

void main();
