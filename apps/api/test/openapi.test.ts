import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import request from 'supertest';
import type { Express } from 'express';
import { interactionModels, videoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { openApiDocument } from '../src/openapi';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer, publishQueue } from '../../../test/support/feed-fixtures';

const s = useTestServices('openapi', { CURRENT_CACHE_MS: '0' });
let app: Express;
let ids: string[];
const ajv = addFormats(new Ajv2020({ strict: false }));
ajv.addSchema({ $id: 'openapi', components: openApiDocument.components });

beforeAll(async () => {
  const docs = [...Array.from({ length: 25 }, () => demoVideo({})), demoVideo({ isAd: true })];
  await videoModel(s.mongo).insertMany(docs);
  await Promise.all(Object.values(interactionModels(s.mongo)).map((m) => m.init()));
  ids = docs.map((d) => d._id!.toHexString());
});

beforeEach(async () => {
  await publishQueue(s.redis, s.keys, '20260724', ids);
  app = testApi(s).app;
});

type Method = 'get' | 'post' | 'put' | 'delete';
const ROOT = path.resolve(__dirname, '../../..');

/** Every route the Express app registers, as `METHOD /path` with OpenAPI's {param} syntax. */
function registeredRoutes(app: Express): string[] {
  // Express 5 keeps the app's router at app.router; its layers nest the routers the app mounts.
  const { router } = app as Express & { router: { stack: Layer[] } };
  return router.stack.flatMap(routesOf).sort();
}
interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}
function routesOf(layer: Layer): string[] {
  if (layer.route) return Object.keys(layer.route.methods).map((method) => `${method.toUpperCase()} ${layer.route!.path.replace(/:(\w+)/g, '{$1}')}`);
  return (layer.handle?.stack ?? []).flatMap(routesOf);
}

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
  it('when the app\'s routes are listed, then each /api route is documented and the document has no other', () => {
    // The preflights (OPTIONS) are the CORS middleware's, not routes; the probes and the document are not under /api.
    const documented = Object.entries(openApiDocument.paths)
      .filter(([route]) => route.startsWith('/api/'))
      .flatMap(([route, methods]) => Object.keys(methods).filter((method) => method !== 'options').map((method) => `${method.toUpperCase()} ${route}`))
      .sort();
    expect(registeredRoutes(app).filter((route) => route.includes(' /api/'))).toEqual(documented);
  });

  it('when the H5 item is described, then vInfos items are exactly the fields the client reads, no more', () => {
    const item = openApiDocument.components.schemas.VideoInfo;
    expect(item.additionalProperties).toBe(false);
    expect([...item.required].sort()).toEqual(Object.keys(item.properties).sort());
    expect(Object.keys(item.properties).sort()).toEqual(
      ['authorId', 'coin', 'collectCount', 'commentCount', 'coverUrl', 'durationSec', 'isAd', 'likeCount', 'playUrl', 'reviewAt', 'shareCount', 'special', 'title', 'vid', 'vip'].sort(),
    );
  });

  it('when the served document is linted (redocly, recommended rules), then it has no error and no warning', async () => {
    const served = (await request(app).get('/openapi.json').expect(200)).body;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'feed-openapi-'));
    try {
      const file = path.join(dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(served));
      const { stdout } = await promisify(execFile)(path.join(ROOT, 'node_modules/.bin/redocly'), ['lint', '--config', path.join(ROOT, 'redocly.yaml'), '--format', 'json', file], {
        cwd: ROOT,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      });
      const { totals, problems } = JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; message: string }> };
      expect({ totals, problems: problems.map((p) => `${p.ruleId}: ${p.message}`) }).toEqual({ totals: { errors: 0, warnings: 0, ignored: 0 }, problems: [] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

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

    const admin = { Authorization: `Basic ${Buffer.from(`${s.config.adminUser}:${s.config.adminPassword}`).toString('base64')}` };
    const adminCalls: Array<[string, Method, request.Test]> = [
      ['/api/admin/explain', 'get', request(app).get('/api/admin/explain?user=doc-user&pageSize=3').set(admin)],
      ['/api/admin/explain', 'get', request(app).get('/api/admin/explain?pageSize=3').set(admin)],
      ['/api/admin/explain', 'get', request(app).get('/api/admin/explain?user=doc-user')],
      ['/api/admin/rollout', 'put', request(app).put('/api/admin/rollout').set(admin).send({ percent: 50 })],
      ['/api/admin/rollout', 'get', request(app).get('/api/admin/rollout').set(admin)],
      ['/api/admin/rollout', 'delete', request(app).delete('/api/admin/rollout').set(admin)],
    ];
    for (const [path, method, call] of adminCalls) expectDocumented(path, method, await call);

    const comment = await request(app).post('/api/app/vid/comment').set(user).send({ vid: ids[5], content: 'documented' });
    expectDocumented('/api/app/vid/comment', 'post', comment);
    expectDocumented('/api/app/vid/comment/{id}', 'delete', await request(app).delete(`/api/app/vid/comment/${comment.body.commentId}`).set(user));
  });

  it('when the edges the document speaks of are called, then the server answers as documented and the document judges the comment content as the server does', async () => {
    const user = bearer('edge-user');
    const admin = { Authorization: `Basic ${Buffer.from(`${s.config.adminUser}:${s.config.adminPassword}`).toString('base64')}` };
    const commentSchema = (openApiDocument.paths['/api/app/vid/comment'].post.requestBody as { content: { 'application/json': { schema: object } } }).content['application/json'].schema;
    const documentAccepts = ajv.compile(commentSchema);
    for (const content of ['   ', 'x'.repeat(501), ' '.repeat(498) + 'ab' + ' ', 'ok']) {
      const res = await request(app).post('/api/app/vid/comment').set(user).send({ vid: ids[6], content });
      expectDocumented('/api/app/vid/comment', 'post', res);
      expect({ content: content.length, accepted: documentAccepts({ vid: ids[6], content }) }).toEqual({ content: content.length, accepted: res.status < 400 });
    }
    expectDocumented('/api/admin/explain', 'get', await request(app).get('/api/admin/explain?user=a-user&device=a-device-1').set(admin).expect(400));
    expectDocumented('/api/app/vid/view', 'post', await request(app).post('/api/app/vid/view').set(user).set('Content-Type', 'application/json').send(JSON.stringify({ vid: ids[1], pad: 'x'.repeat(20_000) })).expect(413));
    for (const path of ['/healthz', '/readyz', '/openapi.json']) expectDocumented(path, 'get', await request(app).get(path));
  });
});
