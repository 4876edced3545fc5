import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import request, { type Test } from '../../../test/support/contract';
import type { Express } from 'express';
import { interactionModels, videoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { openApiDocument } from '../src/openapi';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { redoclyLint } from '../../../test/support/redocly';
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

describe('OpenAPI document', () => {
  it('when the app\'s routes are listed, then each /api route is documented and the document has no other', () => {
    // The probes and the document are not under /api.
    const documented = Object.entries(openApiDocument.paths)
      .filter(([route]) => route.startsWith('/api/'))
      .flatMap(([route, methods]) => Object.keys(methods).filter((method) => method !== 'options' && method !== 'head').map((method) => `${method.toUpperCase()} ${route}`))
      .sort();
    // HEAD (beside every GET) and OPTIONS (on every path) are answered by Express and answerOptions, documented on each path.
    expect(registeredRoutes(app).filter((route) => route.includes(' /api/') && !route.startsWith('HEAD '))).toEqual(documented);
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
    expect(await redoclyLint(served)).toEqual({ totals: { errors: 0, warnings: 0, ignored: 0 }, problems: [] });
  }, 30_000);

  it('when /openapi.json is fetched, then it is the served document', async () => {
    const res = await request(app).get('/openapi.json').expect(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(Object.keys(res.body.paths)).toContain('/api/app/recommend/vid/list');
  });

  it('when every app endpoint is called, then each real response matches its documented schema', async () => {
    const user = bearer('doc-user');
    const calls: Test[] = [
      request(app).get('/api/app/recommend/vid/list?pageSize=5').set(user),
      request(app).get('/api/app/recommend/vid/list?pageSize=500').set(user),
      request(app).get('/api/app/recommend/vid/list'),
      request(app).get('/api/app/vid/module/short/all').set('X-Device-Id', 'doc-device-1'),
      request(app).get('/api/app/recommend/vid/ad').set(user),
      request(app).get('/api/app/vid/user/count').set(user),
      request(app).get(`/api/app/vid/user/count?vid=${ids[0]}`).set(user),
      request(app).get('/api/app/vid/user/count?vid=0123456789abcdef01234567').set(user),
      request(app).post('/api/app/vid/view').set(user).send({ vid: ids[1] }),
      request(app).post('/api/app/recommend/vid/not-interested').set(user).send({ vid: ids[2] }),
      request(app).post('/api/app/recommend/vid/not-interested/undo').set(user).send({ vid: ids[2] }),
      request(app).post('/api/app/vid/like').set(user).send({ vid: ids[3] }),
      request(app).post('/api/app/vid/unlike').set(user).send({ vid: ids[3] }),
      request(app).post('/api/app/vid/collect').set(user).send({ vid: 'bad' }),
      request(app).post('/api/app/vid/uncollect').send({ vid: ids[3] }),
      request(app).post('/api/app/share/output').set(user).send({ videoID: ids[4] }),
    ];
    for (const call of calls) await call;

    const admin = { Authorization: `Basic ${Buffer.from(`${s.config.adminUser}:${s.config.adminPassword}`).toString('base64')}` };
    const adminCalls: Test[] = [
      request(app).get('/api/admin/explain?user=doc-user&pageSize=3').set(admin),
      request(app).get('/api/admin/explain?pageSize=3').set(admin),
      request(app).get('/api/admin/explain?user=doc-user'),
      request(app).put('/api/admin/rollout').set(admin).send({ percent: 50 }),
      request(app).get('/api/admin/rollout').set(admin),
      request(app).delete('/api/admin/rollout').set(admin),
    ];
    for (const call of adminCalls) await call;

    const comment = await request(app).post('/api/app/vid/comment').set(user).send({ vid: ids[5], content: 'documented' });
    await request(app).delete(`/api/app/vid/comment/${comment.body.commentId}`).set(user);
  });

  it('when the edges the document speaks of are called, then the server answers as documented and the document judges the comment content as the server does', async () => {
    const user = bearer('edge-user');
    const admin = { Authorization: `Basic ${Buffer.from(`${s.config.adminUser}:${s.config.adminPassword}`).toString('base64')}` };
    const commentSchema = (openApiDocument.paths['/api/app/vid/comment'].post.requestBody as { content: { 'application/json': { schema: object } } }).content['application/json'].schema;
    const documentAccepts = ajv.compile(commentSchema);
    for (const content of ['   ', 'x'.repeat(501), ' '.repeat(498) + 'ab' + ' ', 'ok']) {
      const res = await request(app).post('/api/app/vid/comment').set(user).send({ vid: ids[6], content });
      expect({ content: content.length, accepted: documentAccepts({ vid: ids[6], content }) }).toEqual({ content: content.length, accepted: res.status < 400 });
    }
    await request(app).get('/api/admin/explain?user=a-user&device=a-device-1').set(admin).expect(400);
    await request(app).post('/api/app/vid/view').set(user).set('Content-Type', 'application/json').send(JSON.stringify({ vid: ids[1], pad: 'x'.repeat(20_000) })).expect(413);
    for (const path of ['/healthz', '/readyz', '/openapi.json']) await request(app).get(path);
  });
});
