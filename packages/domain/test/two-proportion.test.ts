import fc from 'fast-check';
import { criticalZ, estimateProportion, twoProportionTest, twoSidedPValue } from '../src';

/** Fixed seed under CI, a fresh one otherwise; printed so a failure replays. */
const seed = process.env.CI ? 38 : Date.now() % 2 ** 31;
console.log(`two-proportion.test.ts fast-check seed ${seed}`);
const runs = { seed, numRuns: 200 };

/**
 * Known two-proportion results. Row one by hand from the standard formulas:
 * p1 = 45/100 = 0.45, p2 = 30/100 = 0.30, pooled p = 75/200 = 0.375,
 * SE = sqrt(0.375 * 0.625 * (1/100 + 1/100)) = sqrt(0.0046875) = 0.0684653,
 * z = 0.15 / 0.0684653 = 2.190890, p = 2 * (1 - Phi(2.190890)) = 0.028460;
 * unpooled SE = sqrt(0.45*0.55/100 + 0.30*0.70/100) = 0.0674166, difference interval
 * 0.15 +- 1.959964 * 0.0674166 = [0.017430, 0.282570].
 * The other rows are the same formulas evaluated with Python's standard library
 * (statistics.NormalDist().inv_cdf / .cdf, an implementation independent of jstat),
 * Wilson interval (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n).
 */
const KNOWN: Array<{ a: [number, number]; b: [number, number]; confidence: number; z: number; p: number; diff: [number, number]; wilsonA: [number, number]; wilsonB: [number, number] }> = [
  { a: [45, 100], b: [30, 100], confidence: 0.95, z: 2.19089, p: 0.02846, diff: [0.01743, 0.28257], wilsonA: [0.356145, 0.547554], wilsonB: [0.218949, 0.395849] },
  { a: [500, 10000], b: [450, 10000], confidence: 0.95, z: 1.662171, p: 0.096478, diff: [-0.000895, 0.010895], wilsonA: [0.045898, 0.054447], wilsonB: [0.041109, 0.049241] },
  { a: [120, 2000], b: [150, 2000], confidence: 0.95, z: -1.890667, p: 0.058669, diff: [-0.030543, 0.000543], wilsonA: [0.050411, 0.071276], wilsonB: [0.064254, 0.087376] },
  { a: [240, 8000], b: [360, 10000], confidence: 0.95, z: -2.228344, p: 0.025858, diff: [-0.011225, -0.000775], wilsonA: [0.026482, 0.03397], wilsonB: [0.032523, 0.039833] },
  { a: [30, 1000], b: [30, 1000], confidence: 0.95, z: 0, p: 1, diff: [-0.014952, 0.014952], wilsonA: [0.021094, 0.042503], wilsonB: [0.021094, 0.042503] },
  { a: [0, 50], b: [0, 60], confidence: 0.95, z: 0, p: 1, diff: [0, 0], wilsonA: [0, 0.071348], wilsonB: [0, 0.060172] },
  { a: [45, 100], b: [30, 100], confidence: 0.99, z: 2.19089, p: 0.02846, diff: [-0.024226, 0.324226], wilsonA: [0.328977, 0.577245], wilsonB: [0.197461, 0.427428] },
  { a: [500, 10000], b: [430, 10000], confidence: 0.95, z: 2.350695, p: 0.018738, diff: [0.001164, 0.012836], wilsonA: [0.045898, 0.054447], wilsonB: [0.039196, 0.047155] },
];

const close = (actual: number | undefined | null, expected: number) => expect(actual).toBeCloseTo(expected, 5);

