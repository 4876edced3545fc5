/**
 * SPEC R1a and C on the read path: documents the build accepts never make a page fail. The one
 * reader (video-document.ts) is driven through every strategy, and explain, with arbitrary BSON
 * values in every field of some documents among normal ones.
 */
import fc from 'fast-check';
import request, { type Response } from '../../../test/support/contract';
import type { Express } from 'express';
import { mongo, Types } from 'mongoose';
import { videoModel, type VideoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import type { Api } from '../src/app';
import { readVideoDocument } from '../src/feed/video-document';
import { toVideoInfo } from '../src/feed/video-catalog';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer, offsetOf, publishQueue } from '../../../test/support/feed-fixtures';

const { Binary, BSONRegExp, Code, Decimal128, Double, Int32, Long, MaxKey, MinKey, Timestamp } = mongo;

const s = useTestServices('odd-documents', { CURRENT_CACHE_MS: '0', VIDEO_CACHE_MS: '0' });
const ADMIN = ['admin', 'feed-insecure-local-admin-password'] as const;
const V1 = '20260724';
const V2 = '20260725';

/** A fixed seed in CI (replayable), a random one otherwise, printed either way. */
const SEED = process.env.CI ? 34 : Math.floor(Math.random() * 2 ** 31);

let api: Api;
let app: Express;
let videos: VideoModel;

beforeAll(() => {
  videos = videoModel(s.mongo);
});

beforeEach(async () => {
  await videos.collection.deleteMany({});
  api = testApi(s);
  app = api.app;
});

const decimal = (n: number) => Decimal128.fromString(Number.isFinite(n) ? n.toExponential() : Number.isNaN(n) ? 'NaN' : n > 0 ? 'Infinity' : '-Infinity');
const number = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(0, -1, 2 ** 53, -(2 ** 60), 1e300, Number.MAX_VALUE, NaN, Infinity, -Infinity));

/** Any BSON value the driver writes: numbers of every numeric type, and everything else. */
const bsonValue = fc.oneof(
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map((n) => new Int32(n)),
  number.map((n) => new Double(n)),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => Long.fromBigInt(n)),
  number.map(decimal),
  fc.constant(Decimal128.fromString('1E+400')),
  fc.string(),
  fc.boolean(),
  fc.constant(null),
  fc.date(),
  fc.constant(new Types.ObjectId()),
  fc.uint8Array({ maxLength: 8 }).map((bytes) => new Binary(bytes)),
  fc.constant(new BSONRegExp('^a.*', 'i')),
  fc.constant(new Code('function () {}')),
  fc.constant(new Timestamp({ t: 1, i: 2 })),
  fc.constant(new MinKey()),
  fc.constant(new MaxKey()),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.record({ a: fc.integer() }),
);

const FIELDS = [
  'title', 'coverUrl', 'playUrl', 'durationSec', 'authorId', 'newsType', 'status', 'deleted', 'reviewAt', 'vip', 'coin', 'isAd', 'special',
  'likeCount', 'collectCount', 'commentCount', 'shareCount', 'fakeLikeCount', 'fakeCommentCount', 'fakeShareCount',
] as const;

/** An `_id` other than an ObjectId (made unique by the document's index: `_id` is a unique index). */
const oddId = fc.oneof(
  fc.string().map((text) => (i: number) => `odd-${i}-${text}`),
  fc.constant((i: number) => 1_000 + i),
  fc.constant((i: number) => ({ a: i })),
  fc.constant((i: number) => new Long(i, 7)),
  fc.constant((i: number) => new Types.ObjectId().toHexString().slice(0, 20) + String(1000 + i)),
);

/** An eligible document with some of its fields (the `_id` included) replaced by arbitrary BSON values. */
const oddDocument = fc.record({
  id: fc.option(oddId, { nil: undefined, freq: 3 }),
  fields: fc.dictionary(fc.constantFrom(...FIELDS), bsonValue, { minKeys: 1, maxKeys: 8 }),
});

