/**
 * R23's self-driving ramp, driven by the controller's lease holder against a real Redis, real
 * BullMQ queues and the real audit trail, over a simulated readout: the hourly D7 hashes are
 * filled tick by tick with known rates per variant (views split by the percent in force), and
 * the controller's clock is the test's, so an hour's dwell takes a few dozen checks.
 */
import { Queue } from 'bullmq';
import { createLogger } from '@feed/logger';
import { addVariantStats, auditTrail, BuildStore, observeRollout, readRamp, RolloutStore, startStoredRamp, type AuditTrail, type RampAsk, type RampCommandDeps } from '@feed/storage';
import type { RampState } from '@feed/domain';
import { bullConnectionFactory, BullConnections } from '../src/jobs/bull-connection';
import { buildJobOptions, SCHEDULER_ID, type BuildJobData } from '../src/jobs/build-queue';
import { COUNTER_REPAIR_QUEUE, COUNTER_REPAIR_SCHEDULER_ID } from '../src/jobs/counter-repair';
import { startController, type Controller, type ControllerDeps } from '../src/controller/desired-state';
import { driveRamp } from '../src/controller/ramp-driver';
import { createWorkerMetrics, type WorkerMetrics } from '../src/metrics';
import { useTestServices } from '../../../test/support/services';

const HOUR = 3_600_000;
const TICK = 10 * 60_000;
const ENVIRONMENT = { enabled: false, percent: 100 };
/** Small enough for a 1 % step of 50,000 views per tick to have its sample within its dwell. */
const GUARDS = { minViews: 2000, minRequests: 400 };

type Rates = Record<'like' | 'collect' | 'share' | 'not-interested' | 'server-error' | 'degraded' | 'empty-page', number>;
const BASE: Rates = { like: 0.05, collect: 0.02, share: 0.01, 'not-interested': 0.03, 'server-error': 0.001, 'degraded': 0.002, 'empty-page': 0.001 };

const s = useTestServices('ramp-driver');
let connections: BullConnections;
let buildQueue: Queue<BuildJobData>;
let counterQueue: Queue;
let now: Date;
let trail: AuditTrail;
let controllers: Controller[];

beforeEach(() => {
  now = new Date(Date.UTC(2026, 6, 24, 0, 0, 0));
  controllers = [];
  trail = auditTrail(s.mongo, s.prefix);
  connections = new BullConnections(bullConnectionFactory(s.config));
  buildQueue = new Queue<BuildJobData>('short-recommend-build', { connection: connections.next(), prefix: s.keys.bullPrefix, defaultJobOptions: buildJobOptions(30_000) });
  counterQueue = new Queue(COUNTER_REPAIR_QUEUE, { connection: connections.next(), prefix: s.keys.bullPrefix });
  s.disposeAfter(() =>
    connections.closeWithin(2_000, [...controllers.map((c) => ({ close: () => c.stop() })), buildQueue, counterQueue], createLogger({ silent: true })),
  );
});

/** A worker replica's controller, driving the ramp when it holds the lease (as main.ts wires it). */
function replica(metrics: WorkerMetrics = createWorkerMetrics()): { controller: Controller; metrics: WorkerMetrics } {
  const logger = createLogger({ silent: true });
  const deps: ControllerDeps = {
    store: new BuildStore(s.redis, s.keys),
    logger,
    metrics,
    buildQueue,
    ensureBuildScheduler: async () => void (await buildQueue.upsertJobScheduler(SCHEDULER_ID, { pattern: '30 4 * * *', tz: 'UTC' }, { name: 'daily-build' })),
    counterRepairQueue: counterQueue,
    ensureCounterRepairScheduler: async () => void (await counterQueue.upsertJobScheduler(COUNTER_REPAIR_SCHEDULER_ID, { every: 60_000 }, { name: 'counter-repair' })),
    cron: '30 4 * * *',
    timeZone: 'UTC',
    now: () => now,
    driveRamp: (signal) => driveRamp({ store: new RolloutStore(s.redis, s.keys), logger, metrics, environment: ENVIRONMENT, trail, now: () => now, signal }),
  };
  // Checks only when the test asks (tick()): a day's timer never fires within a test.
  const controller = startController(deps, 86_400_000);
  controllers.push(controller);
  return { controller, metrics };
}

