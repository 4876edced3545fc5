/**
 * D7 and R23 against a client that repeats itself: the readout counts views and "not interested"
 * once per client, video and variant, and at most READOUT_CLIENT_HOURLY_CAP of an action per client
 * and hour, so one guest device cannot halt a ramp that 150 signed-in users pass (issue 43).
 */
import fc from 'fast-check';
import { advanceRamp, judgeStep, READOUT_CLIENT_HOURLY_CAP, startRamp, type RampAdvance, type StepReadout } from '@feed/domain';
import { admitReadoutAction, Deadline, readoutStore, readStepReadout, readVariantStats, type Variant, type VariantEvent } from '@feed/storage';
import { VariantReadout } from '../src/feed/variant-readout';
import { createApiMetrics } from '../src/metrics';
import { guestIdentity, userIdentity, type Identity } from '../src/http/identity';
import { useTestServices } from '../../../test/support/services';

const s = useTestServices('readout-first');
const USERS = Array.from({ length: 150 }, (_, i) => userIdentity(`ramp-user-${i}`));
const GUEST = guestIdentity('attacking-device-1');
/** Half the users on each variant (a 50 % step); the guest device is on the ring. */
const variantOf = async (identity: Identity): Promise<Variant> => (identity === GUEST || Number(identity.userId?.split('-')[2]) % 2 === 0 ? 'ring' : 'legacy');
const vid = (i: number) => i.toString(16).padStart(24, '0');
/** A request's Redis deadline that a healthy Redis never reaches (the subject here is counting, not time). */
const unhurried = () => new Deadline(10_000);

function readoutUnderTest(variant = variantOf) {
  const readout = new VariantReadout({ store: readoutStore(s.redis, s.keys), metrics: createApiMetrics(), variantOf: async (identity) => ({ variant: await variant(identity), percent: 50 }) });
  s.disposeAfter(() => readout.close());
  return readout;
}

/** 150 users: each loads 4 pages and views 20 videos; every fifth user marks one of them "not interested" (1 % per view). */
async function honestTraffic(readout: VariantReadout): Promise<void> {
  await Promise.all(
    USERS.map(async (user, u) => {
      const variant = await variantOf(user);
      for (let p = 0; p < 4; p++) readout.countHealth(variant, 'request');
      for (let v = 0; v < 20; v++) await readout.record(user, 'view', unhurried(), vid(u * 20 + v));
      if (u % 5 === 0) await readout.record(user, 'not-interested', unhurried(), vid(u * 20));
    }),
  );
}

/** A ramp {steps: [50, 100], dwell: 1m} started at t0 (its first step, 50 %, written at once) and judged on `readout` after the dwell. */
function rampJudgedOn(readout: StepReadout): RampAdvance {
  const t0 = Date.now();
  const started = startRamp({ id: 'attack', steps: [50, 100], dwellMs: 60_000, guards: { minViews: 1000, minRequests: 200 }, by: 'oncall', now: new Date(t0) });
  const atHalf = { enabled: true, percent: 50, source: { enabled: 'override', percent: 'override' } } as const;
  return advanceRamp(started.state, { now: new Date(t0 + 61_000), rollout: atHalf, readout });
}

