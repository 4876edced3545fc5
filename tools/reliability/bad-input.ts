/**
 * Generated bad input for every endpoint: wrong types, huge values, `$`-operators (NoSQL
 * injection), invalid ObjectIds, unicode, broken JSON, expired or tampered tokens.
 * Each case names the 4xx it must get. The suite's group `bad input` sends them all.
 */
import type jwt from 'jsonwebtoken';
import { interactionModels, videoModel } from '@feed/storage';
import { expect, type Suite } from './suite';

export interface BadInputCase {
  name: string;
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body?: string;
  expect: number[];
}

const BAD_IDS: unknown[] = [
  'abc',
  '0123456789abcdef0123456g',
  '0123456789abcdef012345678',
  '',
  ' ',
  '../../etc/passwd',
  '视频视频视频视频视频视频视频视频视频视频视频视频',
  '0123456789abcdef0123456\u0000',
  { $gt: '' },
  { $ne: null },
  ['0123456789abcdef01234567'],
  12345,
  true,
  null,
  'x'.repeat(10_000),
];

export function badInputCases(ctx: { api: string; validVideo: string; secret: string; token: (sub: string, options?: jwt.SignOptions) => string }): BadInputCase[] {
  const { api } = ctx;
  const user = { Authorization: `Bearer ${ctx.token('bad-input-user')}`, 'Content-Type': 'application/json' };
  const cases: BadInputCase[] = [];
  const add = (c: BadInputCase) => cases.push(c);

  // Query strings of the feed endpoints.
  const badPages = ['pageSize=0', 'pageSize=-1', 'pageSize=51', 'pageSize=1e9', 'pageSize=abc', 'pageNumber=-1', 'pageNumber=-0', 'pageNumber=x', 'pageSize=1&pageSize=2', `pageSize=${'9'.repeat(400)}`, 'pageSize=2e1', 'pageSize=%2B20', 'pageSize=020', 'pageSize=%2020'];
  for (const path of ['/api/app/recommend/vid/list', '/api/app/vid/module/short/all']) {
    for (const query of badPages) add({ name: `GET ${path}?${query}`, method: 'GET', url: `${api}${path}?${query}`, headers: user, expect: [400] });
  }
  add({ name: 'GET ad pageSize=100', method: 'GET', url: `${api}/api/app/recommend/vid/ad?pageSize=100`, headers: user, expect: [400] });
  for (const vid of ['abc', '%24gt', '0123456789ABCDEF0123456G', '%7B%22%24ne%22%3A1%7D']) {
    const query = `vid=${vid}`;
    add({ name: `GET count?${query}`, method: 'GET', url: `${api}/api/app/vid/user/count?${query}`, headers: user, expect: [400] });
  }
  add({ name: 'GET count with unknown vid', method: 'GET', url: `${api}/api/app/vid/user/count?vid=0123456789abcdef01234567`, headers: user, expect: [404] });

  // Bodies naming a video.
  const vidEndpoints = ['/api/app/vid/like', '/api/app/vid/unlike', '/api/app/vid/collect', '/api/app/vid/uncollect', '/api/app/vid/view', '/api/app/recommend/vid/not-interested', '/api/app/recommend/vid/not-interested/undo'];
  for (const path of vidEndpoints) {
    for (const vid of BAD_IDS) add({ name: `POST ${path} vid=${JSON.stringify(vid).slice(0, 30)}`, method: 'POST', url: `${api}${path}`, headers: user, body: JSON.stringify({ vid }), expect: [400] });
    add({ name: `POST ${path} without vid`, method: 'POST', url: `${api}${path}`, headers: user, body: '{}', expect: [400] });
    add({ name: `POST ${path} as text/plain`, method: 'POST', url: `${api}${path}`, headers: { ...user, 'Content-Type': 'text/plain' }, body: '{}', expect: [415] });
    add({ name: `POST ${path} broken JSON`, method: 'POST', url: `${api}${path}`, headers: user, body: '{"vid":', expect: [400] });
    add({ name: `POST ${path} array body`, method: 'POST', url: `${api}${path}`, headers: user, body: '[1,2]', expect: [400] });
    add({ name: `POST ${path} huge body`, method: 'POST', url: `${api}${path}`, headers: user, body: JSON.stringify({ vid: ctx.validVideo, pad: 'x'.repeat(100_000) }), expect: [413] });
    add({ name: `POST ${path} unknown video`, method: 'POST', url: `${api}${path}`, headers: user, body: JSON.stringify({ vid: '0123456789abcdef01234567' }), expect: [404] });
    add({ name: `POST ${path} extra operator field`, method: 'POST', url: `${api}${path}`, headers: user, body: JSON.stringify({ vid: ctx.validVideo, $where: 'sleep(1000)' }), expect: [400] });
  }

  // Comments.
  for (const content of ['', '   ', 'x'.repeat(501), 42, { $gt: '' }, null]) {
    add({ name: `POST comment content=${JSON.stringify(content).slice(0, 20)}`, method: 'POST', url: `${api}/api/app/vid/comment`, headers: user, body: JSON.stringify({ vid: ctx.validVideo, content }), expect: [400] });
  }
  add({ name: 'POST comment bad Idempotency-Key', method: 'POST', url: `${api}/api/app/vid/comment`, headers: { ...user, 'Idempotency-Key': 'no spaces allowed' }, body: JSON.stringify({ vid: ctx.validVideo, content: 'hi' }), expect: [400] });
  for (const id of ['abc', '%7B%22%24gt%22%3A%22%22%7D', '0123456789abcdef0123456g']) {
    add({ name: `DELETE comment ${id}`, method: 'DELETE', url: `${api}/api/app/vid/comment/${id}`, headers: user, expect: [400] });
  }
  add({ name: 'DELETE unknown comment', method: 'DELETE', url: `${api}/api/app/vid/comment/0123456789abcdef01234567`, headers: user, expect: [404] });

  // Share keeps its historical videoID.
  for (const videoID of BAD_IDS.filter((v) => v !== null)) {
    add({ name: `POST share videoID=${JSON.stringify(videoID).slice(0, 30)}`, method: 'POST', url: `${api}/api/app/share/output`, headers: user, body: JSON.stringify({ videoID }), expect: [400] });
  }

  // Identity: headers and tokens.
  const expired = ctx.token('bad-input-user', { expiresIn: -60 });
  const [head, , sig] = ctx.token('bad-input-user').split('.');
  const tampered = `${head}.${Buffer.from(JSON.stringify({ sub: 'admin' })).toString('base64url')}.${sig}`;
  const badAuth: Array<[string, Record<string, string>, number[]]> = [
    ['no identity', {}, [401]],
    ['expired token', { Authorization: `Bearer ${expired}` }, [401]],
    ['tampered token', { Authorization: `Bearer ${tampered}` }, [401]],
    ['token without Bearer', { Authorization: ctx.token('x') }, [401]],
    ['Basic auth', { Authorization: 'Basic YWRtaW46YWRtaW4=' }, [401]],
    ['garbage token', { Authorization: 'Bearer ....' }, [401]],
    // Raw UTF-8 bytes on the wire (fetch only sends Latin-1 strings).
    ['unicode device id', { 'X-Device-Id': Buffer.from('设备设备设备设备设备', 'utf8').toString('latin1') }, [400]],
    ['short device id', { 'X-Device-Id': 'abc' }, [400]],
    ['operator device id', { 'X-Device-Id': '{"$gt":""}' }, [400]],
  ];
  for (const [name, headers, expect] of badAuth) {
    add({ name: `GET feed ${name}`, method: 'GET', url: `${api}/api/app/recommend/vid/list`, headers, expect });
    add({ name: `POST view ${name}`, method: 'POST', url: `${api}/api/app/vid/view`, headers: { ...headers, 'Content-Type': 'application/json' }, body: JSON.stringify({ vid: ctx.validVideo }), expect });
  }
  for (const path of ['/api/app/vid/like', '/api/app/vid/comment']) {
    add({ name: `POST ${path} as guest`, method: 'POST', url: `${api}${path}`, headers: { 'X-Device-Id': 'guest-device-01', 'Content-Type': 'application/json' }, body: JSON.stringify({ vid: ctx.validVideo, content: 'hi' }), expect: [401] });
  }
  add({ name: 'unknown route', method: 'GET', url: `${api}/api/app/does-not-exist`, headers: user, expect: [404] });
  add({ name: 'wrong method', method: 'DELETE', url: `${api}/api/app/recommend/vid/list`, headers: user, expect: [405] });
  return cases;
}

