/**
 * How many offset buckets a version gets (SPEC R22): sized by the users of the version before it,
 * so that a bucket holds about USERS_PER_BUCKET users. That keeps every bucket a listpack (Redis
 * encodes a hash compactly up to hash-max-listpack-entries fields, 128 by default) with room for
 * a day twice as busy, and makes the bucket key's own overhead (~120 B) a few bytes per user.
 * Never fewer than MIN: claims must spread over a cluster's masters even on a quiet first day.
 */
export const MIN_OFFSET_BUCKETS = 256;
export const MAX_OFFSET_BUCKETS = 1 << 20;
export const USERS_PER_BUCKET = 64;

/**
 * A power of two: it divides 2^32, so a user's bucket (32 bits of its hash modulo the count, `offsetSlot`
 * in packages/storage/src/ring.ts) is uniform over the buckets, and the count doubles as users grow.
 */
export function offsetBucketsFor(previousUsers: number): number {
  let buckets = MIN_OFFSET_BUCKETS;
  while (buckets < MAX_OFFSET_BUCKETS && buckets * USERS_PER_BUCKET < previousUsers) buckets *= 2;
  return buckets;
}
