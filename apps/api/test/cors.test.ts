/**
 * CORS for the H5 client (SPEC D2 CORS_ALLOWED_ORIGINS), in a real headless Chromium: a page
 * served from another port calls the API with the client's headers (a preflighted request).
 */
import http, { type Server } from 'node:http';
import type { Browser } from 'playwright-core';
import request from '../../../test/support/contract';
import { videoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { browserIt, hasBrowser, launchBrowser } from '../../../test/support/browser';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { publishQueue, tokenFor } from '../../../test/support/feed-fixtures';


const s = useTestServices('cors');
let page: Server;
let apiBase: string;
let pageOrigin: string;
let otherOrigin: string;
let ids: string[];
let browser: Browser | undefined;

const listen = async (server: Server) => {
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
};

beforeAll(async () => {
  // The H5 page's origin is known before the API starts: its server listens first.
  page = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>h5</title>'));
  pageOrigin = await listen(page);
  otherOrigin = 'http://127.0.0.1:9';
  ids = (await videoModel(s.mongo).insertMany(Array.from({ length: 40 }, () => demoVideo({ reviewAt: new Date('2026-07-20T00:00:00Z') })))).map((d) => d._id.toHexString());
  if (hasBrowser) browser = await launchBrowser();
}, 60_000);

beforeEach(async () => {
  await publishQueue(s.redis, s.keys, '20260724', ids);
  const api = http.createServer(testApi(s, { corsAllowedOrigins: [pageOrigin] }).app);
  s.disposeAfter(() => new Promise((closed) => api.close(closed)));
  apiBase = await listen(api);
});

afterAll(async () => {
  await browser?.close();
  page.close();
});

describe('CORS for the H5 client', () => {
  browserIt('when a page on an allowed origin fetches the feed with a bearer token, then the browser lets it read the page', async () => {
    const tab = await (await browser!.newContext()).newPage();
    await tab.goto(`${pageOrigin}/`);
    const result = await tab.evaluate(
      async ({ apiBase, token }) => {
        const res = await fetch(`${apiBase}/api/app/recommend/vid/list`, { headers: { Authorization: `Bearer ${token}`, 'X-Device-Id': 'h5-device-01' } });
        const body = (await res.json()) as { vInfos: unknown[] };
        return { status: res.status, items: body.vInfos.length, requestId: res.headers.get('x-request-id') };
      },
      { apiBase, token: tokenFor('h5-user') },
    );
    expect(result).toMatchObject({ status: 200, items: 20 });
    expect(result.requestId).toBeTruthy();
  });

  browserIt('when a page posts a view with JSON and an Idempotency-Key, then the preflight allows it', async () => {
    const tab = await (await browser!.newContext()).newPage();
    await tab.goto(`${pageOrigin}/`);
    const status = await tab.evaluate(
      async ({ apiBase, token }) => {
        const res = await fetch(`${apiBase}/api/app/recommend/vid/list?pageSize=1`, { headers: { Authorization: `Bearer ${token}` } });
        const vid = ((await res.json()) as { vInfos: Array<{ vid: string }> }).vInfos[0].vid;
        const view = await fetch(`${apiBase}/api/app/vid/view`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Idempotency-Key': 'h5-view-0001' },
          body: JSON.stringify({ vid }),
        });
        return view.status;
      },
      { apiBase, token: tokenFor('h5-user') },
    );
    expect(status).toBe(200);
  });

  it('when the origin is not allowed, then the preflight grants nothing', async () => {
    const res = await request(apiBase).options('/api/app/recommend/vid/list').set('Origin', otherOrigin).set('Access-Control-Request-Method', 'GET').set('Access-Control-Request-Headers', 'authorization');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('when an allowed origin preflights an admin endpoint, then no cross-origin access is granted', async () => {
    const res = await request(apiBase).options('/api/admin/rollout').set('Origin', pageOrigin).set('Access-Control-Request-Method', 'PUT');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('when an allowed origin preflights the feed with the client headers, then each is allowed', async () => {
    const res = await request(apiBase)
      .options('/api/app/recommend/vid/list')
      .set('Origin', pageOrigin)
      .set('Access-Control-Request-Method', 'GET')
      .set('Access-Control-Request-Headers', 'authorization,x-device-id,idempotency-key,content-type')
      .expect(204);
    expect(res.headers['access-control-allow-origin']).toBe(pageOrigin);
    expect(res.headers['access-control-allow-headers'].toLowerCase()).toBe('authorization,x-device-id,idempotency-key,content-type');
  });
});
