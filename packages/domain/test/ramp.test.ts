import fc from 'fast-check';
import {
  ackNotices,
  advanceRamp,
  emptyReadout,
  parseDwell,
  parseRampState,
  parseRampSteps,
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
  /** Bumped by every write of the override, as a store's counter would be. */
  revision = 0;
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
      revision: this.revision,
    };
  }

  write(w: RolloutWrite): void {
    this.override = { ...this.override, percent: w.percent, ...(w.enabled ? { enabled: true } : {}) };
    this.revision += 1;
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
 * A driver as the worker will be: it keeps the ramp only as stored JSON (so every tick is a
 * restart), saves the state before it writes the rollout, and records the notices it is handed.
 */
class Driver {
  stored: string;
  writes: RolloutWrite[] = [];
  recorded: string[] = [];
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
    const parsed = parseRampState(JSON.parse(this.stored));
    if (!parsed.ok) throw new Error(parsed.error);
    return parsed.state;
  }

  apply(write: RolloutWrite): void {
    this.writes.push(write);
    this.world.write(write);
  }

  record(): void {
    const state = this.state;
    this.recorded.push(...state.notices.map((n) => `${n.kind}${n.alert ? '!' : ''} ${n.percent}`));
    const last = state.notices.at(-1);
    if (last) this.stored = JSON.stringify(ackNotices(state, last.seq));
  }

  /** One check; `crashBeforeWrite` loses the rollout write after the state was saved. */
  tick(crashBeforeWrite = false): void {
    const now = new Date(this.world.now);
    const state = this.state;
    const readout = rampNeedsReadout(state, now) ? this.world.readout(rampReadoutHours(state, now)) : undefined;
    const { state: next, write } = advanceRamp(state, { now, rollout: this.world.rollout(), readout });
    this.stored = JSON.stringify(next);
    if (write && !crashBeforeWrite) this.apply(write);
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
  const started = startRamp({ id: 'ramp-1', steps, dwellMs, guards, by: 'alice@host', now: new Date(world.now), rollout: world.rollout() });
  if (!started.ok) throw new Error(started.error);
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

  it('when the kill switch is set between a halt and its write, then the percent still goes back (V2 must not return at the failed step when it is cleared)', () => {
    const world = new World(50_000, { ...BASE, likes: 0.035 });
    const driver = begin(world, [5, 25, 100]);
    for (;;) {
      world.now += TICK;
      world.traffic();
      driver.tick(true);
      if (driver.state.status === 'halted') break;
      // A lost write still owed from before the halt is made here, as the next check would.
      if (driver.state.owed) driver.tick();
    }
    expect(world.rollout().percent).toBe(5);
    world.override.enabled = false;
    world.revision += 1;
    world.now += TICK;
    driver.tick();
    expect(world.rollout()).toMatchObject({ enabled: false, percent: 0 });
    world.now += TICK;
    driver.tick();
    expect(driver.state).toMatchObject({ status: 'halted', owed: null, appliedPercent: 0 });
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

  it('when the kill switch is set, then a running ramp stops, cannot resume until it is cleared, and resumes at its step with a fresh dwell', () => {
    const world = new World(50_000);
    const driver = begin(world);
    driver.run(90 * 60_000);
    const at = driver.state.current;
    world.override.enabled = false;
    driver.run(3 * HOUR);
    expect(driver.state).toMatchObject({ status: 'paused', pause: { cause: 'kill-switch' }, current: at });
    expect(world.rollout().enabled).toBe(false);

    const refused = resumeRamp(driver.state, { now: new Date(world.now), by: 'bob@host', rollout: world.rollout() });
    expect(refused).toEqual({ ok: false, error: expect.stringMatching(/kill switch/) });

    delete world.override.enabled;
    const resumed = resumeRamp(driver.state, { now: new Date(world.now), by: 'bob@host', rollout: world.rollout() });
    if (!resumed.ok) throw new Error(resumed.error);
    expect(resumed.write).toEqual({ percent: driver.state.steps[at].percent, enabled: true });
    driver.stored = JSON.stringify(resumed.state);
    driver.apply(resumed.write ?? { percent: -1 });
    driver.run(TICK);
    const step = driver.state.steps[at];
    expect(driver.state.status).toBe('running');
    expect(Date.parse(step.startedAt ?? '')).toBe(world.now - TICK);
    driver.run(24 * HOUR, (s) => s.status === 'done');
    expect(driver.state.status).toBe('done');
  });

  it('when on-call pauses explicitly (the admin path before a manual percent), then it is paused by them', () => {
    const world = new World(50_000);
    const driver = begin(world);
    const paused = pauseRamp(driver.state, { now: new Date(world.now), by: 'carol', cause: 'manual-percent', detail: 'percent set to 30 by carol' });
    expect(paused).toMatchObject({ ok: true, state: { status: 'paused', owed: null, pause: { by: 'carol', cause: 'manual-percent' } } });
    if (paused.ok) expect(pauseRamp(paused.state, { now: new Date(world.now), by: 'carol' }).ok).toBe(false);
  });

  it('when the driver crashes between saving the state and writing the rollout, then the next check writes again and the step starts then', () => {
    const world = new World(50_000);
    const driver = begin(world, [5, 25, 100]);
    driver.run(HOUR - TICK);
    // Each check now saves its state and dies before its rollout write, until the step passed.
    while (driver.state.status !== 'passed') {
      world.now += TICK;
      world.traffic();
      driver.tick(true);
    }
    expect(world.rollout().percent).toBe(5);
    world.now += TICK;
    driver.tick(true);
    expect(driver.state).toMatchObject({ status: 'passed', owed: { percent: 25 } });
    expect(world.rollout().percent).toBe(5);
    world.now += TICK;
    driver.tick();
    expect(world.rollout().percent).toBe(25);
    world.now += TICK;
    driver.tick();
    expect(driver.state).toMatchObject({ status: 'running', current: 1, owed: null, appliedPercent: 25 });
    expect(driver.state.steps[1].startedAt).toBe(new Date(world.now).toISOString());
  });

  it('when the first write of a ramp started from V2 off is lost, then it is made again (V2 off by environment is no kill switch)', () => {
    const world = new World(50_000);
    const started = startRamp({ id: 'r', steps: [1, 100], dwellMs: HOUR, by: 'a', now: new Date(world.now), rollout: world.rollout() });
    if (!started.ok) throw new Error(started.error);
    const driver = new Driver(world, started.state, null);
    world.now += TICK;
    driver.tick();
    expect(world.rollout()).toMatchObject({ enabled: true, percent: 1 });
    world.now += TICK;
    driver.tick();
    expect(driver.state).toMatchObject({ status: 'running', appliedPercent: 1 });
  });

  it('when the kill switch is set and cleared while a write is owed, then the override\'s revision tells it from a lost write and the ramp pauses', () => {
    const world = new World(50_000);
    const started = startRamp({ id: 'r', steps: [1, 100], dwellMs: HOUR, by: 'a', now: new Date(world.now), rollout: world.rollout() });
    if (!started.ok) throw new Error(started.error);
    const driver = new Driver(world, started.state, null);
    world.override.enabled = false;
    world.revision += 1;
    delete world.override.enabled;
    world.revision += 1;
    world.now += TICK;
    driver.tick();
    expect(driver.state).toMatchObject({ status: 'paused', pause: { cause: 'manual-percent' } });
    expect(driver.writes).toEqual([]);
  });

  it('when on-call resumes a ramp paused by their percent and sets that percent again, then the ramp does not take it for its own (seed 891001645)', () => {
    const world = new World(2000);
    const driver = begin(world);
    world.override.percent = 100;
    world.revision += 1;
    world.now += TICK;
    world.traffic();
    driver.tick();
    expect(driver.state).toMatchObject({ status: 'paused', pause: { cause: 'manual-percent' } });
    const resumed = resumeRamp(driver.state, { now: new Date(world.now), by: 'h', rollout: world.rollout() });
    if (!resumed.ok) throw new Error(resumed.error);
    // The 100 % in force at the resume is the human's, not a percent the ramp reached.
    expect(resumed.state).toMatchObject({ appliedPercent: 0, owed: { percent: 1, enabled: true } });
    driver.stored = JSON.stringify(resumed.state);
    driver.apply(resumed.write ?? { percent: -1 });
    world.override.percent = 100;
    world.revision += 1;
    const writes = driver.writes.length;
    world.now += TICK;
    driver.tick();
    expect(driver.state).toMatchObject({ status: 'paused', pause: { cause: 'manual-percent' } });
    expect(driver.writes.length).toBe(writes);
    expect(world.rollout().percent).toBe(100);
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

  it.each([
    [{ steps: [] }, /at least one step/],
    [{ steps: [5, 5] }, /above the step before/],
    [{ steps: [0, 50] }, /integer percent/],
    [{ steps: [50, 101] }, /integer percent/],
    [{ dwellMs: 1000 }, /dwell/],
    [{ guards: { confidence: 2 } }, /confidence/],
  ])('when a ramp is asked with %j, then it is refused with a message', (bad, message) => {
    const world = new World(1);
    const result = startRamp({ id: 'r', steps: [1, 100], dwellMs: HOUR, by: 'a', now: new Date(T0), rollout: world.rollout(), ...bad });
    expect(result).toEqual({ ok: false, error: expect.stringMatching(message) });
  });

  it('when the kill switch is on, then a ramp cannot start', () => {
    const world = new World(1);
    world.override.enabled = false;
    expect(startRamp({ id: 'r', steps: [1, 100], dwellMs: HOUR, by: 'a', now: new Date(T0), rollout: world.rollout() })).toMatchObject({ ok: false, error: expect.stringMatching(/kill switch/) });
  });

  it('when a stored ramp is of another schema or corrupt, then it is refused, not guessed at', () => {
    const world = new World(1);
    const started = startRamp({ id: 'r', steps: [1, 100], dwellMs: HOUR, by: 'a', now: new Date(T0), rollout: world.rollout() });
    if (!started.ok) throw new Error(started.error);
    expect(parseRampState(JSON.parse(JSON.stringify(started.state)))).toEqual({ ok: true, state: started.state });
    expect(parseRampState({ ...started.state, schema: 2 })).toMatchObject({ ok: false, error: expect.stringMatching(/schema/) });
    expect(parseRampState({ ...started.state, current: 2 })).toMatchObject({ ok: false });
    expect(parseRampState({ ...started.state, status: 'flying' })).toMatchObject({ ok: false });
    expect(parseRampState({ ...started.state, steps: [{ percent: 50 }, { percent: 10 }] })).toMatchObject({ ok: false });
    expect(parseRampState(null)).toMatchObject({ ok: false });
  });

  it('when steps and dwell are typed, then they parse or are refused', () => {
    expect(parseRampSteps('1, 5,25,50,100')).toEqual([1, 5, 25, 50, 100]);
    expect(parseRampSteps('1,x')).toBeNull();
    expect(parseRampSteps('1,,5')).toBeNull();
    expect(parseDwell('1h')).toBe(HOUR);
    expect(parseDwell('1h30m')).toBe(90 * 60_000);
    expect(parseDwell('90s')).toBe(90_000);
    expect(parseDwell('1 hour')).toBeNull();
    expect(parseDwell('')).toBeNull();
  });
});

type Act = { kind: 'wait'; ticks: number } | { kind: 'crash' } | { kind: 'manual'; percent: number } | { kind: 'kill' } | { kind: 'unkill' } | { kind: 'pause' } | { kind: 'resume' } | { kind: 'regress' };

describe('ramp state machine over random histories (R23)', () => {
  it('when humans, crashes and regressions interleave with checks, then the ramp only writes its own steps or the last good one, never over a human, never past an unpassed step', () => {
    const act: fc.Arbitrary<Act> = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('wait' as const), ticks: fc.integer({ min: 1, max: 12 }) }) },
      fc.constant({ kind: 'crash' as const }),
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
         * Set by a human's percent (one the ramp cannot take for its own: neither the percent it
         * saw nor the one it owes) or pause until a resume: the ramp may not write a percent
         * meanwhile. The kill switch likewise forbids writes, but a halt's way back (a percent,
         * never `enabled`).
         */
        let percentHeld = false;
        let killHeld = false;
        /** The latest manual percent is a human's (the ramp sees only the last one, at its next check). */
        let manualHeld = false;
        for (const a of acts) {
          const writesBefore = driver.writes.length;
          const before = driver.state;
          if (a.kind === 'wait' || a.kind === 'crash') percentHeld ||= manualHeld;
          if (a.kind === 'wait') {
            for (let i = 0; i < a.ticks; i++) {
              world.now += TICK;
              world.traffic();
              driver.tick();
            }
          } else if (a.kind === 'crash') {
            world.now += TICK;
            driver.tick(true);
          } else if (a.kind === 'manual') {
            manualHeld = a.percent !== before.appliedPercent && a.percent !== before.owed?.percent;
            world.override.percent = a.percent;
            world.revision += 1;
          } else if (a.kind === 'kill') {
            world.override.enabled = false;
            world.revision += 1;
            killHeld = true;
          } else if (a.kind === 'unkill') {
            delete world.override.enabled;
            world.revision += 1;
          } else if (a.kind === 'regress') {
            world.ringRates = { ...BASE, likes: 0.03 };
          } else if (a.kind === 'pause') {
            const r = pauseRamp(before, { now: new Date(world.now), by: 'h' });
            if (r.ok) {
              driver.stored = JSON.stringify(r.state);
              percentHeld = true;
            }
          } else {
            const r = resumeRamp(before, { now: new Date(world.now), by: 'h', rollout: world.rollout() });
            if (r.ok) {
              driver.stored = JSON.stringify(r.state);
              if (r.write) driver.apply(r.write);
              percentHeld = false;
              killHeld = false;
              manualHeld = false;
            }
          }
          const state = driver.state;
          for (const w of driver.writes.slice(writesBefore)) {
            if (a.kind === 'resume') continue;
            // Never over a human: a write after a manual change or the kill switch needs a resume first.
            expect(percentHeld).toBe(false);
            if (killHeld) expect({ status: state.status, enabled: w.enabled }).toEqual({ status: 'halted', enabled: undefined });
            const index = steps.indexOf(w.percent);
            const passedBefore = state.steps.slice(0, Math.max(0, index)).every((s) => s.outcome === 'passed');
            expect((index >= 0 && passedBefore) || w.percent === state.lastGoodPercent).toBe(true);
          }
          if (state.status === 'paused') expect(state.owed).toBeNull();
          if (state.status === 'halted') expect(state.lastGoodPercent).toBeLessThan(state.steps[state.current].percent);
          // The percent the ring serves never exceeds the highest step reached.
          const reached = state.steps.filter((s) => s.startedAt !== null || s.outcome === 'passed').map((s) => s.percent);
          if (!percentHeld && !manualHeld && world.rollout().enabled && world.rollout().source.percent === 'override') {
            expect(world.rollout().percent).toBeLessThanOrEqual(Math.max(state.owed?.percent ?? 0, ...reached, state.lastGoodPercent));
          }
        }
      }),
      { seed, numRuns: 150 },
    );
  });
});