const commandDeps = (): RampCommandDeps => ({ redis: s.redis, keys: s.keys, environment: ENVIRONMENT, trail, who: { actor: 'alice@host', via: 'cli' }, now: () => now });

async function start(ask: Partial<RampAsk> = {}): Promise<RampState> {
  const started = await startStoredRamp(commandDeps(), { steps: [1, 5, 25, 50, 100], dwellMs: HOUR, guards: GUARDS, ...ask });
  if (!started.ok) throw new Error(started.error);
  return started.state;
}

/** One tick of traffic into the current UTC hour's hash: `views` split by the percent in force, counts from the rates. */
async function traffic(views: number, ring: Rates = BASE, legacy: Rates = BASE): Promise<void> {
  const rollout = await observeRollout(s.redis, s.keys, ENVIRONMENT);
  const share = rollout.enabled ? rollout.percent / 100 : 0;
  const counts = new Map<string, number>();
  for (const [variant, n, rates] of [['ring', Math.round(views * share), ring], ['legacy', Math.round(views * (1 - share)), legacy]] as const) {
    const requests = Math.round(n / 5);
    counts.set(`${variant}:view`, n);
    counts.set(`${variant}:request`, requests);
    for (const event of ['like', 'collect', 'share', 'not-interested'] as const) counts.set(`${variant}:${event}`, Math.round(n * rates[event]));
    for (const event of ['server-error', 'degraded', 'empty-page'] as const) counts.set(`${variant}:${event}`, Math.round(requests * rates[event]));
  }
  await addVariantStats(s.redis, s.keys, now, counts);
}

const stored = async () => (await readRamp(s.redis, s.keys)).state!;
const rollout = () => observeRollout(s.redis, s.keys, ENVIRONMENT);

/** Checks every 10 simulated minutes with traffic, by each replica in turn, until `until` or `ms` passed. */
async function run(replicas: Controller[], ms: number, views: number, until?: (state: RampState) => boolean, ring?: Rates): Promise<RampState> {
  for (const end = now.getTime() + ms; now.getTime() < end; ) {
    now = new Date(now.getTime() + TICK);
    await traffic(views, ring);
    for (const r of replicas) await r.tick();
    const state = await stored();
    if (until?.(state)) return state;
  }
  return stored();
}

const rampEntries = async () => (await trail.read(500)).reverse().filter((e) => e.action === 'ramp-step').map((e) => `${(e.after as { kind: string }).kind} ${(e.after as { percent: number }).percent}`);
// The first step's write is the start command's (alice's), the rest the ramp's own.
const rampWrites = async () => (await trail.read(500)).reverse().filter((e) => e.action === 'rollout-set').map((e) => (e.after as { percent: number }).percent);
const gauge = async (metrics: WorkerMetrics) => (await metrics.rampHalted.get()).values[0]?.value;

