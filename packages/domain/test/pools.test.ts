import { isEligible, NEW_WINDOW_MS, recommendScore, splitPools, versionFor } from '../src';

describe('eligibility (R1)', () => {
  it('when approved, short and not deleted, then eligible regardless of vip/coin/ad/special', () => {
    expect(isEligible({ status: 'approved', newsType: 'short', deleted: false })).toBe(true);
    expect(isEligible({ status: 'approved', newsType: 'short' })).toBe(true);
  });
  it.each([
    [{ status: 'pending', newsType: 'short' }],
    [{ status: 'rejected', newsType: 'short' }],
    [{ status: 'offline', newsType: 'short' }],
    [{ status: 'approved', newsType: 'long' }],
    [{ status: 'approved', newsType: 'short', deleted: true }],
  ])('when %j, then not eligible', (video) => expect(isEligible(video)).toBe(false));
});

describe('recommendScore (R2)', () => {
  it('when counters are set, then like x1 + collect x2 + comment x3 + share x5', () => {
    expect(recommendScore({ recommendLikeCount: 1, recommendCollectCount: 1, recommendCommentCount: 1, recommendShareCount: 1 })).toBe(11);
    expect(recommendScore({ recommendLikeCount: 10, recommendShareCount: 2 })).toBe(20);
  });
  it('when only display and fake counters are set, then the score is 0', () => {
    expect(recommendScore({ likeCount: 100, fakeLikeCount: 1e6, fakeShareCount: 1e6 } as never)).toBe(0);
  });
});

describe('splitPools (R7, R8)', () => {
  const at = Date.UTC(2026, 6, 24, 0, 0, 0);
  const id = (n: number) => n.toString(16).padStart(24, '0');

  it('when reviewAt is inside [generatedAt - 24h, generatedAt], then the video is new, ordered reviewAt desc then id desc', () => {
    const pools = splitPools(
      [
        { id: id(1), score: 99, reviewAt: at - NEW_WINDOW_MS },
        { id: id(2), score: 0, reviewAt: at - 1000 },
        { id: id(3), score: 0, reviewAt: at - 1000 },
        { id: id(4), score: 0, reviewAt: at },
        { id: id(5), score: 0, reviewAt: at - NEW_WINDOW_MS - 1 },
        { id: id(6), score: 0, reviewAt: at + 1 },
      ],
      at,
    );
    expect(pools.fresh).toEqual([id(4), id(3), id(2), id(1)]);
    expect(pools.high).toEqual([id(6), id(5)]);
  });

  it('when videos are old, then the high pool is ordered score desc, reviewAt desc, id desc', () => {
    const old = at - 10 * NEW_WINDOW_MS;
    const pools = splitPools(
      [
        { id: id(1), score: 5, reviewAt: old },
        { id: id(2), score: 5, reviewAt: old + 1 },
        { id: id(3), score: 5, reviewAt: old + 1 },
        { id: id(4), score: 9, reviewAt: null },
      ],
      at,
    );
    expect(pools.high).toEqual([id(4), id(3), id(2), id(1)]);
    expect(pools.fresh).toEqual([]);
  });
});

describe('versionFor', () => {
  it('when it is 20:00 UTC, then the Beijing version is the next day', () => {
    expect(versionFor(new Date('2026-07-23T20:00:00Z'), 'Asia/Shanghai')).toBe('20260724');
    expect(versionFor(new Date('2026-07-23T20:00:00Z'), 'UTC')).toBe('20260723');
  });
});
