import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createClient } from 'redis';
import { claimRing, connectRedis, createRedisKeys, loadScript, runScript, unclaimRing } from '../src';
import { freePort, startRedis } from '../../../tools/support/processes';

const url = process.env.TEST_REDIS_URL!;

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

  it('when a user first reads a version, then the offset hash gets the queue\'s expiry, and later reads leave it (R10)', async () => {
    const redis = await connectRedis({ redisUrl: url });
    const keys = createRedisKeys(`test:ring-ttl:${randomBytes(4).toString('hex')}:`);
    const version = '20260724';
    try {
      await redis.rPush(keys.queue(version), Array.from({ length: 30 }, (_, i) => `id-${i}`));
      await redis.expire(keys.queue(version), 3600);
      expect(await redis.exists(keys.offset(version))).toBe(0);
      await claimRing(redis, keys, version, 'u:first', 20);
      // Given in the same script call, at one instant of Redis's clock: the same expiry instant.
      const plain = createClient({ url });
      await plain.connect();
      try {
        const [queueExpiry, offsetExpiry] = [await plain.pExpireTime(keys.queue(version)), await plain.pExpireTime(keys.offset(version))];
        expect(queueExpiry).toBeGreaterThan(Date.now());
        expect(offsetExpiry).toBe(queueExpiry);
      } finally {
        await plain.quit();
      }
      // A later read, by another user, keeps the expiry it has.
      await redis.expire(keys.offset(version), 60);
      await claimRing(redis, keys, version, 'u:second', 20);
      expect(await redis.pTTL(keys.offset(version))).toBeLessThanOrEqual(60_000);
    } finally {
      await redis.del([keys.queue(version), keys.offset(version)]);
      await redis.close();
    }
  });

  it('when Redis runs a claim past its deadline, then it moves nothing; a claim given back restores the offset unless a later claim moved it (R11)', async () => {
    const redis = await connectRedis({ redisUrl: url });
    const keys = createRedisKeys(`test:ring-claim:${randomBytes(4).toString('hex')}:`);
    const version = '20260724';
    try {
      await redis.rPush(keys.queue(version), Array.from({ length: 30 }, (_, i) => `id-${i}`));
      expect(await claimRing(redis, keys, version, 'u:late', 10, Date.now() - 1)).toEqual({ late: true, length: 30 });
      expect(await redis.hGet(keys.offset(version), 'u:late')).toBeNull();
      const first = await claimRing(redis, keys, version, 'u:late', 10, Date.now() + 60_000);
      expect(first).toMatchObject({ offset: 0, ids: Array.from({ length: 10 }, (_, i) => `id-${i}`) });
      if (first.late) throw new Error('claimed in time');
      expect(await unclaimRing(redis, keys, version, 'u:late', first)).toBe(true);
      expect(await redis.hGet(keys.offset(version), 'u:late')).toBe('0');
      // A claim given back after a later one moved the offset stays consumed: the later one was served.
      const again = await claimRing(redis, keys, version, 'u:late', 10);
      await claimRing(redis, keys, version, 'u:late', 10);
      if (again.late) throw new Error('claimed');
      expect(await unclaimRing(redis, keys, version, 'u:late', again)).toBe(false);
      expect(await redis.hGet(keys.offset(version), 'u:late')).toBe('20');
    } finally {
      await redis.del([keys.queue(version), keys.offset(version)]);
      await redis.close();
    }
  });

  it('when keys are built, then version keys share a hash tag and match SPEC R10', () => {
    const keys = createRedisKeys();
    expect(keys.current).toBe('recommend:short:current');
    expect(keys.queue('20260724')).toBe('recommend:short:queue:{20260724}');
    expect(keys.offset('20260724')).toBe('recommend:short:offset:{20260724}');
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
