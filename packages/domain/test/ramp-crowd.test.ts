import fc from 'fast-check';
import { advanceRamp, judgeStep, resumeRamp, sampleRatioCheck, startRamp, stepGuards, type RampState, type RolloutObservation, type StepReadout, type VariantCounts } from '../src';

const seed = process.env.CI ? 52 : Date.now() % 2 ** 31;
console.log(`ramp-crowd.test.ts fast-check seed ${seed}`);
const runs = { seed, numRuns: 200 };

/** Counts from views and a "not interested" rate (the attack's guard), other rates at legacy's. */
function counts(views: number, notInterested = 0.03, requests = Math.max(200, Math.round(views / 2))): VariantCounts {
  return { requests, serverErrors: 0, degradations: 0, emptyPages: 0, views, likes: Math.round(views * 0.1), collects: Math.round(views * 0.02), shares: 0, notInterested: Math.round(views * notInterested) };
}

const guards = stepGuards({ minViews: 300, minRequests: 200 });
const T0 = new Date(Date.UTC(2026, 6, 24, 10, 0, 0));
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
const inForce = (percent: number): RolloutObservation => ({ enabled: true, percent, source: { enabled: 'override', percent: 'override' } });

/**
 * A step of the attack: `genuine` signed-in users split evenly (each `viewsEach` views),
 * the ring's "not interested" rate `ringRate` against legacy's 3 %, and `fakes` new devices in the
 * ring (one view and one "not interested" each): units and fresh counts beside the trusted ones.
 */
function attack(genuine: number, fakes: number, ringRate = 0.03, viewsEach = 10): StepReadout {
  const half = Math.round(genuine / 2);
  return {
    ring: counts(half * viewsEach, ringRate),
    legacy: counts((genuine - half) * viewsEach),
    units: { ring: half + fakes, legacy: genuine - half },
    fresh: { ring: { views: fakes, notInterested: fakes }, legacy: { views: 0, notInterested: 0 } },
  };
}

function judgedRamp(readout: StepReadout): { state: RampState; write: { percent: number } | null } {
  const { state } = startRamp({ id: 'r1', steps: [50, 100], dwellMs: 60_000, guards, by: 'oncall', now: T0 });
  return advanceRamp(state, { now: at(1), rollout: inForce(50), readout });
}

describe('sampleRatioCheck (R23: a crowd of made-up clients)', () => {
  it('when units follow the split asked for, then no mismatch is found more often than the threshold allows', () => {
    // Binomial units at the asked share: mismatches are rare (p < 0.001 each); over 200 runs at most a couple.
    let mismatches = 0;
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 99 }), fc.integer({ min: 200, max: 20_000 }), fc.double({ min: -2, max: 2, noNaN: true }), (percent, n, z) => {
        const share = percent / 100;
        // Up to two standard deviations off the expected count: never a mismatch.
        const ring = Math.round(n * share + z * Math.sqrt(n * share * (1 - share)));
        const check = sampleRatioCheck({ ring: Math.min(n, Math.max(0, ring)), legacy: n - Math.min(n, Math.max(0, ring)) }, share);
        if (check.mismatch) mismatches += 1;
        return check.pValue === null || check.pValue > 0.02;
      }),
      runs,
    );
    expect(mismatches).toBe(0);
  });

  it('when ids chosen into the ring are added to a fitting sample, then a mismatch is found once they number 4 √n (chi-square f² / (n + f) > 10.83)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 100, max: 10_000 }), (genuine) => {
        const fakes = Math.ceil(4 * Math.sqrt(genuine));
        return sampleRatioCheck({ ring: genuine / 2 + fakes, legacy: genuine / 2 }, 0.5).mismatch;
      }),
      runs,
    );
  });

  it('when an arm expects fewer than 5 units, then there is no check', () => {
    expect(sampleRatioCheck({ ring: 4, legacy: 0 }, 0.5)).toMatchObject({ chiSquare: null, pValue: null, mismatch: false });
    expect(sampleRatioCheck({ ring: 300, legacy: 100 }, 0.01)).toMatchObject({ pValue: null, mismatch: false });
  });
});

describe('the judge weighs trusted units (R23, issue 52)', () => {
  it('when any number of new devices in the ring sends "not interested", then the step is never failed by them: it pauses on the mismatch or passes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 100, max: 2000 }), fc.integer({ min: 0, max: 5000 }), (genuine, fakes) => {
        const verdict = judgeStep(attack(genuine, fakes), guards, 0.5);
        const { state, write } = judgedRamp(attack(genuine, fakes));
        expect(verdict.outcome).not.toBe('fail');
        expect(state.status).not.toBe('halted');
        // A mismatch leaves the percent where it is: no write, neither onwards nor back.
        if (verdict.outcome === 'mismatch') expect([state.status, state.pause?.cause, write]).toEqual(['paused', 'sample-ratio', null]);
        else expect(verdict.outcome).toBe('pass');
      }),
      runs,
    );
  });

  it('when the genuine users\' "not interested" is three times legacy\'s, then the step halts back to 0 %, with or without a crowd', () => {
    fc.assert(
      fc.property(fc.constantFrom(0, 400, 2000), fc.integer({ min: 150, max: 1000 }), (fakes, genuine) => {
        const { state, write } = judgedRamp(attack(genuine, fakes, 0.09));
        expect(state.status).toBe('halted');
        expect(write).toEqual({ percent: 0 });
        expect(state.haltReasons.join()).toMatch(/^not-interested: /);
      }),
      runs,
    );
  });

  it('when the issue\'s 400 devices join 150 users, then the ramp pauses with the units in its notice, alerted; on-call\'s resume starts the step afresh', () => {
    const { state, write } = judgedRamp(attack(150, 400));
    expect(write).toBeNull();
    expect(state.status).toBe('paused');
    expect(state.steps[0].verdict?.reasons[0]).toMatch(/^sample-ratio: 475 ring and 75 legacy client-hours/);
    expect(state.steps[0].verdict?.fresh).toEqual({ ring: { views: 400, notInterested: 400 }, legacy: { views: 0, notInterested: 0 } });
    const notice = state.notices.at(-1);
    expect(notice).toMatchObject({ kind: 'paused', alert: true, percent: 50 });
    // Not resumed by the ramp itself: later ticks change nothing.
    expect(advanceRamp(state, { now: at(30), rollout: inForce(50), readout: attack(150, 0) }).state).toBe(state);
    const resumed = resumeRamp(state, { now: at(31), by: 'oncall' });
    expect(resumed.ok && resumed.state.status).toBe('running');
  });

  it('when the kill switch is on at a due judgement with a mismatch, then the kill switch wins', () => {
    const { state } = startRamp({ id: 'r1', steps: [50, 100], dwellMs: 60_000, guards, by: 'oncall', now: T0 });
    const killed = advanceRamp(state, { now: at(1), rollout: { enabled: false, percent: 50, source: { enabled: 'override', percent: 'override' } }, readout: attack(150, 400) });
    expect(killed.state.pause?.cause).toBe('kill-switch');
  });
});
