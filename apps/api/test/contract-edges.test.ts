/**
 * The document is the contract, to the edges (SPEC C, issue 43): every status the API sends on an
 * operation is documented there (413, 415), HEAD and OPTIONS are documented and answered,
 * numbers are parsed strictly, a body in another media type is 415, paths match exactly, and
 * the rules the server enforces are in the schema. Every request goes through the contract check.
 */
import Ajv2020 from 'ajv/dist/2020';
import request from '../../../test/support/contract';
import type { Express } from 'express';
import { routeTable } from '@feed/http';
import { videoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { openApiDocument } from '../src/openapi';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer, publishQueue } from '../../../test/support/feed-fixtures';

const s = useTestServices('contract-edges', { CURRENT_CACHE_MS: '0' });
const ORIGIN = 'http://h5.example';
const admin = { Authorization: `Basic ${Buffer.from('admin:feed-insecure-local-admin-password').toString('base64')}` };
const user = bearer('edge-user');
let app: Express;
let ids: string[];

beforeAll(async () => {
  ids = (await videoModel(s.mongo).insertMany(Array.from({ length: 5 }, () => demoVideo({})))).map((d) => d._id.toHexString());
});

beforeEach(async () => {
  await publishQueue(s.redis, s.keys, '20260724', ids);
  app = testApi(s, { corsAllowedOrigins: [ORIGIN] }).app;
});

type Paths = Record<string, Record<string, { requestBody?: unknown; parameters?: Array<{ in: string; schema: object }>; responses: object }>>;
const paths = JSON.parse(JSON.stringify(openApiDocument.paths)) as Paths;

describe('statuses the API sends are documented', () => {
  it('when an operation without a body is sent a large or malformed body, then the body is ignored (no 413, no 400)', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(20_000) });
    await request(app).delete('/api/admin/rollout').set(admin).set('Content-Type', 'application/json').send(big).expect(200);
    await request(app).post('/api/admin/rollout/ramp/pause').set(admin).set('Content-Type', 'application/json').send('{not json').expect(404);
    await request(app).delete(`/api/app/vid/comment/${ids[0]}`).set(user).set('Content-Type', 'application/json').send(big).expect(404);
  });

  it('when a body operation gets JSON in another charset or a body of another media type, then 415 unsupported_media_type', async () => {
    const latin1 = await request(app).post('/api/app/vid/view').set(user).set('Content-Type', 'application/json; charset=latin1').send(JSON.stringify({ vid: ids[1] })).expect(415);
    expect(latin1.body.error.code).toBe('unsupported_media_type');
    const text = await request(app).post('/api/app/vid/like').set(user).set('Content-Type', 'text/plain').send(JSON.stringify({ vid: ids[1] })).expect(415);
    expect(text.body.error.code).toBe('unsupported_media_type');
    await request(app).post('/api/app/share/output').set(user).set('Content-Type', 'text/plain').send(`videoID=${ids[1]}`).expect(415);
    await request(app).put('/api/admin/rollout').set(admin).type('form').send({ percent: '5' }).expect(415);
    // The same calls as JSON are taken; no body at all is the schema's to judge.
    await request(app).post('/api/app/vid/like').set(user).send({ vid: ids[1] }).expect(200);
    await request(app).post('/api/app/share/output').set(user).expect(200);
    await request(app).post('/api/app/vid/view').set(user).expect(400);
  });

  it('when every operation of the document is listed, then each body operation documents 413 and 415 and no operation documents 500', () => {
    for (const [path, operations] of Object.entries(paths)) {
      for (const [verb, operation] of Object.entries(operations)) {
        const statuses = Object.keys(operation.responses);
        expect({ path, verb, 500: statuses.includes('500') }).toEqual({ path, verb, 500: false });
        if (operation.requestBody) expect({ path, verb, statuses }).toEqual({ path, verb, statuses: expect.arrayContaining(['413', '415']) });
      }
    }
  });
});

