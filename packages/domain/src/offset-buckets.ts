/**
 * Offset buckets of a version (SPEC R22), sized by the previous version's users at about
 * USERS_PER_BUCKET a bucket: a listpack (hash-max-listpack-entries, 128) with room for a day twice
 * as busy, the key's ~120 B a few bytes per user. At least MIN, to spread over a cluster's masters.
 */
export const MIN_OFFSET_BUCKETS = 256;
export const MAX_OFFSET_BUCKETS = 1 << 20;
export const USERS_PER_BUCKET = 64;

/** A power of two: it divides 2^32, so a user's bucket (`offsetSlot`, ring.ts) is uniform, and doubles as users grow. */
export function offsetBucketsFor(previousUsers: number): number {
  let buckets = MIN_OFFSET_BUCKETS;
  while (buckets < MAX_OFFSET_BUCKETS && buckets * USERS_PER_BUCKET < previousUsers) buckets *= 2;
  return buckets;
}
