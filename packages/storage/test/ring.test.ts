/**
 * The ring's reads over a real Redis (ring.ts, SPEC R10, R11, R22): what a reader takes from a
 * published version, the offsets as stored, and list positions read as a ring. The claims
 * themselves are in redis.test.ts.
 */
import { claimPositions, countUsersWithOffset, offsetSlot, readOffset, readQueueRange, readRecordedScores, readRingVersion, unclaimPositions, type RingVersion } from '../src';
import { useTestServices } from '../../../test/support/services';

const s = useTestServices('ring');
const V = '20260724';
const ids = (n: number) => Array.from({ length: n }, (_, i) => `id-${i}`);

/** A version as a build publishes it: a queue of `length` ids expiring at `expiresAt`, and its meta. */
async function publish(meta: Record<string, string>, queueLength = 5, expiresAt: number | null = Date.now() + 3_600_000) {
  if (queueLength > 0) await s.redis.rPush(s.keys.queue(V), ids(queueLength));
  if (expiresAt !== null) await s.redis.pExpireAt(s.keys.queue(V), expiresAt);
  await s.redis.hSet(s.keys.meta(V), meta);
}

const whole = { length: '5', buildId: 'b1', offsetBuckets: '4' };
const ringOf = (length: number): RingVersion => ({ version: V, length, buildId: 'b1', offsetBuckets: 4, expiresAt: 0 });

describe('readRingVersion', () => {
  it('when the version is published, then a reader gets its length, build, offset layout and the queue’s expiry', async () => {
    const expiresAt = Date.now() + 3_600_000;
    await publish(whole, 5, expiresAt);
    expect(await readRingVersion(s.redis, s.keys, V)).toEqual({ version: V, length: 5, buildId: 'b1', offsetBuckets: 4, expiresAt });
  });

  it('when the queue has no expiry (written by hand) or the meta no build id, then it is still read, expiring at 0 and built by ""', async () => {
    await publish({ length: '5', offsetBuckets: '4' }, 5, null);
    expect(await readRingVersion(s.redis, s.keys, V)).toEqual({ version: V, length: 5, buildId: '', offsetBuckets: 4, expiresAt: 0 });
  });

  it.each([
    ['the queue is gone', whole, 0],
    ['the meta has no length', { buildId: 'b1', offsetBuckets: '4' }, 5],
    ['the meta says length 0', { ...whole, length: '0' }, 5],
    ['the meta has no offset layout', { length: '5', buildId: 'b1' }, 5],
    ['the meta says 0 offset buckets', { ...whole, offsetBuckets: '0' }, 5],
  ])('when %s, then there is no ring to read (null)', async (_case, meta, queueLength) => {
    await publish(meta, queueLength);
    expect(await readRingVersion(s.redis, s.keys, V)).toBeNull();
  });
});

describe('offsets as stored', () => {
  it('when a user has no offset, then it reads as position 0; a written one reads modulo the ring, holes after the comma ignored', async () => {
    const ring = ringOf(30);
    expect(await readOffset(s.redis, s.keys, ring, 'u:new')).toBe(0);
    const set = offsetSlot(s.keys, ring, 'u:set');
    await s.redis.hSet(set.key, set.field, '12');
    expect(await readOffset(s.redis, s.keys, ring, 'u:set')).toBe(12);
    const slot = offsetSlot(s.keys, ring, 'u:holes');
    await s.redis.hSet(slot.key, slot.field, '47,10:17');
    expect(await readOffset(s.redis, s.keys, ring, 'u:holes')).toBe(17);
  });

  it('when users claimed in a version, then the count of users with an offset sums every bucket', async () => {
    const ring = ringOf(30);
    const users = ['u:1', 'u:2', 'u:3', 'u:4', 'u:5', 'u:6'];
    for (const user of users) await claimPositions(s.redis, s.keys, ring, user, 3);
    expect(await countUsersWithOffset(s.redis, s.keys, V, ring.offsetBuckets)).toBe(users.length);
  });

  it('when an empty claim is given back, then nothing is given back and the cursor stays', async () => {
    const ring = ringOf(30);
    const claim = await claimPositions(s.redis, s.keys, ring, 'u:1', 5);
    const slot = offsetSlot(s.keys, ring, 'u:1');
    expect(await unclaimPositions(s.redis, s.keys, ring, 'u:1', { ...claim, count: 0 })).toBe(0);
    expect(await s.redis.hGet(slot.key, slot.field)).toBe('5');
  });
});

describe('list positions read as a ring', () => {
  it('when a read ends exactly at the tail, then it still wraps to the head', async () => {
    await s.redis.rPush(s.keys.queue(V), ids(30));
    expect(await readQueueRange(s.redis, s.keys, V, 30, 26, 5)).toEqual(['id-26', 'id-27', 'id-28', 'id-29', 'id-0']);
  });

  it('when the list holds more entries than the ring’s length, then the ring still ends at its length', async () => {
    await s.redis.rPush(s.keys.queue(V), ids(32));
    expect(await readQueueRange(s.redis, s.keys, V, 30, 28, 4)).toEqual(['id-28', 'id-29', 'id-0', 'id-1']);
  });

  it('when recorded scores are read, then they wrap like the queue, a missing score is null and no more than the ring is read', async () => {
    await s.redis.rPush(s.keys.scores(V), ['0.5', '1.5', '2.5']);
    expect(await readRecordedScores(s.redis, s.keys, V, 3, 2, 2)).toEqual([2.5, 0.5]);
    expect(await readRecordedScores(s.redis, s.keys, V, 4, 1, 3)).toEqual([1.5, 2.5, null]);
    expect(await readRecordedScores(s.redis, s.keys, V, 3, 0, 10)).toEqual([0.5, 1.5, 2.5]);
  });
});
