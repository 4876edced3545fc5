/**
 * R23's "a manual percent and the kill switch always win over a ramp", and issue 43's two ramp
 * windows (a refused tick records nothing, its notices included; a tick that read before a pause
 * cannot write its step), under every interleaving of one driver tick that passes a step with one
 * human command on the real Redis. fast-check's scheduler releases
 * each Redis command of both flows in an order it draws (every call of the clients they use waits
 * for its turn), so the driver's read and commit fall anywhere between the human's pause and
 * change (a percent, the kill switch, a clear), or a pause alone. Afterwards the next check runs
 * undisturbed. The model: the human's change is in force (after a pause alone, the rollout as it
 * was when the pause returned); the ramp is not running; and the audit trail tells no step the
 * rollout never saw (a "step passed, next N %" is recorded only beside the ramp's write of N %).
 */
import fc from 'fast-check';
import { createLogger } from '@feed/logger';
import { addVariantStats, auditTrail, changeRolloutOverRamp, observeRollout, pauseStoredRamp, readRamp, RolloutStore, startStoredRamp, type AuditTrail, type Redis, type RampCommandDeps, type Rollout } from '@feed/storage';
import { driveRamp } from '../src/controller/ramp-driver';
import { createWorkerMetrics } from '../src/metrics';
import { useTestServices } from '../../../test/support/services';

const seed = process.env.CI ? 23_05 : Date.now() % 2 ** 31;
console.log(`ramp-races.model.test.ts fast-check seed ${seed}`);

const ENVIRONMENT: Rollout = { enabled: false, percent: 100 };
const s = useTestServices('ramp-races');
let trail: AuditTrail;
const started = new Date(Date.UTC(2026, 6, 24));
/** After the first step's dwell: the tick under test judges it, and it passes. */
const now = new Date(started.getTime() + 3_660_000);
let clock = started;
const logger = createLogger({ silent: true });

beforeEach(() => {
  trail = auditTrail(s.mongo, s.prefix);
});

/**
 * `redis` whose every command waits for the scheduler's turn (labelled by flow and command); with
 * `hold`, its command of index `hold.at` also waits for `hold.until` first. The uniform scheduler alone
 * rarely lets one flow run its whole course between two commands of the other (each of the
 * human's ~9 commands would have to win its draw); the hold makes that case one run in ten.
 */
function scheduled(redis: Redis, scheduler: fc.Scheduler, flow: string, hold?: { at: number; until: Promise<unknown> }): Redis {
  let sent = 0;
  return new Proxy(redis, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        if (sent++ === hold?.at) await hold.until.catch(() => undefined);
        await scheduler.schedule(Promise.resolve(), `${flow} ${String(name)}`);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** An hour of equal rates for both variants, enough views for a verdict at a 1 % step. */
const equalTraffic = new Map<string, number>();
for (const [variant, views] of [['ring', 5000], ['legacy', 495_000]] as const) {
  const rates = { view: 1, request: 0.2, like: 0.05, collect: 0.02, share: 0.01, 'not-interested': 0.03, 'server-error': 0.0002, degraded: 0.0004, 'empty-page': 0.0002 };
  for (const [event, rate] of Object.entries(rates)) equalTraffic.set(`${variant}:${event}`, Math.round(views * rate));
}

const humanChange = fc.oneof(
  fc.record({ kind: fc.constant('percent' as const), percent: fc.integer({ min: 0, max: 100 }) }),
  fc.constant({ kind: 'kill-switch' as const }),
  fc.constant({ kind: 'clear' as const }),
  fc.constant({ kind: 'pause' as const }),
);

describe('a ramp against a concurrent human command (R23)', () => {
  it('when a driver tick and a manual percent, the kill switch, a clear or a pause alone interleave in any order, then the human change is in force (after a pause, the rollout as the pause left it) and the ramp no longer runs', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), humanChange, fc.option(fc.nat({ max: 8 })), async (scheduler, change, holdDriverAt) => {
        await s.redis.del([s.keys.ramp, s.keys.rollout]);
        clock = started;
        const deps: RampCommandDeps = { redis: s.redis, keys: s.keys, environment: ENVIRONMENT, trail, who: { actor: 'alice@host', via: 'api' }, now: () => clock };
        const ramp = await startStoredRamp(deps, { steps: [1, 5, 25, 50, 100], dwellMs: 3_600_000, guards: { minViews: 2000, minRequests: 400 } });
        if (!ramp.ok) throw new Error(ramp.error);
        const tick = (redis: Redis) => driveRamp({ store: new RolloutStore(redis, s.keys), logger, metrics: createWorkerMetrics(), environment: ENVIRONMENT, trail, now: () => clock });
        // The first step in force (bounded: a version that writes it at the start needs no tick), then a readout that passes it.
        for (let i = 0; i < 3 && !(await readRamp(s.redis, s.keys)).state?.steps[0].startedAt; i++) await tick(s.redis);
        await addVariantStats(s.redis, s.keys, started, equalTraffic);
        clock = now;
        const value: Partial<Rollout> | 'clear' = change.kind === 'percent' ? { percent: change.percent } : change.kind === 'kill-switch' ? { enabled: false } : 'clear';
        const humanDeps = { ...deps, redis: scheduled(s.redis, scheduler, 'human') };

        let humanDone: () => void = () => undefined;
        const humanFinished = new Promise<void>((resolve) => (humanDone = resolve));
        const driver = tick(scheduled(s.redis, scheduler, 'driver', holdDriverAt === null ? undefined : { at: holdDriverAt, until: humanFinished }));
        // Read on the unscheduled client as the pause returns: sent before any later driver command.
        const atPause = change.kind === 'pause' ? pauseStoredRamp(humanDeps).then(() => observeRollout(s.redis, s.keys, ENVIRONMENT)) : undefined;
        const human = (atPause ?? changeRolloutOverRamp(humanDeps, value)).finally(humanDone);
        await scheduler.waitFor(Promise.all([driver, human]));
        await tick(s.redis);

        const inForce = await observeRollout(s.redis, s.keys, ENVIRONMENT);
        if (atPause) expect({ enabled: inForce.enabled, percent: inForce.percent }).toEqual(await atPause.then((r) => ({ enabled: r.enabled, percent: r.percent })));
        else if (change.kind === 'percent') expect(inForce.percent).toBe(change.percent);
        else if (change.kind === 'kill-switch') expect(inForce.enabled).toBe(false);
        else expect(inForce.source).toEqual({ enabled: 'environment', percent: 'environment' });
        expect(['paused', 'done', 'halted']).toContain((await readRamp(s.redis, s.keys)).state?.status);
        const trailOfRamp = (await trail.read(1000)).filter((e) => e.actor === `ramp ${ramp.state.id}`);
        const written = trailOfRamp.filter((e) => e.action === 'rollout-set').map((e) => (e.after as { percent: number }).percent);
        const announced = trailOfRamp.filter((e) => e.action === 'ramp-step' && (e.after as { kind: string }).kind === 'step-passed').map(() => 5);
        expect(written).toEqual(expect.arrayContaining(announced));
      }),
      { seed, numRuns: 40 },
    );
  });
});
