/**
 * The worker's OpenAPI document (issue 34): it describes every route the worker itself registers
 * (bull-board's are named as unspecified), lints clean, and every endpoint's real answers match
 * it (test/support/contract checks each response of this file, as of every worker test).
 */
import type { Express } from 'express';
import { routeTable } from '@feed/http';
import { DASHBOARD_PATH, workerOpenApiDocument } from '../src/openapi';
import { useTestServices } from '../../../test/support/services';
import { ADMIN, workerAppUnderTest } from './support/worker-app-under-test';
import request from '../../../test/support/contract';
import { redoclyLint } from '../../../test/support/redocly';

const s = useTestServices('worker-openapi');
let app: Express;

beforeEach(async () => {
  app = await workerAppUnderTest(s);
});

describe("the worker's OpenAPI document", () => {
  it("when the worker's routes are listed, then each of its own is documented with its methods and the document has no other", () => {
    const registered = routeTable(app)
      .filter(({ path }) => !path.startsWith(DASHBOARD_PATH))
      .flatMap(({ path, methods }) => methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${path.replace(/:(\w+)/g, '{$1}')}`));
    const documented = Object.entries(workerOpenApiDocument.paths)
      .filter(([path]) => path !== DASHBOARD_PATH)
      .flatMap(([path, methods]) => Object.keys(methods).filter((m) => m !== 'head' && m !== 'options').map((m) => `${m.toUpperCase()} ${path}`));
    // The inspector's route is its mount's `/` (the page at /admin/inspector/); without the slash it is the page's redirect.
    expect([...new Set(registered)].sort()).toEqual(documented.filter((route) => route !== 'GET /admin/inspector').sort());
  });

  it('when the served document is linted (redocly, recommended rules), then it has no error and no warning', async () => {
    const served = (await request(app).get('/openapi.json').expect(200)).body;
    expect(served).toEqual(JSON.parse(JSON.stringify(workerOpenApiDocument)));
    expect(await redoclyLint(served)).toEqual({ totals: { errors: 0, warnings: 0, ignored: 0 }, problems: [] });
  }, 30_000);

  it('when every endpoint is called, with and without credentials, then each answer is the documented one', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) await request(app).get(path).expect(200);
    for (const path of [DASHBOARD_PATH, '/admin/inspector', '/admin/inspector/', '/admin/inspector/api/summary']) {
      await request(app).get(path).expect(401);
      await request(app).get(path).set(ADMIN).expect((res) => expect(res.status).toBeLessThan(400));
    }
    const summary = await request(app).get('/admin/inspector/api/summary').set(ADMIN).expect(200);
    expect(summary.body.pointers).toEqual({ current: null, previous: null, shadow: null });
    await request(app).post('/admin/inspector/api/held/20260724/promote').set(ADMIN).expect(404);
    await request(app).post('/admin/inspector/api/held/tomorrow/promote').set(ADMIN).expect(400);
    await request(app).post('/admin/inspector/api/held/20260724/promote').expect(401);
  });

  it('when OPTIONS, another case or a trailing slash is asked, then the worker answers as the API does: 204 with Allow without credentials, 404 for a path it has not', async () => {
    expect((await request(app).options('/healthz').expect(204)).headers.allow).toBe('GET, HEAD');
    expect((await request(app).options('/admin/inspector/api/held/20260724/promote').expect(204)).headers.allow).toBe('POST');
    await request(app).options('/admin/no-such-page').expect(404);
    await request(app).get('/ADMIN/INSPECTOR/api/summary').set(ADMIN).expect(404);
    await request(app).post('/admin/inspector/api/held/20260724/promote/').set(ADMIN).expect(404);
    const promote = (workerOpenApiDocument.paths as Record<string, { post?: { parameters?: object[] } }>)['/admin/inspector/api/held/{version}/promote'].post;
    expect(promote?.parameters).toEqual([expect.objectContaining({ name: 'version', schema: { type: 'string', pattern: '^\\d{8}$' } })]);
  });
});
