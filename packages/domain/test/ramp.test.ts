import fc from 'fast-check';
import {
  ackNotices,
  advanceRamp,
  emptyReadout,
  MAX_NOTICES,
  pauseRamp,
  rampNeedsReadout,
  rampReadoutHours,
  resumeRamp,
  startRamp,
  type RampState,
  type RolloutObservation,
  type RolloutWrite,
  type StepReadout,
  type VariantCounts,
} from '../src';

const seed = process.env.RAMP_SEED ? Number(process.env.RAMP_SEED) : process.env.CI ? 38 : Date.now() % 2 ** 31;
console.log(`ramp.test.ts fast-check seed ${seed}`);

const HOUR = 3_600_000;
const TICK = 10 * 60_000;
const T0 = Date.UTC(2026, 6, 24, 0, 0, 0);

type Rates = Record<'likes' | 'collects' | 'shares' | 'notInterested' | 'serverErrors' | 'degradations' | 'emptyPages', number>;
const BASE: Rates = { likes: 0.05, collects: 0.02, shares: 0.01, notInterested: 0.03, serverErrors: 0.001, degradations: 0.002, emptyPages: 0.001 };

/**
 * The world a driver sees: R16's rollout (environment defaults, an override that wins field by
 * field) and D7's hourly readout hashes, filled tick by tick from known rates per variant (views
 * split by the percent in force, counts rounded), so every figure a step is judged on is known.
 */
class World {
  env = { enabled: false, percent: 100 };
  override: { enabled?: boolean; percent?: number } = {};
  hours = new Map<number, StepReadout>();
  now = T0;
  constructor(
    public viewsPerTick: number,
    public ringRates: Rates = BASE,
    public legacyRates: Rates = BASE,
  ) {}

  rollout(): RolloutObservation {
    return {
      enabled: this.override.enabled ?? this.env.enabled,
      percent: this.override.percent ?? this.env.percent,
      source: { enabled: this.override.enabled === undefined ? 'environment' : 'override', percent: this.override.percent === undefined ? 'environment' : 'override' },
    };
  }

  write(w: RolloutWrite): void {
    this.override = { ...this.override, percent: w.percent, ...(w.enabled ? { enabled: true } : {}) };
  }

  /** One tick of traffic at the percent in force, into its UTC hour's hash. */
  traffic(): void {
    const r = this.rollout();
    const share = r.enabled ? r.percent / 100 : 0;
    const hour = Math.floor(this.now / HOUR);
    const tally = this.hours.get(hour) ?? emptyReadout();
    const add = (into: VariantCounts, views: number, rates: Rates) => {
      const requests = Math.round(views / 5);
      into.views += views;
      into.requests += requests;
      for (const k of ['likes', 'collects', 'shares', 'notInterested'] as const) into[k] += Math.round(views * rates[k]);
      for (const k of ['serverErrors', 'degradations', 'emptyPages'] as const) into[k] += Math.round(requests * rates[k]);
    };
    add(tally.ring, Math.round(this.viewsPerTick * share), this.ringRates);
    add(tally.legacy, Math.round(this.viewsPerTick * (1 - share)), this.legacyRates);
    this.hours.set(hour, tally);
  }

  /** The sums over the `hours` hourly hashes up to now, as storage's readVariantStats sums them. */
  readout(hours: number): StepReadout {
    const sum = emptyReadout();
    const last = Math.floor(this.now / HOUR);
    for (let h = last - hours + 1; h <= last; h++) {
      const t = this.hours.get(h);
      if (!t) continue;
      for (const v of ['ring', 'legacy'] as const) for (const k of Object.keys(sum[v]) as Array<keyof VariantCounts>) sum[v][k] += t[v][k];
    }
    return sum;
  }
}

/**
 * A driver as the worker is: it keeps the ramp only as stored JSON (so every tick is a restart),
 * stores the state with its write (one step, as storage's commit), and records the notices.
 */
class Driver {
  stored: string;
  writes: RolloutWrite[] = [];
  recorded: string[] = [];
  /** The notices' words, as the audit trail shows them. */
  messages: string[] = [];
  constructor(
    public world: World,
    state: RampState,
    first: RolloutWrite | null,
  ) {
    this.stored = JSON.stringify(state);
    if (first) this.apply(first);
    this.record();
  }

  get state(): RampState {
    return JSON.parse(this.stored) as RampState;
  }

