/**
 * SPEC R23, second part: the judge of one ramp step, from its readout (D7): pass, fail or wait.
 * Operational guards: the ring's 5xx, degradation and empty-page rates may not exceed legacy's by
 * more than a margin. Engagement guards: likes, collects and shares per view may not be lower, nor
 * "not interested" higher, beyond chance (two-proportion z-test, Bonferroni). Underpowered or
 * unreadable: wait, never pass. A sample-ratio check precedes any verdict but a failure. Reasons:
 * docs/design.md, "The ramp's judge" and "Made-up devices".
 */
import { twoProportionTest, twoSidedPValue, isValidSample, type Interval, type ProportionEstimate, type ProportionSample } from './two-proportion';

/** One variant's counts over a step. */
export interface VariantCounts {
  /** Feed requests the variant answered, whatever the status (the operational guards' trials). */
  requests: number;
  /** Of those, answered with a 5xx. */
  serverErrors: number;
  /** Of those, served by a fallback strategy (R17). */
  degradations: number;
  /** Of those, served with no video. */
  emptyPages: number;
  /** Videos viewed (the engagement guards' trials). */
  views: number;
  likes: number;
  collects: number;
  shares: number;
  notInterested: number;
}

/** Most actions of a kind one client counts per hour and variant (D7): 200 is a 15-second video every 18 s for an hour. */
export const READOUT_CLIENT_HOURLY_CAP = 200;

/** A count per arm. */
export type PerArm = { ring: number; legacy: number };

/** A step's readout: the ring (V2) beside legacy over the same hours, trusted units only. */
export interface StepReadout {
  ring: VariantCounts;
  legacy: VariantCounts;
  /** Per variant, the clients whose views were counted, summed per hour (client-hours): the sample behind `views`. */
  viewers?: PerArm;
  /** Per variant, client-hours of every unit (new devices too) served at the step's percent: the sample-ratio check's counts. */
  units?: PerArm;
  /** New devices' views and "not interested" (first seen since the step began): reported, not judged. */
  fresh?: { ring: Pick<VariantCounts, 'views' | 'notInterested'>; legacy: Pick<VariantCounts, 'views' | 'notInterested'> };
  /** Signed-in users' counts alone: their failing engagement guard halts too, whatever devices seen before the step add. */
  users?: { ring: VariantCounts; legacy: VariantCounts };
}

/** The sample-ratio check's threshold: units this unlikely under the split asked for are a broken sample. */
export const SAMPLE_RATIO_P = 0.001;

/** The sample-ratio check: the units seen per arm against the ring's share asked for. */
export interface SampleRatio {
  ringShare: number;
  units: PerArm;
  /** Pearson's chi-square (1 degree of freedom) and its p-value; null below 5 expected units per arm. */
  chiSquare: number | null;
  pValue: number | null;
  mismatch: boolean;
}

/** Pearson's chi-square of `units` against `ringShare` (1 df: z²); none below 5 expected units an arm, or at 0 or 1. */
export function sampleRatioCheck(units: PerArm, ringShare: number): SampleRatio {
  const n = units.ring + units.legacy;
  const expected = [n * ringShare, n * (1 - ringShare)];
  if (!(expected[0] >= 5 && expected[1] >= 5)) return { ringShare, units, chiSquare: null, pValue: null, mismatch: false };
  const chiSquare = (units.ring - expected[0]) ** 2 / expected[0] + (units.legacy - expected[1]) ** 2 / expected[1];
  const pValue = twoSidedPValue(Math.sqrt(chiSquare));
  return { ringShare, units, chiSquare, pValue, mismatch: pValue < SAMPLE_RATIO_P };
}

export type OperationalGuardName = 'server-errors' | 'degradations' | 'empty-pages';
export type EngagementGuardName = 'likes' | 'collects' | 'shares' | 'not-interested';
export type GuardName = OperationalGuardName | EngagementGuardName;

