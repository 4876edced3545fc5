/**
 * The API's memory budget (API_MEMORY_BUDGET_MB): each cache holds at most its share in bytes
 * (video documents, verified tokens, queue copies), the shares fit the budget whatever its value,
 * the image's heap flag follows the setting, and the bytes are exported from the start.
 */
import { getHeapStatistics } from 'node:v8';
import fc from 'fast-check';
import request from '../../../test/support/contract';
import { loadConfig } from '@feed/config';
import { MongoBudget, readRingVersion, VersionStore, videoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { VideoCatalog, videoEntryBytes, type CatalogVideo } from '../src/feed/video-catalog';
import { QueueCopies } from '../src/feed/queue-copies';
import { sizeTokenCache, tokenCacheBytes } from '../src/http/identity';
import { createApiMetrics, MEMORY_CACHES } from '../src/metrics';
import { memoryShares } from '../src/memory-budget';
import { heapFlag } from '../src/heap-flag';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer, publishQueue } from '../../../test/support/feed-fixtures';

const s = useTestServices('budget');
let ids: string[];

beforeAll(async () => {
  const docs = Array.from({ length: 40 }, (_, i) => demoVideo({ reviewAt: new Date(Date.now() - 5 * 86400_000), title: i % 2 ? `短视频 ${i}` : `video ${i}` }));
  await videoModel(s.mongo).insertMany(docs);
  ids = docs.map((d) => d._id!.toHexString());
});

const seed = process.env.CI ? 20260801 : Date.now() % 2 ** 31;
const MB = 1024 * 1024;

describe('memory shares', () => {
  it('when any budget is split, then queue copies and the old space fit in it and the in-heap caches leave half the old space to requests', () => {
    console.log(`memory shares: fast-check seed ${seed}`);
    fc.assert(
      fc.property(fc.integer({ min: 128, max: 65536 }), (budgetMb) => {
        const shares = memoryShares(budgetMb);
        expect(shares.budgetBytes).toBe(budgetMb * MB);
        expect(shares.oldSpaceMb * MB + shares.queueCopyBytes).toBeLessThanOrEqual(shares.budgetBytes);
        expect(shares.videoCacheBytes + shares.tokenCacheBytes).toBeLessThanOrEqual((shares.oldSpaceMb * MB) / 2);
        expect(Math.min(shares.videoCacheBytes, shares.tokenCacheBytes, shares.queueCopyBytes)).toBeGreaterThan(0);
      }),
      { seed, numRuns: 200 },
    );
  });

  it('when the image asks for its heap flag, then it is the budget share of the setting, and nothing for a bad value', () => {
    expect(heapFlag({})).toBe('--max-old-space-size=128');
    expect(heapFlag({ API_MEMORY_BUDGET_MB: '1024' })).toBe('--max-old-space-size=512');
    // Nothing: the API then starts without it and stops naming the variable.
    for (const bad of ['lots', '12', '0x100', '-5']) expect(heapFlag({ API_MEMORY_BUDGET_MB: bad })).toBe('');
  });

  it('when the budget is too small for the API\'s own heap besides its caches, then it is refused rather than a crash at start', () => {
    // Measured on the compiled API (node dist/main.js): ~27 MB of old space in use before any cache
    // fills. 64 gave a 32 MB old space, and the API died of "heap out of memory" before listening.
    expect(heapFlag({ API_MEMORY_BUDGET_MB: '64' })).toBe('');
    expect(() => loadConfig({ API_MEMORY_BUDGET_MB: '64' })).toThrow(/API_MEMORY_BUDGET_MB/);
    const smallest = memoryShares(128);
    expect(smallest.oldSpaceMb * MB - smallest.videoCacheBytes - smallest.tokenCacheBytes).toBeGreaterThan(27 * MB);
  });
});

