/**
 * CORS for the H5 client (SPEC D2 CORS_ALLOWED_ORIGINS), in a real headless Chromium: a page
 * served from another port calls the API with the client's headers (a preflighted request).
 */
import http, { type Server } from 'node:http';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { videoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { createApp } from '../src/app';
import { browserIt, hasBrowser, launchBrowser } from '../../../test/support/browser';
import { startTestServices, type TestServices } from '../../../test/support/services';
import { publishQueue, tokenFor } from '../../../test/support/feed-fixtures';


let s: TestServices;
let api: Server;
let page: Server;
let apiBase: string;
let pageOrigin: string;
let otherOrigin: string;
let browser: Browser | undefined;

const listen = async (server: Server) => {
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
};

beforeAll(async () => {
  // The H5 page's origin is known before the API starts: reserve its port first.
  page = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>h5</title>'));
  pageOrigin = await listen(page);
  otherOrigin = 'http://127.0.0.1:9';
  s = await startTestServices('cors', { CORS_ALLOWED_ORIGINS: pageOrigin });
  const ids = (await videoModel(s.mongo).insertMany(Array.from({ length: 40 }, () => demoVideo({ reviewAt: new Date('2026-07-20T00:00:00Z') })))).map((d) => d._id.toHexString());
  await publishQueue(s.redis, s.keys, '20260724', ids);
  api = http.createServer(createApp({ config: s.config, redis: s.redis, mongo: s.mongo }).app);
  apiBase = await listen(api);
  if (hasBrowser) browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  page.close();
  api.close();
  await s.cleanup();
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
