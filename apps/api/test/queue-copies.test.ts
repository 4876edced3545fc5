/**
 * The API's in-process queue copies (SPEC R22): once a published queue is copied and verified,
 * the feed's ids come from memory and its Redis work is the user's offset bucket; a forced
 * rebuild in place (a new build id) is copied again; a queue that disagrees with its meta is
 * never copied (the feed keeps reading positions from Redis); copies are bounded.
 */
import request, { type Response } from '../../../test/support/contract';
import { readRingVersion, VersionStore, videoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import type { Api } from '../src/app';
import { QueueCopies } from '../src/feed/queue-copies';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer, publishQueue } from '../../../test/support/feed-fixtures';
import { waitUntil } from '../../../tools/support/processes';

const s = useTestServices('copies', { CURRENT_CACHE_MS: '0' });
let ids: string[];
const V = '20260724';

beforeAll(async () => {
  const docs = Array.from({ length: 60 }, () => demoVideo({ reviewAt: new Date(Date.now() - 5 * 86400_000) }));
  await videoModel(s.mongo).insertMany(docs);
  ids = docs.map((d) => d._id!.toHexString());
});

const vids = (res: Response) => res.body.vInfos.map((v: { vid: string }) => v.vid);
const copyLoads = async (api: Api) => (await api.metrics.registry.getSingleMetric('feed_queue_copy_loads_total')!.get()).values[0]?.value ?? 0;

/** The queue's list rewritten behind the meta's back: only a reader of the list sees it. */
async function rewriteListInPlace(version: string, newIds: string[]) {
  const ttl = await s.redis.pTTL(s.keys.queue(version));
  await s.redis.del(s.keys.queue(version));
  await s.redis.rPush(s.keys.queue(version), newIds);
  await s.redis.pExpire(s.keys.queue(version), ttl);
}

describe('queue copies (R22)', () => {
  it('when the copy is loaded, then pages come from it; a new build id in the meta makes the instance copy the queue again', async () => {
    const queue = ids.slice(0, 30);
    await publishQueue(s.redis, s.keys, V, queue);
    const api = testApi(s);
    // The first page is read from Redis while the copy loads.
    expect(vids(await request(api.app).get('/api/app/recommend/vid/list?pageSize=5').set(bearer('copy-a')).expect(200))).toEqual(queue.slice(0, 5));
    await api.reader.copies!.ensure((await readRingVersion(s.redis, s.keys, V))!);
    expect(await copyLoads(api)).toBe(1);

    // The list changes under the same meta: the instance serves its verified copy.
    const other = ids.slice(30, 60);
    await rewriteListInPlace(V, other);
    expect(vids(await request(api.app).get('/api/app/recommend/vid/list?pageSize=5').set(bearer('copy-a')).expect(200))).toEqual(queue.slice(5, 10));

    // A forced rebuild in place gives the meta a new build id: until the new copy is ready the
    // positions are read from Redis, then from the new copy.
    await s.redis.hSet(s.keys.meta(V), 'buildId', 'rebuilt');
    expect(vids(await request(api.app).get('/api/app/recommend/vid/list?pageSize=5').set(bearer('copy-a')).expect(200))).toEqual(other.slice(10, 15));
    await api.reader.copies!.ensure((await readRingVersion(s.redis, s.keys, V))!);
    expect(await copyLoads(api)).toBe(2);
    expect(vids(await request(api.app).get('/api/app/recommend/vid/list?pageSize=5').set(bearer('copy-a')).expect(200))).toEqual(other.slice(15, 20));
  });

  it('when the queue disagrees with meta.length, then no copy is made and pages keep coming from Redis', async () => {
    const queue = ids.slice(0, 30);
    await publishQueue(s.redis, s.keys, V, queue);
    await s.redis.rPush(s.keys.queue(V), ids[40]);
    const api = testApi(s);
    await api.reader.copies!.ensure((await readRingVersion(s.redis, s.keys, V))!);
    expect(await copyLoads(api)).toBe(0);
    await rewriteListInPlace(V, [...ids.slice(30, 60), ids[0]]);
    expect(vids(await request(api.app).get('/api/app/recommend/vid/list?pageSize=5').set(bearer('copy-b')).expect(200))).toEqual(ids.slice(30, 35));
  });

  it('when an instance is told of a new version, then it copies the queue ahead of any read of it, at its jittered moment', async () => {
    await publishQueue(s.redis, s.keys, V, ids.slice(0, 30));
    const ring = (await readRingVersion(s.redis, s.keys, V))!;
    const loaded: string[] = [];
    // This instance's draw puts its preload at the start of the spread; another's would wait up to jitterMs.
    const copies = new QueueCopies({ versions: new VersionStore(s.redis, s.keys), queueCopiesMax: 3, onLoaded: (version) => void loaded.push(version), jitterMs: 60_000, random: () => 0 });
    copies.preload(ring);
    copies.preload(ring);
    await waitUntil('the preloaded copy', async () => loaded.length > 0, 5_000);
    expect(loaded).toEqual([V]);
    expect(copies.idsAt(ring, 0, 3)).toEqual(ids.slice(0, 3));
    // Drawn late in the spread: nothing loads yet, and reads meanwhile take the LRANGE path.
    const late = new QueueCopies({ versions: new VersionStore(s.redis, s.keys), queueCopiesMax: 3, onLoaded: (version) => void loaded.push(version), jitterMs: 60_000, random: () => 0.999 });
    late.preload(ring);
    expect(late.idsAt(ring, 0, 3)).toBeUndefined();
    expect(loaded).toEqual([V]);
  });

  it('when more versions are read than the bound, then the least recently used copy is dropped', async () => {
    const copies = new QueueCopies({ versions: new VersionStore(s.redis, s.keys), queueCopiesMax: 2 });
    for (const version of ['20260801', '20260802', '20260803']) {
      await publishQueue(s.redis, s.keys, version, ids.slice(0, 20), { makeCurrent: false });
      await copies.ensure((await readRingVersion(s.redis, s.keys, version))!);
    }
    expect(copies.bytes()).toBe(2 * 20 * 12);
    const oldest = (await readRingVersion(s.redis, s.keys, '20260801'))!;
    expect(copies.idsAt(oldest, 0, 1)).toBeUndefined();
    expect(copies.idsAt((await readRingVersion(s.redis, s.keys, '20260803'))!, 18, 3)).toEqual([ids[18], ids[19], ids[0]]);
  });
});

