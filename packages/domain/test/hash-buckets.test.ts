import { fnv1a32, MAX_OFFSET_BUCKETS, MIN_OFFSET_BUCKETS, offsetBucketsFor, USERS_PER_BUCKET } from '../src';

describe('fnv1a32', () => {
  it('when given the reference inputs, then it returns FNV-1a 32-bit values (unsigned)', () => {
    // Published FNV-1a test vectors (www.isthe.com/chongo/tech/comp/fnv).
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
  });
});

describe('offsetBucketsFor (R22)', () => {
  it('when few users came before, then the minimum; then it doubles as soon as a bucket would pass USERS_PER_BUCKET', () => {
    expect(offsetBucketsFor(0)).toBe(MIN_OFFSET_BUCKETS);
    expect(offsetBucketsFor(MIN_OFFSET_BUCKETS * USERS_PER_BUCKET)).toBe(MIN_OFFSET_BUCKETS);
    expect(offsetBucketsFor(MIN_OFFSET_BUCKETS * USERS_PER_BUCKET + 1)).toBe(2 * MIN_OFFSET_BUCKETS);
    expect(offsetBucketsFor(4 * MIN_OFFSET_BUCKETS * USERS_PER_BUCKET)).toBe(4 * MIN_OFFSET_BUCKETS);
  });
  it('when users are beyond any size, then the count stops at the maximum', () => {
    expect(offsetBucketsFor(MAX_OFFSET_BUCKETS * USERS_PER_BUCKET)).toBe(MAX_OFFSET_BUCKETS);
    expect(offsetBucketsFor(Number.MAX_SAFE_INTEGER)).toBe(MAX_OFFSET_BUCKETS);
  });
});
