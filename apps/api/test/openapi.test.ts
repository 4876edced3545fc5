import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import request from 'supertest';
import type { Express } from 'express';
import { interactionModels, videoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { createApp } from '../src/app';
import { openApiDocument } from '../src/openapi';
import { startTestServices, type TestServices } from '../../../test/support/services';
import { bearer, publishQueue } from '../../../test/support/feed-fixtures';

let s: TestServices;
let app: Express;
let ids: string[];
const ajv = addFormats(new Ajv2020({ strict: false }));
ajv.addSchema({ $id: 'openapi', components: openApiDocument.components });

beforeAll(async () => {
  s = await startTestServices('openapi', { CURRENT_CACHE_MS: '0' });
  const docs = [...Array.from({ length: 25 }, () => demoVideo({})), demoVideo({ isAd: true })];
  await videoModel(s.mongo).insertMany(docs);
  await Promise.all(Object.values(interactionModels(s.mongo)).map((m) => m.init()));
  ids = docs.map((d) => d._id!.toHexString());
  await publishQueue(s.redis, s.keys, '20260724', ids);
  app = createApp({ config: s.config, redis: s.redis, mongo: s.mongo }).app;
});

afterAll(() => s.cleanup());

type Method = 'get' | 'post' | 'delete';

/** Validates a real response against the documented schema for its path, method and status. */
function expectDocumented(path: string, method: Method, res: request.Response): void {
  const operation = (openApiDocument.paths as Record<string, Record<string, { responses: Record<string, { content?: { 'application/json': { schema: object } } }> }>>)[path]?.[method];
  expect(operation).toBeDefined();
  const response = operation.responses[String(res.status)];
  if (!response) throw new Error(`${method.toUpperCase()} ${path} answered ${res.status}, which is not documented`);
  const schema = JSON.parse(JSON.stringify(response.content!['application/json'].schema).replace(/#\/components/g, 'openapi#/components'));
  const validate = ajv.compile(schema);
  if (!validate(res.body)) throw new Error(`${method.toUpperCase()} ${path} ${res.status}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(res.body)}`);
}

describe('OpenAPI document', () => {
  it('when /openapi.json is fetched, then it is the served document', async () => {
    const res = await request(app).get('/openapi.json').expect(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(Object.keys(res.body.paths)).toContain('/api/app/recommend/vid/list');
  });

  it('when every app endpoint is called, then each real response matches its documented schema', async () => {
    const user = bearer('doc-user');
    const calls: Array<[string, Method, request.Test]> = [
      ['/api/app/recommend/vid/list', 'get', request(app).get('/api/app/recommend/vid/list?pageSize=5').set(user)],
      ['/api/app/recommend/vid/list', 'get', request(app).get('/api/app/recommend/vid/list?pageSize=500').set(user)],
      ['/api/app/recommend/vid/list', 'get', request(app).get('/api/app/recommend/vid/list')],
      ['/api/app/vid/module/short/all', 'get', request(app).get('/api/app/vid/module/short/all').set('X-Device-Id', 'doc-device-1')],
      ['/api/app/recommend/vid/ad', 'get', request(app).get('/api/app/recommend/vid/ad').set(user)],
      ['/api/app/vid/user/count', 'get', request(app).get('/api/app/vid/user/count').set(user)],
      ['/api/app/vid/user/count', 'get', request(app).get(`/api/app/vid/user/count?vid=${ids[0]}`).set(user)],
      ['/api/app/vid/user/count', 'get', request(app).get('/api/app/vid/user/count?vid=0123456789abcdef01234567').set(user)],
      ['/api/app/vid/view', 'post', request(app).post('/api/app/vid/view').set(user).send({ vid: ids[1] })],
      ['/api/app/recommend/vid/not-interested', 'post', request(app).post('/api/app/recommend/vid/not-interested').set(user).send({ vid: ids[2] })],
      ['/api/app/recommend/vid/not-interested/undo', 'post', request(app).post('/api/app/recommend/vid/not-interested/undo').set(user).send({ vid: ids[2] })],
      ['/api/app/vid/like', 'post', request(app).post('/api/app/vid/like').set(user).send({ vid: ids[3] })],
      ['/api/app/vid/unlike', 'post', request(app).post('/api/app/vid/unlike').set(user).send({ vid: ids[3] })],
      ['/api/app/vid/collect', 'post', request(app).post('/api/app/vid/collect').set(user).send({ vid: 'bad' })],
      ['/api/app/vid/uncollect', 'post', request(app).post('/api/app/vid/uncollect').send({ vid: ids[3] })],
      ['/api/app/share/output', 'post', request(app).post('/api/app/share/output').set(user).send({ videoID: ids[4] })],
    ];
    for (const [path, method, call] of calls) expectDocumented(path, method, await call);

    const comment = await request(app).post('/api/app/vid/comment').set(user).send({ vid: ids[5], content: 'documented' });
    expectDocumented('/api/app/vid/comment', 'post', comment);
    expectDocumented('/api/app/vid/comment/{id}', 'delete', await request(app).delete(`/api/app/vid/comment/${comment.body.commentId}`).set(user));
  });
});
