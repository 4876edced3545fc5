/**
 * The self-driving rollout ramp's storage (SPEC R23): one hash (`recommend:short:ramp`) with the
 * state machine's JSON (`RampState`, see @feed/domain's ramp.ts) and its revision, saved only over
 * the revision read (ramp-save.lua). On-call's commands (start, pause, resume; the API's admin
 * routes and the CLI) go through here and are audited (D6); the worker's driver saves its ticks
 * with `saveRamp`. A command never writes the rollout itself: the driver makes the write it owes
 * at its next check (at most CHECK_EVERY_MS later), so the ramp's writes have one author.
 */
import { randomUUID } from 'node:crypto';
import { parseRampState, pauseRamp, resumeRamp, startRamp, type RampRequest, type RampState, type RolloutObservation } from '@feed/domain';
import { logger } from '@feed/logger';
import type { AuditEntry, AuditTrail } from './audit-trail';
import { runScript } from './lua-scripts';
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';
import { changeRollout, overrideOf, resolveRollout, type Rollout, type RolloutInForce } from './rollout-override';

/** Saves lost to a concurrent save (the driver's tick) before a command gives up: each retry reads afresh. */
const COMMAND_ATTEMPTS = 5;

export type StoredRamp = { state: RampState; error?: undefined } | { state: null; error?: string };

/** The stored ramp; `state: null` with `error` when what is stored is no ramp this code reads. */
export async function readRamp(redis: Redis, keys: RedisKeys): Promise<StoredRamp> {
  const text = await redis.hGet(keys.ramp, 'state');
  if (text == null) return { state: null };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { state: null, error: 'the stored ramp is not JSON' };
  }
  const parsed = parseRampState(value);
  return parsed.ok ? { state: parsed.state } : { state: null, error: parsed.error };
}

/** The stored revision, '0' when none. */
async function storedRevision(redis: Redis, keys: RedisKeys): Promise<string> {
  return (await redis.hGet(keys.ramp, 'revision')) ?? '0';
}

/** Saves `state` when the stored revision is still `readRevision`; false when another save came first. */
export async function saveRamp(redis: Redis, keys: RedisKeys, state: RampState, readRevision: number | string): Promise<boolean> {
  return (await runScript<number>(redis, 'ramp-save', [keys.ramp], [String(readRevision), String(state.revision), JSON.stringify(state)])) === 1;
}

/** The rollout in force (R16) as the ramp observes it, with the override's revision. */
export async function observeRollout(redis: Redis, keys: RedisKeys, environment: Rollout): Promise<RolloutObservation> {
  // One read of the hash: its fields and its revision are of the same moment.
  const fields = await redis.hGetAll(keys.rollout);
  return { ...resolveRollout(environment, overrideOf(fields)), revision: Number(fields.revision ?? 0) };
}

export interface RampCommandDeps {
  redis: Redis;
  keys: RedisKeys;
  /** The environment's rollout (R16 defaults). */
  environment: Rollout;
  trail: AuditTrail;
  who: Pick<AuditEntry, 'actor' | 'via'>;
  now?: () => Date;
}

export type RampCommandResult = { ok: true; state: RampState } | { ok: false; kind: 'invalid' | 'conflict' | 'missing' | 'busy'; error: string };

/** The ramp as the audit trail shows it: what it is, not its notices. */
export function rampSummary(state: RampState | null): Record<string, unknown> | null {
  if (!state) return null;
  return { id: state.id, status: state.status, steps: state.steps.map((s) => s.percent), current: state.steps[state.current].percent, dwellMs: state.dwellMs, lastGoodPercent: state.lastGoodPercent };
}

/**
 * Reads the ramp, decides with `decide`, saves over the revision read; on a lost race reads
 * again (bounded: a driver saves once per check, so a few attempts always find a quiet moment).
 */
async function command(
  deps: RampCommandDeps,
  action: AuditEntry['action'],
  decide: (stored: StoredRamp, rollout: RolloutObservation, now: Date) => RampCommandResult,
  beforeSave?: () => Promise<unknown>,
): Promise<RampCommandResult> {
  const { redis, keys } = deps;
  for (let attempt = 0; attempt < COMMAND_ATTEMPTS; attempt++) {
    const [revision, stored, rollout] = await Promise.all([storedRevision(redis, keys), readRamp(redis, keys), observeRollout(redis, keys, deps.environment)]);
    const decided = decide(stored, rollout, deps.now?.() ?? new Date());
    if (!decided.ok) return decided;
    // The revision climbs over whatever was stored, a replaced ramp's included: a driver that read the old one cannot save over the new.
    const state = { ...decided.state, revision: Math.max(decided.state.revision, Number(revision) + 1) };
    await beforeSave?.();
    if (await saveRamp(redis, keys, state, revision)) {
      const entry: AuditEntry = { action, ...deps.who, before: rampSummary(stored.state), after: rampSummary(state) };
      // Saved already: as with the kill switch (changeRollout), a trail that is down must not make it look failed.
      await deps.trail.record(entry).catch((err: unknown) => logger.error('audit trail unwritable', { ...entry, err }));
      return { ok: true, state };
    }
  }
  return { ok: false, kind: 'busy', error: `the ramp changed under ${COMMAND_ATTEMPTS} attempts in a row; try again` };
}