describe('numbers are parsed strictly', () => {
  it.each(['2e1', '+20', '020', '%2020', '20.0', '0x14'])('when pageSize=%s, then 400 naming pageSize', async (value) => {
    const res = await request(app).get(`/api/app/recommend/vid/list?pageSize=${value}`).set(user).expect(400);
    expect(res.body.error.message).toMatch(/pageSize/);
  });

  it.each(['-0', '00', '+0', '-1'])('when pageNumber=%s (0 is accepted, as a 0-based client writes it), then 400 naming pageNumber', async (value) => {
    const res = await request(app).get(`/api/app/recommend/vid/list?pageNumber=${encodeURIComponent(value)}`).set(user).expect(400);
    expect(res.body.error.message).toMatch(/pageNumber/);
  });

  it('when pageSize is empty (R12 writes the call `?pageNumber=&pageSize=`), then they are absent: the same first page as without them; the ad page stays strict', async () => {
    const first = async (query: string, who: string) => (await request(app).get(`/api/app/recommend/vid/list${query}`).set(bearer(who)).expect(200)).body.vInfos as unknown[];
    expect(await first('?pageNumber=&pageSize=', 'edge-empty-values')).toEqual(await first('', 'edge-no-values'));
    await request(app).get('/api/app/recommend/vid/ad?pageSize=').set(user).expect(400);
  });

  it('when pageSize is given twice, then 400 saying it must be given once; written plainly, it is taken', async () => {
    const res = await request(app).get('/api/app/recommend/vid/list?pageSize=3&pageSize=4').set(user).expect(400);
    expect(res.body.error.message).toBe("'pageSize' must be given once");
    expect((await request(app).get('/api/app/recommend/vid/list?pageSize=3').set(user).expect(200)).body.vInfos).toHaveLength(3);
    await request(app).get('/api/admin/audit?count=1e1').set(admin).expect(400);
    await request(app).get('/api/app/recommend/vid/ad?pageSize=02').set(user).expect(400);
  });
});

describe('methods and paths', () => {
  it('when the document is read, then every GET has its HEAD and every path its OPTIONS', () => {
    const gets = Object.entries(paths).filter(([, ops]) => ops.get);
    expect(gets.map(([path]) => path).sort()).toEqual(routeTable(app).filter((route) => route.methods.includes('GET')).map((route) => route.path.replace(/:(\w+)/g, '{$1}')).sort());
    for (const [path, ops] of Object.entries(paths)) expect({ path, methods: Object.keys(ops) }).toEqual({ path, methods: expect.arrayContaining(ops.get ? ['head', 'options'] : ['options']) });
  });

  it('when OPTIONS is sent to any path, then 204 with Allow, without credentials; an unknown path is 404 even as a CORS preflight', async () => {
    for (const path of ['/healthz', '/api/admin/rollout', '/api/app/vid/like', `/api/app/vid/comment/${ids[0]}`]) {
      const res = await request(app).options(path).expect(204);
      expect(res.headers.allow).toMatch(/^[A-Z, ]+$/);
    }
    expect((await request(app).options('/healthz')).headers.allow).toBe('GET, HEAD');
    const preflight = { Origin: ORIGIN, 'Access-Control-Request-Method': 'POST' };
    const known = await request(app).options('/api/app/vid/like').set(preflight).expect(204);
    expect(known.headers['access-control-allow-origin']).toBe(ORIGIN);
    await request(app).options('/api/app/does-not-exist').set(preflight).expect(404);
    await request(app).options('/api/app/does-not-exist').expect(404);
  });

  it('when a path is asked in another case or with a trailing slash, then 404 and nothing changes', async () => {
    await request(app).put('/API/ADMIN/ROLLOUT').set(admin).send({ percent: 7 }).expect(404);
    await request(app).put('/api/admin/rollout/').set(admin).send({ percent: 7 }).expect(404);
    await request(app).get('/HEALTHZ').expect(404);
    await request(app).get('/api/app/recommend/vid/list/').set(user).expect(404);
    expect((await request(app).get('/api/admin/rollout').set(admin).expect(200)).body.source).not.toHaveProperty('percent', 'override');
  });
});

describe('rules are in the schema', () => {
  it("when explain's query is judged by the document, then exactly one of user and device is accepted, as the server does", async () => {
    const [parameter] = paths['/api/admin/explain'].get.parameters!;
    const accepts = new Ajv2020({ strict: false }).compile(parameter.schema);
    for (const query of [{ user: 'edge-user' }, { device: 'edge-device-1' }, { user: 'edge-user', device: 'edge-device-1' }, {}]) {
      const res = await request(app).get('/api/admin/explain').query(query).set(admin);
      expect({ query, accepted: accepts(query) }).toEqual({ query, accepted: res.status !== 400 });
    }
  });
});
