/**
 * The video catalogue's shared look-ups: the cache misses of one loop turn's requests are one
 * MongoDB query, an id already being fetched is waited for rather than asked again, and every
 * request gets exactly the videos that exist among its ids, with or without the cache; a page's
 * body, written from its items' memoized JSON, is the bytes of `JSON.stringify(page)`.
 */
import fc from 'fast-check';
import { Types } from 'mongoose';
import { MongoBudget, videoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { pageBody, VideoCatalog, type VideoInfo } from '../src/feed/video-catalog';
import { useTestServices } from '../../../test/support/services';

const s = useTestServices('catalog-batch');
/** FC_SEED when given, a fixed seed in CI, a random one otherwise; printed either way. */
const SEED = Number(process.env.FC_SEED ?? (process.env.CI ? 50 : Math.floor(Math.random() * 2 ** 31)));

let existing: string[];
/** Ids that name no video: a valid ObjectId never inserted, and one that is no ObjectId at all. */
const MISSING = [new Types.ObjectId().toHexString(), 'not-an-object-id'];

beforeAll(async () => {
  const docs = Array.from({ length: 8 }, () => demoVideo());
  await videoModel(s.mongo).insertMany(docs);
  existing = docs.map((d) => d._id!.toHexString());
});

const budget = () => new MongoBudget(10_000);

describe('video look-ups shared by concurrent requests', () => {
  it('when requests ask in the same turn and while a query runs, then each gets exactly its existing videos, and MongoDB is asked once per turn', async () => {
    process.stdout.write(`catalog batch: fast-check seed ${SEED}, 40 runs (replay: FC_SEED=${SEED})\n`);
    const anyId = fc.constantFrom(...existing, ...MISSING);
    // Each request: its ids, and the turn it asks in (0: with the first; 1: while the first query runs).
    const request = fc.record({ ids: fc.array(anyId, { minLength: 1, maxLength: 6 }), late: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 6 }), fc.boolean(), async (requests, cached) => {
        const model = videoModel(s.mongo);
        const find = jest.spyOn(model, 'find');
        try {
          const catalog = new VideoCatalog({ model, ttlMs: cached ? 60_000 : 0 });
          const first = requests.filter((r) => !r.late).map((r) => catalog.load(r.ids, budget()));
          // The late ones ask once the first turn's query was sent, before it is answered.
          await new Promise((resolve) => setImmediate(resolve));
          const late = requests.filter((r) => r.late).map((r) => catalog.load(r.ids, budget()));
          const answers = await Promise.all([...first, ...late]);
          [...requests.filter((r) => !r.late), ...requests.filter((r) => r.late)].forEach((r, i) => {
            expect([...answers[i].keys()].sort()).toEqual([...new Set(r.ids.filter((id) => existing.includes(id)))].sort());
            for (const [id, video] of answers[i]) expect(video._id.toHexString()).toBe(id);
          });
          // One query for the first turn; the late ones ask only for ids the first did not fetch.
          const firstIds = new Set(requests.filter((r) => !r.late).flatMap((r) => r.ids));
          const lateNew = requests.filter((r) => r.late).some((r) => r.ids.some((id) => !firstIds.has(id) && id !== MISSING[1]));
          const firstAsks = [...firstIds].some((id) => id !== MISSING[1]);
          expect(find).toHaveBeenCalledTimes(Number(firstAsks) + Number(lateNew));
        } finally {
          find.mockRestore();
        }
      }),
      { seed: SEED, numRuns: 40 },
    );
  });

  it('when the shared query fails, then every request waiting for it answers 503 and a later request asks again', async () => {
    const model = videoModel(s.mongo);
    const catalog = new VideoCatalog({ model, ttlMs: 60_000 });
    const find = jest.spyOn(model, 'find').mockImplementationOnce(() => {
      throw new Error('MongoDB is gone');
    });
    try {
      const both = await Promise.allSettled([catalog.load([existing[0]], budget()), catalog.load([existing[0], existing[1]], budget())]);
      for (const answer of both) expect(answer).toMatchObject({ status: 'rejected', reason: { status: 503 } });
      expect([...(await catalog.load([existing[0]], budget())).keys()]).toEqual([existing[0]]);
      expect(find).toHaveBeenCalledTimes(2);
    } finally {
      find.mockRestore();
    }
  });
});

describe('the page body', () => {
  it('when items hold any Unicode text, then the body is the bytes of JSON.stringify(page), each item written once from its memo', () => {
    const item = fc.record({ vid: fc.string(), title: fc.string({ unit: 'binary' }), reviewAt: fc.constant(null) }) as fc.Arbitrary<VideoInfo>;
    const page = fc.record({ vInfos: fc.array(item, { maxLength: 5 }), hasNext: fc.boolean(), queueVersion: fc.string({ unit: 'grapheme' }) }, { requiredKeys: ['vInfos'] });
    fc.assert(
      fc.property(page, (p) => {
        // Twice: the second body is written from the memoized item JSON.
        expect([pageBody(p), pageBody(p)].map(String)).toEqual([JSON.stringify(p), JSON.stringify(p)]);
      }),
      { seed: SEED },
    );
  });
});