describe('two-proportion statistics (R23)', () => {
  it('when the confidence is 95 %, 99 % or 90 %, then the critical z is 1.959964, 2.575829 or 1.644854', () => {
    close(criticalZ(0.95), 1.959964);
    close(criticalZ(0.99), 2.575829);
    close(criticalZ(0.9), 1.644854);
    close(twoSidedPValue(1.959964), 0.05);
  });

  it.each(KNOWN)('when $a is compared with $b at $confidence, then z, p-value and intervals match the known values', (row) => {
    const result = twoProportionTest({ successes: row.a[0], trials: row.a[1] }, { successes: row.b[0], trials: row.b[1] }, row.confidence);
    close(result.z, row.z);
    close(result.pValue, row.p);
    close(result.differenceInterval?.[0], row.diff[0]);
    close(result.differenceInterval?.[1], row.diff[1]);
    close(result.a.interval?.[0], row.wilsonA[0]);
    close(result.a.interval?.[1], row.wilsonA[1]);
    close(result.b.interval?.[0], row.wilsonB[0]);
    close(result.b.interval?.[1], row.wilsonB[1]);
    expect(result.significant).toBe(row.p < 1 - row.confidence);
  });

  it('when a sample has no trials, then its rate and the test are null and nothing is significant', () => {
    const result = twoProportionTest({ successes: 0, trials: 0 }, { successes: 5, trials: 10 });
    expect(result).toMatchObject({ difference: null, z: null, pValue: null, significant: false, a: { rate: null, interval: null } });
    expect(result.b.rate).toBe(0.5);
  });

  it.each([
    [{ successes: 11, trials: 10 }],
    [{ successes: -1, trials: 10 }],
    [{ successes: 1.5, trials: 10 }],
    [{ successes: Number.NaN, trials: 10 }],
  ])('when a sample is %j, then the test refuses it', (bad) => {
    expect(() => twoProportionTest(bad, { successes: 1, trials: 10 })).toThrow(RangeError);
  });

  it('when a rate is 0 or 1, then its interval ends exactly at 0 or 1 (the formula leaves a hair beside it for 0/6 and 9/9)', () => {
    expect(estimateProportion({ successes: 0, trials: 6 }, 0.95).interval?.[0]).toBe(0);
    expect(estimateProportion({ successes: 9, trials: 9 }, 0.95).interval?.[1]).toBe(1);
  });

  it('when the second sample has no trials, then nothing is compared; a refused sample is named', () => {
    expect(twoProportionTest({ successes: 5, trials: 10 }, { successes: 0, trials: 0 })).toMatchObject({ difference: null, z: null, significant: false, b: { rate: null } });
    expect(() => twoProportionTest({ successes: 5, trials: 10 }, { successes: 3, trials: 2 })).toThrow(new RangeError('b must be integers with 0 <= successes <= trials, got 3/2'));
    expect(() => twoProportionTest({ successes: -1, trials: 2 }, { successes: 1, trials: 2 })).toThrow(/^a must be integers/);
    expect(() => estimateProportion({ successes: 1, trials: 0 }, 0.95)).toThrow(/^sample must be integers/);
    expect(() => criticalZ(0)).toThrow(new RangeError('confidence must be inside (0, 1), got 0'));
  });

  it('when the confidence is not inside (0, 1), then it is refused', () => {
    expect(() => criticalZ(1)).toThrow(RangeError);
    expect(() => estimateProportion({ successes: 1, trials: 2 }, 0)).toThrow(RangeError);
  });

  it('when samples are drawn at random, then the rate lies in its interval, the interval in [0, 1], and swapping the samples negates z', () => {
    const sample = fc.integer({ min: 1, max: 1_000_000 }).chain((trials) => fc.record({ successes: fc.integer({ min: 0, max: trials }), trials: fc.constant(trials) }));
    fc.assert(
      fc.property(sample, sample, fc.double({ min: 0.5, max: 0.999, noNaN: true }), (a, b, confidence) => {
        const ab = twoProportionTest(a, b, confidence);
        const ba = twoProportionTest(b, a, confidence);
        for (const e of [ab.a, ab.b]) {
          const [low, high] = e.interval ?? [Number.NaN, Number.NaN];
          expect(low).toBeGreaterThanOrEqual(0);
          expect(high).toBeLessThanOrEqual(1);
          expect(e.rate).toBeGreaterThanOrEqual(low - 1e-12);
          expect(e.rate).toBeLessThanOrEqual(high + 1e-12);
        }
        expect(ab.z).toBeCloseTo(-(ba.z ?? 0), 9);
        expect(ab.pValue).toBeGreaterThanOrEqual(0);
        expect(ab.pValue).toBeLessThanOrEqual(1 + 1e-12);
        // Significant exactly when |z| is past the critical value.
        if (Math.abs(Math.abs(ab.z ?? 0) - ab.criticalZ) > 1e-9) expect(ab.significant).toBe(Math.abs(ab.z ?? 0) > ab.criticalZ);
      }),
      runs,
    );
  });
});