/** The counts of `VariantCounts` each guard reads: [successes, trials]. */
const GUARD_COUNTS: Record<GuardName, [keyof VariantCounts, keyof VariantCounts]> = {
  'server-errors': ['serverErrors', 'requests'],
  degradations: ['degradations', 'requests'],
  'empty-pages': ['emptyPages', 'requests'],
  likes: ['likes', 'views'],
  collects: ['collects', 'views'],
  shares: ['shares', 'views'],
  'not-interested': ['notInterested', 'views'],
};

/** Which way is worse: a lower like rate, a higher "not interested" rate. */
const LOWER_IS_WORSE: Record<EngagementGuardName, boolean> = { likes: true, collects: true, shares: true, 'not-interested': false };

export const OPERATIONAL_GUARDS: readonly OperationalGuardName[] = ['server-errors', 'degradations', 'empty-pages'];
export const ENGAGEMENT_GUARDS: readonly EngagementGuardName[] = ['likes', 'collects', 'shares', 'not-interested'];

/** How a step is judged; stored with the ramp so that a restart judges by the same rules. */
export interface StepGuards {
  /** Confidence of the engagement tests, over all of them (default 0.95). */
  confidence: number;
  /** Views each variant needs before any verdict. */
  minViews: number;
  /** Feed requests each variant needs before any verdict. */
  minRequests: number;
  /** Largest allowed excess of the ring's rate over legacy's, per operational guard. */
  margins: Record<OperationalGuardName, number>;
  /** The engagement guards applied (default all four). */
  engagement: EngagementGuardName[];
}

/**
 * 20,000 views per variant catch a like rate 10 % lower (5 % vs 4.5 %) three times in four (`pnpm
 * bench ramp-judge`); 2,000 would pass it four times in five. 2,000 requests keep the 0.5-point 5xx
 * margin many standard errors from a 0.1 % base rate.
 */
export const DEFAULT_STEP_GUARDS: StepGuards = {
  confidence: 0.95,
  minViews: 20_000,
  minRequests: 2000,
  margins: { 'server-errors': 0.005, degradations: 0.01, 'empty-pages': 0.01 },
  engagement: [...ENGAGEMENT_GUARDS],
};

/** Defaults for what `partial` leaves out; throws a RangeError for a value out of range. */
export function stepGuards(partial: Partial<StepGuards> = {}): StepGuards {
  const guards: StepGuards = {
    ...DEFAULT_STEP_GUARDS,
    ...partial,
    margins: { ...DEFAULT_STEP_GUARDS.margins, ...partial.margins },
    engagement: [...(partial.engagement ?? DEFAULT_STEP_GUARDS.engagement)],
  };
  if (!(guards.confidence >= 0.5 && guards.confidence < 1)) throw new RangeError(`confidence must be within [0.5, 1), got ${guards.confidence}`);
  for (const key of ['minViews', 'minRequests'] as const) {
    if (!Number.isSafeInteger(guards[key]) || guards[key] < 1) throw new RangeError(`${key} must be a positive integer, got ${guards[key]}`);
  }
  for (const name of OPERATIONAL_GUARDS) {
    const margin = guards.margins[name];
    if (!(margin >= 0 && margin <= 1)) throw new RangeError(`margin of ${name} must be within [0, 1], got ${margin}`);
  }
  for (const name of guards.engagement) if (!ENGAGEMENT_GUARDS.includes(name)) throw new RangeError(`unknown engagement guard ${String(name)}`);
  guards.engagement = [...new Set(guards.engagement)];
  return guards;
}

export type GuardOutcome = 'pass' | 'fail' | 'underpowered' | 'unreadable';

