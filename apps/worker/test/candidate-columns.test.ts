/** The build's candidate columns (its storage format) and the domain's pool rules over them. */
import fc from 'fast-check';
import { splitPools } from '@feed/domain';
import { CandidateColumns, type Candidate } from '../src/daily-build/candidate-columns';

describe('CandidateColumns', () => {
  const id = (n: number) => n.toString(16).padStart(24, '0');
  const objectId = fc.uint8Array({ minLength: 12, maxLength: 12 }).map((bytes) => Buffer.from(bytes).toString('hex'));
  const candidate = fc.record({
    id: objectId,
    score: fc.nat({ max: 50 }),
    reviewAt: fc.option(fc.integer({ min: 0, max: 10 }), { nil: null }),
    storedScore: fc.option(fc.nat({ max: 50 }), { nil: null }),
  });

  it('when ids are pushed, then each reads back as the same hex, also past the initial capacity', () => {
    fc.assert(
      fc.property(fc.array(candidate, { maxLength: 200 }), (candidates) => {
        const columns = new CandidateColumns(1);
        for (const c of candidates) columns.push(Buffer.from(c.id, 'hex'), c.score, c.reviewAt, c.storedScore);
        expect(Array.from({ length: columns.length }, (_, i) => columns.idHex(i))).toEqual(candidates.map((c) => c.id));
      }),
    );
  });

  it('when pools are split, then the high pool is the object sort: score desc, reviewAt desc (unknown last), id desc', () => {
    fc.assert(
      fc.property(fc.uniqueArray(candidate, { selector: (c) => c.id, maxLength: 200 }), (candidates) => {
        const columns = CandidateColumns.from(candidates);
        const high = Array.from(splitPools(columns, Date.UTC(2030, 0, 1)).high, (i) => columns.idHex(i));
        const review = (c: Candidate) => c.reviewAt ?? -Infinity;
        const expected = [...candidates]
          .sort((a, b) => b.score - a.score || (review(a) === review(b) ? 0 : review(b) > review(a) ? 1 : -1) || (a.id < b.id ? 1 : -1))
          .map((c) => c.id);
        expect(high).toEqual(expected);
      }),
    );
  });

  it('when scores are compared with the stored ones, then only changed or never-written candidates are returned', () => {
    fc.assert(
      fc.property(fc.array(candidate, { maxLength: 100 }), (candidates) => {
        const columns = CandidateColumns.from(candidates);
        const expected = candidates.flatMap((c, i) => (c.storedScore === null || c.storedScore !== c.score ? [i] : []));
        expect(Array.from(columns.changedScores())).toEqual(expected);
      }),
    );
  });

  it('when ids repeat, then countDuplicateIds counts each repeat once', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(id(1), id(2), id(3), id(0x10000000001)), { maxLength: 50 }), (ids) => {
        const columns = CandidateColumns.from(ids.map((x) => ({ id: x, score: 0, reviewAt: null })));
        expect(columns.countDuplicateIds()).toBe(ids.length - new Set(ids).size);
      }),
    );
  });
});

