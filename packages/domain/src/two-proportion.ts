/**
 * SPEC R23: the statistics a ramp step is judged by (jstat gives the normal's quantile and CDF):
 * - a rate's interval is Wilson's (sound for small rates, where Wald's dips below 0);
 * - two rates: the pooled two-proportion z-test,
 *   z = (p1 - p2) / sqrt(p(1 - p)(1/n1 + 1/n2)) with p = (x1 + x2) / (n1 + n2), two-sided;
 * - the difference's interval is unpooled Wald, p1 - p2 +- z * sqrt(p1q1/n1 + p2q2/n2).
 */
import { jStat } from 'jstat';

/** Counted successes out of counted trials, e.g. likes out of views. */
export interface ProportionSample {
  successes: number;
  trials: number;
}

/** A closed interval [low, high]. */
export type Interval = [low: number, high: number];

/** One rate with its interval at the test's confidence; `rate` and `interval` are null with no trials. */
export interface ProportionEstimate extends ProportionSample {
  rate: number | null;
  interval: Interval | null;
}

/** The comparison of sample `a` (the ring) with sample `b` (legacy). */
export interface TwoProportionResult {
  a: ProportionEstimate;
  b: ProportionEstimate;
  /** The confidence the intervals and `significant` are stated at, e.g. 0.95. */
  confidence: number;
  /** The two-sided critical value for `confidence` (1.959964 at 0.95). */
  criticalZ: number;
  /** a.rate - b.rate; null when either has no trials. */
  difference: number | null;
  differenceInterval: Interval | null;
  /** The pooled z statistic (0 when both rates are equal, also when both are 0 or 1); null when either has no trials. */
  z: number | null;
  /** Two-sided p-value of z; null when either has no trials. */
  pValue: number | null;
  /** pValue < 1 - confidence: the rates differ beyond chance at that confidence. */
  significant: boolean;
}

/** True when `sample` is a count pair a rate can be read from: integers, 0 <= successes <= trials. */
export function isValidSample(sample: ProportionSample): boolean {
  const { successes, trials } = sample;
  return Number.isSafeInteger(successes) && Number.isSafeInteger(trials) && successes >= 0 && successes <= trials;
}

function checkConfidence(confidence: number): void {
  if (!(confidence > 0 && confidence < 1)) throw new RangeError(`confidence must be inside (0, 1), got ${confidence}`);
}

function checkSample(sample: ProportionSample, name: string): void {
  if (!isValidSample(sample)) throw new RangeError(`${name} must be integers with 0 <= successes <= trials, got ${sample.successes}/${sample.trials}`);
}

/** The two-sided critical value z with P(|Z| <= z) = `confidence` for a standard normal Z. */
export function criticalZ(confidence: number): number {
  checkConfidence(confidence);
  return jStat.normal.inv(1 - (1 - confidence) / 2, 0, 1);
}

/** The two-sided p-value of a standard normal statistic: P(|Z| >= |z|). */
export function twoSidedPValue(z: number): number {
  return 2 * jStat.normal.cdf(-Math.abs(z), 0, 1);
}

/** A rate and its Wilson score interval at `confidence`. */
export function estimateProportion(sample: ProportionSample, confidence: number): ProportionEstimate {
  checkSample(sample, 'sample');
  const z = criticalZ(confidence);
  const { successes, trials } = sample;
  if (trials === 0) return { successes, trials, rate: null, interval: null };
  const p = successes / trials;
  const z2n = (z * z) / trials;
  const centre = (p + z2n / 2) / (1 + z2n);
  const half = (z / (1 + z2n)) * Math.sqrt((p * (1 - p)) / trials + (z * z) / (4 * trials * trials));
  // At p = 0 or 1 the interval's end is exactly 0 or 1; rounding would leave a hair beside it.
  const low = successes === 0 ? 0 : Math.max(0, centre - half);
  const high = successes === trials ? 1 : Math.min(1, centre + half);
  return { successes, trials, rate: p, interval: [low, high] };
}

/** Compares two rates (R23) at `confidence`, with intervals; RangeError on counts that are no rate or a bad confidence. */
export function twoProportionTest(a: ProportionSample, b: ProportionSample, confidence = 0.95): TwoProportionResult {
  checkSample(a, 'a');
  checkSample(b, 'b');
  const crit = criticalZ(confidence);
  const ea = estimateProportion(a, confidence);
  const eb = estimateProportion(b, confidence);
  if (ea.rate === null || eb.rate === null) {
    return { a: ea, b: eb, confidence, criticalZ: crit, difference: null, differenceInterval: null, z: null, pValue: null, significant: false };
  }
  const difference = ea.rate - eb.rate;
  const pooled = (a.successes + b.successes) / (a.trials + b.trials);
  const pooledSe = Math.sqrt(pooled * (1 - pooled) * (1 / a.trials + 1 / b.trials));
  // A zero pooled SE means both rates are 0 or both are 1: no difference to test.
  const z = pooledSe > 0 ? difference / pooledSe : 0;
  const pValue = twoSidedPValue(z);
  const se = Math.sqrt((ea.rate * (1 - ea.rate)) / a.trials + (eb.rate * (1 - eb.rate)) / b.trials);
  return { a: ea, b: eb, confidence, criticalZ: crit, difference, differenceInterval: [difference - crit * se, difference + crit * se], z, pValue, significant: pValue < 1 - confidence };
}
