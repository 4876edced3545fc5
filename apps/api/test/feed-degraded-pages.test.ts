/**
 * The paging fields of degraded pages (R17): the legacy set's and the MongoDB fallback's
 * totalPages and hasNext come from the size of what they sample from, in pages of BLOCK_SIZE.
 */
import request from 'supertest';
import { BLOCK_SIZE } from '@feed/domain';
import { demoVideo } from '@feed/demo-data';
import { connectRedis, videoModel, type Redis } from '@feed/storage';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer } from '../../../test/support/feed-fixtures';

const s = useTestServices('feed-degraded-pages', { CURRENT_CACHE_MS: '0' });
/** Not a multiple of BLOCK_SIZE: a partial last page counts. */
const VIDEOS = 2 * BLOCK_SIZE + 5;
/** Author of every video: their own fallback page has nothing to serve. */
const AUTHOR = 'prolific';

let ids: string[];
let deadRedis: Redis;
beforeAll(async () => {
  const docs = Array.from({ length: VIDEOS }, () => demoVideo({ authorId: AUTHOR }));
  await videoModel(s.mongo).insertMany(docs);
  ids = docs.map((d) => d._id!.toHexString());
  // Nothing listens there: with the offline queue disabled (as the API runs), every command fails at once.
  deadRedis = await connectRedis({ redisUrl: 'redis://127.0.0.1:1' }, { failFast: true, background: true });
});
afterAll(() => deadRedis.destroy());

const page = (app: ReturnType<typeof testApi>['app'], user: string, pageSize: number) =>
  request(app).get('/api/app/recommend/vid/list').query({ pageSize }).set(bearer(user)).expect(200);

describe('degraded pages count their pages', () => {
  it('when the legacy set serves, then totalPages and hasNext follow the size of the set', async () => {
    await s.redis.sAdd(s.keys.legacyIds, ids);
    const res = await page(testApi(s).app, 'legacy-reader', 7);
    expect(res.body).toMatchObject({ queueVersion: 'legacy', totalPages: 3, hasNext: true });
    expect(res.body.vInfos).toHaveLength(7);
  });

  it('when MongoDB serves, then totalPages and hasNext follow the recent videos it samples from', async () => {
    const res = await page(testApi(s, {}, { redis: deadRedis }).app, 'fallback-reader', 7);
    expect(res.body).toMatchObject({ queueVersion: 'fallback', totalPages: 3, hasNext: true });
    expect(res.body.vInfos).toHaveLength(7);
  });

  it('when MongoDB holds nothing this user may be served, then the fallback page is empty with no next page', async () => {
    const res = await page(testApi(s, {}, { redis: deadRedis }).app, AUTHOR, 7);
    expect(res.body).toMatchObject({ vInfos: [], queueVersion: 'fallback', totalPages: 0, hasNext: false });
  });

  it('when HEAD is answered by the MongoDB fallback, then the Redis failures behind it are not counted', async () => {
    const api = testApi(s, {}, { redis: deadRedis });
    await request(api.app).head('/api/app/recommend/vid/list').set(bearer('head-reader')).expect(200);
    expect(await api.metrics.registry.getSingleMetricAsString('feed_redis_failures_total')).not.toMatch(/operation="legacy-set"} [1-9]/);
  });

  it('when Redis is unreachable for a user outside the rollout, then MongoDB serves them too', async () => {
    const res = await page(testApi(s, { shortRecommendV2Enabled: false }, { redis: deadRedis }).app, 'legacy-user', 7);
    expect(res.body).toMatchObject({ queueVersion: 'fallback' });
  });
});

