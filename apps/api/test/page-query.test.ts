/**
 * The feed's page query read without joi on the hot path (`pageSizeOf`, issue 50) answers as
 * joi's `pageQuery` does: the same page size for every valid query, the same 400 for every other.
 */
import fc from 'fast-check';
import { pageQuery, pageSizeOf } from '../src/routes/feed-routes';
import { validateQuery } from '../src/http/validate';

/** Fixed seed under CI, a fresh one otherwise; printed so a failure replays. */
const seed = process.env.CI ? 50 : Date.now() % 2 ** 31;
console.log(`page-query.test.ts fast-check seed ${seed}`);

const answer = (read: () => number) => {
  try {
    return { size: read() };
  } catch (err) {
    return { error: `${(err as { status?: number }).status} ${(err as Error).message}` };
  }
};

describe('pageSizeOf', () => {
  it('when any query is sent, then the answer (size or 400 message) is the joi schema\'s', () => {
    const number = fc.oneof(fc.integer({ min: -5, max: 60 }).map(String), fc.integer({ min: 999_990, max: 10_000_010 }).map(String), fc.constantFrom('', '0', '020', '+20', '2e1', ' 20', '20.0', '1e3', '99999999999999999999', 'abc', '-0'));
    const value = fc.oneof({ weight: 4, arbitrary: number }, { weight: 1, arbitrary: fc.array(number, { minLength: 2, maxLength: 3 }) });
    const query = fc.record({ pageSize: value, pageNumber: value, other: value }, { requiredKeys: [] });
    fc.assert(
      fc.property(query, (q) => {
        const req = { query: q };
        expect(answer(() => pageSizeOf(req))).toEqual(answer(() => validateQuery(pageQuery, req).pageSize));
      }),
      { seed, numRuns: 2000 },
    );
  });

  it('when the query is plainly valid, then joi is not needed: the size, or 20 when absent', () => {
    expect(pageSizeOf({ query: { pageSize: '50', pageNumber: '1000000' } })).toBe(50);
    expect(pageSizeOf({ query: { pageNumber: '3' } })).toBe(20);
  });
});
