/**
 * The ramp's storage (R23): one hash saved only over the revision read (ramp-save.lua), so a
 * human's command and the driver's tick never overwrite each other, and a replaced ramp is never
 * overwritten by a driver that read the one before.
 */
import { advanceRamp } from '@feed/domain';
import { auditTrail, pauseStoredRamp, readRamp, saveRamp, startStoredRamp, type RampCommandDeps } from '../src';
import { useTestServices } from '../../../test/support/services';

const s = useTestServices('ramp-store');
const ENVIRONMENT = { enabled: true, percent: 100 };
const deps = (): RampCommandDeps => ({ redis: s.redis, keys: s.keys, environment: ENVIRONMENT, trail: auditTrail(s.mongo, s.prefix), who: { actor: 'oncall', via: 'api' } });

describe('ramp store (R23)', () => {
  it('when a driver saves over a revision a command changed meanwhile, then its save is refused and the command stays', async () => {
    const started = await startStoredRamp(deps(), { steps: [1, 100], dwellMs: 3_600_000 });
    if (!started.ok) throw new Error(started.error);
    // The driver read the started ramp; on-call pauses before the driver saves its tick.
    const read = (await readRamp(s.redis, s.keys)).state!;
    const tick = advanceRamp(read, { now: new Date(), rollout: { enabled: true, percent: 1, source: { enabled: 'override', percent: 'override' } } }).state;
    expect(tick.revision).toBe(read.revision + 1);
    const paused = await pauseStoredRamp(deps());
    expect(paused).toMatchObject({ ok: true, state: { status: 'paused' } });
    expect(await saveRamp(s.redis, s.keys, tick, read.revision)).toBe(false);
    expect((await readRamp(s.redis, s.keys)).state).toMatchObject({ status: 'paused' });
  });

  it('when a paused ramp is replaced, then the new one has a higher revision: a driver that read the old one cannot save over it', async () => {
    const first = await startStoredRamp(deps(), { steps: [1, 100], dwellMs: 3_600_000 });
    if (!first.ok) throw new Error(first.error);
    const old = (await pauseStoredRamp(deps())) as { ok: true; state: { revision: number } };
    const second = await startStoredRamp(deps(), { steps: [5, 100], dwellMs: 3_600_000 });
    if (!second.ok) throw new Error(second.error);
    expect(second.state.revision).toBeGreaterThan(old.state.revision);
    expect(await saveRamp(s.redis, s.keys, { ...first.state, revision: old.state.revision + 1 }, old.state.revision)).toBe(false);
    expect((await readRamp(s.redis, s.keys)).state?.id).toBe(second.state.id);
  });

  it('when a running ramp exists, then another start is refused as a conflict; with no ramp, pause is missing', async () => {
    expect(await pauseStoredRamp(deps())).toMatchObject({ ok: false, kind: 'missing' });
    await startStoredRamp(deps(), { steps: [1, 100], dwellMs: 3_600_000 });
    expect(await startStoredRamp(deps(), { steps: [1, 100], dwellMs: 3_600_000 })).toMatchObject({ ok: false, kind: 'conflict' });
  });

  it('when the stored ramp is not JSON or of another schema, then it reads as none with the reason', async () => {
    await s.redis.hSet(s.keys.ramp, { revision: '3', state: '{not json' });
    expect(await readRamp(s.redis, s.keys)).toEqual({ state: null, error: 'the stored ramp is not JSON' });
    await s.redis.hSet(s.keys.ramp, { state: JSON.stringify({ schema: 9 }) });
    expect(await readRamp(s.redis, s.keys)).toEqual({ state: null, error: 'unknown ramp schema 9' });
  });
});
