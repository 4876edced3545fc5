/**
 * Single Redis calls of a ring page failing (R11, R17), each made to fail on the real Redis by
 * wrapping the client's call: an unreadable user history serves unfiltered, a failed later claim
 * serves what was claimed before it, a failed first claim falls back, and a claim answered after
 * the request's deadline is given back when its answer arrives.
 */
import request from 'supertest';
import { demoVideo } from '@feed/demo-data';
import { loadScript, videoModel } from '@feed/storage';
import type { Api } from '../src/app';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer, offsetOf, publishQueue } from '../../../test/support/feed-fixtures';
import { waitUntil } from '../../../tools/support/processes';

const s = useTestServices('feed-redis-failures', { CURRENT_CACHE_MS: '0', QUEUE_COPIES_MAX: '0' });
const V1 = '20260724';

let ids: string[];
let offline: string;
beforeAll(async () => {
  const docs = [...Array.from({ length: 6 }, () => demoVideo({})), demoVideo({ status: 'offline' })];
  await videoModel(s.mongo).insertMany(docs);
  ids = docs.slice(0, 6).map((d) => d._id!.toHexString());
  offline = docs[6]._id!.toHexString();
});
afterEach(() => jest.restoreAllMocks());

/** Runs the Lua script `name` through `replace` (given the real call); every other script as usual. */
function onScript(name: 'ring-claim' | 'ring-unclaim', replace: (real: () => Promise<unknown>, call: number) => Promise<unknown>): void {
  const sha = loadScript(name).sha;
  const evalSha = s.redis.evalSha.bind(s.redis);
  let calls = 0;
  jest.spyOn(s.redis, 'evalSha').mockImplementation(((scriptSha: string, options: never) => (scriptSha === sha ? replace(() => evalSha(scriptSha, options), ++calls) : evalSha(scriptSha, options))) as typeof s.redis.evalSha);
}

async function counted(api: Api, metric: string, labels: string): Promise<number> {
  const line = (await api.metrics.registry.getSingleMetricAsString(metric)).split('\n').find((l) => l.startsWith(`${metric}{${labels}} `));
  return Number(line?.split(' ')[1] ?? 0);
}

const page = (api: Api, user: string, pageSize = 3) => request(api.app).get('/api/app/recommend/vid/list').query({ pageSize }).set(bearer(user)).expect(200);
const vids = (res: request.Response) => (res.body.vInfos as Array<{ vid: string }>).map((v) => v.vid);

describe('a ring page when one Redis call fails', () => {
  it('when the user history cannot be read, then the page is served unfiltered and the failure counted', async () => {
    await publishQueue(s.redis, s.keys, V1, ids);
    const api = testApi(s);
    await request(api.app).post('/api/app/vid/view').set(bearer('forgetful')).send({ vid: ids[0] }).expect(200);
    jest.spyOn(s.redis, 'mGetBuffers').mockRejectedValueOnce(new Error('history unreadable'));
    const res = await page(api, 'forgetful');
    expect({ version: res.body.queueVersion, vids: vids(res) }).toEqual({ version: V1, vids: ids.slice(0, 3) });
    expect(await counted(api, 'feed_redis_failures_total', 'operation="user-filter"')).toBe(1);
  });

  it('when a later claim of the page fails, then the positions claimed before it are served and the offset stops after them', async () => {
    await publishQueue(s.redis, s.keys, V1, [ids[0], offline, ...ids.slice(1)]);
    const api = testApi(s);
    onScript('ring-claim', (real, call) => (call === 1 ? real() : Promise.reject(new Error('claim failed'))));
    const res = await page(api, 'cut-short');
    expect({ version: res.body.queueVersion, vids: vids(res) }).toEqual({ version: V1, vids: ids.slice(0, 2) });
    expect(await offsetOf(s.redis, s.keys, V1, 'u:cut-short')).toBe('3');
  });

  it('when the queue vanishes between two claims of the page, then nothing of it is served and both claims are given back', async () => {
    await publishQueue(s.redis, s.keys, V1, [ids[0], offline, ...ids.slice(1)]);
    const api = testApi(s);
    onScript('ring-claim', async (real, call) => {
      if (call === 2) await s.redis.del(s.keys.queue(V1));
      return real();
    });
    expect((await page(api, 'vanished')).body.queueVersion).toBe('fallback');
    expect(await offsetOf(s.redis, s.keys, V1, 'u:vanished')).toBe('0');
    expect(await counted(api, 'feed_claims_given_back_total', 'result="given-back"')).toBe(2);
  });

  it('when the claims cannot be given back either, then they are counted as lost', async () => {
    await publishQueue(s.redis, s.keys, V1, ids);
    const api = testApi(s);
    // Claims run; the queue is gone before the ids are read; give-backs fail.
    const claim = loadScript('ring-claim').sha;
    const unclaim = loadScript('ring-unclaim').source;
    const evalSha = s.redis.evalSha.bind(s.redis);
    const evalScript = s.redis.eval.bind(s.redis);
    // A give-back is one EVAL (ring.ts): it fails.
    jest.spyOn(s.redis, 'eval').mockImplementation(((source: string, options: never) => (source === unclaim ? Promise.reject(new Error('unclaim failed')) : evalScript(source, options))) as typeof s.redis.eval);
    jest.spyOn(s.redis, 'evalSha').mockImplementation((async (sha: string, options: never) => {
      const answer = await evalSha(sha, options);
      if (sha === claim) await s.redis.del(s.keys.queue(V1));
      return answer;
    }) as typeof s.redis.evalSha);
    expect((await page(api, 'lost')).body.queueVersion).toBe('fallback');
    expect(await counted(api, 'feed_claims_given_back_total', 'result="lost"')).toBe(1);
    expect(await counted(api, 'feed_claims_given_back_total', 'result="given-back"')).toBe(0);
  });

  it('when the first claim fails, then a fallback serves and the failure is counted for the ring', async () => {
    await publishQueue(s.redis, s.keys, V1, ids);
    const api = testApi(s);
    onScript('ring-claim', () => Promise.reject(new Error('claim failed')));
    expect((await page(api, 'no-claim')).body.queueVersion).toBe('fallback');
    expect(await counted(api, 'feed_redis_failures_total', 'operation="ring"')).toBe(1);
    expect(await offsetOf(s.redis, s.keys, V1, 'u:no-claim')).toBeNull();
  });

  it('when the claim is answered after the deadline, then a fallback serves and the claim is given back when its answer arrives', async () => {
    await publishQueue(s.redis, s.keys, V1, ids);
    // The claim waits for the page's answer: it runs after the request gave up on it, as on a stalled Redis.
    let answered!: () => void;
    const afterAnswer = new Promise<void>((resolve) => (answered = resolve));
    onScript('ring-claim', async (real) => {
      await afterAnswer;
      return real();
    });
    const api = testApi(s, { redisDeadlineMs: 1000 });
    expect((await page(api, 'late')).body.queueVersion).toBe('fallback');
    // The deadline failed the claim (counted); the legacy set after it was not even tried (not counted).
    expect(await counted(api, 'feed_redis_failures_total', 'operation="ring"')).toBe(1);
    expect(await counted(api, 'feed_redis_failures_total', 'operation="legacy-set"')).toBe(0);

    answered();
    await waitUntil('the late claim given back', async () => (await counted(api, 'feed_claims_given_back_total', 'result="given-back"')) === 1, 5_000);
    expect(await api.metrics.registry.getSingleMetricAsString('feed_late_claims_total')).toMatch(/^feed_late_claims_total 1$/m);
    expect(await offsetOf(s.redis, s.keys, V1, 'u:late')).toBe('0');
  });
});