  apply(write: RolloutWrite): void {
    this.writes.push(write);
    this.world.write(write);
  }

  record(): void {
    const state = this.state;
    this.recorded.push(...state.notices.map((n) => `${n.kind}${n.alert ? '!' : ''} ${n.percent}`));
    this.messages.push(...state.notices.map((n) => `${n.kind} ${n.percent}: ${n.message}`));
    const last = state.notices.at(-1);
    if (last) this.stored = JSON.stringify(ackNotices(state, last.seq));
  }

  /** One check. */
  tick(): void {
    const now = new Date(this.world.now);
    const state = this.state;
    const readout = rampNeedsReadout(state, now) ? this.world.readout(rampReadoutHours(state, now)) : undefined;
    const { state: next, write } = advanceRamp(state, { now, rollout: this.world.rollout(), readout });
    this.stored = JSON.stringify(next);
    if (write) this.apply(write);
    this.record();
  }

  /** Traffic and checks every 10 minutes for `ms`. */
  run(ms: number, until?: (s: RampState) => boolean): void {
    for (const end = this.world.now + ms; this.world.now < end; this.world.now += TICK) {
      this.world.traffic();
      this.tick();
      if (until?.(this.state)) return;
    }
  }
}

function begin(world: World, steps = [1, 5, 25, 50, 100], dwellMs = HOUR, guards = {}): Driver {
  const started = startRamp({ id: 'ramp-1', steps, dwellMs, guards, by: 'alice@host', now: new Date(world.now) });
  return new Driver(world, started.state, started.write);
}

