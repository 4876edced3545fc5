import fc from 'fast-check';
import { mongo, Types } from 'mongoose';
import { MAX_RECOMMEND_SCORE, recommendScore } from '@feed/domain';
import { CandidateColumns } from '../src/daily-build/candidate-columns';
import { pushRawCandidate } from '../src/daily-build/read-candidates';

const { BSON, Binary, BSONRegExp, BSONSymbol, Code, Decimal128, Double, Int32, Long, MaxKey, MinKey, Timestamp } = mongo;

const number = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(0, -1, 2 ** 53, -(2 ** 60), Number.MAX_VALUE, NaN, Infinity, -Infinity));

/** Every numeric BSON type the driver writes. */
const numeric = fc.oneof(
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map((n) => new Int32(n)),
  number.map((n) => new Double(n)),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => Long.fromBigInt(n)),
  number.map((n) => Decimal128.fromString(Number.isFinite(n) ? n.toExponential() : Number.isNaN(n) ? 'NaN' : n > 0 ? 'Infinity' : '-Infinity')),
);

/** Every other BSON type the driver writes: each counts as 0 (R1a). */
const other = fc.oneof(
  fc.string(),
  fc.boolean(),
  fc.constant(null),
  fc.date({ noInvalidDate: true }),
  fc.constant(new Types.ObjectId()),
  fc.uint8Array({ maxLength: 8 }).map((bytes) => new Binary(bytes)),
  fc.constant(new BSONRegExp('^a.*', 'i')),
  fc.constant(new Code('function () {}')),
  fc.constant(new Code('function () { return x; }', { x: 1 })),
  fc.constant(new BSONSymbol('sym')),
  fc.constant(new Timestamp({ t: 1, i: 2 })),
  fc.constant(new MinKey()),
  fc.constant(new MaxKey()),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.record({ nested: fc.integer() }),
);

const value = fc.oneof(numeric, other, fc.constant(undefined));

const video = fc.record({
  recommendLikeCount: value,
  recommendCollectCount: value,
  recommendCommentCount: value,
  recommendShareCount: value,
  recommendScore: value,
  recommendScoreAt: value,
  reviewAt: value,
  // Fields the projection would drop: the reader steps over whatever else is there.
  title: value,
  tags: value,
});

/** A value as the build reads it (R1a), from the driver's own deserialisation: numbers by value, the rest null. */
function byValue(deserialised: unknown): number | null {
  // promoteLongs leaves an int64 beyond 2^53 a Long: still a number by value. (A Timestamp is a
  // Long subclass to the driver, but not a numeric type to R1a.)
  const n =
    typeof deserialised === 'number'
      ? deserialised
      : deserialised instanceof Long && !(deserialised instanceof Timestamp)
        ? deserialised.toNumber()
        : deserialised instanceof Decimal128
          ? Number(deserialised.toString())
          : null;
  return n !== null && Number.isFinite(n) ? n : null;
}

describe('pushRawCandidate (R1a)', () => {
  it('when a raw BSON video holds any BSON type in any field, then id, score, review time and stored score follow the driver\'s deserialisation', () => {
    fc.assert(
      fc.property(video, (fields) => {
        const doc = { _id: new Types.ObjectId(), ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) };
        const bytes = BSON.serialize(doc);
        const reference = BSON.deserialize(bytes, { promoteLongs: true, promoteValues: true });
        const columns = new CandidateColumns(1);
        const issue = pushRawCandidate(columns, bytes);
        expect(columns.length).toBe(1);
        expect(columns.idHex(0)).toBe(doc._id.toHexString());
        const counters = ['recommendLikeCount', 'recommendCollectCount', 'recommendCommentCount', 'recommendShareCount'] as const;
        const counted = Object.fromEntries(counters.map((c) => [c, byValue(reference[c]) ?? 0]));
        expect(columns.scores[0]).toBe(recommendScore(counted));
        // A score is always finite (R23): counters like 1e308 saturate, and the document is counted.
        expect(Number.isFinite(columns.scores[0])).toBe(true);
        const saturated = columns.scores[0] === MAX_RECOMMEND_SCORE;
        const reviewAt = reference.reviewAt instanceof Date ? reference.reviewAt.getTime() : 'reviewAt' in reference ? (byValue(reference.reviewAt) ?? 0) : -Infinity;
        expect(columns.reviewAt[0]).toBe(reviewAt);
        const scoreAt = reference.recommendScoreAt instanceof Date || byValue(reference.recommendScoreAt) !== null;
        const stored = reference.recommendScore instanceof Date ? null : byValue(reference.recommendScore);
        expect(columns.storedScores[0]).toBe(scoreAt && stored !== null ? stored : NaN);
        const odd = [...counters, 'reviewAt' as const].some((f) => f in reference && !(f === 'reviewAt' && reference[f] instanceof Date) && byValue(reference[f] instanceof Date ? null : reference[f]) === null);
        expect(issue).toBe(saturated ? 'saturated-score' : odd ? 'non-numeric-field' : null);
      }),
      { numRuns: 500 },
    );
  });

  it('when the _id is not an ObjectId, then the document is skipped and reported', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.record({ a: fc.integer() })), (id) => {
        const columns = new CandidateColumns(1);
        expect(pushRawCandidate(columns, BSON.serialize({ _id: id, recommendLikeCount: 5 }))).toBe('unreadable-id');
        expect(columns.length).toBe(0);
      }),
    );
  });

  it('when an element has a type no BSON spec defines, then the document is skipped as unreadable', () => {
    const bytes = Buffer.from(BSON.serialize({ _id: new Types.ObjectId(), recommendLikeCount: new Int32(1) }));
    // The type byte of the second element (after the 4-byte length, _id's type, name and 12 bytes).
    bytes[4 + 1 + 4 + 12] = 0x42;
    const columns = new CandidateColumns(1);
    expect(pushRawCandidate(columns, bytes)).toBe('unreadable-document');
    expect(columns.length).toBe(0);
  });
});
