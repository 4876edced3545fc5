import request from '../../../test/support/contract';
import type { Express } from 'express';
import { videoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer, offsetOf, publishQueue } from '../../../test/support/feed-fixtures';

const s = useTestServices('explain', { CURRENT_CACHE_MS: '0' });
let app: Express;
let ids: string[];
const VERSION = '20260724';
const ADMIN = ['admin', 'feed-insecure-local-admin-password'] as const;

beforeAll(async () => {
  const now = Date.now();
  const docs = Array.from({ length: 25 }, (_, i) =>
    demoVideo({ reviewAt: new Date(i === 1 ? now - 3600_000 : now - 5 * 86400_000), recommendScore: 100 - i, authorId: i === 4 ? 'explained' : 'someone' }),
  );
  await videoModel(s.mongo).insertMany(docs);
  ids = docs.map((d) => d._id!.toHexString());
});

beforeEach(async () => {
  // The build recorded scores 50, 49, ...; the documents hold 100, 99, ... since (a later write-back).
  await publishQueue(s.redis, s.keys, VERSION, ids, { scores: ids.map((_, i) => 50 - i) });
  app = testApi(s).app;
});

describe('GET /api/admin/explain', () => {
  it('when called without admin credentials, then 401 — also with a user token', async () => {
    await request(app).get('/api/admin/explain?user=explained').expect(401);
    await request(app).get('/api/admin/explain?user=explained').set(bearer('explained')).expect(401);
    await request(app).get('/api/admin/explain?user=explained').auth('admin', 'wrong-password').expect(401);
  });

  it('when a user is explained, then it shows offset, block, pool, score and skip reasons without moving the offset', async () => {
    await request(app).get('/api/app/recommend/vid/list?pageSize=2').set(bearer('explained')).expect(200);
    await request(app).post('/api/app/vid/view').set(bearer('explained')).send({ vid: ids[3] }).expect(200);
    await videoModel(s.mongo).updateOne({ _id: ids[5] }, { $set: { status: 'offline' } });

    const res = await request(app).get('/api/admin/explain?user=explained&pageSize=5').auth(...ADMIN).expect(200);
    expect(res.body).toMatchObject({ user: 'u:explained', version: VERSION, queueLength: 25, offset: 2 });
    const verdicts = res.body.candidates.map((c: { vid: string; verdict: string }) => [ids.indexOf(c.vid), c.verdict]);
    expect(verdicts).toEqual([
      [2, 'serve'],
      [3, 'seen'],
      [4, 'own'],
      [5, 'invalid'],
      [6, 'serve'],
      [7, 'serve'],
      [8, 'serve'],
      [9, 'serve'],
    ]);
    // The score the build of this version used, not the document's current recommendScore (98).
    expect(res.body.candidates[0]).toMatchObject({ position: 2, block: 0, pool: 'high', score: 48 });
    expect(res.body.candidates.map((c: { score: number }) => c.score)).toEqual([48, 47, 46, 45, 44, 43, 42, 41]);
    expect(await offsetOf(s.redis, s.keys, VERSION, 'u:explained')).toBe('2');

    const fresh = await request(app).get('/api/admin/explain?device=guest-device-01&pageSize=2').auth(...ADMIN).expect(200);
    expect(fresh.body.candidates.map((c: { pool: string }) => c.pool)).toEqual(['high', 'new']);
  });

  it('when the query is bad, then 400', async () => {
    await request(app).get('/api/admin/explain').auth(...ADMIN).expect(400);
    await request(app).get('/api/admin/explain?user=a&device=bbbbbbbbbb').auth(...ADMIN).expect(400);
    await request(app).get('/api/admin/explain?user=a&version=2026').auth(...ADMIN).expect(400);
    await request(app).get('/api/admin/explain?user=a&version=20200101').auth(...ADMIN).expect(404);
  });
});