/** One guard's result, with what the inspector shows: sample sizes, rates and intervals. */
export interface GuardResult {
  guard: GuardName;
  kind: 'operational' | 'engagement';
  outcome: GuardOutcome;
  ring: ProportionEstimate | null;
  legacy: ProportionEstimate | null;
  /** The confidence the intervals (and an engagement test) are stated at. */
  confidence: number;
  /** ring rate - legacy rate. */
  difference: number | null;
  differenceInterval: Interval | null;
  /** Operational guards: the allowed excess. */
  margin?: number;
  /** Engagement guards: the pooled z and its two-sided p-value. */
  z?: number | null;
  pValue?: number | null;
  /** Why it failed, waited or could not be read. */
  reason?: string;
}

export type StepOutcome = 'pass' | 'fail' | 'mismatch' | 'wait';

export interface StepJudgement {
  outcome: StepOutcome;
  /** Fail: the failed guards' reasons; mismatch: the units against the split; wait: why no verdict yet; pass: empty. */
  reasons: string[];
  /** Null when the readout has no units or no split was given. */
  sampleRatio?: SampleRatio | null;
  fresh?: StepReadout['fresh'];
  /** The stated (family) confidence and the one each engagement test ran at. */
  confidence: number;
  perTestConfidence: number;
  guards: GuardResult[];
}

const sampleOf = (counts: VariantCounts, guard: GuardName): ProportionSample => {
  const [successes, trials] = GUARD_COUNTS[guard];
  return { successes: counts[successes], trials: counts[trials] };
};

const rounded = (rate: number) => `${Math.round(rate * 100000) / 1000} %`;

function unreadableResult(guard: GuardName, kind: GuardResult['kind'], confidence: number, readout: StepReadout): GuardResult | null {
  for (const variant of ['ring', 'legacy'] as const) {
    const sample = sampleOf(readout[variant], guard);
    if (!isValidSample(sample)) {
      const [successes, trials] = GUARD_COUNTS[guard];
      return { guard, kind, outcome: 'unreadable', ring: null, legacy: null, confidence, difference: null, differenceInterval: null, reason: `${variant} ${successes}/${trials} is no rate: ${sample.successes}/${sample.trials}` };
    }
  }
  return null;
}

function judgeOperational(guard: OperationalGuardName, readout: StepReadout, guards: StepGuards): GuardResult {
  const confidence = guards.confidence;
  const unreadable = unreadableResult(guard, 'operational', confidence, readout);
  if (unreadable) return unreadable;
  const test = twoProportionTest(sampleOf(readout.ring, guard), sampleOf(readout.legacy, guard), confidence);
  const margin = guards.margins[guard];
  const base = { guard, kind: 'operational' as const, ring: test.a, legacy: test.b, confidence, difference: test.difference, differenceInterval: test.differenceInterval, margin };
  const short = (['ring', 'legacy'] as const).filter((v) => readout[v].requests < guards.minRequests);
  if (short.length > 0) return { ...base, outcome: 'underpowered', reason: `${short.join(' and ')} answered fewer than ${guards.minRequests} requests` };
  if (test.difference !== null && test.difference > margin) {
    return { ...base, outcome: 'fail', reason: `${guard} rate ${rounded(test.a.rate ?? 0)} on the ring is above legacy's ${rounded(test.b.rate ?? 0)} by more than ${rounded(margin)}` };
  }
  return { ...base, outcome: 'pass' };
}

/** The sample behind an engagement verdict, and how much of it one client can be (D7). */
function sampleOfStep(readout: StepReadout, guard: EngagementGuardName): string {
  const [successes] = GUARD_COUNTS[guard];
  const side = (variant: 'ring' | 'legacy') => {
    const counts = readout[variant];
    const viewers = readout.viewers?.[variant];
    return `${variant} ${counts[successes]} of ${counts.views} views${viewers === undefined ? '' : ` from ${viewers} client-hours`}`;
  };
  return `sample: ${side('ring')}, ${side('legacy')}; each client counts once per video and at most ${READOUT_CLIENT_HOURLY_CAP} of an action an hour`;
}