describe('ramp state machine (R23)', () => {
  it('when the variants are equal, then every step passes after its dwell (waiting for views where needed) and the ramp ends done at 100 %', () => {
    const world = new World(50_000);
    const driver = begin(world);
    expect(world.rollout()).toMatchObject({ enabled: true, percent: 1 });
    driver.run(24 * HOUR, (s) => s.status === 'done');
    const state = driver.state;
    expect(state.status).toBe('done');
    expect(world.rollout().percent).toBe(100);
    expect(state.steps.map((s) => s.outcome)).toEqual(['passed', 'passed', 'passed', 'passed', 'reached']);
    expect(state.steps[0].verdict?.guards.find((g) => g.guard === 'likes')).toMatchObject({ outcome: 'pass', ring: { rate: expect.closeTo(0.05, 3) } });
    expect(driver.writes.map((w) => w.percent)).toEqual([1, 5, 25, 50, 100]);
    // At 1 % and 5 % an hour holds fewer than the 20,000 views a verdict needs: those steps wait first.
    expect(driver.recorded).toEqual(['started 1', 'step-started 1', 'waiting 1', 'step-passed 1', 'step-started 5', 'waiting 5', 'step-passed 5', 'step-started 25', 'step-passed 25', 'step-started 50', 'step-passed 50', 'done 100']);
    // Each step dwelt its hour at least: from its start to its judgement.
    for (const step of state.steps.slice(0, 4)) expect(Date.parse(step.verdict?.judgedAt ?? '') - Date.parse(step.startedAt ?? '')).toBeGreaterThanOrEqual(HOUR);
  });

  it('when the last step is below 100 %, then it is judged, and once it passes the ramp is done there with no further write', () => {
    const world = new World(50_000);
    const driver = begin(world, [25, 50]);
    driver.run(24 * HOUR);
    expect(driver.state).toMatchObject({ status: 'done', current: 1, lastGoodPercent: 50, judgeAt: null });
    expect(driver.state.steps.map((s) => s.outcome)).toEqual(['passed', 'passed']);
    expect(driver.writes.map((w) => w.percent)).toEqual([25, 50]);
    expect(driver.recorded.slice(-2)).toEqual(['step-started 50', 'done 50']);
  });

  it('when notices are acknowledged up to a seq, then exactly the later ones stay and the revision moves; acknowledging none changes nothing', () => {
    const { state } = startRamp({ id: 'ramp-1', steps: [10, 100], dwellMs: HOUR, by: 'alice@host', now: new Date(T0) });
    expect(state.notices.map((n) => n.seq)).toEqual([1, 2]);
    const acked = ackNotices(state, 1);
    expect(acked.notices.map((n) => n.seq)).toEqual([2]);
    expect(acked.revision).toBe(state.revision + 1);
    expect(ackNotices(state, 0)).toBe(state);
    expect(ackNotices(acked, 2).notices).toEqual([]);
  });

  it('when the ring\'s like rate is lower and the views suffice, then the ramp halts, the percent goes back to the last good step and an alert is raised', () => {
    const world = new World(50_000, { ...BASE, likes: 0.035 });
    // 5 % of 50,000 views per tick: the step has its 20,000 views after its one-hour dwell.
    const driver = begin(world, [5, 25, 50, 100]);
    driver.run(24 * HOUR, (s) => s.status === 'halted');
    const state = driver.state;
    expect(state.status).toBe('halted');
    expect(state.haltReasons[0]).toMatch(/^likes: /);
    expect(state.steps[0]).toMatchObject({ outcome: 'failed', verdict: { outcome: 'fail' } });
    expect(world.rollout().percent).toBe(0);
    expect(driver.recorded.at(-1)).toBe('halted! 5');
    const likes = state.steps[0].verdict?.guards.find((g) => g.guard === 'likes');
    expect(likes?.ring?.trials).toBeGreaterThanOrEqual(20_000);
    expect(likes?.differenceInterval?.[1]).toBeLessThan(0);
    // Halted is final: more checks write nothing.
    const writes = driver.writes.length;
    driver.run(4 * HOUR);
    expect(driver.writes.length).toBe(writes);
  });

  it('when a later step regresses, then the percent goes back to the step that passed before it', () => {
    const world = new World(50_000);
    const driver = begin(world, [5, 25, 50, 100]);
    driver.run(24 * HOUR, (s) => s.current === 1 && s.status === 'running');
    world.ringRates = { ...BASE, shares: 0.005 };
    driver.run(24 * HOUR, (s) => s.status === 'halted');
    expect(driver.state).toMatchObject({ status: 'halted', lastGoodPercent: 5 });
    expect(world.rollout().percent).toBe(5);
  });

  it('when there are too few views, then the step waits (never passes) and passes once the views have accumulated', () => {
    const world = new World(1000);
    const driver = begin(world, [10, 100], HOUR, { minViews: 2000, minRequests: 400 });
    driver.run(HOUR + TICK);
    expect(driver.state).toMatchObject({ status: 'waiting', steps: [{ outcome: 'waiting', judgements: 1 }, { outcome: 'pending' }] });
    expect(world.rollout().percent).toBe(10);
    // 100 ring views per tick: 2,000 take 20 ticks, judged every dwell.
    driver.run(2 * HOUR);
    expect(driver.state.steps[0]).toMatchObject({ outcome: 'waiting', judgements: 3 });
    driver.run(2 * HOUR, (s) => s.status === 'done');
    expect(driver.state.steps[0].outcome).toBe('passed');
    expect(driver.recorded.filter((r) => r.startsWith('waiting'))).toHaveLength(1);
  });

  it('when on-call sets a percent by hand, then the ramp pauses and never writes over it', () => {
    const world = new World(50_000);
    const driver = begin(world);
    driver.run(3 * HOUR);
    world.override.percent = 40;
    const writes = driver.writes.length;
    driver.run(6 * HOUR);
    expect(driver.state).toMatchObject({ status: 'paused', pause: { cause: 'manual-percent', by: null } });
    expect(driver.writes.length).toBe(writes);
    expect(world.rollout().percent).toBe(40);
  });

  it('when the override is cleared, then the ramp pauses (the environment\'s values are a human\'s choice too)', () => {
    const world = new World(50_000);
    const driver = begin(world);
    driver.run(HOUR / 2);
    world.override = {};
    driver.run(TICK);
    expect(driver.state).toMatchObject({ status: 'paused', pause: { cause: 'manual-percent' } });
  });

  it('when the kill switch is set, then a running ramp stops and, resumed once it is cleared, restarts its step with a fresh dwell', () => {
    const world = new World(50_000);
    const driver = begin(world);
    driver.run(90 * 60_000);
    const at = driver.state.current;
    world.override.enabled = false;
    driver.run(3 * HOUR);
    expect(driver.state).toMatchObject({ status: 'paused', pause: { cause: 'kill-switch' }, current: at });
    expect(world.rollout().enabled).toBe(false);

    delete world.override.enabled;
    const resumed = resumeRamp(driver.state, { now: new Date(world.now), by: 'bob@host' });
    if (!resumed.ok) throw new Error(resumed.error);
    expect(resumed.write).toEqual({ percent: driver.state.steps[at].percent, enabled: true });
    driver.stored = JSON.stringify(resumed.state);
    driver.apply(resumed.write ?? { percent: -1 });
    expect(Date.parse(driver.state.steps[at].startedAt ?? '')).toBe(world.now);
    driver.run(TICK);
    expect(driver.state.status).toBe('running');
    driver.run(24 * HOUR, (s) => s.status === 'done');
    expect(driver.state.status).toBe('done');
  });

  it('when on-call pauses explicitly (the admin path with a manual percent), then it is paused by them', () => {
    const world = new World(50_000);
    const driver = begin(world);
    const paused = pauseRamp(driver.state, { now: new Date(world.now), by: 'carol', cause: 'manual-percent', detail: 'percent set to 30 by carol' });
    expect(paused).toMatchObject({ ok: true, write: null, state: { status: 'paused', judgeAt: null, pause: { by: 'carol', cause: 'manual-percent' } } });
    if (paused.ok) expect(pauseRamp(paused.state, { now: new Date(world.now), by: 'carol' }).ok).toBe(false);
  });

  it('when a restarted worker reads the stored ramp, then it resumes the step where it was (same dwell end, same readout)', () => {
    const world = new World(50_000);
    const driver = begin(world);
    driver.run(HOUR + 30 * 60_000);
    const before = driver.state;
    const restarted = new Driver(world, JSON.parse(JSON.stringify(before)) as RampState, null);
    expect(restarted.state).toEqual(before);
    restarted.run(24 * HOUR, (s) => s.status === 'done');
    expect(restarted.state.steps.map((s) => s.outcome)).toEqual(['passed', 'passed', 'passed', 'passed', 'reached']);
  });

  it('when a ramp starts, waits, passes, pauses, resumes and halts, then each notice says so in words on-call reads (D6)', () => {
    const world = new World(5000);
    const driver = begin(world, [10, 50, 100], HOUR, { minViews: 5000, minRequests: 100 });
    driver.run(3 * HOUR, (s) => s.current === 1);
    const paused = pauseRamp(driver.state, { now: new Date(world.now), by: 'carol' });
    if (!paused.ok) throw new Error(paused.error);
    driver.stored = JSON.stringify(paused.state);
    driver.record();
    const resumed = resumeRamp(driver.state, { now: new Date(world.now), by: 'bob@host' });
    if (!resumed.ok) throw new Error(resumed.error);
    driver.stored = JSON.stringify(resumed.state);
    driver.record();
    world.ringRates = { ...BASE, likes: 0.02 };
    driver.run(6 * HOUR, (s) => s.status === 'halted');
    const all = driver.messages;
    expect(all.slice(0, 7)).toEqual([
      'started 10: ramp 10,50,100 % with a dwell of 3600 s started by alice@host',
      'step-started 10: ramp step 1/3: 10 % in force, judged after 3600 s',
      'waiting 10: ramp step 10 % waits for samples: likes: ring had fewer than 5000 views; collects: ring had fewer than 5000 views; shares: ring had fewer than 5000 views; not-interested: ring had fewer than 5000 views',
      'step-passed 10: ramp step 10 % passed, next 50 %',
      'step-started 50: ramp step 2/3: 50 % in force, judged after 3600 s',
      'paused 50: ramp paused at 50 %: paused by carol',
      'resumed 50: ramp resumed at 50 % by bob@host',
    ]);
    expect(all[7]).toBe('step-started 50: ramp step 2/3: 50 % in force, judged after 3600 s');
    expect(all[8]).toMatch(
      /^halted 50: ramp halted at 50 %, back to 10 %: likes: likes per view 2\.\d+ % on the ring vs legacy's 5 % is lower beyond chance \(p = [\d.e-]+, tested at 0\.9875; sample: ring \d+ of \d+ views, legacy \d+ of \d+ views; each client counts once per video and at most 200 of an action an hour\)$/,
    );
    expect(driver.recorded.at(-1)).toBe('halted! 50');
  });

  it('when a step is paused while running or waiting, then it goes back to pending; a manual change names what it saw', () => {
    const world = new World(50_000);
    const driver = begin(world, [10, 100]);
    world.env = { enabled: true, percent: 10 };
    world.override = {};
    driver.tick();
    expect(driver.state.steps[0].outcome).toBe('pending');
    expect(driver.state.pause).toMatchObject({ cause: 'manual-percent', detail: "a manual change: rollout enabled at 10 % (environment) instead of the ramp's 10 %" });
    const waiting = begin(new World(10), [10, 100]);
    waiting.run(HOUR + TICK);
    expect(waiting.state.steps[0].outcome).toBe('waiting');
    const paused = pauseRamp(waiting.state, { now: new Date(waiting.world.now), by: 'carol' });
    expect(paused.ok && paused.state.steps[0].outcome).toBe('pending');
    expect(paused.ok && paused.state.pause).toMatchObject({ cause: 'manual-pause', by: 'carol', detail: 'paused by carol' });
  });

  it('when the kill switch pauses a ramp, then the pause says so', () => {
    const world = new World(50_000);
    const driver = begin(world);
    world.override.enabled = false;
    driver.tick();
    expect(driver.state.pause).toMatchObject({ cause: 'kill-switch', by: null, detail: 'the kill switch is on (rollout enabled=false)' });
  });

  it('when a ramp is not active, then ticks change nothing, no readout is asked for, and only the right command applies', () => {
    const world = new World(50_000);
    const driver = begin(world);
    const paused = pauseRamp(driver.state, { now: new Date(world.now), by: 'carol' });
    if (!paused.ok) throw new Error(paused.error);
    const later = new Date(world.now + 10 * HOUR);
    expect(rampNeedsReadout(paused.state, later)).toBe(false);
    expect(advanceRamp(paused.state, { now: later, rollout: world.rollout() })).toEqual({ state: paused.state, write: null });
    expect(pauseRamp(paused.state, { now: later, by: 'carol' })).toEqual({ ok: false, error: 'the ramp is paused, not running' });
    expect(resumeRamp(driver.state, { now: later, by: 'carol' })).toEqual({ ok: false, error: 'the ramp is running, not paused' });
    expect(paused.state.revision).toBe(driver.state.revision + 1);
  });

  it('when a step has not started, then it covers no readout hours; once started, its start hour counts', () => {
    const { state } = startRamp({ id: 'r', steps: [10, 100], dwellMs: HOUR, by: 'a', now: new Date(T0 + 30 * 60_000) });
    expect(rampReadoutHours(state, new Date(T0 + 50 * 60_000))).toBe(1);
    expect(rampReadoutHours(state, new Date(T0 + 2 * HOUR))).toBe(3);
    expect(rampReadoutHours({ ...state, current: 1 }, new Date(T0 + 2 * HOUR))).toBe(0);
  });

  it('when notices are never acknowledged, then the outbox keeps the latest MAX_NOTICES', () => {
    let { state } = startRamp({ id: 'r', steps: [10, 100], dwellMs: HOUR, by: 'a', now: new Date(T0) });
    for (let i = 0; i < 60; i++) {
      const paused = pauseRamp(state, { now: new Date(T0), by: 'a' });
      if (!paused.ok) throw new Error(paused.error);
      const resumed = resumeRamp(paused.state, { now: new Date(T0), by: 'a' });
      if (!resumed.ok) throw new Error(resumed.error);
      state = resumed.state;
    }
    // 2 at the start, then 3 per cycle (paused, resumed, step-started): 182 written.
    expect(state.nextSeq).toBe(183);
    expect(state.notices).toHaveLength(MAX_NOTICES);
    expect(state.notices[0].seq).toBe(183 - MAX_NOTICES);
  });

  it('when the host clock is behind the step\'s start, then nothing is judged early', () => {
    const world = new World(50_000);
    const driver = begin(world);
    driver.run(TICK);
    const state = driver.state;
    const behind = new Date(Date.parse(state.steps[0].startedAt ?? '') - 60_000);
    expect(rampNeedsReadout(state, behind)).toBe(false);
    expect(advanceRamp(state, { now: behind, rollout: world.rollout() }).state).toBe(state);
  });

  it('when a judgement is due and no readout is given, then advanceRamp says so instead of guessing', () => {
    const world = new World(50_000);
    const driver = begin(world);
    driver.run(TICK);
    expect(() => advanceRamp(driver.state, { now: new Date(world.now + 2 * HOUR), rollout: world.rollout() })).toThrow(/readout/);
  });
});

