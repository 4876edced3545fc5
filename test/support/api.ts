/** An in-process API for a test, on the running test's key prefix, closed after that test. */
import type { Config } from '@feed/config';
import { createApp, type Api, type ApiDeps } from '@feed/api';
import { demoVideo } from '@feed/demo-data';
import { videoModel } from '@feed/storage';
import { publishQueue } from './feed-fixtures';
import type { TestServices } from './services';
import request from 'supertest';
import type { Express } from 'express';
import { waitUntil } from '../../tools/support/processes';

export function testApi(s: TestServices, config: Partial<Config> = {}, deps: Partial<ApiDeps> = {}): Api {
  const api = createApp({ config: { ...s.config, ...config }, redis: s.redis, mongo: s.mongo, ...deps });
  // Its readout flushes on a timer: stop it (and write what it holds) before the keys are deleted.
  s.disposeAfter(() => api.readout.close());
  // The counter tallies running behind its interactions end before the stores close.
  s.disposeAfter(() => api.tallies.idle());
  return api;
}

/** Users whose rollout bucket (FNV-1a 32 of "u:<id>" mod 100, computed outside the service) is below 30: the ring at 30 %. */
/** Until `/readyz` is 200: a new instance is 503 `warming` until its copy of current is loaded (D4). */
export async function untilReady(app: Express): Promise<void> {
  await waitUntil('the API ready (its copy of current loaded)', async () => (await request(app).get('/readyz')).status === 200, 10_000);
}

export const RING_USERS_AT_30 = ['rollout-6', 'rollout-34', 'rollout-82'];
/** Users whose bucket is 30 or above: legacy at 30 %. */
export const LEGACY_USERS_AT_30 = ['rollout-149', 'rollout-21', 'rollout-22'];

export interface SplitRollout {
  /** The 30 approved videos (inserted once per file), in the current version's queue and the legacy set. */
  ids: string[];
  /** The running test's API, at SHORT_RECOMMEND_V2_PERCENT=30. */
  api: Api;
}

/**
 * A file's fixture for the V2 vs legacy tests (D7, R23): 30 videos, published as `version` and
 * as the legacy set before each test, and an API with 30 % of users on the ring. Call at the top
 * of the file, after `useTestServices`.
 */
export function useSplitRollout(s: TestServices, version: string): SplitRollout {
  const split: Partial<SplitRollout> & { ids: string[] } = { ids: [] };
  beforeAll(async () => {
    const docs = Array.from({ length: 30 }, () => demoVideo({ reviewAt: new Date(Date.now() - 5 * 86400_000) }));
    await videoModel(s.mongo).insertMany(docs);
    split.ids = docs.map((d) => d._id!.toHexString());
  });
  beforeEach(async () => {
    await publishQueue(s.redis, s.keys, version, split.ids);
    await s.redis.sAdd(s.keys.legacyIds, split.ids);
    split.api = testApi(s, { shortRecommendV2Percent: 30 });
  });
  return split as SplitRollout;
}