describe('the rollout ramp driven by the controller (R23)', () => {
  it('when the variants are equal, then every step passes after its dwell and the ramp reaches 100 %, each automatic step in the audit trail', async () => {
    const { controller } = replica();
    await start();
    const state = await run([controller], 12 * HOUR, 50_000, (r) => r.status === 'done');
    expect(state.status).toBe('done');
    expect(state.steps.map((step) => step.outcome)).toEqual(['passed', 'passed', 'passed', 'passed', 'reached']);
    expect(await rollout()).toMatchObject({ enabled: true, percent: 100, source: { enabled: 'override', percent: 'override' } });
    expect(state.steps[0].verdict?.guards.find((g) => g.guard === 'likes')).toMatchObject({ outcome: 'pass', ring: { trials: expect.any(Number), rate: expect.closeTo(0.05, 3) } });
    expect(state.steps[0].verdict?.guards.find((g) => g.guard === 'server-errors')?.ring?.trials).toBeGreaterThanOrEqual(GUARDS.minRequests);
    expect(await rampWrites()).toEqual([1, 5, 25, 50, 100]);
    expect(await rampEntries()).toEqual(['started 1', 'step-started 1', 'step-passed 1', 'step-started 5', 'step-passed 5', 'step-started 25', 'step-passed 25', 'step-started 50', 'step-passed 50', 'done 100']);
    expect((await trail.read(500)).find((e) => e.action === 'ramp-start')).toMatchObject({ actor: 'alice@host', via: 'cli', after: { steps: [1, 5, 25, 50, 100] } });
    expect(state.notices).toEqual([]);
  });

  it("when the ring's like rate is lower with enough views, then the ramp halts, the percent goes back to the last good step, the reason is audited and FeedRampHalted's gauge is 1", async () => {
    const { controller, metrics } = replica();
    await start({ steps: [5, 25, 50, 100] });
    await run([controller], 3 * HOUR, 50_000, (r) => r.current === 1 && r.status === 'running');
    expect(await rollout()).toMatchObject({ percent: 25 });
    expect(await gauge(metrics)).toBe(0);
    const state = await run([controller], 6 * HOUR, 50_000, (r) => r.status === 'halted', { ...BASE, like: 0.035 });
    expect(state).toMatchObject({ status: 'halted', lastGoodPercent: 5, steps: [{ outcome: 'passed' }, { outcome: 'failed', verdict: { outcome: 'fail' } }, { outcome: 'pending' }, { outcome: 'pending' }] });
    expect(state.haltReasons[0]).toMatch(/^likes: /);
    const likes = state.steps[1].verdict?.guards.find((g) => g.guard === 'likes');
    expect(likes?.differenceInterval?.[1]).toBeLessThan(0);
    expect(await rollout()).toMatchObject({ enabled: true, percent: 5 });
    expect(await gauge(metrics)).toBe(1);
    const halted = (await trail.read(500)).find((e) => e.action === 'ramp-step' && (e.after as { kind: string }).kind === 'halted');
    expect(halted).toMatchObject({ actor: `ramp ${state.id}`, via: 'worker', after: { percent: 25, alert: 'FeedRampHalted', message: expect.stringMatching(/back to 5 %: likes/) } });
    // Halted is final: more checks write nothing.
    const writes = (await rampWrites()).length;
    await run([controller], 2 * HOUR, 50_000);
    expect((await rampWrites()).length).toBe(writes);
    expect(await rampWrites()).toEqual([5, 25, 5]);
  });

  it('when the views are too few, then the step waits at its percent (no pass) and is judged again after the recheck', async () => {
    const { controller } = replica();
    await start({ steps: [10, 100], guards: { minViews: 20_000, minRequests: 400 } });
    const state = await run([controller], HOUR + 2 * TICK, 1000);
    expect(state).toMatchObject({ status: 'waiting', steps: [{ outcome: 'waiting', judgements: 1, verdict: { outcome: 'wait' } }, { outcome: 'pending' }] });
    expect(await rollout()).toMatchObject({ percent: 10 });
    const later = await run([controller], HOUR, 1000);
    expect(later.steps[0]).toMatchObject({ outcome: 'waiting', judgements: 2 });
    expect(await rampEntries()).toEqual(['started 10', 'step-started 10', 'waiting 10']);
  });

  it('when the worker that drove it restarts, then the next one resumes the step where it was and finishes the ramp, each step audited once', async () => {
    const first = replica();
    await start();
    const before = await run([first.controller], 6 * HOUR, 50_000, (r) => r.current === 2 && r.status === 'running');
    await first.controller.stop();
    const second = replica();
    const state = await run([second.controller], 12 * HOUR, 50_000, (r) => r.status === 'done');
    expect(state.status).toBe('done');
    // The step it stopped in kept its start: the dwell was not restarted.
    expect(state.steps[2].startedAt).toBe(before.steps[2].startedAt);
    expect(await rampWrites()).toEqual([1, 5, 25, 50, 100]);
    expect(await rampEntries()).toEqual(['started 1', 'step-started 1', 'step-passed 1', 'step-started 5', 'step-passed 5', 'step-started 25', 'step-passed 25', 'step-started 50', 'step-passed 50', 'done 100']);
  });

  it('when two replicas check, then only the lease holder drives the ramp: the other one writes and counts nothing', async () => {
    const holder = replica();
    // The first replica's first check took the lease (LEASE_MS outlives this test's run); the second starts after it.
    await holder.controller.tick();
    const other = replica();
    await start();
    await run([holder.controller], TICK, 50_000);
    const revision = (await stored()).revision;
    await run([other.controller], 3 * HOUR, 50_000);
    expect((await stored()).revision).toBe(revision);
    const state = await run([other.controller, holder.controller], 12 * HOUR, 50_000, (r) => r.status === 'done');
    expect(state.status).toBe('done');
    expect(await rampWrites()).toEqual([1, 5, 25, 50, 100]);
    const counted = async (m: WorkerMetrics) => (await m.rampSteps.get()).values.reduce((sum, v) => sum + v.value, 0);
    expect(await counted(other.metrics)).toBe(0);
    expect(await counted(holder.metrics)).toBeGreaterThan(0);
  });

  it('when the kill switch is set during a step, then the ramp pauses and writes nothing more, even after the kill switch is cleared', async () => {
    const { controller } = replica();
    await start();
    await run([controller], 90 * 60_000, 50_000);
    const at = (await stored()).steps[(await stored()).current].percent;
    // Written by hand (redis-cli), not through on-call's path that pauses the ramp itself: the driver sees it.
    await s.redis.hSet(s.keys.rollout, 'enabled', 'false');
    const state = await run([controller], TICK, 50_000);
    expect(state).toMatchObject({ status: 'paused', pause: { cause: 'kill-switch' } });
    const writes = (await rampWrites()).length;
    await s.redis.hDel(s.keys.rollout, 'enabled');
    await run([controller], 3 * HOUR, 50_000);
    expect((await rampWrites()).length).toBe(writes);
    expect(await rollout()).toMatchObject({ percent: at });
    expect(await rampEntries()).toContain(`paused ${at}`);
  });

  it('when a past version stored a ramp this one cannot read (a dwell of 100000000d and other garbage), then the check reports it and goes on with its other work', async () => {
    const { controller, metrics } = replica();
    // The controller's first check (started with it) ends first: one still running could commit
    // the ramp it read before the garbage below, since that hand write leaves the revision as is.
    await controller.tick();
    const state = await start();
    await s.redis.hSet(s.keys.ramp, { state: JSON.stringify({ ...state, dwellMs: 100_000_000 * 86_400_000, judgeAt: 'Invalid time value', current: 7 }) });
    const failures = async () => (await metrics.controllerFailures.get()).values[0]?.value ?? 0;
    // Ticks of the controller alone: run() reads the stored ramp after each one, and this one is unreadable.
    for (let tick = 0; tick < 3; tick++) {
      now = new Date(now.getTime() + TICK);
      await controller.tick();
    }
    expect(await failures()).toBe(0);
    expect((await metrics.rampUnreadable.get()).values[0]?.value).toBe(1);
    // The controller's own work went on: the daily build's scheduler is in place.
    expect(await buildQueue.getJobScheduler(SCHEDULER_ID)).toMatchObject({ key: SCHEDULER_ID });
    expect(await rollout()).toMatchObject({ percent: 1 });
  });

});
