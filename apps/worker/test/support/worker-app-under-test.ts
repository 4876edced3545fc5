/**
 * The worker's HTTP app over a real build queue (no job is processed: `process: false`), with
 * on-call's credentials oncall / inspect-pass; the queue is closed after the test.
 */
import type { Express } from 'express';
import { createLogger } from '@feed/logger';
import type { Config } from '@feed/config';
import { BuildStore, RolloutStore, storeHealth, videoModel, type Redis, type RedisKeys } from '@feed/storage';
import type { Connection } from 'mongoose';
import { createWorkerApp } from '../../src/app';
import { startBuildQueue, type BuildQueue } from '../../src/jobs/build-queue';
import { bullConnectionFactory } from '../../src/jobs/bull-connection';
import { createWorkerMetrics } from '../../src/metrics';
import { PROBE_MS } from '../../src/readiness';
import { testBuildDeps } from '../../../../test/support/build-deps';
import type { TestServices } from '../../../../test/support/services';

export const ADMIN = { Authorization: `Basic ${Buffer.from('oncall:inspect-pass').toString('base64')}` };

/** The build queue the worker app reads (its dashboard, the inspector's promote), on `s`'s Redis. */
export async function testBuildQueue(s: TestServices): Promise<BuildQueue> {
  const jobs = await startBuildQueue({ connection: bullConnectionFactory(s.config), prefix: s.keys.bullPrefix, cron: '30 4 * * *', timeZone: 'Asia/Shanghai', retryDelayMs: s.config.buildRetryDelayMs, logger: createLogger({ silent: true }), metrics: createWorkerMetrics(), deps: testBuildDeps(s, videoModel(s.mongo)), process: false });
  s.disposeAfter(() => jobs.close());
  return jobs;
}

/** What main.ts hands the worker app over one connection: its stores and the stores' probes. */
export const workerStores = (redis: Redis, keys: RedisKeys, mongo: Connection) => ({ store: new BuildStore(redis, keys), rollout: new RolloutStore(redis, keys), health: storeHealth({ redis, keys, mongo }, PROBE_MS) });

/** The worker app on `s` (build it in `beforeEach`); `config` changes the test's configuration. */
export async function workerAppUnderTest(s: TestServices, config: Partial<Config> = {}): Promise<Express> {
  const jobs = await testBuildQueue(s);
  return createWorkerApp({ config: { ...s.config, adminUser: 'oncall', adminPassword: 'inspect-pass', ...config }, queue: jobs.queue, metrics: createWorkerMetrics(), ...workerStores(s.redis, s.keys, s.mongo), videos: videoModel(s.mongo) });
}