const scenario = fc.record({
  normal: fc.integer({ min: 1, max: 8 }),
  odd: fc.array(oddDocument, { minLength: 1, maxLength: 8 }),
  order: fc.infiniteStream(fc.double({ min: 0, max: 1, noNaN: true })),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

const vids = (res: Response) => (res.body.vInfos as Array<{ vid: string }>).map((v) => v.vid);

/** Inserts the scenario's documents as other services would (the driver, no schema); returns the normal ids and the hex ids of all ObjectId documents. */
async function insert({ normal, odd }: Scenario) {
  const normalDocs = Array.from({ length: normal }, (_, i) => demoVideo({ authorId: `author-${i}`, likeCount: i }));
  const oddDocs = odd.map(({ id, fields }, i) => ({ ...demoVideo(), ...(id ? { _id: id(i) } : {}), ...fields }));
  await videos.collection.insertMany([...normalDocs, ...oddDocs] as never[]);
  const normalIds = normalDocs.map((d) => d._id!.toHexString());
  const objectIds = [...normalDocs, ...oddDocs].flatMap((d) => (d._id instanceof Types.ObjectId ? [d._id.toHexString()] : []));
  return { normalIds, objectIds };
}

function shuffled<T>(items: T[], order: Scenario['order']): T[] {
  const keyed = items.map((item) => ({ item, key: order.next().value }));
  return keyed.sort((a, b) => a.key - b.key).map((k) => k.item);
}

/** Every served item has the documented shape: finite counters, an ISO date or null. */
function expectWellFormed(res: Response) {
  for (const item of res.body.vInfos as Array<Record<string, unknown>>) {
    expect(item.vid).toMatch(/^[0-9a-f]{24}$/);
    for (const field of ['likeCount', 'collectCount', 'commentCount', 'shareCount', 'durationSec']) expect({ field, finite: Number.isFinite(item[field]) }).toEqual({ field, finite: true });
    // A negative fake* adjustment may lower what is shown, never below nothing.
    for (const field of ['likeCount', 'commentCount', 'shareCount']) expect({ field, negative: (item[field] as number) < 0 }).toEqual({ field, negative: false });
    for (const field of ['vip', 'coin', 'isAd', 'special']) expect(typeof item[field]).toBe('boolean');
    expect(item.reviewAt === null || (typeof item.reviewAt === 'string' && !Number.isNaN(Date.parse(item.reviewAt)))).toBe(true);
  }
}

describe('odd video documents on every read strategy (R1a, C)', () => {
  it('when documents hold arbitrary BSON values in any field among normal ones, then every strategy and explain answer 200 and serve every normal video', async () => {
    console.info(`odd-documents property seed: ${SEED}`);
    let run = 0;
    await fc.assert(
      fc.asyncProperty(scenario, async (sc) => {
        run++;
        await videos.collection.deleteMany({});
        const { normalIds, objectIds } = await insert(sc);
        const queue = shuffled(objectIds, sc.order);
        const page = (user: string) => request(app).get('/api/app/recommend/vid/list').query({ pageSize: 50 }).set(bearer(user));
        const servesAllNormal = (res: Response, queueVersion: string) => {
          expect(res.status).toBe(200);
          expect(res.body.queueVersion).toBe(queueVersion);
          expectWellFormed(res);
          for (const id of normalIds) expect(vids(res)).toContain(id);
        };

        // ring
        await publishQueue(s.redis, s.keys, V1, queue);
        const explained = await request(app).get('/api/admin/explain').query({ user: `ring-${run}`, pageSize: 50 }).auth(...ADMIN).expect(200);
        const verdicts = new Map((explained.body.candidates as Array<{ vid: string; verdict: string }>).map((c) => [c.vid, c.verdict]));
        for (const id of normalIds) expect(verdicts.get(id)).toBe('serve');
        servesAllNormal(await page(`ring-${run}`), V1);
        expect(await offsetOf(s.redis, s.keys, V1, `u:ring-${run}`)).not.toBeNull();

        // previous-version: current names a version whose queue is gone
        await s.redis.set(s.keys.current, V2);
        await s.redis.set(s.keys.previous, V1);
        servesAllNormal(await page(`previous-${run}`), V1);

        // legacy-set: no version; the set also holds ids that are no ObjectId
        await s.redis.del([s.keys.current, s.keys.previous]);
        await s.redis.sAdd(s.keys.legacyIds, [...queue, 'not-an-id', 'ZZZZZZZZZZZZZZZZZZZZZZZZ', '0123456789ABCDEF01234567']);
        servesAllNormal(await page(`legacy-${run}`), 'legacy');

        // mongo-fallback: no version and no legacy set (first start, or after a FLUSHALL)
        await s.redis.del(s.keys.legacyIds);
        servesAllNormal(await page(`fallback-${run}`), 'fallback');
      }),
      { numRuns: 12, seed: SEED },
    );
  });

  it('when display counters are stored as Decimal128, Int64, double and int32, then each counts by its value; anything else as 0', async () => {
    const doc = {
      ...demoVideo(),
      likeCount: Decimal128.fromString('12'),
      fakeLikeCount: Long.fromNumber(3),
      collectCount: new Double(4.5),
      commentCount: new Int32(7),
      fakeCommentCount: 'lots',
      shareCount: Long.fromBigInt(2n ** 40n),
      fakeShareCount: [1],
      reviewAt: Decimal128.fromString('1780000000000'),
    };
    await videos.collection.insertOne(doc as never);
    const vid = doc._id!.toHexString();
    await publishQueue(s.redis, s.keys, V1, [vid]);
    const res = await request(app).get('/api/app/recommend/vid/list').set(bearer('counters')).expect(200);
    expect(res.body.vInfos).toEqual([
      expect.objectContaining({ vid, likeCount: 15, collectCount: 4.5, commentCount: 7, shareCount: 2 ** 40, reviewAt: new Date(1780000000000).toISOString() }),
    ]);
    const metrics = await api.metrics.registry.getSingleMetricAsString('feed_skipped_videos_total');
    expect(metrics).toMatch(/feed_skipped_videos_total\{reason="non_numeric_field"\} 1\b/);
  });

  it('when eligible documents have an _id that is no ObjectId and nothing is in Redis, then the MongoDB fallback serves the others and counts them', async () => {
    const normal = demoVideo();
    await videos.collection.insertMany([{ ...demoVideo(), _id: 'a-string' }, { ...demoVideo(), _id: 42 }, { ...demoVideo(), _id: { a: 1 } }, normal] as never[]);
    for (let i = 0; i < 3; i++) {
      const res = await request(app).get('/api/app/recommend/vid/list').set(bearer(`first-start-${i}`)).expect(200);
      expect(res.body).toMatchObject({ queueVersion: 'fallback', vInfos: [expect.objectContaining({ vid: normal._id!.toHexString() })] });
    }
    const metrics = await api.metrics.registry.getSingleMetricAsString('feed_skipped_videos_total');
    expect(metrics).toMatch(/feed_skipped_videos_total\{reason="unreadable_id"\} 9\b/);
  });
});

describe('readVideoDocument (R1a)', () => {
  it('when a date cannot be held by a Date (beyond ±8.64e15 ms), then the item has no reviewAt, and the document is still read', () => {
    const read = readVideoDocument({ _id: new Types.ObjectId(), reviewAt: Decimal128.fromString('1E+300'), status: 'approved' });
    expect(read).toMatchObject({ video: { reviewAt: 1e300 }, issue: null });
    expect(toVideoInfo(read.video!).reviewAt).toBeNull();
  });

  it('when a real and a fake counter are each finite but their sum is not, then the item still shows a number (JSON has no Infinity: it would be null)', () => {
    const read = readVideoDocument({ _id: new Types.ObjectId(), status: 'approved', likeCount: Number.MAX_VALUE, fakeLikeCount: new Double(Number.MAX_VALUE) });
    const item = JSON.parse(JSON.stringify(toVideoInfo(read.video!))) as { likeCount: unknown };
    expect(item.likeCount).toBe(Number.MAX_VALUE);
  });
});
