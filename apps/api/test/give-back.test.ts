/**
 * R17: positions a request claimed but could not read are given back, and a give-back that fails
 * is counted as lost (feed_claims_given_back_total), like a late claim's.
 */
import request from 'supertest';
import { demoVideo } from '@feed/demo-data';
import { loadScript, RedisCallError, videoModel } from '@feed/storage';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer, offsetOf, publishQueue } from '../../../test/support/feed-fixtures';

const s = useTestServices('give-back', { CURRENT_CACHE_MS: '0', QUEUE_COPIES_MAX: '0' });
const VERSION = '20260724';

let ids: string[];
beforeAll(async () => {
  const docs = Array.from({ length: 10 }, () => demoVideo({}));
  await videoModel(s.mongo).insertMany(docs);
  ids = docs.map((d) => d._id!.toHexString());
});
beforeEach(() => publishQueue(s.redis, s.keys, VERSION, ids));

afterEach(() => jest.restoreAllMocks());

/** The counter's value for `result`, polled until it is `expected` (the give-back runs after the answer). */
async function givenBack(api: ReturnType<typeof testApi>, result: 'given-back' | 'lost', expected: number): Promise<number> {
  const read = async () => Number(new RegExp(`feed_claims_given_back_total\\{result="${result}"\\} (\\d+)`).exec(await api.metrics.registry.metrics())?.[1]);
  for (let tries = 0; tries < 100 && (await read()) !== expected; tries++) await new Promise((resolve) => setImmediate(resolve));
  return read();
}

describe('claimed positions a request could not read', () => {
  it('when the queue read fails after the claim, then the positions are given back and counted so', async () => {
    const api = testApi(s);
    jest.spyOn(api.reader, 'idsAt').mockRejectedValueOnce(new RedisCallError('queue read failed'));
    await request(api.app).get('/api/app/vid/module/short/all?pageSize=3').set(bearer('give-back-1'));
    expect(await givenBack(api, 'given-back', 1)).toBe(1);
    expect(await givenBack(api, 'lost', 0)).toBe(0);
    expect(Number(await offsetOf(s.redis, s.keys, VERSION, 'u:give-back-1'))).toBe(0);
  });

  it('when the give-back fails too, then the positions are counted as lost', async () => {
    const api = testApi(s);
    jest.spyOn(api.reader, 'idsAt').mockRejectedValueOnce(new RedisCallError('queue read failed'));
    // A give-back is one EVAL (ring.ts): it fails.
    const unclaim = loadScript('ring-unclaim').source;
    const evalScript = s.redis.eval.bind(s.redis);
    jest.spyOn(s.redis, 'eval').mockImplementation(((source: string, options: never) => (source === unclaim ? Promise.reject(new Error('unclaim failed')) : evalScript(source, options))) as typeof s.redis.eval);
    await request(api.app).get('/api/app/vid/module/short/all?pageSize=3').set(bearer('give-back-2'));
    expect(await givenBack(api, 'lost', 1)).toBe(1);
    expect(await givenBack(api, 'given-back', 0)).toBe(0);
  });
});
