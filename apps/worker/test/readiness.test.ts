/**
 * The worker's `/readyz` (its readiness probe in infra/k8s/worker.yaml): 200 while Redis and
 * MongoDB answer, 503 naming the store that has failed every probe for a while (a short
 * `failingAfterMs` here), while `/healthz` stays 200.
 */
import express from 'express';
import mongoose from 'mongoose';
import { Queue } from 'bullmq';
import request from '../../../test/support/contract';
import { connectRedis, storeHealth, videoModel, type Redis, type VideoModel } from '@feed/storage';
import { createWorkerApp } from '../src/app';
import { workerStores } from './support/worker-app-under-test';
import { bullConnectionFactory } from '../src/jobs/bull-connection';
import { createWorkerMetrics } from '../src/metrics';
import { PROBE_MS, readiness } from '../src/readiness';
import { workerOpenApiDocument } from '../src/openapi';
import { useTestServices } from '../../../test/support/services';
import { waitUntil } from '../../../tools/support/processes';

const s = useTestServices('readyz');

/** A client that connected once and is closed now: every call fails as an unreachable store's would. */
async function closedRedis() {
  const redis = await connectRedis(s.config);
  await redis.close();
  return redis;
}

async function closedMongo() {
  const connection = await mongoose.createConnection(s.config.mongoUrl!).asPromise();
  await connection.close();
  return videoModel(connection);
}

/** The probe alone, beside the worker's document (which the contract check reads). */
const FAILING_AFTER_MS = 300;
const prober = (deps: { redis: Redis; videos: VideoModel }) => {
  const app = express()
    .get('/readyz', readiness(storeHealth({ redis: deps.redis, keys: s.keys, mongo: deps.videos.db }, PROBE_MS, FAILING_AFTER_MS)))
    .get('/openapi.json', (_req, res) => void res.json(workerOpenApiDocument));
  return () => request(app).get('/readyz');
};

/** The first answer (the store down a moment: still ready), then 503 once it failed for FAILING_AFTER_MS. */
async function readinessOver(deps: { redis: Redis; videos: VideoModel }) {
  const probe = prober(deps);
  const started = performance.now();
  const first = await probe();
  for (;;) {
    const answer = await probe();
    if (answer.status === 503 || performance.now() - started > 5_000) return { first: [first.status, first.body] as const, then: answer, afterMs: performance.now() - started };
  }
}

describe('worker /readyz', () => {
  it('when the worker app is asked with both stores up, then /readyz is 200 and /healthz too', async () => {
    const connection = bullConnectionFactory(s.config)();
    const queue = new Queue('readyz-test', { connection, prefix: s.keys.bullPrefix });
    s.disposeAfter(async () => {
      await queue.close();
      await connection.quit();
    });
    const app = createWorkerApp({ config: s.config, queue, metrics: createWorkerMetrics(), ...workerStores(s.redis, s.keys, s.mongo), videos: videoModel(s.mongo) });
    // A probe waits 500 ms at most: on a loaded machine one may miss it (still ready, that store `down`), the next answers.
    let body: unknown;
    await waitUntil('both stores ok', async () => ((body = (await request(app).get('/readyz').expect(200)).body), JSON.stringify(body) === JSON.stringify({ status: 'ready', redis: 'ok', mongo: 'ok' })), 10_000);
    await request(app).get('/healthz').expect(200);
  });

  it('when Redis cannot be reached, then /readyz says it down at once, still ready, and is 503 naming Redis once it failed for failingAfterMs', async () => {
    const { first, then, afterMs } = await readinessOver({ redis: await closedRedis(), videos: videoModel(s.mongo) });
    expect(first).toEqual([200, { status: 'ready', redis: 'down', mongo: 'ok' }]);
    expect([then.status, then.body]).toEqual([503, { status: 'unavailable', redis: 'down', mongo: 'ok' }]);
    expect(afterMs).toBeGreaterThanOrEqual(FAILING_AFTER_MS * 0.9);
  });

  it('when MongoDB cannot be reached, then /readyz says it down at once and is 503 naming MongoDB once it failed for failingAfterMs', async () => {
    const { first, then } = await readinessOver({ redis: s.redis, videos: await closedMongo() });
    expect(first).toEqual([200, { status: 'ready', redis: 'ok', mongo: 'down' }]);
    expect([then.status, then.body]).toEqual([503, { status: 'unavailable', redis: 'ok', mongo: 'down' }]);
  });
});
