/**
 * The worker's `/readyz` (its readiness probe in infra/k8s/worker.yaml): 200 while Redis and
 * MongoDB answer, 503 naming the store that does not, while `/healthz` stays 200.
 */
import express from 'express';
import mongoose from 'mongoose';
import { Queue } from 'bullmq';
import request from '../../../test/support/contract';
import { connectRedis, videoModel } from '@feed/storage';
import { createWorkerApp } from '../src/app';
import { bullConnectionFactory } from '../src/jobs/bull-connection';
import { createWorkerMetrics } from '../src/metrics';
import { readiness } from '../src/readiness';
import { workerOpenApiDocument } from '../src/openapi';
import { useTestServices } from '../../../test/support/services';

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
const probe = (deps: Parameters<typeof readiness>[0]) =>
  request(
    express()
      .get('/readyz', readiness(deps))
      .get('/openapi.json', (_req, res) => void res.json(workerOpenApiDocument)),
  ).get('/readyz');

describe('worker /readyz', () => {
  it('when the worker app is asked with both stores up, then /readyz is 200 and /healthz too', async () => {
    const connection = bullConnectionFactory(s.config)();
    const queue = new Queue('readyz-test', { connection, prefix: s.keys.bullPrefix });
    s.disposeAfter(async () => {
      await queue.close();
      await connection.quit();
    });
    const app = createWorkerApp({ config: s.config, queue, metrics: createWorkerMetrics(), redis: s.redis, keys: s.keys, videos: videoModel(s.mongo) });
    await request(app).get('/readyz').expect(200, { status: 'ready', redis: 'ok', mongo: 'ok' });
    await request(app).get('/healthz').expect(200);
  });

  it('when Redis cannot be reached, then /readyz is 503 naming Redis', async () => {
    await probe({ redis: await closedRedis(), keys: s.keys, videos: videoModel(s.mongo) }).expect(503, { status: 'unavailable', redis: 'down', mongo: 'ok' });
  });

  it('when MongoDB cannot be reached, then /readyz is 503 naming MongoDB', async () => {
    await probe({ redis: s.redis, keys: s.keys, videos: await closedMongo() }).expect(503, { status: 'unavailable', redis: 'ok', mongo: 'down' });
  });
});
