import fc from 'fast-check';
import { Decimal128, Int32, Long, ObjectId, type Document } from 'bson';
import { Query } from 'mingo';
import { Store } from '../src/store';

/** A fixed seed in CI (replayable), a random one otherwise, printed either way. */
const SEED = process.env.CI ? 49 : Math.floor(Math.random() * 2 ** 31);

const ids = [new ObjectId('000000000000000000000001'), new ObjectId('000000000000000000000002')];
/** What a filter may pin: ObjectIds, their hex strings (never equal to them), numbers, booleans, strings. */
const scalar = fc.oneof(fc.constantFrom(...ids), fc.constantFrom(...ids.map((id) => id.toHexString())), fc.constantFrom(0, -0, 1, 2, NaN), fc.boolean(), fc.constantFrom('u', ''));
/** What a document may hold: those, nothing, null, arrays of them, other BSON types, a subdocument. */
const stored = fc.oneof(
  scalar,
  scalar,
  fc.constantFrom(null, undefined),
  fc.array(scalar, { maxLength: 3 }),
  fc.constantFrom(new Date(0), Decimal128.fromString('1'), Long.fromNumber(1), new Int32(1)),
  fc.record({ x: scalar }).map((sub) => ({ ...sub })),
);
const condition = fc.oneof(scalar, scalar.map(($eq) => ({ $eq })), scalar.map(($ne) => ({ $ne })), fc.constant({ $eq: null }), fc.array(scalar, { maxLength: 2 }).map(($in) => ({ $in })));
const fields = ['userId', 'videoId', 'active'];

describe('embedded filter matching', () => {
  it('when a filter of equalities, $eq, $ne and $in meets documents of any type (a record key lookup included), then the matches are those of mingo alone', () => {
    console.info(`filter-match property seed: ${SEED}`);
    fc.assert(
      fc.property(fc.array(fc.dictionary(fc.constantFrom(...fields), stored), { maxLength: 6 }), fc.dictionary(fc.constantFrom(...fields), condition, { minKeys: 1 }), fc.boolean(), (docs, filter, keyed) => {
        const collection = new Store().db('t').ensure('c').collection;
        // The record's unique key: a filter pinning both fields is answered from its map.
        if (keyed) collection.createIndex({ name: 'userId_1_videoId_1', key: { userId: 1, videoId: 1 }, unique: true });
        docs.forEach((doc, i) => {
          try {
            collection.insert({ _id: i, ...Object.fromEntries(Object.entries(doc).filter(([, v]) => v !== undefined)) });
          } catch {
            // a duplicate key: the document is not stored
          }
        });
        const query = new Query(filter);
        const expected = collection.all().filter((doc: Document) => query.test(doc)).map((doc) => doc._id as number);
        expect(collection.match(filter).map((doc) => doc._id as number)).toEqual(expected);
      }),
      { numRuns: 5_000, seed: SEED },
    );
  });
});
