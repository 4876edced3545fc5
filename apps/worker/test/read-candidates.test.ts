import fc from 'fast-check';
import { mongo, Types } from 'mongoose';
import { CandidateColumns, recommendScore } from '@feed/domain';
import { pushRawCandidate } from '../src/daily-build/read-candidates';

const { BSON, Double, Int32, Long } = mongo;

/** A counter as MongoDB may hold it: any numeric BSON type, null, a non-number, or absent. */
const counter = fc.oneof(
  fc.integer({ min: -5, max: 1000 }).map((n) => new Int32(n)),
  fc.double({ min: -5, max: 1e6, noNaN: true }).map((n) => new Double(n)),
  fc.integer({ min: 0, max: 2 ** 40 }).map((n) => Long.fromNumber(n)),
  fc.constant(null),
  fc.constant('12'),
  fc.constant(undefined),
);
const date = fc.option(fc.date({ min: new Date(0), max: new Date('2100-01-01'), noInvalidDate: true }), { nil: undefined });

const video = fc.record({
  recommendLikeCount: counter,
  recommendCollectCount: counter,
  recommendCommentCount: counter,
  recommendShareCount: counter,
  recommendScore: fc.option(fc.integer({ min: 0, max: 1e6 }), { nil: undefined }),
  recommendScoreAt: date,
  reviewAt: date,
  // Fields the projection would drop: the reader skips whatever else is there.
  title: fc.option(fc.string(), { nil: undefined }),
  tags: fc.option(fc.array(fc.string(), { maxLength: 3 }), { nil: undefined }),
});

/** The document as the driver would deserialise it: the reference the raw reader must match. */
const plain = (doc: Record<string, unknown>) => BSON.deserialize(BSON.serialize(doc), { promoteLongs: true, promoteValues: true });

describe('pushRawCandidate', () => {
  it('when a raw BSON video is read, then id, score, review time and stored score equal the deserialised document', () => {
    fc.assert(
      fc.property(video, (fields) => {
        const doc = { _id: new Types.ObjectId(), ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) };
        const columns = new CandidateColumns(1);
        pushRawCandidate(columns, BSON.serialize(doc));
        const reference = plain(doc);
        expect(columns.idHex(0)).toBe(doc._id.toHexString());
        expect(columns.scores[0]).toBe(recommendScore(reference));
        expect(columns.reviewAt[0]).toBe(reference.reviewAt instanceof Date ? reference.reviewAt.getTime() : -Infinity);
        const stored = reference.recommendScoreAt instanceof Date && typeof reference.recommendScore === 'number' ? reference.recommendScore : NaN;
        expect(columns.storedScores[0]).toBe(stored);
      }),
    );
  });
});
