import { randomBytes } from 'node:crypto';
import { createClient } from 'redis';
import { connectRedis, createRedisKeys, loadScript, runScript } from '../src';

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
    const redis = await connectRedis({ redisUrl: url });
    const key = `test:lua:${randomBytes(4).toString('hex')}`;
    try {
      await redis.set(key, 'owner-token');
      // SCRIPT FLUSH is an operator's command, not part of the service's client interface.
      const operator = createClient({ url });
      await operator.connect();
      await operator.scriptFlush();
      expect(await operator.scriptExists(loadScript('release-lock').sha)).toEqual([0]);
      await operator.close();
      expect(await runScript(redis, 'release-lock', [key], ['someone-else'])).toBe(0);
      expect(await runScript(redis, 'release-lock', [key], ['owner-token'])).toBe(1);
      expect(await redis.exists(key)).toBe(0);
    } finally {
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