describe('the readout under one repeating client (D7, R23)', () => {
  it('when 150 users pass a 50 % step and one guest device sends 300 "not interested" for one video, then the ramp goes on to 100 %', async () => {
    const readout = readoutUnderTest();
    await honestTraffic(readout);
    await readout.flush();
    const honest = await readStepReadout(s.redis, s.keys, new Date(), 1);
    expect(honest.ring).toMatchObject({ views: 1500, notInterested: 15, requests: 300 });
    expect(honest.legacy).toMatchObject({ views: 1500, notInterested: 15, requests: 300 });
    expect(rampJudgedOn(honest).state.status).not.toBe('halted');

    for (let i = 0; i < 300; i++) await readout.record(GUEST, 'not-interested', unhurried(), vid(0));
    await readout.flush();
    const attacked = await readStepReadout(s.redis, s.keys, new Date(), 1);
    expect(attacked.ring.notInterested).toBe(16);
    const { state: ramp, write } = rampJudgedOn(attacked);
    expect({ status: ramp.status, haltReasons: ramp.haltReasons }).toEqual({ status: expect.not.stringMatching(/halted/), haltReasons: [] });
    expect(ramp.steps.map((step) => `${step.percent} ${step.outcome}`)).toEqual(['50 passed', '100 reached']);
    expect(write).toMatchObject({ percent: 100 });
  });

  it('when one client marks ever new videos, then no more than the hourly cap of its actions count, and a failing verdict states its sample and the cap', async () => {
    const readout = readoutUnderTest();
    await honestTraffic(readout);
    for (let i = 0; i < READOUT_CLIENT_HOURLY_CAP + 50; i++) await readout.record(GUEST, 'not-interested', unhurried(), vid(100_000 + i));
    await readout.flush();
    const attacked = await readStepReadout(s.redis, s.keys, new Date(), 1);
    expect(attacked.ring.notInterested).toBe(15 + READOUT_CLIENT_HOURLY_CAP);
    expect(attacked.viewers).toEqual({ ring: 75, legacy: 75 });
    // The cap bounds the client's share; a verdict the client still moves names that bound and the sample.
    const verdict = judgeStep(attacked, { ...rampJudgedOn(attacked).state.guards });
    expect(verdict.outcome).toBe('fail');
    expect(verdict.reasons[0]).toMatch(/^not-interested: .* sample: ring 215 of 1500 views from 75 client-hours, legacy 15 of 1500 views from 75 client-hours; each client counts once per video and at most 200 of an action an hour\)$/);
  });

  it('when a client repeats a view across midnight UTC, then it is a repeat for the next two days and counts again on the third', async () => {
    const admit = (at: string) => admitReadoutAction(s.redis, s.keys, GUEST.key, new Date(at), 'ring', 'view', vid(7));
    expect(await admit('2026-07-24T23:59:00Z')).toBe(1);
    expect(await admit('2026-07-25T00:01:00Z')).toBe(0);
    expect(await admit('2026-07-26T23:59:00Z')).toBe(0);
    expect(await admit('2026-07-27T00:01:00Z')).toBe(1);
    // State per counted action: the client's hash of the day, expiring after three days.
    expect(await s.redis.ttl(s.keys.readoutClient(GUEST.key, '20260727'))).toBeGreaterThan(3 * 24 * 3600);
  });

  it('when clients repeat views, marks and shares in any order, then the tally is the distinct first successes per client, video and variant (generative)', async () => {
    const action = fc.record({ client: fc.integer({ min: 0, max: 3 }), video: fc.integer({ min: 0, max: 5 }), event: fc.constantFrom<Exclude<VariantEvent, 'page'>>('view', 'not-interested', 'share') });
    await fc.assert(
      fc.asyncProperty(fc.array(action, { maxLength: 60 }), fc.integer({ min: 0, max: 1000 }), async (actions, run) => {
        const clients = Array.from({ length: 4 }, (_, c) => guestIdentity(`generative-${run}-${c}-${Math.random().toString(36).slice(2)}`));
        const variantOfClient = async (identity: Identity): Promise<Variant> => (clients.indexOf(identity) % 2 === 0 ? 'ring' : 'legacy');
        const readout = readoutUnderTest(variantOfClient);
        const before = await readVariantStats(s.redis, s.keys, new Date(), 1);
        const model = new Set<string>();
        await Promise.all(actions.map(({ client, video, event }) => readout.record(clients[client], event, unhurried(), vid(video))));
        for (const { client, video, event } of actions) model.add(`${client % 2 === 0 ? 'ring' : 'legacy'}|${client}|${video}|${event}`);
        await readout.flush();
        const after = await readVariantStats(s.redis, s.keys, new Date(), 1);
        for (const variant of ['ring', 'legacy'] as const) {
          for (const event of ['view', 'not-interested', 'share'] as const) {
            const expected = [...model].filter((k) => k.startsWith(`${variant}|`) && k.endsWith(`|${event}`)).length;
            expect({ variant, event, n: after[variant][event] - before[variant][event] }).toEqual({ variant, event, n: expected });
          }
        }
      }),
      { numRuns: 25, verbose: true },
    );
  });
});
