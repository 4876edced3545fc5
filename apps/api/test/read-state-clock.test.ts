/**
 * The read state's cache period is measured on the monotonic clock: a step of the wall clock
 * back (NTP, a resumed VM) must not keep a version switch or the kill switch (R16) from an
 * instance for longer than CURRENT_CACHE_MS.
 */
import type { VersionStore } from '@feed/storage';
import { FeedReadStateCache } from '../src/feed/feed-read-state';
import { createApiMetrics } from '../src/metrics';

const CACHE_MS = 50;

describe('FeedReadStateCache and the wall clock', () => {
  afterEach(() => jest.useRealTimers());

  it('when the wall clock steps back an hour, then the pointers are still read again after CURRENT_CACHE_MS', async () => {
    // Only Date is faked: timers and performance.now run for real.
    jest.useFakeTimers({ doNotFake: ['hrtime', 'nextTick', 'performance', 'queueMicrotask', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'] });
    jest.setSystemTime(new Date('2026-07-25T00:00:00Z'));
    let current = '20260724';
    const store: Pick<VersionStore, 'pointers' | 'ring'> = { pointers: async () => ({ current, previous: null, override: {} }), ring: async () => null };
    const versions = store as VersionStore;
    const cache = new FeedReadStateCache({ versions, currentCacheMs: CACHE_MS, defaults: { enabled: true, percent: 100 }, metrics: createApiMetrics() });
    expect((await cache.get()).current).toBe('20260724');

    // The day's switch, and the host's clock stepped back an hour.
    current = '20260725';
    jest.setSystemTime(new Date('2026-07-24T23:00:00Z'));
    await new Promise((resolve) => setTimeout(resolve, 3 * CACHE_MS));

    expect(cache.peek()).toBeUndefined();
    expect((await cache.get()).current).toBe('20260725');
  });
});
