/**
 * The ramp's storage (R23): one hash in the rollout override's slot, committed with the rollout
 * in one step over the revisions read (rollout-commit.lua), so a writer that lost a race changes
 * nothing; a stored record this version cannot read is reported, never driven; a past version's
 * key is moved once. And the ranges every edge validates a ramp with (rampAskSchema).
 */
import { MAX_DWELL_MS } from '@feed/domain';
import { auditTrail, changeRolloutOverRamp, commit, RolloutBusyError, migrateRampKey, observeRollout, pauseStoredRamp, rampAskOf, rampAskSchema, readRamp, startStoredRamp, type RampCommandDeps } from '../src';
import { useTestServices } from '../../../test/support/services';

const s = useTestServices('ramp-store');
const ENVIRONMENT = { enabled: true, percent: 100 };
const deps = (): RampCommandDeps => ({ redis: s.redis, keys: s.keys, environment: ENVIRONMENT, trail: auditTrail(s.mongo, s.prefix), who: { actor: 'oncall', via: 'api' } });
const HOUR = 3_600_000;

async function started() {
  const result = await startStoredRamp(deps(), { steps: [1, 5, 100], dwellMs: HOUR });
  if (!result.ok) throw new Error(result.error);
  return result.state;
}

describe('ramp store (R23)', () => {
  it('when a ramp starts, then its first step is in force in the same step (enabled, 1 %)', async () => {
    await started();
    expect(await observeRollout(s.redis, s.keys, ENVIRONMENT)).toMatchObject({ enabled: true, percent: 1, source: { enabled: 'override', percent: 'override' } });
  });

  it('when a tick commits over a ramp revision a pause changed meanwhile, then nothing is written: neither its state nor its percent', async () => {
    await started();
    const read = await readRamp(s.redis, s.keys);
    // The tick decided its next step (5 %) from what it read.
    const tick = { state: { ...read.state!, current: 1, revision: read.state!.revision + 1 } };
    expect(await pauseStoredRamp(deps())).toMatchObject({ ok: true, state: { status: 'paused' } });
    expect(await commit(s.redis, s.keys, { rampRevision: read.revision, state: tick.state, rollout: { percent: 5 } })).toBe(false);
    expect((await readRamp(s.redis, s.keys)).state).toMatchObject({ status: 'paused' });
    expect((await observeRollout(s.redis, s.keys, ENVIRONMENT)).percent).toBe(1);
  });

  it("when other commands change the ramp under a human's rollout change, then it keeps trying past a command's 5 attempts and wins; changed under every attempt, it is refused (RolloutBusyError) and writes nothing", async () => {
    await started();
    // Another command's commit between each read and this change's commit: the same connection runs it first.
    const interfering = (times: number): RampCommandDeps => {
      let left = times;
      return { ...deps(), now: () => (left-- > 0 && void s.redis.hIncrBy(s.keys.ramp, 'revision', 1), new Date()) };
    };
    expect(await changeRolloutOverRamp(interfering(10), { percent: 40 })).toMatchObject({ percent: 40 });
    expect((await readRamp(s.redis, s.keys)).state).toMatchObject({ status: 'paused' });
    await expect(changeRolloutOverRamp(interfering(Infinity), { enabled: false })).rejects.toBeInstanceOf(RolloutBusyError);
    expect(await observeRollout(s.redis, s.keys, ENVIRONMENT)).toMatchObject({ enabled: true, percent: 40 });
  });

  it('when the rollout changed since a tick read it, then its commit is refused', async () => {
    const state = await started();
    const read = await readRamp(s.redis, s.keys);
    const seen = await observeRollout(s.redis, s.keys, ENVIRONMENT);
    await s.redis.hIncrBy(s.keys.rollout, 'revision', 1);
    expect(await commit(s.redis, s.keys, { rampRevision: read.revision, rolloutRevision: seen.revision, state: { ...state, revision: state.revision + 1 }, rollout: { percent: 5 } })).toBe(false);
    expect((await observeRollout(s.redis, s.keys, ENVIRONMENT)).percent).toBe(1);
  });

  it('when a paused ramp is replaced, then the new one has a higher revision: a driver that read the old one cannot commit over it', async () => {
    const first = await started();
    const old = (await pauseStoredRamp(deps())) as { ok: true; state: { revision: number } };
    const second = await startStoredRamp(deps(), { steps: [5, 100], dwellMs: HOUR });
    if (!second.ok) throw new Error(second.error);
    expect(second.state.revision).toBeGreaterThan(old.state.revision);
    expect(await commit(s.redis, s.keys, { rampRevision: String(old.state.revision), state: { ...first, revision: old.state.revision + 1 } })).toBe(false);
    expect((await readRamp(s.redis, s.keys)).state?.id).toBe(second.state.id);
  });

  it('when a running ramp exists, then another start is refused as a conflict; with no ramp, pause is missing', async () => {
    expect(await pauseStoredRamp(deps())).toMatchObject({ ok: false, kind: 'missing' });
    await started();
    expect(await startStoredRamp(deps(), { steps: [1, 100], dwellMs: HOUR })).toMatchObject({ ok: false, kind: 'conflict' });
  });

  it.each([
    ['{not json', /not JSON/],
    [JSON.stringify({ schema: 9 }), /"schema" must be \[1\]/],
    ['null', /must be of type object/],
  ])('when the stored ramp is %s, then it reads as none with the reason', async (text, reason) => {
    await s.redis.hSet(s.keys.ramp, { revision: '3', state: text });
    expect(await readRamp(s.redis, s.keys)).toEqual({ state: null, revision: '3', error: expect.stringMatching(reason) });
  });

  it('when a past version stored a dwell of 100000000d or other garbage, then the record is unreadable and says which fields', async () => {
    const state = await started();
    const garbage = { ...state, dwellMs: 100_000_000 * 86_400_000, judgeAt: 'soon', steps: [{ ...state.steps[0], percent: 1e308 }] };
    await s.redis.hSet(s.keys.ramp, { state: JSON.stringify(garbage) });
    const read = await readRamp(s.redis, s.keys);
    expect(read.state).toBeNull();
    expect(read.error).toMatch(/"dwellMs" must be less than or equal to 2592000000/);
    expect(read.error).toMatch(/"judgeAt"/);
    expect(read.error).toMatch(/"steps\[0\]\.percent"/);
  });

  it('when a past version left a write owed, then the ramp reads as paused for on-call, its write not guessed at', async () => {
    const state = await started();
    await s.redis.hSet(s.keys.ramp, { state: JSON.stringify({ ...state, status: 'passed', owed: { percent: 5 }, owedOver: null, appliedPercent: 1 }) });
    expect((await readRamp(s.redis, s.keys)).state).toMatchObject({ status: 'paused', pause: { cause: 'manual-pause', by: null } });
  });

  it("when a past version's ramp key exists, then it is moved once to the rollout's slot; again it is a no-op, and a ramp already there is never overwritten", async () => {
    await s.redis.hSet(s.keys.legacyRamp, { revision: '7', state: '{"old":1}' });
    expect(await migrateRampKey(s.redis, s.keys)).toBe(true);
    expect(await s.redis.hGetAll(s.keys.ramp)).toEqual({ revision: '7', state: '{"old":1}' });
    expect(await s.redis.exists(s.keys.legacyRamp)).toBe(0);
    expect(await migrateRampKey(s.redis, s.keys)).toBe(false);
    expect(await s.redis.hGetAll(s.keys.ramp)).toEqual({ revision: '7', state: '{"old":1}' });
    // A crash after the write and before the delete: the next call deletes the old key and keeps the new.
    await s.redis.hSet(s.keys.legacyRamp, { revision: '2', state: '{"older":1}' });
    expect(await migrateRampKey(s.redis, s.keys)).toBe(true);
    expect(await s.redis.hGetAll(s.keys.ramp)).toEqual({ revision: '7', state: '{"old":1}' });
    expect(await s.redis.exists(s.keys.legacyRamp)).toBe(0);
  });

  it.each(['abc', '1.5', '9007199254740993', 'Infinity'])('when the stored ramp revision is %j (written by hand), then a start stores a ramp that reads and is paused', async (revision) => {
    await s.redis.hSet(s.keys.ramp, { revision, state: 'null' });
    const state = await started();
    expect(await readRamp(s.redis, s.keys)).toEqual({ state, revision: String(state.revision) });
    expect(await pauseStoredRamp(deps())).toMatchObject({ ok: true, state: { status: 'paused' } });
  });

  it.each([
    ['a list', () => s.redis.rPush(s.keys.ramp, 'x')],
    ['a string', () => s.redis.set(s.keys.ramp, 'x')],
  ])('when the ramp key holds %s (written by hand), then it reads as unreadable, the kill switch goes through and a start replaces it', async (_kind, write) => {
    await write();
    expect(await readRamp(s.redis, s.keys)).toEqual({ state: null, revision: '0', error: expect.stringMatching(/holds no hash/) });
    expect(await changeRolloutOverRamp(deps(), { enabled: false })).toMatchObject({ enabled: false });
    await changeRolloutOverRamp(deps(), 'clear');
    const state = await started();
    expect((await readRamp(s.redis, s.keys)).state).toEqual(state);
  });

  it("when a past version's ramp key holds no hash (written by hand), then there is nothing to move and the ramp in its slot is read as ever", async () => {
    const state = await started();
    await s.redis.set(s.keys.legacyRamp, 'x');
    expect(await migrateRampKey(s.redis, s.keys)).toBe(false);
    expect((await readRamp(s.redis, s.keys)).state).toEqual(state);
  });

  it("when another writer changes the percent while a pause commits, then the pause's audit tells of the pause only, no rollout change it never made", async () => {
    await started();
    const entries: Array<{ action: string }> = [];
    let commits = 0;
    // The other writer lands right after the pause's commit, before the pause reads the rollout back.
    const redis = new Proxy(s.redis, {
      get: (target, key) =>
        key === 'evalSha' || key === 'eval'
          ? async (...args: unknown[]) => {
              const reply: unknown = await (target[key] as (...a: unknown[]) => Promise<unknown>)(...args);
              if (commits++ === 0) await s.redis.hSet(s.keys.rollout, { percent: '42' });
              return reply;
            }
          : (Reflect.get(target, key) as unknown),
    });
    const trail = { ...deps().trail, record: async (entry: { action: string }) => void entries.push(entry) };
    expect(await pauseStoredRamp({ ...deps(), redis, trail })).toMatchObject({ ok: true });
    expect(commits).toBeGreaterThan(0);
    expect(entries.map((e) => e.action)).toEqual(['ramp-pause']);
  });

  it("when the keys are built, then the ramp's key is tagged with the override's name (one hash slot in a cluster)", () => {
    expect(s.keys.ramp).toBe(`{${s.keys.rollout}}:ramp`);
  });
});