/** Group `bad input`: every case above answered as it says, with a JSON error, and nothing written. */
export async function badInputChecks(suite: Suite): Promise<void> {
  const { api, check, queue, redisClient, secret, summary, token } = suite;
  await check('bad input', 'malformed queries, bodies, headers and tokens against every endpoint', async () => {
    const conn = await suite.mongo();
    const records = interactionModels(conn);
    const snapshot = async () =>
      JSON.stringify({
        likes: await records.likes.countDocuments(),
        collects: await records.collects.countDocuments(),
        comments: await records.comments.countDocuments(),
        shares: await records.shares.countDocuments(),
        counters: await videoModel(conn).aggregate([{ $group: { _id: null, l: { $sum: '$likeCount' }, r: { $sum: '$recommendLikeCount' }, s: { $sum: '$recommendShareCount' } } }]),
        redisKeys: await redisClient.dbSize(),
      });
    const before = await snapshot();
    const cases = badInputCases({ api, validVideo: queue[0], secret, token });
    const wrong: string[] = [];
    for (const c of cases) {
      const res = await fetch(c.url, { method: c.method, headers: c.headers, body: c.body });
      if (res.status >= 500 || !c.expect.includes(res.status)) wrong.push(`${c.name}: ${res.status} (want ${c.expect.join('/')})`);
      else if (res.status >= 400) {
        const body = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
        if (!body?.error?.message) wrong.push(`${c.name}: ${res.status} without a JSON error`);
      }
    }
    const after = await snapshot();
    summary.badInput = `${cases.length} tried, ${wrong.length} wrong, writes ${before === after ? 'none' : 'SOME'}`;
    expect(wrong.length === 0, wrong.slice(0, 5).join('; '));
    expect(before === after, `state changed: ${before} -> ${after}`);
    return summary.badInput;
  });
}
