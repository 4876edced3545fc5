/**
 * The suite's isolation (issue 22): each test's Redis keys are on a prefix of its own and are
 * gone after it; whatever the test started is disposed of before that deletion. The second test
 * reads what the first left behind, so the two run in this order (Jest runs a file's tests in order).
 */
import { useTestServices } from './services';

const s = useTestServices('isolation');
let first: string;

describe('a key prefix per test', () => {
  it('when a test writes keys, then they are on its own prefix and still there when its disposals run', async () => {
    first = s.prefix;
    expect(s.config.redisKeyPrefix).toBe(s.prefix);
    expect(s.keys.current.startsWith(s.prefix)).toBe(true);
    await s.redis.set(s.keys.current, 'first');
    await s.redis.rPush(s.keys.queue('20260724'), ['a', 'b']);
    s.disposeAfter(async () => expect(await s.redis.get(s.keys.current)).toBe('first'));
  });

  it("when the next test runs, then its prefix is new and the previous test's keys are gone", async () => {
    expect(s.prefix).not.toBe(first);
    expect(await s.redis.get(s.keys.current)).toBeNull();
    const left: string[] = [];
    for await (const batch of s.redis.scanKeys(`*${first}*`)) left.push(...batch);
    expect(left).toEqual([]);
  });
});
