/**
 * The read state is cached for CURRENT_CACHE_MS, but a page that finds the version it names gone
 * drops it: the request after it reads the pointers again, so a version published meanwhile
 * serves at once instead of after the cache period. Each case runs within the 5 s cache period
 * (checked: the cache runs on the monotonic clock, which no fake Date freezes), so only the drop
 * can make the next request see the new version.
 */
import request from 'supertest';
import { demoVideo } from '@feed/demo-data';
import { videoModel } from '@feed/storage';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer, offsetOf, publishQueue } from '../../../test/support/feed-fixtures';

const s = useTestServices('feed-stale-read-state', { CURRENT_CACHE_MS: '5000', QUEUE_COPIES_MAX: '0' });
const [V1, V2, V3] = ['20260724', '20260725', '20260726'];

let ids: string[];
beforeAll(async () => {
  const docs = Array.from({ length: 12 }, () => demoVideo({}));
  await videoModel(s.mongo).insertMany(docs);
  ids = docs.map((d) => d._id!.toHexString());
});

let started: number;
beforeEach(async () => {
  await publishQueue(s.redis, s.keys, V1, ids);
  started = performance.now();
});
// Past the cache period the cache would expire on its own, and the case would prove nothing.
afterEach(() => expect(performance.now() - started).toBeLessThan(5000));

const page = async (app: ReturnType<typeof testApi>['app'], user: string) => {
  const res = await request(app).get('/api/app/recommend/vid/list').query({ pageSize: 4 }).set(bearer(user)).expect(200);
  return { version: res.body.queueVersion as string, vids: (res.body.vInfos as Array<{ vid: string }>).map((v) => v.vid) };
};

describe('a read state naming a gone queue is not reused', () => {
  it('when the cached current version has no queue, then the page after the fallback reads the pointers again', async () => {
    await publishQueue(s.redis, s.keys, V2, [...ids].reverse());
    await s.redis.del(s.keys.queue(V2));
    const api = testApi(s);
    expect((await page(api.app, 'gone-at-read')).version).toBe(V1);

    await publishQueue(s.redis, s.keys, V3, ids.slice(6));
    expect(await page(api.app, 'gone-at-read')).toEqual({ version: V3, vids: ids.slice(6, 10) });
  });

  it('when the queue vanishes after the read state was cached, then the claim is given back and the next page reads the pointers again', async () => {
    await publishQueue(s.redis, s.keys, V2, [...ids].reverse());
    const api = testApi(s);
    expect((await page(api.app, 'gone-at-claim')).version).toBe(V2);

    await s.redis.del(s.keys.queue(V2));
    expect(await page(api.app, 'gone-at-claim')).toEqual({ version: V1, vids: ids.slice(0, 4) });
    // The claim on V2 found no ids and was given back: the user's V2 offset is where the first page left it.
    expect(await offsetOf(s.redis, s.keys, V2, 'u:gone-at-claim')).toBe('4');

    await publishQueue(s.redis, s.keys, V3, ids.slice(6));
    expect(await page(api.app, 'gone-at-claim')).toEqual({ version: V3, vids: ids.slice(6, 10) });
  });
});
