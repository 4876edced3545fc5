/**
 * The build lock's heartbeat (SPEC R10). Time is the subject here, so the heartbeat's interval runs
 * on Jest's fake timers; Redis, its TTLs and the Lua scripts are real.
 */
import { createLogger } from '@feed/logger';
import { Lease } from '@feed/storage';
import { acquireBuildLock } from '../src/daily-build/build-lock';
import { useTestServices } from '../../../test/support/services';
import { waitUntil } from '../../../tools/support/processes';

const s = useTestServices('lock');
const TTL_MS = 60_000;

beforeEach(() => {
  // Only the heartbeat's interval is faked: I/O and the waits below keep real time.
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'setTimeout', 'clearTimeout', 'queueMicrotask', 'Date', 'performance', 'hrtime'] });
});
afterEach(() => jest.useRealTimers());

describe('build lock heartbeat', () => {
  it('when a third of the TTL passes, then the heartbeat renews the lock to the full TTL', async () => {
    const key = s.keys.buildLock('20260801');
    const lock = (await acquireBuildLock(new Lease(s.redis, key, TTL_MS)))!;
    try {
      // As if most of the TTL had run out while the build worked.
      await s.redis.set(key, lock.token, { PX: 1_000 });
      jest.advanceTimersByTime(TTL_MS / 3);
      await waitUntil('the heartbeat to renew the lock', async () => (await s.redis.pTTL(key)) > TTL_MS / 2, 5_000);
      expect(await s.redis.get(key)).toBe(lock.token);
    } finally {
      await lock.release();
    }
  });

  it('when the lock was released, then the heartbeat no longer renews it', async () => {
    const key = s.keys.buildLock('20260802');
    const lock = (await acquireBuildLock(new Lease(s.redis, key, TTL_MS)))!;
    expect(await lock.release()).toBe(true);
    // Our own token back with a short expiry: a heartbeat still running would renew it (extend-lock
    // accepts our token), so only a stopped heartbeat leaves the short expiry.
    await s.redis.set(key, lock.token, { PX: 1_000 });
    // The heartbeat's interval is gone with the release: no renewal can be scheduled at all.
    expect(jest.getTimerCount()).toBe(0);
    jest.advanceTimersByTime(TTL_MS);
    expect(await s.redis.pTTL(key)).toBeLessThanOrEqual(1_000);
  });

  it('when another owner holds the lock, then our heartbeat does not renew it and release leaves it', async () => {
    const key = s.keys.buildLock('20260803');
    const logger = createLogger({ silent: true });
    const warn = jest.spyOn(logger, 'warn');
    const lock = (await acquireBuildLock(new Lease(s.redis, key, TTL_MS), logger))!;
    await s.redis.set(key, 'other-worker', { PX: 1_000 });
    jest.advanceTimersByTime(TTL_MS / 3);
    // The renewal (compare-token-and-extend in Lua) was answered, and refused: only then is the TTL read.
    await waitUntil('the heartbeat to be refused', async () => warn.mock.calls.some(([message]) => String(message).startsWith('build lock lost')), 5_000);
    expect(await s.redis.pTTL(key)).toBeLessThanOrEqual(1_000);
    expect(await lock.release()).toBe(false);
    expect(await s.redis.get(key)).toBe('other-worker');
  });
});
