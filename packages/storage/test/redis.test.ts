import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createClient } from 'redis';
import { claimPositions, connectRedis, createRedisKeys, loadScript, offsetBucketKeys, offsetSlot, readOffset, readQueueRange, runScript, unclaimPositions, type RingVersion } from '../src';
import { freePort, startRedis } from '../../../tools/support/processes';
import { useTestServices } from '../../../test/support/services';

const url = process.env.TEST_REDIS_URL!;
const s = useTestServices('redis');

describe('Redis client and Lua loader', () => {
  it('when REDIS_URL names a database index, then keys are written there', async () => {
    const key = `test:dbindex:${randomBytes(4).toString('hex')}`;
    const redis = await connectRedis({ redisUrl: `${url}/3` });
    const db0 = createClient({ url });
    await db0.connect();
    try {
      await redis.set(key, 'in-db-3');
      expect(await db0.get(key)).toBeNull();
      await db0.select(3);
      expect(await db0.get(key)).toBe('in-db-3');
    } finally {
      await redis.del(key);
      await redis.close();
      await db0.close();
    }
  });

  it('when the server lost its script cache, then EVALSHA falls back to EVAL and the script runs', async () => {
    // SCRIPT FLUSH on a server of this test's own: the shared one serves other test files' scripts.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'feed-script-flush-'));
    const port = await freePort();
    const server = await startRedis(port, dir);
    const redis = await connectRedis({ redisUrl: `redis://127.0.0.1:${port}` });
    try {
      await redis.set('lock', 'owner-token');
      expect(await runScript(redis, 'release-lock', ['lock'], ['someone-else'])).toBe(0);
      // SCRIPT FLUSH is an operator's command, not part of the service's client interface.
      const operator = createClient({ url: `redis://127.0.0.1:${port}` });
      await operator.connect();
      await operator.scriptFlush();
      expect(await operator.scriptExists(loadScript('release-lock').sha)).toEqual([0]);
      await operator.close();
      expect(await runScript(redis, 'release-lock', ['lock'], ['owner-token'])).toBe(1);
      expect(await redis.exists('lock')).toBe(0);
    } finally {
      await redis.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const ringOf = (version: string, expiresAt = 0): RingVersion => ({ version, length: 30, buildId: 'b1', offsetBuckets: 16, expiresAt });

  it("when a user first reads a version, then the user's offset bucket gets the queue's expiry, and later reads leave it (R10)", async () => {
    const { redis, keys } = s;
    const expiresAt = Date.now() + 3_600_000;
    const ring = ringOf('20260724', expiresAt);
    const bucket = offsetSlot(keys, ring, 'u:first').key;
    expect(await redis.exists(bucket)).toBe(0);
    await claimPositions(redis, keys, ring, 'u:first', 20);
    expect(await redis.pExpireTime(bucket)).toBe(expiresAt);
    // A later claim in the same bucket keeps the expiry it has.
    await redis.expire(bucket, 60);
    const other = Array.from({ length: 200 }, (_, i) => `u:other-${i}`).find((u) => offsetSlot(keys, ring, u).key === bucket)!;
    await claimPositions(redis, keys, ring, other, 20);
    expect(await redis.pTTL(bucket)).toBeLessThanOrEqual(60_000);
  });

  it('when users claim, then their offsets spread over every bucket, each with a hash tag of its own, and wrap by modulo (R11, R22)', async () => {
    const { redis, keys } = s;
    const ring = ringOf('20260724');
    for (let u = 0; u < 400; u++) await claimPositions(redis, keys, ring, `u:${u}`, 7);
    const counts = await Promise.all(offsetBucketKeys(keys, ring).map((key) => redis.hLen(key)));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(400);
    expect(Math.min(...counts)).toBeGreaterThan(400 / 16 / 3);
    expect(new Set(offsetBucketKeys(keys, ring).map((key) => /\{([^}]*)\}/.exec(key)![1])).size).toBe(16);
    // Five claims of 7 in a ring of 30: 35 % 30.
    for (let i = 0; i < 4; i++) await claimPositions(redis, keys, ring, 'u:0', 7);
    expect(await readOffset(redis, keys, ring, 'u:0')).toBe(5);
    expect(await claimPositions(redis, keys, ring, 'u:0', 50)).toEqual({ offset: 5, count: 30, at: 35 });
  });

  it('when claims are given back in any order, then each returns its own positions exactly and the next claims serve them (R11)', async () => {
    const { redis, keys } = s;
    const ring = ringOf('20260724');
    const stored = () => redis.hGet(offsetSlot(keys, ring, 'u:late').key, offsetSlot(keys, ring, 'u:late').field);
    // Three concurrent pages of one user during a stall: all three ran, none was served.
    const claims = [];
    for (let i = 0; i < 3; i++) claims.push(await claimPositions(redis, keys, ring, 'u:late', 5));
    expect(claims.map((c) => c.at)).toEqual([0, 5, 10]);
    for (const claim of claims) expect(await unclaimPositions(redis, keys, ring, 'u:late', claim)).toBe(0);
    expect(await stored()).toBe('0');
    // A claim given back after a later one was served: its positions come first in the next claim.
    const lost = await claimPositions(redis, keys, ring, 'u:late', 5);
    const served = await claimPositions(redis, keys, ring, 'u:late', 5);
    expect(await unclaimPositions(redis, keys, ring, 'u:late', lost)).toBe(0);
    expect(await stored()).toBe('10,0:5');
    expect(await claimPositions(redis, keys, ring, 'u:late', 7)).toEqual({ offset: 0, count: 5, at: 0 });
    const late = await claimPositions(redis, keys, ring, 'u:late', 7);
    expect(late).toEqual({ offset: 10, count: 7, at: 10 });
    expect(served.at).toBe(5);
    // Given back after the cursor came round past it: positions are absolute, so it gives back
    // its own ones only and rewinds none of the later, served claims (no ABA on a short ring).
    for (let i = 0; i < 3; i++) await claimPositions(redis, keys, ring, 'u:late', 10);
    expect(await unclaimPositions(redis, keys, ring, 'u:late', late)).toBe(0);
    expect(await stored()).toBe('47,10:17');
    expect(await claimPositions(redis, keys, ring, 'u:late', 10)).toEqual({ offset: 10, count: 7, at: 10 });
    expect(await claimPositions(redis, keys, ring, 'u:late', 5)).toEqual({ offset: 17, count: 5, at: 47 });
  });

  it('when a user gives back more claims out of order than the cursor keeps holes for, then the oldest hole is reported as positions left unserved, not as given back (R11)', async () => {
    const { redis, keys } = s;
    const ring = ringOf('20260724');
    // 17 claims of 1 given back oldest first, each with a served claim after it: 17 separate holes.
    const claims = [];
    for (let i = 0; i < 17; i++) {
      claims.push(await claimPositions(redis, keys, ring, 'u:holes', 1));
      await claimPositions(redis, keys, ring, 'u:holes', 1);
    }
    const unserved = [];
    for (const claim of claims) unserved.push(await unclaimPositions(redis, keys, ring, 'u:holes', claim));
    expect(unserved).toEqual([...Array(16).fill(0), 1]);
    // A give-back of an offset that is gone leaves every position of the claim unserved.
    expect(await unclaimPositions(redis, keys, ring, 'u:nobody', { offset: 0, count: 5, at: 0 })).toBe(5);
  });

  it("when a user's stored cursor is not a whole number of positions (written by hand, corrupted), then the claim starts again at ring position 0, never at a negative one", async () => {
    const { redis, keys } = s;
    const ring = ringOf('20260724');
    const slot = offsetSlot(keys, ring, 'u:odd');
    for (const stored of ['-3', '-3,1:2', '5.5', 'abc']) {
      await redis.hSet(slot.key, slot.field, stored);
      expect({ stored, claim: await claimPositions(redis, keys, ring, 'u:odd', 5) }).toEqual({ stored, claim: { offset: 0, count: 5, at: 0 } });
    }
  });

  it('when queue positions are read across the tail, then they wrap to the head', async () => {
    const { redis, keys } = s;
    await redis.rPush(keys.queue('20260724'), Array.from({ length: 30 }, (_, i) => `id-${i}`));
    expect(await readQueueRange(redis, keys, '20260724', 30, 27, 5)).toEqual(['id-27', 'id-28', 'id-29', 'id-0', 'id-1']);
    expect(await readQueueRange(redis, keys, '20260724', 30, 31, 2)).toEqual(['id-1', 'id-2']);
  });

  it('when keys are built, then version keys share a hash tag and match SPEC R10', () => {
    const keys = createRedisKeys();
    expect(keys.current).toBe('recommend:short:current');
    expect(keys.queue('20260724')).toBe('recommend:short:queue:{20260724}');
    // R22: offsets keep the prefix, one hash tag per bucket.
    expect(keys.offset('20260724', 7)).toBe('recommend:short:offset:{20260724:7}');
    expect(keys.meta('20260724')).toBe('recommend:short:meta:{20260724}');
    expect(keys.buildLock('20260724')).toBe('recommend:short:build-lock:{20260724}');
    expect(keys.legacyIds).toBe('short-videos-all-ids-list');
    expect(keys.legacyIdsStaging('t1')).toBe('{short-videos-all-ids-list}:staging:t1');
    // previous shares current's slot, so one script moves both (R10).
    expect(keys.previous).toBe('{recommend:short:current}:previous');
    expect(keys.views('u:1')).toMatch(/\{u:1\}$/);
    expect(keys.notInterested('u:1')).toMatch(/\{u:1\}$/);
  });
});
