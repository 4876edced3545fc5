/**
 * SPEC C's HTTP semantics over the worker's route table (its own routes and the inspector's;
 * the dashboard's are bull-board's): HEAD answers as GET would with no body and no side effect,
 * an unsupported method on a known path is 405 with `Allow`.
 */
import request from '../../../test/support/contract';
import type { Express } from 'express';
import { useTestServices } from '../../../test/support/services';
import { ADMIN, workerAppUnderTest } from './support/worker-app-under-test';
import { concreteRoutes, mongoState, PROBE_METHODS, redisState, send } from '../../../test/support/http-semantics';

const s = useTestServices('worker-http');
let app: Express;

beforeEach(async () => {
  app = await workerAppUnderTest(s);
});

/** The worker's routes with a literal path (bull-board's own are left to it). */
const literalRoutes = () => concreteRoutes(app, 'x').filter((r) => !r.pattern.includes(':'));

describe('the worker\'s HTTP semantics (SPEC C)', () => {
  it('when HEAD is sent on every GET route, with or without credentials, then the status is the GET\'s, no body, and nothing changes', async () => {
    const gets = literalRoutes().filter((r) => r.methods.includes('GET'));
    expect(gets.map((r) => r.path)).toEqual(expect.arrayContaining(['/healthz', '/metrics', '/admin/inspector/api/summary']));
    for (const { path } of gets) {
      for (const headers of [{}, ADMIN]) {
        const before = { redis: await redisState(s.redis, s.prefix), mongo: await mongoState(s.mongo) };
        const head = await request(app).head(path).set(headers);
        expect({ path, changed: { redis: await redisState(s.redis, s.prefix), mongo: await mongoState(s.mongo) } }).toEqual({ path, changed: before });
        expect({ path, body: head.text ?? '' }).toEqual({ path, body: '' });
        expect({ path, status: head.status }).toEqual({ path, status: (await request(app).get(path).set(headers)).status });
      }
    }
  });

  it('when a known path gets a method it does not take, then 405 with Allow', async () => {
    for (const { path, methods } of literalRoutes()) {
      for (const method of PROBE_METHODS.filter((m) => !methods.includes(m))) {
        const res = await send(app, method, path).set(ADMIN);
        expect({ path, method, status: res.status, allow: res.headers.allow }).toEqual({ path, method, status: 405, allow: methods.join(', ') });
      }
    }
  });

  it('when a dashboard path gets a method bull-board does not take, then 405 with Allow (not 404), and its own methods still answer', async () => {
    const propfind = await send(app, 'PROPFIND', '/admin/queues/api/queues').set(ADMIN);
    expect({ status: propfind.status, allow: propfind.headers.allow }).toEqual({ status: 405, allow: 'GET, HEAD' });
    // PUT only: neither GET nor HEAD runs the action.
    for (const method of ['GET', 'HEAD'] as const) {
      const res = await send(app, method, '/admin/queues/api/queues/pause').set(ADMIN);
      expect({ method, status: res.status, allow: res.headers.allow }).toEqual({ method, status: 405, allow: 'PUT' });
    }
    expect((await request(app).get('/admin/queues/api/queues').set(ADMIN)).status).toBe(200);
    expect((await request(app).options('/admin/queues/api/queues')).status).toBe(401);
    // OPTIONS with credentials: the Allow of the path with 204, as on the worker's own routes (not Express's 200 with a body).
    const options = await request(app).options('/admin/queues/api/queues').set(ADMIN);
    expect({ status: options.status, allow: options.headers.allow, body: options.text ?? '' }).toEqual({ status: 204, allow: 'GET, HEAD', body: '' });
  });

  it('when any path answers, dashboard included, then no X-Powered-By names the framework', async () => {
    for (const path of ['/healthz', '/admin/queues', '/admin/queues/api/queues', '/admin/inspector/api/summary', '/no-such-path']) {
      const res = await request(app).get(path).set(ADMIN);
      expect({ path, poweredBy: res.headers['x-powered-by'] }).toEqual({ path, poweredBy: undefined });
    }
  });
});
