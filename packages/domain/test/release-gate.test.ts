import fc from 'fast-check';
import { DEFAULT_HOLD_DROP, judgeRelease, releaseFigures, type ReleaseFigures, type ReleaseMetaFields } from '../src';

const seed = process.env.CI ? 38 : Date.now() % 2 ** 31;
console.log(`release-gate.test.ts fast-check seed ${seed}`);
const runs = { seed, numRuns: 300 };

/** A meta as the build records it: `blocks` full 17+3 blocks and a short last one. */
const meta = (version: string, length: number, over: Partial<ReleaseMetaFields> = {}): ReleaseMetaFields => {
  const full = Math.floor(length / 20);
  const rest = length - full * 20;
  const blocks = [{ count: full, high: 17, fresh: 3 }, ...(rest ? [{ count: 1, high: rest, fresh: 0 }] : [])].filter((b) => b.count > 0);
  return { version, length, candidateCount: length, newCount: full * 3, duplicateCount: 0, blocks, ...over };
};

const current = releaseFigures(meta('20260723', 10_000));

describe('releaseFigures (R23)', () => {
  it('when read from a meta, then the figures are length, candidates, 17+3 share, duplicate rate and fresh videos', () => {
    expect(releaseFigures(meta('20260724', 1010, { duplicateCount: 2 }))).toEqual({
      version: '20260724',
      length: 1010,
      candidateCount: 1010,
      fullBlockRatio: 50 / 51,
      duplicateCount: 2,
      duplicateRate: 2 / 1010,
      freshCount: 150,
    });
    expect(releaseFigures(meta('20260724', 0)).duplicateRate).toBe(0);
  });
});

