import fc from 'fast-check';
import { Decimal128, ObjectId } from 'bson';
import { Store } from '../src/store';

/** A fixed seed in CI (replayable), a random one otherwise, printed either way. */
const SEED = process.env.CI ? 34 : Math.floor(Math.random() * 2 ** 31);

/** Values of several BSON types, with many ties (the order between types and the stable tie-break both matter). */
const value = fc.oneof(
  fc.integer({ min: 0, max: 5 }),
  fc.integer({ min: 0, max: 5 }).map((n) => new Date(1_700_000_000_000 + n * 1000)),
  fc.constantFrom('a', 'b', ''),
  fc.constant(null),
  fc.constant(undefined),
  fc.constant(Decimal128.fromString('2.5')),
  fc.boolean(),
);

describe('embedded find with a sort and a limit', () => {
  it('when a sort has a limit smaller than the matches, then the answer is the full sort cut at the limit (ties in insertion order)', () => {
    console.info(`sort-limit property seed: ${SEED}`);
    fc.assert(
      fc.property(
        fc.array(fc.record({ a: value, b: value, status: fc.constantFrom('approved', 'pending') }), { minLength: 0, maxLength: 200, size: 'max' }),
        fc.constantFrom<Record<string, 1 | -1>>({ a: -1 }, { a: 1 }, { a: -1, b: 1 }, { b: 1, a: -1 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 0, max: 3 }),
        (docs, sort, limit, skip) => {
          const collection = new Store().db('t').ensure('c').collection;
          for (const doc of docs) collection.insert({ _id: new ObjectId(), ...Object.fromEntries(Object.entries(doc).filter(([, v]) => v !== undefined)) });
          const filter = { status: 'approved' };
          const ids = (found: Array<{ _id?: unknown }>) => found.map((d) => String(d._id));
          const full = collection.find(filter, { sort }).slice(skip, skip + limit);
          expect(ids(collection.find(filter, { sort, limit, skip }))).toEqual(ids(full));
        },
      ),
      { numRuns: 200, seed: SEED },
    );
  });
});