type Act = { kind: 'wait'; ticks: number } | { kind: 'manual'; percent: number } | { kind: 'kill' } | { kind: 'unkill' } | { kind: 'pause' } | { kind: 'resume' } | { kind: 'regress' };

describe('ramp state machine over random histories (R23)', () => {
  it('when humans and regressions interleave with checks, then the ramp only writes its own steps or the last good one, never over a human, never past an unpassed step', () => {
    const act: fc.Arbitrary<Act> = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('wait' as const), ticks: fc.integer({ min: 1, max: 12 }) }) },
      fc.record({ kind: fc.constant('manual' as const), percent: fc.integer({ min: 0, max: 100 }) }),
      fc.constant({ kind: 'kill' as const }),
      fc.constant({ kind: 'unkill' as const }),
      fc.constant({ kind: 'pause' as const }),
      fc.constant({ kind: 'resume' as const }),
      fc.constant({ kind: 'regress' as const }),
    );
    fc.assert(
      fc.property(fc.array(act, { maxLength: 40 }), fc.integer({ min: 2000, max: 100_000 }), (acts, viewsPerTick) => {
        const world = new World(viewsPerTick);
        const steps = [1, 5, 25, 50, 100];
        const driver = begin(world, steps);
        /**
         * Set by a human's percent (one the ramp cannot take for its own: not its step's), the
         * kill switch or a pause until a resume: the ramp may not write a percent meanwhile.
         */
        let percentHeld = false;
        /** The latest manual percent is a human's (the ramp sees only the last one, at its next check). */
        let manualHeld = false;
        for (const a of acts) {
          const writesBefore = driver.writes.length;
          const before = driver.state;
          if (a.kind === 'wait') percentHeld ||= manualHeld;
          if (a.kind === 'wait') {
            for (let i = 0; i < a.ticks; i++) {
              world.now += TICK;
              world.traffic();
              driver.tick();
            }
          } else if (a.kind === 'manual') {
            manualHeld = a.percent !== before.steps[before.current].percent;
            world.override.percent = a.percent;
          } else if (a.kind === 'kill') {
            // As storage's changeRolloutOverRamp: the ramp is paused in the same step as the write.
            const r = pauseRamp(before, { now: new Date(world.now), by: 'h', cause: 'manual-percent', detail: 'enabled=false' });
            if (r.ok) driver.stored = JSON.stringify(r.state);
            world.override.enabled = false;
            percentHeld = true;
          } else if (a.kind === 'unkill') {
            delete world.override.enabled;
          } else if (a.kind === 'regress') {
            world.ringRates = { ...BASE, likes: 0.03 };
          } else if (a.kind === 'pause') {
            const r = pauseRamp(before, { now: new Date(world.now), by: 'h' });
            if (r.ok) {
              driver.stored = JSON.stringify(r.state);
              percentHeld = true;
            }
          } else if (world.override.enabled !== false) {
            // Storage refuses a resume while the kill switch is on.
            const r = resumeRamp(before, { now: new Date(world.now), by: 'h' });
            if (r.ok) {
              driver.stored = JSON.stringify(r.state);
              if (r.write) driver.apply(r.write);
              percentHeld = false;
              manualHeld = false;
            }
          }
          const state = driver.state;
          for (const w of driver.writes.slice(writesBefore)) {
            if (a.kind === 'resume') continue;
            // Never over a human: a write after a manual change or the kill switch needs a resume first.
            expect(percentHeld).toBe(false);
            const index = steps.indexOf(w.percent);
            const passedBefore = state.steps.slice(0, Math.max(0, index)).every((s) => s.outcome === 'passed');
            expect((index >= 0 && passedBefore) || w.percent === state.lastGoodPercent).toBe(true);
          }
          if (state.status === 'paused') expect(state.judgeAt).toBeNull();
          if (state.status === 'halted') expect(state.lastGoodPercent).toBeLessThan(state.steps[state.current].percent);
          // The percent the ring serves never exceeds the highest step reached.
          const reached = state.steps.filter((s) => s.startedAt !== null || s.outcome === 'passed').map((s) => s.percent);
          if (!percentHeld && !manualHeld && world.rollout().enabled && world.rollout().source.percent === 'override') {
            expect(world.rollout().percent).toBeLessThanOrEqual(Math.max(...reached, state.lastGoodPercent));
          }
        }
      }),
      { seed, numRuns: 150 },
    );
  });
});
