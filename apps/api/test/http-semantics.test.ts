/**
 * SPEC C's HTTP semantics over the API's whole route table (from the app's router, not a list
 * by hand): HEAD answers as GET would, with no body and no side effect; a known path with a
 * method it does not take is 405 with `Allow`; auth schemes are case-insensitive.
 */
import request from '../../../test/support/contract';
import type { Express } from 'express';
import { videoModel } from '@feed/storage';
import type { Api } from '../src/app';
import { demoVideo } from '@feed/demo-data';
import { useTestServices } from '../../../test/support/services';
import { testApi, untilReady } from '../../../test/support/api';
import { bearer, publishQueue, tokenFor } from '../../../test/support/feed-fixtures';
import { concreteRoutes, mongoState, PROBE_METHODS, redisState, send } from '../../../test/support/http-semantics';

const s = useTestServices('http-semantics', { CURRENT_CACHE_MS: '0', VIDEO_CACHE_MS: '0' });
const VERSION = '20260724';
let api: Api;
let app: Express;
let ids: string[];

beforeAll(async () => {
  const docs = Array.from({ length: 5 }, () => demoVideo({ authorId: 'someone' }));
  await videoModel(s.mongo).insertMany(docs);
  ids = docs.map((d) => d._id!.toHexString());
});

beforeEach(async () => {
  await publishQueue(s.redis, s.keys, VERSION, ids);
  api = testApi(s);
  app = api.app;
});

/** What a client may send: each route is asked with every one (HEAD must agree with GET on each). */
const CALLERS: Record<string, Record<string, string>> = {
  anonymous: {},
  'bad token': { Authorization: 'Bearer abc.def.ghi' },
  user: bearer('head-user'),
  'lower-case scheme': { Authorization: `bearer ${tokenFor('head-user')}` },
  guest: { 'X-Device-Id': 'head-device-1' },
  admin: { Authorization: `Basic ${Buffer.from('admin:feed-insecure-local-admin-password').toString('base64')}` },
  'bad admin': { Authorization: `Basic ${Buffer.from('admin:wrong').toString('base64')}` },
};

describe('HEAD on every GET route of the API (SPEC C)', () => {
  it('when any caller sends HEAD, then the status is the GET\'s, there is no body, and nothing in Redis or MongoDB changes', async () => {
    const gets = concreteRoutes(app, ids[0]).filter((r) => r.methods.includes('GET'));
    expect(gets.map((r) => r.pattern)).toEqual(expect.arrayContaining(['/api/app/recommend/vid/list', '/api/app/vid/user/count', '/healthz', '/api/admin/explain']));
    // One query for every route: what each GET takes (a watched video, an explained user, a page size).
    const query = `?vid=${ids[1]}&user=head-user&pageSize=3`;
    // Ready first: a HEAD of /readyz that starts the copy's load would be 503 and the GET after it 200.
    await untilReady(app);
    for (const { path } of gets) {
      for (const [caller, headers] of Object.entries(CALLERS)) {
        // What earlier GETs counted is written on a timer: written now, so only the HEAD could change anything.
        await api.readout.flush();
        const before = { redis: await redisState(s.redis, s.prefix), mongo: await mongoState(s.mongo) };
        const head = await request(app).head(path + query).set(headers);
        const after = { redis: await redisState(s.redis, s.prefix), mongo: await mongoState(s.mongo) };
        expect({ path, caller, changed: after }).toEqual({ path, caller, changed: before });
        expect({ path, caller, body: head.text ?? '' }).toEqual({ path, caller, body: '' });
        const get = await request(app).get(path + query).set(headers);
        expect({ path, caller, status: head.status }).toEqual({ path, caller, status: get.status });
      }
    }
  });

  it('when a user sends HEAD on the watch count with a video, then no watch is registered', async () => {
    const count = () => request(app).get('/api/app/vid/user/count').set(bearer('watcher')).expect(200);
    const before: unknown = (await count()).body;
    await request(app).head(`/api/app/vid/user/count?vid=${ids[0]}`).set(bearer('watcher')).expect(200);
    expect((await count()).body).toEqual(before);
    await request(app).get(`/api/app/vid/user/count?vid=${ids[0]}`).set(bearer('watcher')).expect(200);
    expect((await count()).body).not.toEqual(before);
  });
});

describe('auth schemes (RFC 7235: case-insensitive)', () => {
  it('when the Bearer and Basic schemes are written in another case, then they are accepted', async () => {
    await request(app).get('/api/app/recommend/vid/list').set({ Authorization: `bEARER ${tokenFor('any-case')}` }).expect(200);
    await request(app).get('/api/admin/rollout').set({ Authorization: `basic ${Buffer.from('admin:feed-insecure-local-admin-password').toString('base64')}` }).expect(200);
  });
});

describe('unsupported methods on the API (SPEC C)', () => {
  it('when a known path gets a method it does not take, then 405 with Allow listing exactly the methods it takes', async () => {
    const routes = concreteRoutes(app, ids[0]);
    expect(routes.length).toBeGreaterThan(10);
    const admin = CALLERS.admin;
    for (const { path, methods } of routes) {
      for (const method of PROBE_METHODS.filter((m) => !methods.includes(m))) {
        const res = await send(app, method, path).set(admin);
        expect({ path, method, status: res.status, allow: res.headers.allow }).toEqual({ path, method, status: 405, allow: methods.join(', ') });
        expect(res.body.error.code).toBe('method_not_allowed');
      }
    }
  });

  it('when an unknown path is asked, then it stays 404', async () => {
    const res = await request(app).trace('/no/such/path').expect(404);
    expect(res.headers.allow).toBeUndefined();
  });
});
