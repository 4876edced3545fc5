import fc from 'fast-check';
import { DEFAULT_STEP_GUARDS, emptyReadout, judgeStep, stepGuards, type StepReadout, type VariantCounts } from '../src';

const seed = process.env.CI ? 38 : Date.now() % 2 ** 31;
console.log(`ramp-judge.test.ts fast-check seed ${seed}`);
const runs = { seed, numRuns: 300 };

/** A variant's counts from rates per view / per request (rounded to whole counts). */
function counts(views: number, rates: Partial<Record<'likes' | 'collects' | 'shares' | 'notInterested', number>> = {}, requests = views / 5, health: Partial<Record<'serverErrors' | 'degradations' | 'emptyPages', number>> = {}): VariantCounts {
  const per = (rate = 0, of: number) => Math.round(rate * of);
  return {
    requests,
    serverErrors: per(health.serverErrors ?? 0.001, requests),
    degradations: per(health.degradations ?? 0.002, requests),
    emptyPages: per(health.emptyPages ?? 0.001, requests),
    views,
    likes: per(rates.likes ?? 0.05, views),
    collects: per(rates.collects ?? 0.02, views),
    shares: per(rates.shares ?? 0.01, views),
    notInterested: per(rates.notInterested ?? 0.03, views),
  };
}

const guard = (readout: StepReadout, name: string) => judgeStep(readout).guards.find((g) => g.guard === name);