describe('cache bytes', () => {
  it('when more documents are loaded than the video cache has bytes for, then it holds at most its share and the oldest are read again', async () => {
    const docs = await videoModel(s.mongo).find({ _id: { $in: ids } }).lean<CatalogVideo[]>();
    const tenEntries = docs.slice(0, 10).reduce((sum, video) => sum + videoEntryBytes({ video }), 0);
    const metrics = createApiMetrics();
    const missCount = async () => (await metrics.videoCache.get()).values.find((v) => v.labels.result === 'miss')?.value;
    const catalog = new VideoCatalog({ model: videoModel(s.mongo), ttlMs: 60_000, maxBytes: tenEntries, metrics });
    const budget = new MongoBudget(10_000);
    for (const id of ids) await catalog.load([id], budget);
    expect(catalog.cacheBytes()).toBeGreaterThan(0);
    expect(catalog.cacheBytes()).toBeLessThanOrEqual(tenEntries);
    const misses = await missCount();
    await catalog.load([ids[0]], budget);
    expect(await missCount()).toBe(misses! + 1);
    await catalog.load([ids.at(-1)!], budget);
    expect(await missCount()).toBe(misses! + 1);
  });

  it('when a title has characters above U+00FF, then its entry is counted at two bytes a character', async () => {
    const video = (await videoModel(s.mongo).findById(ids[0]).lean<CatalogVideo>())!;
    video.title = 'ab';
    const wide = { ...video, title: '短视' };
    expect(videoEntryBytes({ video: wide }) - videoEntryBytes({ video })).toBe(4);
  });

  it('when more users sign in than the token cache has bytes for, then it holds at most its share and an evicted token still verifies', async () => {
    const api = testApi(s);
    await publishQueue(s.redis, s.keys, '20260724', ids);
    sizeTokenCache(3_000);
    for (let i = 0; i < 12; i++) await request(api.app).get('/api/app/recommend/vid/list?pageSize=2').set(bearer(`budget-user-${i}`)).expect(200);
    expect(tokenCacheBytes()).toBeGreaterThan(0);
    expect(tokenCacheBytes()).toBeLessThanOrEqual(3_000);
    await request(api.app).get('/api/app/recommend/vid/list?pageSize=2').set(bearer('budget-user-0')).expect(200);
  });

  it('when copies together exceed their bytes, then the least recently used goes; a queue larger than the share alone is never copied', async () => {
    const copies = new QueueCopies({ versions: new VersionStore(s.redis, s.keys), queueCopiesMax: 10, maxBytes: 25 * 12 });
    for (const version of ['20260801', '20260802']) {
      await publishQueue(s.redis, s.keys, version, ids.slice(0, 20), { makeCurrent: false });
      await copies.ensure((await readRingVersion(s.redis, s.keys, version))!);
    }
    expect(copies.bytes()).toBe(20 * 12);
    expect(copies.idsAt((await readRingVersion(s.redis, s.keys, '20260801'))!, 0, 1)).toBeUndefined();
    expect(copies.idsAt((await readRingVersion(s.redis, s.keys, '20260802'))!, 0, 1)).toEqual([ids[0]]);

    await publishQueue(s.redis, s.keys, '20260803', ids.slice(0, 30), { makeCurrent: false });
    const large = (await readRingVersion(s.redis, s.keys, '20260803'))!;
    await copies.ensure(large);
    expect(copies.idsAt(large, 0, 1)).toBeUndefined();
    expect(copies.bytes()).toBe(20 * 12);
  });
});

describe('memory metrics', () => {
  it('when the metrics are created, then each cache has its bytes at 0 and the heap limit is V8s', async () => {
    const metrics = createApiMetrics();
    const text = await metrics.registry.metrics();
    for (const cache of MEMORY_CACHES) {
      expect(text).toContain(`feed_cache_bytes{cache="${cache}"} 0`);
      expect(text).toContain(`feed_cache_budget_bytes{cache="${cache}"} 0`);
    }
    expect(text).toContain(`feed_heap_limit_bytes ${getHeapStatistics().heap_size_limit}`);
  });

  it('when an app serves a page, then /metrics shows its budget, each share and what the caches hold', async () => {
    const api = testApi(s, { apiMemoryBudgetMb: 100 });
    await publishQueue(s.redis, s.keys, '20260724', ids);
    await request(api.app).get('/api/app/recommend/vid/list?pageSize=5').set(bearer('budget-metrics')).expect(200);
    const text = (await request(api.app).get('/metrics').expect(200)).text;
    const value = (name: string) => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
    const shares = memoryShares(100);
    expect(value('feed_memory_budget_bytes')).toBe(100 * MB);
    expect(value('feed_cache_budget_bytes{cache="video"}')).toBe(shares.videoCacheBytes);
    expect(value('feed_cache_budget_bytes{cache="token"}')).toBe(shares.tokenCacheBytes);
    expect(value('feed_cache_budget_bytes{cache="queue_copies"}')).toBe(shares.queueCopyBytes);
    expect(value('feed_cache_bytes{cache="video"}')).toBeGreaterThan(0);
    expect(value('feed_cache_bytes{cache="token"}')).toBeGreaterThan(0);
  });
});
