/**
 * The rollout ramp's storage (SPEC R23): one hash in the override's slot with the state machine's
 * JSON (domain's ramp.ts) and its revision. Every change of the ramp or the override goes through
 * `commit` (rollout-commit.lua): both stored in one step over the revisions read, so a writer that
 * lost a race changes nothing. On-call's commands are audited (D6).
 */
import { randomUUID } from 'node:crypto';
import { killSwitchOn, pauseRamp, rampActive, resumeRamp, startRamp, type RampRequest, type RampResult, type RampState } from '@feed/domain';
import { logger } from '@feed/logger';
import type { AuditEntry, AuditTrail } from './audit-trail';
import type { RequestBudget } from './deadline';
import { runScript } from './lua-scripts';
import { rampStateSchema } from './ramp-schema';
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';
import { overrideOf, readRolloutOverride, resolveRollout, type Rollout, type RolloutInForce } from './rollout-override';
import { readStepReadout, readVariantStats } from './variant-stats';

/** Commits lost to a concurrent one (the driver's tick) before a command gives up: each retry reads afresh. */
const COMMAND_ATTEMPTS = 5;
/** A human's rollout change must win over a storm of other commands (R23): it tries longer before it says busy. */
const HUMAN_CHANGE_ATTEMPTS = 50;

/** A manual rollout change that lost every attempt to other commands: nothing was written; the caller may retry (409). */
export class RolloutBusyError extends Error {}

/** The stored ramp and revision; `state: null` with `error` when what is stored is no ramp this code reads. */
export type StoredRamp = { state: RampState | null; error?: string; revision: string };

/** A record of the version that kept an owed write (schema 1 with `owed`): a pending write is not guessed at, the ramp waits paused for on-call. */
function fromPastVersion(value: Record<string, unknown>, now: string): unknown {
  if (!('owed' in value)) return value;
  const { owed, owedOver: _owedOver, appliedPercent: _applied, ...state } = value;
  if (owed === null || !['running', 'waiting', 'passed'].includes(state.status as string)) return state;
  return { ...state, status: 'paused', judgeAt: null, pause: { cause: 'manual-pause', at: now, by: null, detail: 'stored by a past version with its write pending: resume it to go on' } };
}

/** The ramp in `fields` (the hash as read): the state when it is one this code drives, else why not. */
function rampOf(fields: Record<string, string>): StoredRamp {
  const revision = fields.revision ?? '0';
  if (fields.state === undefined) return { state: null, revision };
  let value: unknown;
  try {
    value = JSON.parse(fields.state);
  } catch {
    return { state: null, error: 'the stored ramp is not JSON', revision };
  }
  if (typeof value === 'object' && value !== null) value = fromPastVersion(value as Record<string, unknown>, new Date().toISOString());
  const { value: state, error } = rampStateSchema.validate(value, { abortEarly: false });
  return error ? { state: null, error: `the stored ramp is unreadable: ${error.message}`, revision } : { state: state as RampState, revision };
}

/** The stored ramp (`state: null` with `error` when what is stored is no ramp this code reads). */
export async function readRamp(redis: Redis, keys: RedisKeys): Promise<StoredRamp> {
  const fields = await hashAt(redis, keys.ramp);
  return fields ? rampOf(fields) : { state: null, error: 'the ramp key holds no hash (written by hand?): start a ramp over it or delete it', revision: '0' };
}

/** The hash at `key`, or null when the key holds another type (as rollout-commit.lua reads it: no ramp). */
const hashAt = (redis: Redis, key: string) =>
  redis.hGetAll(key).catch((err: unknown) => {
    if (err instanceof Error && err.message.startsWith('WRONGTYPE')) return null;
    throw err;
  });