describe('a ramp as on-call asks for it (R23 ranges)', () => {
  const ask = { steps: [1, 5, 25, 50, 100], dwell: '1h' };
  it.each([
    [{ dwell: '100000000d' }, /"dwell" with value "100000000d" fails to match the duration/],
    [{ dwell: '31d' }, /"dwell" must be from 1m to 30d/],
    [{ dwell: '59s' }, /"dwell" must be from 1m to 30d/],
    [{ recheck: '1s' }, /"recheck" must be from 1m to 30d/],
    [{ steps: [5, 5] }, /"steps" must be strictly increasing/],
    [{ steps: [0, 50] }, /"steps\[0\]" must be greater than or equal to 1/],
    [{ steps: [] }, /"steps" must contain at least 1 items/],
    [{ minViews: 0 }, /"minViews" must be greater than or equal to 1/],
    [{ minViews: 1e9 }, /"minViews" must be less than or equal to 100000000/],
    [{ confidence: 1 }, /"confidence" must be less than or equal to 0.999/],
  ])('when %j, then it is refused naming the value', (bad, message) => {
    const { error } = rampAskSchema.validate({ ...ask, ...bad });
    expect(error?.message).toMatch(message);
    // A message about the dwell never names a recheck nobody sent.
    if (!('recheck' in bad)) expect(error?.message).not.toMatch(/recheck/);
  });

  it('when in range, then it becomes milliseconds and guards', () => {
    const { value, error } = rampAskSchema.validate({ ...ask, dwell: '30d', recheck: '1h30m', minViews: 5000 });
    expect(error).toBeUndefined();
    expect(rampAskOf(value)).toEqual({ steps: ask.steps, dwellMs: MAX_DWELL_MS, recheckMs: 90 * 60_000, guards: { minViews: 5000 } });
  });
});
