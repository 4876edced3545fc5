/**
 * A whole H5 session as the H5 team would write it (issue 34): a client typed from the API's
 * OpenAPI document (openapi-typescript's types, generated into a git-ignored file by `pnpm lint`
 * and checked current here; openapi-fetch
 * as the client), over real HTTP to the API on 127.0.0.1. Every answer is checked against the
 * served document too (test/support/contract), so the session passes only where the document,
 * the types and the server agree.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type { AddressInfo, Server } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import createClient, { type Middleware } from 'openapi-fetch';
import { createHttpServer } from '@feed/http';
import { demoVideo } from '@feed/demo-data';
import { interactionModels, videoModel } from '@feed/storage';
// Generated, not committed: `pnpm openapi:types` (which `pnpm lint` runs before tsc).
import type { paths } from '../../../test/support/api-openapi';
import { fetchAnswerProblem } from '../../../test/support/contract';
import { testApi } from '../../../test/support/api';
import { bearer, publishQueue } from '../../../test/support/feed-fixtures';
import { useTestServices } from '../../../test/support/services';

const ROOT = path.resolve(__dirname, '../../..');

const s = useTestServices('h5-session');
let ids: string[];
let baseUrl: string;

beforeAll(async () => {
  const docs = Array.from({ length: 30 }, () => demoVideo({}));
  await videoModel(s.mongo).insertMany(docs);
  await Promise.all(Object.values(interactionModels(s.mongo)).map((m) => m.init()));
  ids = docs.map((d) => d._id!.toHexString());
});

beforeEach(async () => {
  await publishQueue(s.redis, s.keys, '20260724', ids);
  const { app } = testApi(s);
  const server: Server = createHttpServer(app, { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, maxConnections: 100 }).listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  s.disposeAfter(() => new Promise<void>((resolve) => server.close(() => resolve())));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

/** Fails a call whose answer the served document does not describe. */
const contractCheck: Middleware = {
  async onResponse({ request, response }) {
    const problem = await fetchAnswerProblem(request.method, request.url, response);
    if (problem) throw new Error(problem);
    return undefined;
  },
};

/** The H5 client for one identity: a user's token, or a guest's device id. */
function h5Client(identity: Record<string, string>) {
  const client = createClient<paths>({ baseUrl, headers: identity });
  client.use(contractCheck);
  return client;
}

describe('an H5 session through the typed client', () => {
  it('when the types are generated from the document again, then they are the ones the test was type-checked with (pnpm openapi:types)', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--conditions=@feed/source', '--import', 'tsx', 'tools/openapi/api-types.ts', '--stdout'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
    const file = path.join(ROOT, 'test/support/api-openapi.d.ts');
    expect(existsSync(file) ? readFileSync(file, 'utf8') : 'missing: run pnpm openapi:types').toBe(stdout);
  }, 30_000);

  it('when a guest pages, views, shares and asks the watch count, then each answer is the documented one', async () => {
    const guest = h5Client({ 'X-Device-Id': 'h5-guest-device-1' });
    const first = await guest.GET('/api/app/vid/module/short/all', { params: { query: { pageSize: 5 } } });
    const second = await guest.GET('/api/app/vid/module/short/all', { params: { query: { pageSize: 5 } } });
    expect(first.response.status).toBe(200);
    const seen = [...first.data!.vInfos, ...second.data!.vInfos].map((v) => v.vid);
    expect(new Set(seen).size).toBe(10);
    const vid = seen[0];
    expect((await guest.POST('/api/app/vid/view', { body: { vid } })).data).toMatchObject({ ok: true });
    expect((await guest.POST('/api/app/share/output', { body: { videoID: vid } })).response.status).toBe(200);
    const count = await guest.GET('/api/app/vid/user/count', { params: { query: { vid } } });
    expect(count.data).toEqual({ watchCount: expect.any(Number), totalWatchCount: expect.any(Number) });
    // A guest may not like: the documented 401, typed as the error.
    const like = await guest.POST('/api/app/vid/like', { body: { vid } });
    expect({ status: like.response.status, code: like.error?.error.code }).toEqual({ status: 401, code: expect.any(String) });
  });

  it('when a user pages, views, likes, unlikes, collects, comments, shares and asks the watch count, then each answers as documented and the viewed video is not served again', async () => {
    const user = h5Client(bearer('h5-user'));
    const page = await user.GET('/api/app/recommend/vid/list', { params: { query: { pageSize: 3 } } });
    expect(page.data!.queueVersion).toBe('20260724');
    const [video] = page.data!.vInfos;
    const { vid } = video;
    expect((await user.POST('/api/app/vid/view', { body: { vid } })).data).toMatchObject({ ok: true });
    expect((await user.POST('/api/app/vid/like', { body: { vid } })).data).toEqual({ active: true, changed: true });
    expect((await user.POST('/api/app/vid/like', { body: { vid } })).data).toEqual({ active: true, changed: false });
    expect((await user.POST('/api/app/vid/unlike', { body: { vid } })).data).toEqual({ active: false, changed: true });
    expect((await user.POST('/api/app/vid/collect', { body: { vid } })).data).toEqual({ active: true, changed: true });
    const comment = await user.POST('/api/app/vid/comment', { body: { vid, content: 'first from the typed client' } });
    expect(comment.data!.commentId).toMatch(/^[0-9a-f]{24}$/);
    expect((await user.POST('/api/app/share/output', { body: { videoID: vid } })).response.status).toBe(200);
    const count = await user.GET('/api/app/vid/user/count', { params: { query: { vid } } });
    expect(count.data!.watchCount).toBeGreaterThanOrEqual(0);
    const deleted = await user.DELETE('/api/app/vid/comment/{id}', { params: { path: { id: comment.data!.commentId } } });
    expect(deleted.response.status).toBe(200);
    const next = await user.GET('/api/app/recommend/vid/list', { params: { query: { pageSize: 3 } } });
    expect(next.data!.vInfos.map((v) => v.vid)).not.toContain(vid);
  });
});