/** Moves a past version's ramp key to `keys.ramp` once, never over a ramp there (a crash is finished next call); true if found. */
export async function migrateRampKey(redis: Redis, keys: RedisKeys): Promise<boolean> {
  const old = await hashAt(redis, keys.legacyRamp);
  if (old?.state === undefined) return false;
  await runScript(redis, 'rollout-commit', [keys.rollout, keys.ramp], ['0', '', old.revision ?? '1', old.state, 'none']);
  await redis.del(keys.legacyRamp);
  return true;
}

/** The rollout in force (R16) with the override's revision, as one read of its hash. */
export interface RolloutObserved extends RolloutInForce {
  revision: number;
}

export async function observeRollout(redis: Redis, keys: RedisKeys, environment: Rollout): Promise<RolloutObserved> {
  const fields = await redis.hGetAll(keys.rollout);
  return { ...resolveRollout(environment, overrideOf(fields)), revision: Number(fields.revision ?? 0) };
}

export interface Commit {
  /** The ramp revision read ('0' when none). */
  rampRevision: string;
  /** The override revision read, or undefined when the write is a human's and wins over any. */
  rolloutRevision?: number;
  /** The ramp's new state, or undefined to leave it. */
  state?: RampState;
  rollout?: Partial<Rollout> | 'clear';
}

/** Stores a ramp state and a rollout change in one step over the revisions read; false when either changed meanwhile (nothing written). */
export async function commit(redis: Redis, keys: RedisKeys, c: Commit): Promise<boolean> {
  const fields = c.rollout === undefined || c.rollout === 'clear' ? [] : Object.entries(c.rollout).flatMap(([k, v]) => (v === undefined ? [] : [k, String(v)]));
  const op = c.rollout === 'clear' ? 'clear' : fields.length > 0 ? 'set' : 'none';
  const args = [c.rampRevision, c.rolloutRevision === undefined ? '' : String(c.rolloutRevision), c.state ? String(c.state.revision) : '', c.state ? JSON.stringify(c.state) : '', op, ...fields];
  return (await runScript<number>(redis, 'rollout-commit', [keys.rollout, keys.ramp], args)) === 1;
}

/** The rollout's records as named operations, for the worker's ramp driver and inspector: the ramp, the override, the readouts (D7). */
export class RolloutStore {
  constructor(private readonly redis: Redis, readonly keys: RedisKeys) {}
  ramp = () => readRamp(this.redis, this.keys);
  migrateRampKey = () => migrateRampKey(this.redis, this.keys);
  observe = (environment: Rollout) => observeRollout(this.redis, this.keys, environment);
  commit = (c: Commit) => commit(this.redis, this.keys, c);
  override = () => readRolloutOverride(this.redis, this.keys);
  stepReadout = (now: Date, hours: number, step?: { startedAt: Date; percent: number }) => readStepReadout(this.redis, this.keys, now, hours, step);
  variantStats = (now: Date) => readVariantStats(this.redis, this.keys, now);
  /** On-call's ramp commands and manual change (below), on this store's records: the API's admin routes hold no client. */
  startRamp = (by: RampCommandBy, ask: RampAsk) => startStoredRamp(this.commandDeps(by), ask);
  pauseRamp = (by: RampCommandBy) => pauseStoredRamp(this.commandDeps(by));
  resumeRamp = (by: RampCommandBy) => resumeStoredRamp(this.commandDeps(by));
  changeRollout = (by: RampCommandBy, change: Partial<Rollout> | 'clear') => changeRolloutOverRamp(this.commandDeps(by), change);
  private commandDeps = (by: RampCommandBy): RampCommandDeps => ({ ...by, redis: this.redis, keys: this.keys });
}
/** Who commands, against which environment: a `RampCommandDeps` without the client. */
export type RampCommandBy = Omit<RampCommandDeps, 'redis' | 'keys'>;