describe('judgeRelease (R23 gated switch)', () => {
  it('when the catalogue was cut by 80 %, then the version is held for its length and candidate count, each figure beside current', () => {
    const verdict = judgeRelease(releaseFigures(meta('20260724', 2000)), current);
    expect(verdict).toMatchObject({ hold: true, outcome: 'hold', holdDrop: DEFAULT_HOLD_DROP });
    expect(verdict.reasons.map((r) => r.code)).toEqual(['length-drop', 'candidate-drop']);
    expect(verdict.reasons[0].message).toContain('80 %');
    expect(verdict.compared.find((c) => c.figure === 'length')).toEqual({ figure: 'length', next: 2000, current: 10_000, change: -0.8, holds: true });
    expect(verdict.compared.map((c) => c.figure)).toEqual(['length', 'candidateCount', 'fullBlockRatio', 'duplicateRate', 'freshCount']);
  });

  it('when the drop is exactly the hold share, then it switches; one video more lost, then it is held', () => {
    expect(judgeRelease(releaseFigures(meta('20260724', 5000)), current).outcome).toBe('pass');
    expect(judgeRelease(releaseFigures(meta('20260724', 4999)), current).outcome).toBe('hold');
  });

  it('when only the candidate count fell (the queue kept its length), then it is held for the candidates', () => {
    const verdict = judgeRelease(releaseFigures(meta('20260724', 10_000, { candidateCount: 3000 })), current);
    expect(verdict.reasons.map((r) => r.code)).toEqual(['candidate-drop']);
  });

  it('when the new version has a single duplicate, then it is held even though it grew', () => {
    const verdict = judgeRelease(releaseFigures(meta('20260724', 12_000, { duplicateCount: 1 })), current);
    expect(verdict).toMatchObject({ hold: true, reasons: [{ code: 'duplicates' }] });
    expect(verdict.compared.find((c) => c.figure === 'duplicateRate')?.holds).toBe(true);
  });

  it('when nothing is current, then the first version is never held, whatever its figures', () => {
    const verdict = judgeRelease(releaseFigures(meta('20260724', 3, { duplicateCount: 1 })), null);
    expect(verdict).toMatchObject({ hold: false, outcome: 'first-version', current: null });
    expect(verdict.reasons.map((r) => r.code)).toEqual(['duplicates']);
    expect(verdict.compared.every((c) => c.current === null && c.change === null)).toBe(true);
  });

  it('when on-call skips the gate for a forced rebuild, then it switches and the verdict names who and what it overruled', () => {
    const verdict = judgeRelease(releaseFigures(meta('20260724', 100)), current, { skip: { by: 'alice@host' } });
    expect(verdict).toMatchObject({ hold: false, outcome: 'skipped', skippedBy: 'alice@host' });
    expect(verdict.reasons.map((r) => r.code)).toEqual(['length-drop', 'candidate-drop']);
  });

  it('when the new meta has an unreadable figure, then it is held; an unreadable current figure is not compared', () => {
    const broken: ReleaseFigures = { ...releaseFigures(meta('20260724', 10_000)), length: Number.NaN };
    expect(judgeRelease(broken, current)).toMatchObject({ hold: true, reasons: [{ code: 'unreadable' }] });
    const corruptCurrent: ReleaseFigures = { ...current, length: Number.NaN };
    const verdict = judgeRelease(releaseFigures(meta('20260724', 100)), corruptCurrent);
    expect(verdict.reasons.map((r) => r.code)).toEqual(['candidate-drop']);
    expect(verdict.compared[0]).toMatchObject({ figure: 'length', current: null, holds: false });
  });

  it('when current was empty, then no drop is measured from it', () => {
    const empty = releaseFigures(meta('20260723', 0));
    expect(judgeRelease(releaseFigures(meta('20260724', 0)), empty).outcome).toBe('pass');
  });

  it('when holdDrop is outside [0, 1], then it is refused', () => {
    expect(() => judgeRelease(current, current, { holdDrop: 1.5 })).toThrow(RangeError);
    expect(() => judgeRelease(current, current, { holdDrop: Number.NaN })).toThrow(RangeError);
  });

  it('when holdDrop is at an end of [0, 1], then it is taken: 0 holds on any drop, 1 never holds on a drop', () => {
    const smaller = releaseFigures(meta('20260724', 9_980));
    expect(judgeRelease(smaller, current, { holdDrop: 0 }).outcome).toBe('hold');
    expect(judgeRelease(smaller, current, { holdDrop: 1 }).outcome).toBe('pass');
    expect(() => judgeRelease(current, current, { holdDrop: -0.01 })).toThrow(RangeError);
  });

  it('when a version passes, then no compared figure is marked as holding', () => {
    const verdict = judgeRelease(releaseFigures(meta('20260724', 10_020)), current);
    expect(verdict.outcome).toBe('pass');
    expect(verdict.compared.filter((c) => c.holds)).toEqual([]);
  });

  it('when a figure is negative or infinite, then it is unreadable and never measured as a drop', () => {
    const negative: ReleaseFigures = { ...releaseFigures(meta('20260724', 10_000)), length: -1 };
    expect(judgeRelease(negative, current).reasons.map((r) => r.code)).toEqual(['unreadable']);
    const infiniteCurrent: ReleaseFigures = { ...current, candidateCount: Number.POSITIVE_INFINITY };
    expect(judgeRelease(releaseFigures(meta('20260724', 10_000)), infiniteCurrent).outcome).toBe('pass');
  });

  it('when figures and holdDrop are drawn at random, then it holds exactly when a drop exceeds holdDrop or a duplicate exists', () => {
    const figures = fc.record({ length: fc.nat({ max: 20_000 }), candidateCount: fc.nat({ max: 20_000 }), duplicateCount: fc.nat({ max: 3 }) });
    fc.assert(
      fc.property(figures, figures, fc.double({ min: 0, max: 1, noNaN: true }), (n, c, holdDrop) => {
        const next = releaseFigures(meta('20260724', n.length, n));
        const cur = releaseFigures(meta('20260723', c.length, c));
        const expected = n.length < c.length * (1 - holdDrop) || n.candidateCount < c.candidateCount * (1 - holdDrop) || n.duplicateCount > 0;
        const verdict = judgeRelease(next, cur, { holdDrop });
        expect(verdict.hold).toBe(expected);
        expect(verdict.reasons.length > 0).toBe(expected);
      }),
      runs,
    );
  });
});