function judgeEngagement(guard: EngagementGuardName, readout: StepReadout, guards: StepGuards, confidence: number): GuardResult {
  const unreadable = unreadableResult(guard, 'engagement', confidence, readout);
  if (unreadable) return unreadable;
  const test = twoProportionTest(sampleOf(readout.ring, guard), sampleOf(readout.legacy, guard), confidence);
  const base = { guard, kind: 'engagement' as const, ring: test.a, legacy: test.b, confidence, difference: test.difference, differenceInterval: test.differenceInterval, z: test.z, pValue: test.pValue };
  const short = (['ring', 'legacy'] as const).filter((v) => readout[v].views < guards.minViews);
  if (short.length > 0) return { ...base, outcome: 'underpowered', reason: `${short.join(' and ')} had fewer than ${guards.minViews} views` };
  const worse = test.difference !== null && (LOWER_IS_WORSE[guard] ? test.difference < 0 : test.difference > 0);
  if (worse && test.significant) {
    const pValue = test.pValue ?? 0;
    return {
      ...base,
      outcome: 'fail',
      reason: `${guard} per view ${rounded(test.a.rate ?? 0)} on the ring vs legacy's ${rounded(test.b.rate ?? 0)} is ${LOWER_IS_WORSE[guard] ? 'lower' : 'higher'} beyond chance (p = ${pValue.toPrecision(3)}, tested at ${confidence}; ${sampleOfStep(readout, guard)})`,
    };
  }
  return { ...base, outcome: 'pass' };
}

/** `fail` if any full-sample guard fails, else `mismatch` (units vs `ringShare`), else `wait` (underpowered), else `pass`. */
export function judgeStep(readout: StepReadout, guards: StepGuards = DEFAULT_STEP_GUARDS, ringShare?: number): StepJudgement {
  const tests = Math.max(1, guards.engagement.length * (readout.users ? 2 : 1));
  const perTestConfidence = 1 - (1 - guards.confidence) / tests;
  const results = [
    ...OPERATIONAL_GUARDS.map((guard) => judgeOperational(guard, readout, guards)),
    ...guards.engagement.map((guard) => judgeEngagement(guard, readout, guards, perTestConfidence)),
  ];
  const because = (outcomes: GuardOutcome[]) => results.filter((r) => outcomes.includes(r.outcome)).map((r) => `${r.guard}: ${r.reason ?? r.outcome}`);
  const users = readout.users ? guards.engagement.map((guard) => judgeEngagement(guard, { ...readout, ...readout.users }, guards, perTestConfidence)) : [];
  const failed = [...because(['fail']), ...users.filter((r) => r.outcome === 'fail').map((r) => `${r.guard} among signed-in users: ${r.reason}`)];
  const pending = because(['underpowered', 'unreadable']);
  const ratio = readout.units && ringShare !== undefined ? sampleRatioCheck(readout.units, ringShare) : null;
  const mismatch = ratio?.mismatch
    ? [`sample-ratio: ${ratio.units.ring} ring and ${ratio.units.legacy} legacy client-hours where the split asks ${rounded(ratio.ringShare)} ring (p = ${(ratio.pValue ?? 0).toPrecision(3)} < ${SAMPLE_RATIO_P})`]
    : [];
  const outcome: StepOutcome = failed.length > 0 ? 'fail' : mismatch.length > 0 ? 'mismatch' : pending.length > 0 ? 'wait' : 'pass';
  const reasons = { fail: failed, mismatch, wait: pending, pass: [] }[outcome];
  return { outcome, reasons, confidence: guards.confidence, perTestConfidence, guards: results, sampleRatio: ratio, ...(readout.fresh ? { fresh: readout.fresh } : {}) };
}

/** Zero counts for both variants, a start for callers that add hours up. */
export function emptyReadout(): StepReadout {
  const zero = (): VariantCounts => ({ requests: 0, serverErrors: 0, degradations: 0, emptyPages: 0, views: 0, likes: 0, collects: 0, shares: 0, notInterested: 0 });
  return { ring: zero(), legacy: zero() };
}