export interface RampCommandDeps {
  redis: Redis;
  keys: RedisKeys;
  /** The environment's rollout (R16 defaults). */
  environment: Rollout;
  trail: AuditTrail;
  who: Pick<AuditEntry, 'actor' | 'via'>;
  now?: () => Date;
  /** A request's budget (the API's admin routes): the command's Redis reads and commits within its Redis deadline, its audit writes within its MongoDB budget. */
  budget?: RequestBudget;
}

export type RampCommandResult = { ok: true; state: RampState } | { ok: false; kind: 'conflict' | 'missing' | 'busy'; error: string };

/** The ramp as the audit trail shows it: what it is, not its notices. */
export function rampSummary(state: RampState | null): Record<string, unknown> | null {
  if (!state) return null;
  return { id: state.id, status: state.status, steps: state.steps.map((s) => s.percent), current: state.steps[state.current].percent, dwellMs: state.dwellMs, lastGoodPercent: state.lastGoodPercent };
}

type Decision = { ok: true; state?: RampState; rollout?: Partial<Rollout> | 'clear' } | { ok: false; kind: 'conflict' | 'missing'; error: string };

const strip = ({ enabled, percent, source }: RolloutInForce): RolloutInForce => ({ enabled, percent, source });
const record = (trail: AuditTrail, entry: AuditEntry, budget?: RequestBudget) =>
  // Stored already: a trail that is down or frozen must not make it look failed (the kill switch must work while MongoDB is down).
  trail.record(entry, budget?.mongo).catch((err: unknown) => logger.error('audit trail unwritable', { ...entry, err }));

/** Reads, decides, commits over the revision read; a lost race reads again (a few attempts). A human's rollout change always wins. */
async function command(deps: RampCommandDeps, decide: (stored: StoredRamp, rollout: RolloutInForce, now: Date) => Decision, attempts = COMMAND_ATTEMPTS): Promise<{ ok: true; before: StoredRamp; state?: RampState; rollout: { wrote: boolean; before: RolloutInForce; after: RolloutInForce } } | Exclude<RampCommandResult, { ok: true }>> {
  const { redis, keys, environment, budget } = deps;
  const within = <T>(call: () => Promise<T>, what: string) => (budget ? budget.redis.run(call, what) : call());
  for (let attempt = 0; attempt < attempts; attempt++) {
    const [stored, rollout] = await within(() => Promise.all([readRamp(redis, keys), observeRollout(redis, keys, environment)]), 'ramp and rollout');
    const decided = decide(stored, rollout, deps.now?.() ?? new Date());
    if (!decided.ok) return decided;
    // The revision climbs over any stored one (a driver that read a replaced ramp cannot commit);
    // a hand-written non-count climbs from 0 (NaN would store an unreadable ramp).
    const after = Number(stored.revision) + 1;
    const state = decided.state && { ...decided.state, revision: Math.max(decided.state.revision, Number.isSafeInteger(after) ? after : 1) };
    if (await within(() => commit(redis, keys, { rampRevision: stored.revision, state, rollout: decided.rollout }), 'rollout commit')) {
      return { ok: true, before: stored, state, rollout: { wrote: decided.rollout !== undefined, before: rollout, after: await within(() => observeRollout(redis, keys, environment), 'rollout') } };
    }
  }
  return { ok: false, kind: 'busy', error: `the ramp changed under ${attempts} attempts in a row; nothing was written, try again` };
}

/** A ramp command: decided by the state machine, committed with its rollout write, audited. */
async function rampCommand(deps: RampCommandDeps, action: AuditEntry['action'], decide: (stored: StoredRamp, rollout: RolloutInForce, now: Date) => RampResult | { ok: false; kind: 'conflict' | 'missing'; error: string }): Promise<RampCommandResult> {
  const done = await command(deps, (stored, rollout, now) => {
    const result = decide(stored, rollout, now);
    if (!result.ok) return { kind: 'conflict', ...result };
    return { ok: true, state: result.state, rollout: result.write ?? undefined };
  });
  if (!done.ok) return done;
  await record(deps.trail, { action, ...deps.who, before: rampSummary(done.before.state), after: rampSummary(done.state!) }, deps.budget);
  // A start or resume writes its step's percent: a change of the override like any other (D6); another writer's change meanwhile is not this command's.
  if (done.rollout.wrote && (done.rollout.after.percent !== done.rollout.before.percent || done.rollout.after.enabled !== done.rollout.before.enabled)) {
    await record(deps.trail, { action: 'rollout-set', ...deps.who, before: strip(done.rollout.before), after: strip(done.rollout.after) }, deps.budget);
  }
  return { ok: true, state: done.state! };
}