describe('judgeStep (R23 ramp step judge)', () => {
  it('when both variants have the same rates and enough views, then the step passes with each guard\'s samples, rates and intervals', () => {
    const verdict = judgeStep({ ring: counts(20_000), legacy: counts(200_000) });
    expect(verdict).toMatchObject({ outcome: 'pass', reasons: [], confidence: 0.95, perTestConfidence: 1 - 0.05 / 4 });
    expect(verdict.guards.map((g) => g.guard)).toEqual(['server-errors', 'degradations', 'empty-pages', 'likes', 'collects', 'shares', 'not-interested']);
    const likes = verdict.guards.find((g) => g.guard === 'likes');
    expect(likes).toMatchObject({ outcome: 'pass', ring: { successes: 1000, trials: 20_000, rate: 0.05 }, legacy: { successes: 10_000, trials: 200_000, rate: 0.05 }, difference: 0, z: 0, pValue: 1 });
    expect(likes?.ring?.interval?.[0]).toBeLessThan(0.05);
    expect(likes?.ring?.interval?.[1]).toBeGreaterThan(0.05);
  });

  it('when the ring\'s like rate is lower with enough views, then the step fails on likes', () => {
    const verdict = judgeStep({ ring: counts(20_000, { likes: 0.04 }), legacy: counts(200_000) });
    expect(verdict.outcome).toBe('fail');
    expect(verdict.reasons).toHaveLength(1);
    expect(verdict.reasons[0]).toMatch(/^likes: .*lower beyond chance/);
    expect(verdict.guards.find((g) => g.guard === 'likes')?.pValue).toBeLessThan(0.0125);
  });

  it('when the ring\'s like rate is higher, then the step passes (only worse fails)', () => {
    expect(judgeStep({ ring: counts(20_000, { likes: 0.07 }), legacy: counts(200_000) }).outcome).toBe('pass');
  });

  it('when "not interested" is higher on the ring, then the step fails; lower, it passes', () => {
    expect(judgeStep({ ring: counts(20_000, { notInterested: 0.04 }), legacy: counts(200_000) }).reasons[0]).toMatch(/^not-interested: .*higher/);
    expect(judgeStep({ ring: counts(20_000, { notInterested: 0.02 }), legacy: counts(200_000) }).outcome).toBe('pass');
  });

  it('when a variant answered exactly minRequests, then the operational guards judge it; one fewer, they wait', () => {
    expect(judgeStep({ ring: counts(20_000, {}, 2000), legacy: counts(200_000) }).outcome).toBe('pass');
    const short = judgeStep({ ring: counts(20_000, {}, 1999), legacy: counts(200_000) });
    expect(short.outcome).toBe('wait');
    expect(short.reasons).toContain('server-errors: ring answered fewer than 2000 requests');
  });

  it('when the ring\'s error rate is above legacy\'s by exactly the margin, then it passes; by more, it fails', () => {
    const legacy = counts(200_000, {}, 40_000, { serverErrors: 0 });
    // 10 of 2000 is 0.005 exactly, the default server-errors margin.
    expect(guard({ ring: counts(20_000, {}, 2000, { serverErrors: 0.005 }), legacy }, 'server-errors')?.outcome).toBe('pass');
    const over = judgeStep({ ring: counts(20_000, {}, 2000, { serverErrors: 0.0055 }), legacy });
    expect(over.outcome).toBe('fail');
    expect(over.reasons[0]).toMatch(/^server-errors: server-errors rate 0.55 % on the ring is above legacy's 0 % by more than 0.5 %/);
  });

  it('when a variant has fewer views than the minimum, then the step waits even with a far lower like rate', () => {
    const verdict = judgeStep({ ring: counts(19_999, { likes: 0.01 }, 4000), legacy: counts(200_000) });
    expect(verdict.outcome).toBe('wait');
    expect(verdict.reasons).toContain('likes: ring had fewer than 20000 views');
    expect(verdict.guards.find((g) => g.guard === 'likes')).toMatchObject({ outcome: 'underpowered', ring: { trials: 19_999 } });
  });

  it('when the ring\'s 5xx rate exceeds legacy\'s by more than the margin, then the step fails; within the margin, it passes', () => {
    const bad = judgeStep({ ring: counts(20_000, {}, 4000, { serverErrors: 0.007 }), legacy: counts(200_000, {}, 40_000, { serverErrors: 0.001 }) });
    expect(bad.outcome).toBe('fail');
    expect(bad.reasons[0]).toMatch(/^server-errors: /);
    const within = judgeStep({ ring: counts(20_000, {}, 4000, { serverErrors: 0.005 }), legacy: counts(200_000, {}, 40_000, { serverErrors: 0.001 }) });
    expect(within.outcome).toBe('pass');
    expect(within.guards[0]).toMatchObject({ guard: 'server-errors', margin: 0.005, outcome: 'pass' });
  });

  it('when degradations or empty pages exceed legacy\'s by more than their margin, then the step fails on them', () => {
    const verdict = judgeStep({ ring: counts(20_000, {}, 4000, { degradations: 0.05, emptyPages: 0.05 }), legacy: counts(200_000) });
    expect(verdict.reasons.map((r) => r.split(':')[0])).toEqual(['degradations', 'empty-pages']);
  });

  it('when too few requests were answered, then the operational guards wait', () => {
    expect(guard({ ring: counts(20_000, {}, 1999), legacy: counts(200_000) }, 'server-errors')?.outcome).toBe('underpowered');
    expect(guard({ ring: counts(20_000, {}, 2000), legacy: counts(200_000) }, 'server-errors')?.outcome).toBe('pass');
  });

  it('when one guard fails and another is underpowered, then the step fails (a failure is not undone by waiting)', () => {
    const verdict = judgeStep({ ring: counts(20_000, { likes: 0.04 }, 100), legacy: counts(200_000) });
    expect(verdict.outcome).toBe('fail');
  });

  it('when a difference is significant at 95 % alone but not after splitting 95 % over four tests, then only the single-guard judge fails it', () => {
    // 240/8000 vs 360/10000: z = -2.228, p = 0.0259 (two-proportion.test.ts's table).
    const readout: StepReadout = { ring: { ...counts(8000, {}, 2000), likes: 240 }, legacy: { ...counts(10_000), likes: 360 } };
    const small = { minViews: 8000 };
    expect(judgeStep(readout, stepGuards(small)).outcome).toBe('pass');
    expect(judgeStep(readout, stepGuards({ ...small, engagement: ['likes'] })).outcome).toBe('fail');
  });

  it.each([
    ['NaN views', (r: StepReadout) => ({ ...r, ring: { ...r.ring, views: Number.NaN } })],
    ['more likes than views', (r: StepReadout) => ({ ...r, legacy: { ...r.legacy, likes: r.legacy.views + 1 } })],
    ['negative errors', (r: StepReadout) => ({ ...r, ring: { ...r.ring, serverErrors: -1 } })],
  ])('when the readout has %s, then the step waits and names the count', (_, spoil) => {
    const verdict = judgeStep(spoil({ ring: counts(20_000), legacy: counts(200_000) }));
    expect(verdict.outcome).toBe('wait');
    expect(verdict.reasons.join(' ')).toMatch(/is no rate/);
  });

  it('when nothing was counted yet, then the step waits', () => {
    expect(judgeStep(emptyReadout()).outcome).toBe('wait');
  });

  it('when guards are out of range, then stepGuards refuses them and fills the rest from the defaults', () => {
    expect(() => stepGuards({ confidence: 1 })).toThrow(new RangeError('confidence must be within [0.5, 1), got 1'));
    expect(() => stepGuards({ confidence: 0.49 })).toThrow(RangeError);
    expect(() => stepGuards({ minViews: 0 })).toThrow(new RangeError('minViews must be a positive integer, got 0'));
    expect(() => stepGuards({ minRequests: 2.5 })).toThrow(RangeError);
    expect(() => stepGuards({ margins: { ...DEFAULT_STEP_GUARDS.margins, degradations: -0.1 } })).toThrow(new RangeError('margin of degradations must be within [0, 1], got -0.1'));
    expect(() => stepGuards({ margins: { ...DEFAULT_STEP_GUARDS.margins, degradations: 1.01 } })).toThrow(RangeError);
    expect(() => stepGuards({ engagement: ['likes', 'comments' as never] })).toThrow(new RangeError('unknown engagement guard comments'));
    // The ends of each range are taken.
    expect(stepGuards({ confidence: 0.5, minViews: 1, minRequests: 1, margins: { 'server-errors': 0, degradations: 1, 'empty-pages': 0 } })).toMatchObject({ confidence: 0.5, minViews: 1 });
    expect(stepGuards({ minViews: 10 })).toEqual({ ...DEFAULT_STEP_GUARDS, minViews: 10 });
  });

  it('when the ring is no worse than legacy on every count, then the step never fails, whatever the sizes', () => {
    const rate = fc.double({ min: 0, max: 0.2, noNaN: true });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 500_000 }), fc.integer({ min: 1, max: 500_000 }), fc.array(rate, { minLength: 7, maxLength: 7 }), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 7, maxLength: 7 }), (ringViews, legacyViews, legacyRates, shift) => {
        const [l, c, s, n, e, d, p] = legacyRates;
        // The ring: engagement rates at or above legacy's, "not interested" and health rates at or below.
        const up = (x: number, k: number) => Math.min(1, x * (1 + shift[k]));
        const down = (x: number, k: number) => x * (1 - shift[k]);
        const ring = counts(ringViews, { likes: up(l, 0), collects: up(c, 1), shares: up(s, 2), notInterested: down(n, 3) }, ringViews, { serverErrors: down(e, 4), degradations: down(d, 5), emptyPages: down(p, 6) });
        const legacy = counts(legacyViews, { likes: l, collects: c, shares: s, notInterested: n }, legacyViews, { serverErrors: e, degradations: d, emptyPages: p });
        // Rounding to whole counts can tip a ring rate just past legacy's: allow one count either way.
        ring.likes = Math.max(ring.likes, Math.ceil((legacy.likes / legacyViews) * ringViews));
        ring.collects = Math.max(ring.collects, Math.ceil((legacy.collects / legacyViews) * ringViews));
        ring.shares = Math.max(ring.shares, Math.ceil((legacy.shares / legacyViews) * ringViews));
        ring.notInterested = Math.min(ring.notInterested, Math.floor((legacy.notInterested / legacyViews) * ringViews));
        for (const k of ['likes', 'collects', 'shares'] as const) ring[k] = Math.min(ring[k], ringViews);
        expect(judgeStep({ ring, legacy }).outcome).not.toBe('fail');
      }),
      runs,
    );
  });
});
