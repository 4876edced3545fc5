import fc from 'fast-check';
import { ELIGIBLE_FILTER, isEligible, MAX_RECOMMEND_SCORE, NEW_WINDOW_MS, parseBuildAt, recommendScore, splitPools, versionFor, type PoolCandidates } from '../src';

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

describe('ELIGIBLE_FILTER (R1)', () => {
  /** The filter's meaning for these fields: equality, and `$ne` that also matches a missing field. */
  const matches = (video: Record<string, unknown>) =>
    Object.entries(ELIGIBLE_FILTER).every(([field, want]) => (typeof want === 'object' ? video[field] !== (want as { $ne: unknown }).$ne : video[field] === want));
  it('when applied by MongoDB, then it selects exactly what isEligible accepts', () => {
    const statuses = ['approved', 'pending', 'offline', undefined];
    const types = ['short', 'long', undefined];
    for (const status of statuses) for (const newsType of types) for (const deleted of [true, false, undefined]) {
      const video = { status, newsType, deleted };
      expect(matches(video)).toBe(isEligible(video));
    }
    expect(Object.keys(ELIGIBLE_FILTER).sort()).toEqual(['deleted', 'newsType', 'status']);
  });
});

describe('recommendScore (R2)', () => {
  it('when counters are set, then like x1 + collect x2 + comment x3 + share x5', () => {
    expect(recommendScore({ recommendLikeCount: 1, recommendCollectCount: 1, recommendCommentCount: 1, recommendShareCount: 1 })).toBe(11);
    expect(recommendScore({ recommendLikeCount: 10, recommendShareCount: 2 })).toBe(20);
  });
  it('when only display and fake counters are set, then the score is 0', () => {
    expect(recommendScore({ likeCount: 100, fakeLikeCount: 1e6, fakeShareCount: 1e6 } as never)).toBe(0);
  });
  it('when a counter is negative, NaN, infinite or not a number (R1a), then it counts as 0 and the others still count', () => {
    for (const odd of [-5, -Infinity, NaN, Infinity, '7', null, true]) {
      expect(recommendScore({ recommendLikeCount: odd as number, recommendShareCount: 2 })).toBe(10);
    }
    expect(recommendScore({ recommendLikeCount: 0.5 })).toBe(0.5);
  });
  it('when the weighted sum overflows, then the score saturates at MAX_RECOMMEND_SCORE', () => {
    expect(recommendScore({ recommendShareCount: 1e308, recommendCommentCount: 1e308 })).toBe(MAX_RECOMMEND_SCORE);
    expect(recommendScore({ recommendLikeCount: MAX_RECOMMEND_SCORE - 1 })).toBe(MAX_RECOMMEND_SCORE - 1);
  });
});

describe('splitPools (R7, R8)', () => {
  const at = Date.UTC(2026, 6, 24, 0, 0, 0);
  const id = (n: number) => n.toString(16).padStart(24, '0');
  /** The pools as ids, from candidate objects (24-hex ids: string order is ObjectId order). */
  const poolIds = (candidates: Array<{ id: string; score: number; reviewAt: number | null }>) => {
    const input: PoolCandidates = {
      length: candidates.length,
      scores: Float64Array.from(candidates, (c) => c.score),
      reviewAt: Float64Array.from(candidates, (c) => c.reviewAt ?? -Infinity),
      compareIds: (a, b) => (candidates[a].id < candidates[b].id ? -1 : candidates[a].id > candidates[b].id ? 1 : 0),
    };
    const pools = splitPools(input, at);
    return { fresh: Array.from(pools.fresh, (i) => candidates[i].id), high: Array.from(pools.high, (i) => candidates[i].id) };
  };

  it('when reviewAt is inside [generatedAt - 24h, generatedAt], then the video is new, ordered reviewAt desc then id desc', () => {
    const pools = poolIds(
      [
        { id: id(1), score: 99, reviewAt: at - NEW_WINDOW_MS },
        { id: id(2), score: 0, reviewAt: at - 1000 },
        { id: id(3), score: 0, reviewAt: at - 1000 },
        { id: id(4), score: 0, reviewAt: at },
        { id: id(5), score: 0, reviewAt: at - NEW_WINDOW_MS - 1 },
        { id: id(6), score: 0, reviewAt: at + 1 },
      ]);
    expect(pools.fresh).toEqual([id(4), id(3), id(2), id(1)]);
    expect(pools.high).toEqual([id(6), id(5)]);
  });

  it('when videos are old, then the high pool is ordered score desc, reviewAt desc, id desc', () => {
    const old = at - 10 * NEW_WINDOW_MS;
    const pools = poolIds(
      [
        { id: id(1), score: 5, reviewAt: old },
        { id: id(2), score: 5, reviewAt: old + 1 },
        { id: id(3), score: 5, reviewAt: old + 1 },
        { id: id(4), score: 9, reviewAt: null },
      ]);
    expect(pools.high).toEqual([id(4), id(3), id(2), id(1)]);
    expect(pools.fresh).toEqual([]);
  });
});