const missing = (stored: StoredRamp) => ({ ok: false as const, kind: 'missing' as const, error: stored.error ?? 'no ramp is stored' });
const killSwitch = (what: string) => ({ ok: false as const, error: `the kill switch is on (rollout enabled=false): clear it before ${what}` });

export type RampAsk = Pick<RampRequest, 'steps' | 'dwellMs' | 'recheckMs' | 'guards'>;

/** On-call's new ramp, its first step written with it. Refused while another ramp is running (pause it first) or the kill switch is on. */
export function startStoredRamp(deps: RampCommandDeps, ask: RampAsk): Promise<RampCommandResult> {
  return rampCommand(deps, 'ramp-start', (stored, rollout, now) => {
    if (stored.state && rampActive(stored.state)) return { ok: false, error: `ramp ${stored.state.id} is ${stored.state.status}: pause it before starting another` };
    if (killSwitchOn(rollout)) return killSwitch('starting a ramp');
    return { ok: true, ...startRamp({ ...ask, id: randomUUID(), by: deps.who.actor, now }) };
  });
}

/** On-call's pause: the ramp writes nothing more; the percent in force stays. */
export function pauseStoredRamp(deps: RampCommandDeps): Promise<RampCommandResult> {
  return rampCommand(deps, 'ramp-pause', (stored, _rollout, now) => (stored.state ? pauseRamp(stored.state, { now, by: deps.who.actor }) : missing(stored)));
}

/** On-call's resume of a paused ramp at the step it paused at (written again, a fresh dwell). */
export function resumeStoredRamp(deps: RampCommandDeps): Promise<RampCommandResult> {
  return rampCommand(deps, 'ramp-resume', (stored, rollout, now) => {
    if (!stored.state) return missing(stored);
    if (killSwitchOn(rollout) && stored.state.status === 'paused') return killSwitch('resuming the ramp');
    return resumeRamp(stored.state, { now, by: deps.who.actor });
  });
}

/** On-call's rollout change: pauses a running ramp in the same step (R23: the human wins), audited (D6). */
export async function changeRolloutOverRamp(deps: RampCommandDeps, change: Partial<Rollout> | 'clear'): Promise<RolloutInForce> {
  const what = change === 'clear' ? 'the override cleared' : Object.entries(change).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${String(v)}`).join(' ');
  const done = await command(deps, (stored, _rollout, now) => {
    const paused = stored.state && rampActive(stored.state) ? pauseRamp(stored.state, { now, by: deps.who.actor, cause: 'manual-percent', detail: `a manual change by ${deps.who.actor}: ${what}` }) : null;
    return { ok: true, state: paused?.ok ? paused.state : undefined, rollout: change };
  }, HUMAN_CHANGE_ATTEMPTS);
  if (!done.ok) throw new RolloutBusyError(`the rollout could not be changed: ${done.error}`);
  if (done.state) await record(deps.trail, { action: 'ramp-pause', ...deps.who, before: rampSummary(done.before.state), after: rampSummary(done.state) }, deps.budget);
  await record(deps.trail, { action: change === 'clear' ? 'rollout-clear' : 'rollout-set', ...deps.who, before: strip(done.rollout.before), after: strip(done.rollout.after) }, deps.budget);
  return strip(done.rollout.after);
}