describe('readiness of a new instance and of a draining one (D4)', () => {
  const readiness = async (api: Api) => (await request(api.app).get('/readyz')).body.status as string;

  it('when a new instance starts with a current version, then /readyz says 503 warming until its copy is loaded, stays ready when another version becomes current, and says 503 draining once drained', async () => {
    await publishQueue(s.redis, s.keys, V, ids.slice(0, 30));
    const api = testApi(s);
    const first = await request(api.app).get('/readyz').expect(503);
    expect(first.body).toEqual({ status: 'warming', redis: 'ok', mongo: 'ok' });
    await waitUntil('the copy loaded', async () => (await readiness(api)) === 'ready', 5_000);
    expect(await copyLoads(api)).toBe(1);
    // The daily switch: the instance serves on while it copies the new version (never all unready at once).
    await publishQueue(s.redis, s.keys, '20260725', ids.slice(30, 60));
    expect(await readiness(api)).toBe('ready');
    api.drain();
    expect((await request(api.app).get('/readyz').expect(503)).body.status).toBe('draining');
  });

  it('when the copy of current is refused (the queue disagrees with its meta), then the new instance says ready anyway: its pages come from Redis', async () => {
    await publishQueue(s.redis, s.keys, V, ids.slice(0, 30));
    await s.redis.rPush(s.keys.queue(V), ids[40]);
    const api = testApi(s);
    expect(await readiness(api)).toBe('warming');
    await waitUntil('ready without a copy', async () => (await readiness(api)) === 'ready', 5_000);
    expect(await copyLoads(api)).toBe(0);
  });

  it('when Redis answers the probe but not the read of the versions, then /readyz still answers, within the Redis deadline', async () => {
    await publishQueue(s.redis, s.keys, V, ids.slice(0, 30));
    // The probe reads `current`; the read state's pipelined read of `previous` never comes back.
    const stalled = new Proxy(s.redis, {
      get(target, prop) {
        const value: unknown = Reflect.get(target, prop);
        if (prop === 'get') return (key: string) => (key === s.keys.previous ? new Promise(() => undefined) : target.get(key));
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const api = testApi(s, { redisDeadlineMs: 200 }, { redis: stalled });
    const res = await request(api.app).get('/readyz').timeout(3_000);
    expect(res.body).toEqual({ status: 'ready', redis: 'ok', mongo: 'ok' });
  });

  it('when no version is current, then a new instance is ready at once: the degraded feed is its steady state', async () => {
    await s.redis.del([s.keys.current, s.keys.previous]);
    const api = testApi(s);
    expect((await request(api.app).get('/readyz').expect(200)).body.status).toBe('ready');
  });
});