describe('splitPools orders any input (R7, R8)', () => {
  const at = Date.UTC(2026, 6, 24);
  const candidate = fc.record({
    id: fc.integer({ min: 0, max: 40 }),
    score: fc.integer({ min: 0, max: 4 }),
    // Offsets in hours around the 24 h window, few enough values to tie; null = unknown review time.
    reviewHours: fc.option(fc.integer({ min: -30, max: 2 }), { nil: null }),
  });
  /** -1, 0, 1 from a key list compared in descending order. */
  const descending = (a: number[], b: number[]) => {
    for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return a[k] < b[k] ? 1 : -1;
    return 0;
  };
  it('when candidates come in any order, then fresh is reviewAt desc then id desc and high is score desc, reviewAt desc, id desc', () => {
    fc.assert(
      fc.property(fc.uniqueArray(candidate, { selector: (c) => c.id, maxLength: 30 }), (candidates) => {
        const reviewAt = candidates.map((c) => (c.reviewHours === null ? -Infinity : at + c.reviewHours * 3_600_000));
        const pools = splitPools(
          {
            length: candidates.length,
            scores: Float64Array.from(candidates, (c) => c.score),
            reviewAt: Float64Array.from(reviewAt),
            compareIds: (a, b) => candidates[a].id - candidates[b].id,
          },
          at,
        );
        const fresh = Array.from(pools.fresh);
        const high = Array.from(pools.high);
        expect([...fresh, ...high].sort((a, b) => a - b)).toEqual(candidates.map((_, i) => i));
        for (const i of fresh) expect(reviewAt[i] >= at - NEW_WINDOW_MS && reviewAt[i] <= at).toBe(true);
        for (const i of high) expect(reviewAt[i] >= at - NEW_WINDOW_MS && reviewAt[i] <= at).toBe(false);
        const freshKey = (i: number) => [reviewAt[i], candidates[i].id];
        const highKey = (i: number) => [candidates[i].score, reviewAt[i], candidates[i].id];
        for (let k = 1; k < fresh.length; k++) expect(descending(freshKey(fresh[k - 1]), freshKey(fresh[k]))).toBe(-1);
        for (let k = 1; k < high.length; k++) expect(descending(highKey(high[k - 1]), highKey(high[k]))).toBe(-1);
      }),
    );
  });
});

describe('versionFor', () => {
  it('when it is 20:00 UTC, then the Beijing version is the next day', () => {
    expect(versionFor(new Date('2026-07-23T20:00:00Z'), 'Asia/Shanghai')).toBe('20260724');
    expect(versionFor(new Date('2026-07-23T20:00:00Z'), 'UTC')).toBe('20260723');
  });
});

describe('parseBuildAt', () => {
  it('when the text has no offset, then it is wall time in the business time zone', () => {
    expect(parseBuildAt('2026-07-24', 'Asia/Shanghai')?.toISOString()).toBe('2026-07-23T16:00:00.000Z');
    expect(parseBuildAt('2026-07-24T04:30', 'Asia/Shanghai')?.toISOString()).toBe('2026-07-23T20:30:00.000Z');
    expect(parseBuildAt('2026-07-24T04:30:15.5', 'America/New_York')?.toISOString()).toBe('2026-07-24T08:30:15.500Z');
    expect(versionFor(parseBuildAt('2026-07-24', 'Asia/Shanghai')!, 'Asia/Shanghai')).toBe('20260724');
  });
  it('when the text has Z or an offset, then it is that instant', () => {
    expect(parseBuildAt('2026-07-24T00:30:00+08:00', 'UTC')?.toISOString()).toBe('2026-07-23T16:30:00.000Z');
    expect(parseBuildAt('2026-07-24T00:30:00Z', 'Asia/Shanghai')?.toISOString()).toBe('2026-07-24T00:30:00.000Z');
  });
  it('when a DST zone is given, then the offset of that date applies', () => {
    expect(parseBuildAt('2026-01-15T12:00', 'Europe/Berlin')?.toISOString()).toBe('2026-01-15T11:00:00.000Z');
    expect(parseBuildAt('2026-07-15T12:00', 'Europe/Berlin')?.toISOString()).toBe('2026-07-15T10:00:00.000Z');
  });
  it('when the text has spaces around it, fractions of a second or an offset without a colon, then it is read as such', () => {
    expect(parseBuildAt(' 2026-07-24 ', 'UTC')?.toISOString()).toBe('2026-07-24T00:00:00.000Z');
    expect(parseBuildAt('2026-07-24 04:30:15.25', 'UTC')?.toISOString()).toBe('2026-07-24T04:30:15.250Z');
    expect(parseBuildAt(' 2026-07-24T04:30:00.125+0800 ', 'UTC')?.toISOString()).toBe('2026-07-23T20:30:00.125Z');
    expect(parseBuildAt('2026-07-24t04:30z', 'UTC')?.toISOString()).toBe('2026-07-24T04:30:00.000Z');
  });
  it('when the wall time falls in the spring-forward gap, then it is the instant an hour on (02:30 Berlin on 29 March is 03:30 CEST)', () => {
    expect(parseBuildAt('2026-03-29T02:30', 'Europe/Berlin')?.toISOString()).toBe('2026-03-29T01:30:00.000Z');
  });
  it.each(['2026-07-24T24:00', '2026-07-24T23:60', '2026-07-24T23:59:60', '2026-13-01', 'x2026-07-24T04:30Z', '2026-07-24T04:30Zx', '2026-07-24T04:30:00.Z'])('when the text is %j, then it is rejected', (text) => {
    expect(parseBuildAt(text, 'UTC')).toBeNull();
  });
  it.each(['yesterday', '2026-02-30', '2026-07-24T25:00', '24/07/2026', '2026-07-24T04:30+8', ''])('when the text is %j, then it is rejected', (text) => {
    expect(parseBuildAt(text, 'Asia/Shanghai')).toBeNull();
  });
});