export type RampAsk = Pick<RampRequest, 'steps' | 'dwellMs' | 'recheckMs' | 'guards'>;

/** On-call's new ramp. Refused while another ramp is running (pause it first) or the kill switch is on. */
export function startStoredRamp(deps: RampCommandDeps, ask: RampAsk): Promise<RampCommandResult> {
  return command(deps, 'ramp-start', (stored, rollout, now) => {
    if (stored.state && ['running', 'waiting', 'passed'].includes(stored.state.status)) {
      return { ok: false, kind: 'conflict', error: `ramp ${stored.state.id} is ${stored.state.status}: pause it before starting another` };
    }
    // Not a bad request but a state that forbids it: the kill switch always wins.
    if (!rollout.enabled && rollout.source.enabled === 'override') return { ok: false, kind: 'conflict', error: 'the kill switch is on (rollout enabled=false): clear it before starting a ramp' };
    const started = startRamp({ ...ask, id: randomUUID(), by: deps.who.actor, now, rollout });
    return started.ok ? { ok: true, state: started.state } : { ok: false, kind: 'invalid', error: started.error };
  });
}

/**
 * On-call's pause; `detail` says why (a manual percent). Before each attempt's save it bumps the
 * rollout's revision: a driver tick that saved its step before the pause holds a write over the
 * revision it observed, and that write is then refused; a tick that saves after this bump makes
 * the pause's save fail, and the next attempt bumps again. So the percent stays as it was at the pause.
 */
export function pauseStoredRamp(deps: RampCommandDeps, detail?: string): Promise<RampCommandResult> {
  return command(
    deps,
    'ramp-pause',
    (stored, _rollout, now) => {
      if (!stored.state) return { ok: false, kind: 'missing', error: stored.error ?? 'no ramp is stored' };
      const paused = pauseRamp(stored.state, { now, by: deps.who.actor, cause: detail ? 'manual-percent' : 'manual-pause', detail });
      return paused.ok ? { ok: true, state: paused.state } : { ok: false, kind: 'conflict', error: paused.error };
    },
    () => deps.redis.hIncrBy(deps.keys.rollout, 'revision', 1),
  );
}

/** On-call's resume of a paused ramp at the step it paused at (a fresh dwell). */
export function resumeStoredRamp(deps: RampCommandDeps): Promise<RampCommandResult> {
  return command(deps, 'ramp-resume', (stored, rollout, now) => {
    if (!stored.state) return { ok: false, kind: 'missing', error: stored.error ?? 'no ramp is stored' };
    const resumed = resumeRamp(stored.state, { now, by: deps.who.actor, rollout });
    return resumed.ok ? { ok: true, state: resumed.state } : { ok: false, kind: 'conflict', error: resumed.error };
  });
}

/**
 * A human's change of the rollout pauses a running ramp first (R23: a manual percent and the kill
 * switch always win), so the driver never writes over it. No ramp, or none running: nothing to do.
 */
export async function pauseRampForManualChange(deps: RampCommandDeps, change: Partial<Rollout> | 'clear'): Promise<void> {
  const { state } = await readRamp(deps.redis, deps.keys);
  if (!state || !['running', 'waiting', 'passed'].includes(state.status)) return;
  const what = change === 'clear' ? 'the override cleared' : Object.entries(change).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${String(v)}`).join(' ');
  const result = await pauseStoredRamp(deps, `a manual change by ${deps.who.actor}: ${what}`);
  // Lost to the driver that finished the ramp meanwhile (done, halted): nothing left to pause.
  if (!result.ok && result.kind === 'busy') throw new Error(`the running ramp could not be paused: ${result.error}`);
}

/**
 * On-call's manual change of the rollout (a percent, the kill switch, a clear), as the API and
 * the CLI make it: a running ramp is paused first (R23: the human always wins), then the change
 * is written and audited (D6). The values in force after it.
 */
export async function changeRolloutOverRamp(deps: RampCommandDeps, change: Partial<Rollout> | 'clear'): Promise<RolloutInForce> {
  await pauseRampForManualChange(deps, change);
  return changeRollout(deps.redis, deps.keys, deps.environment, change, deps.who, deps.trail);
}
