/**
 * SPEC R23, second part: the self-driving rollout ramp as a pure state machine. The worker
 * replica that holds the controller's lease calls `advanceRamp` on each check with what it
 * observed (the time, the rollout in force, and the step's readout when `rampNeedsReadout`
 * says so); the machine answers with the next state and at most one rollout write. Nothing
 * here reads a clock or a store.
 *
 * States: `running` (a step's percent in force, its dwell under way), `waiting` (dwell over,
 * too few samples: judged again `recheckMs` later; it never passes underpowered), `passed`
 * (the step passed, the next step's percent is being applied), `halted` (a guard failed: the
 * percent goes back to the last step that passed, 0 before any), `done` (the last step is in
 * force; a step of 100 % is not judged, since legacy has no users left to compare with), and
 * `paused` (a manual percent, a cleared override, an explicit pause, or the kill switch: a
 * ramp never writes over a human; on-call resumes it with `resumeRamp` or starts a new one).
 *
 * Two writes cannot be one (the ramp's key and `recommend:short:rollout` are in different
 * slots), so a decided write is kept in the state as `owed` until the rollout in force shows
 * it: the driver saves the state, then writes the rollout. After a crash between the two, the
 * next check sees the rollout exactly as it was when the write was decided (`owedOver`) and
 * writes again; anything else is a human's change and pauses the ramp (a halt's way back is
 * overruled only by a human's percent: it lowers the percent and never touches `enabled`). The
 * dwell of a step starts when its percent is seen in force, not when it is decided.
 *
 * What this machine cannot see: a human's change undone before the next check looks like no
 * change (give the observation the override's `revision` where the store keeps one: storage's
 * `observeRollout` does, from the override hash's `revision` field), and a
 * human's percent equal to the one the ramp owes is taken as the ramp's own write. The admin
 * path and the CLI therefore pause a ramp explicitly (`pauseRamp`) when they change the rollout.
 *
 * Stored shape (one JSON document, `RampState`, schema 1; a driver keeps it under one key and
 * writes it only when `revision` is still the one it read, so a human's command and the
 * driver's tick never overwrite each other):
 * ```
 * { schema: 1, id, requestedBy, createdAt, updatedAt,    // ISO-8601 times
 *   revision,                                          // +1 on every change
 *   status: 'running'|'waiting'|'passed'|'halted'|'done'|'paused',
 *   dwellMs, recheckMs, guards: StepGuards,             // the rules, fixed at start
 *   steps: [{ percent, outcome: 'pending'|'running'|'waiting'|'passed'|'failed'|'reached',
 *             startedAt, judgements, verdict: StepJudgement & { judgedAt } | null }],
 *   current,                                           // index of the step in force or being applied
 *   appliedPercent,                                    // the ramp's own percent last seen in force (0 before any)
 *   owed: { percent, enabled?: true } | null,          // the write decided and not yet seen
 *   owedOver: RolloutObservation | null,               // the rollout in force when it was decided
 *   judgeAt,                                           // ISO, next judgement (running/waiting)
 *   lastGoodPercent,                                   // where a halt goes back to
 *   pause: { cause, at, by, detail } | null, haltReasons: string[],
 *   notices: [{ seq, at, kind, percent, message, alert }], nextSeq }  // outbox, see below
 * ```
 * `notices` is an outbox for the audit trail (D6) and alerts: the driver records each notice
 * after saving the state, then drops them with `ackNotices`; a crash in between records a
 * notice twice rather than never (each carries `seq` to tell).
 */
import { judgeStep, stepGuards, type StepGuards, type StepJudgement, type StepReadout } from './ramp-judge';

export const RAMP_SCHEMA = 1;
export const MAX_RAMP_STEPS = 20;
/** Shortest dwell accepted: a step shorter than a minute measures nothing. */
export const MIN_DWELL_MS = 60_000;
/** Notices kept when a driver never acknowledges them: the oldest go first. */
export const MAX_NOTICES = 100;

export type RampStatus = 'running' | 'waiting' | 'passed' | 'halted' | 'done' | 'paused';
export type RampStepOutcome = 'pending' | 'running' | 'waiting' | 'passed' | 'failed' | 'reached';
export type PauseCause = 'manual-percent' | 'kill-switch' | 'manual-pause';
export type RampNoticeKind = 'started' | 'step-started' | 'step-passed' | 'waiting' | 'halted' | 'done' | 'paused' | 'resumed' | 'write-overruled';

export interface RampVerdict extends StepJudgement {
  judgedAt: string;
}

export interface RampStep {
  percent: number;
  outcome: RampStepOutcome;
  /** When the step's percent was seen in force (its dwell's start). */
  startedAt: string | null;
  /** Judgements so far (one per dwell end or recheck). */
  judgements: number;
  /** The latest judgement. */
  verdict: RampVerdict | null;
}

export interface RampPause {
  cause: PauseCause;
  at: string;
  /** Who paused it; null when the ramp saw the change itself. */
  by: string | null;
  detail: string;
}

export interface RampNotice {
  seq: number;
  at: string;
  kind: RampNoticeKind;
  /** The step's percent the notice is about. */
  percent: number;
  message: string;
  /** Fire an alert (FeedRampHalted) as well as record it. */
  alert: boolean;
}

/** A rollout write: `enabled` only when a human started or resumed the ramp. */
export interface RolloutWrite {
  percent: number;
  enabled?: true;
}

export interface RampState {
  schema: typeof RAMP_SCHEMA;
  id: string;
  requestedBy: string;
  createdAt: string;
  updatedAt: string;
  revision: number;
  status: RampStatus;
  dwellMs: number;
  recheckMs: number;
  guards: StepGuards;
  steps: RampStep[];
  current: number;
  appliedPercent: number;
  owed: RolloutWrite | null;
  owedOver: RolloutObservation | null;
  judgeAt: string | null;
  lastGoodPercent: number;
  pause: RampPause | null;
  haltReasons: string[];
  notices: RampNotice[];
  nextSeq: number;
}

/** The rollout in force as the API applies it (R16): storage's RolloutInForce fits. */
export interface RolloutObservation {
  enabled: boolean;
  percent: number;
  source: { enabled: 'override' | 'environment'; percent: 'override' | 'environment' };
  /**
   * A counter that every write of the override bumps, where the store keeps one. Without it a
   * human's change undone before the ramp's next check (kill switch on, then cleared, while a
   * write is owed) looks like the write never happened, and the ramp makes it.
   */
  revision?: number;
}

export interface RampTick {
  now: Date;
  rollout: RolloutObservation;
  /** The step's readout since the step started; required when `rampNeedsReadout` is true. */
  readout?: StepReadout;
}

export interface RampAdvance {
  state: RampState;
  /** The rollout write to make after saving `state`, or null. */
  write: RolloutWrite | null;
}

export type RampResult = { ok: true; state: RampState; write: RolloutWrite | null } | { ok: false; error: string };

export interface RampRequest {
  id: string;
  steps: number[];
  dwellMs: number;
  /** How long a waiting step waits before it is judged again; defaults to the dwell. */
  recheckMs?: number;
  guards?: Partial<StepGuards>;
  /** The admin user, or the CLI's user@host. */
  by: string;
  now: Date;
  /** The rollout in force when asked. */
  rollout: RolloutObservation;
}

const ACTIVE: readonly RampStatus[] = ['running', 'waiting', 'passed'];

/** The kill switch is the override's `enabled: false`; V2 off by environment is not one. */
const killSwitchOn = (rollout: RolloutObservation) => !rollout.enabled && rollout.source.enabled === 'override';

const samePercent = (a: RolloutObservation, b: RolloutObservation | null) => b !== null && a.percent === b.percent && a.source.percent === b.source.percent;
const sameRollout = (a: RolloutObservation, b: RolloutObservation | null) =>
  b !== null && a.enabled === b.enabled && a.percent === b.percent && a.source.enabled === b.source.enabled && a.source.percent === b.source.percent && a.revision === b.revision;

/** Errors in ramp steps: integers 1-100, strictly increasing, at most MAX_RAMP_STEPS; [] when valid. */
export function rampStepErrors(steps: readonly number[]): string[] {
  const errors: string[] = [];
  if (steps.length === 0) errors.push('a ramp needs at least one step');
  if (steps.length > MAX_RAMP_STEPS) errors.push(`a ramp has at most ${MAX_RAMP_STEPS} steps`);
  steps.forEach((step, i) => {
    if (!Number.isInteger(step) || step < 1 || step > 100) errors.push(`step ${i + 1} (${step}) must be an integer percent from 1 to 100`);
    else if (i > 0 && !(step > steps[i - 1])) errors.push(`step ${i + 1} (${step}) must be above the step before it (${steps[i - 1]})`);
  });
  return errors;
}

/** "1,5,25,50,100" as percents; null when any part is not a whole number. */
export function parseRampSteps(text: string): number[] | null {
  const parts = text.split(',').map((p) => p.trim());
  if (parts.some((p) => !/^\d{1,3}$/.test(p))) return null;
  return parts.map(Number);
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "90s", "30m", "1h", "2d" (also "1h30m") as milliseconds; null when unreadable. */
export function parseDwell(text: string): number | null {
  const trimmed = text.trim();
  if (!/^(\d+[smhd])+$/.test(trimmed)) return null;
  let ms = 0;
  for (const [, n, unit] of trimmed.matchAll(/(\d+)([smhd])/g)) ms += Number(n) * UNIT_MS[unit];
  return Number.isSafeInteger(ms) ? ms : null;
}

function addNotice(state: RampState, now: Date, kind: RampNoticeKind, message: string, alert = false): void {
  state.notices.push({ seq: state.nextSeq, at: now.toISOString(), kind, percent: state.steps[state.current].percent, message, alert });
  state.nextSeq += 1;
  if (state.notices.length > MAX_NOTICES) state.notices.splice(0, state.notices.length - MAX_NOTICES);
}

/** A copy to change, and the result that counts a change in `revision`. */
const draft = (state: RampState): RampState => structuredClone(state);
function finish(before: RampState, after: RampState, now: Date, write: RolloutWrite | null): RampAdvance {
  if (JSON.stringify(before) === JSON.stringify(after)) return { state: before, write };
  return { state: { ...after, revision: before.revision + 1, updatedAt: now.toISOString() }, write };
}

/**
 * A new ramp, from on-call's request: the first step's percent (and `enabled: true`) is owed.
 * Refused with a message (for a 4xx) on bad steps, a dwell under a minute, bad guards, or while
 * the kill switch is on (on-call clears it first: the kill switch always wins).
 */
export function startRamp(request: RampRequest): RampResult {
  const errors = rampStepErrors(request.steps);
  if (!Number.isSafeInteger(request.dwellMs) || request.dwellMs < MIN_DWELL_MS) errors.push(`dwell must be at least ${MIN_DWELL_MS / 1000} s`);
  const recheckMs = request.recheckMs ?? request.dwellMs;
  if (!Number.isSafeInteger(recheckMs) || recheckMs < MIN_DWELL_MS) errors.push(`recheck must be at least ${MIN_DWELL_MS / 1000} s`);
  let guards: StepGuards | null = null;
  try {
    guards = stepGuards(request.guards);
  } catch (err) {
    errors.push((err as Error).message);
  }
  if (killSwitchOn(request.rollout)) errors.push('the kill switch is on (rollout enabled=false): clear it before starting a ramp');
  if (errors.length > 0 || !guards) return { ok: false, error: errors.join('; ') };
  const at = request.now.toISOString();
  const state: RampState = {
    schema: RAMP_SCHEMA,
    id: request.id,
    requestedBy: request.by,
    createdAt: at,
    updatedAt: at,
    revision: 1,
    status: 'running',
    dwellMs: request.dwellMs,
    recheckMs,
    guards,
    steps: request.steps.map((percent) => ({ percent, outcome: 'pending', startedAt: null, judgements: 0, verdict: null })),
    current: 0,
    // Nothing of the ramp's is in force yet: the rollout it starts over is a human's (or the environment's).
    appliedPercent: 0,
    owed: { percent: request.steps[0], enabled: true },
    owedOver: request.rollout,
    judgeAt: null,
    lastGoodPercent: 0,
    pause: null,
    haltReasons: [],
    notices: [],
    nextSeq: 1,
  };
  addNotice(state, request.now, 'started', `ramp ${request.steps.join(',')} % with a dwell of ${request.dwellMs / 1000} s started by ${request.by}`);
  return { ok: true, state, write: state.owed };
}

/** True when `advanceRamp` at `now` judges the step, so the driver must read the step's readout. */
export function rampNeedsReadout(state: RampState, now: Date): boolean {
  return (state.status === 'running' || state.status === 'waiting') && state.owed === null && state.judgeAt !== null && now.getTime() >= Date.parse(state.judgeAt);
}

/**
 * UTC hours whose hourly readout (D7) covers the current step up to `now`, its start hour
 * included; 0 before it started. That first hour may hold some of the step before: both variants
 * are counted side by side in every hour, so it adds samples to the comparison, not a bias.
 */
export function rampReadoutHours(state: RampState, now: Date): number {
  const startedAt = state.steps[state.current].startedAt;
  if (!startedAt) return 0;
  const hour = 3_600_000;
  return Math.max(1, Math.floor(now.getTime() / hour) - Math.floor(Date.parse(startedAt) / hour) + 1);
}

function pauseIn(state: RampState, now: Date, cause: PauseCause, by: string | null, detail: string): void {
  state.status = 'paused';
  state.owed = null;
  state.owedOver = null;
  state.judgeAt = null;
  state.pause = { cause, at: now.toISOString(), by, detail };
  const step = state.steps[state.current];
  if (step.outcome === 'running' || step.outcome === 'waiting') step.outcome = 'pending';
  addNotice(state, now, 'paused', `ramp paused at ${step.percent} %: ${detail}`);
}

/** The owed write is in force: the step starts its dwell (a 100 % or last-to-be-reached step is done). */
function stepInForce(state: RampState, now: Date): void {
  state.appliedPercent = state.owed?.percent ?? state.appliedPercent;
  state.owed = null;
  state.owedOver = null;
  if (state.status === 'halted') return;
  const step = state.steps[state.current];
  step.startedAt = now.toISOString();
  if (step.percent === 100) {
    step.outcome = 'reached';
    state.status = 'done';
    state.judgeAt = null;
    addNotice(state, now, 'done', 'ramp done: 100 % in force');
    return;
  }
  step.outcome = 'running';
  state.status = 'running';
  state.judgeAt = new Date(now.getTime() + state.dwellMs).toISOString();
  addNotice(state, now, 'step-started', `ramp step ${state.current + 1}/${state.steps.length}: ${step.percent} % in force, judged after ${state.dwellMs / 1000} s`);
}

function judge(state: RampState, now: Date, readout: StepReadout, rollout: RolloutObservation): void {
  const step = state.steps[state.current];
  const judgement = judgeStep(readout, state.guards);
  step.verdict = { ...judgement, judgedAt: now.toISOString() };
  step.judgements += 1;
  if (judgement.outcome === 'wait') {
    if (state.status !== 'waiting') addNotice(state, now, 'waiting', `ramp step ${step.percent} % waits for samples: ${judgement.reasons.join('; ')}`);
    state.status = 'waiting';
    step.outcome = 'waiting';
    state.judgeAt = new Date(now.getTime() + state.recheckMs).toISOString();
    return;
  }
  state.judgeAt = null;
  if (judgement.outcome === 'fail') {
    step.outcome = 'failed';
    state.status = 'halted';
    state.haltReasons = judgement.reasons;
    state.owed = { percent: state.lastGoodPercent };
    state.owedOver = rollout;
    addNotice(state, now, 'halted', `ramp halted at ${step.percent} %, back to ${state.lastGoodPercent} %: ${judgement.reasons.join('; ')}`, true);
    return;
  }
  step.outcome = 'passed';
  state.lastGoodPercent = step.percent;
  if (state.current === state.steps.length - 1) {
    state.status = 'done';
    addNotice(state, now, 'done', `ramp done: its last step ${step.percent} % passed`);
    return;
  }
  addNotice(state, now, 'step-passed', `ramp step ${step.percent} % passed, next ${state.steps[state.current + 1].percent} %`);
  state.current += 1;
  state.status = 'passed';
  state.owed = { percent: state.steps[state.current].percent };
  state.owedOver = rollout;
}

/**
 * One check of the driver. In order: an owed write is confirmed, written again (the rollout
 * still shows the percent before it) or overruled by a human (any other percent, or the
 * percent no longer from the override); the kill switch and a manual percent pause an active
 * ramp; a step whose judgement is due is judged from `tick.readout`. Paused, halted and done
 * ramps only settle an owed write. Throws when a judgement is due and `tick.readout` is absent.
 */
export function advanceRamp(state: RampState, tick: RampTick): RampAdvance {
  const { now, rollout } = tick;
  const next = draft(state);
  const fromOverride = rollout.source.percent === 'override';
  const active = ACTIVE.includes(next.status);

  if (next.owed) {
    const owed = next.owed;
    const enabledOk = owed.enabled ? rollout.enabled && rollout.source.enabled === 'override' : true;
    if (rollout.percent === owed.percent && fromOverride && enabledOk) {
      stepInForce(next, now);
      return finish(state, next, now, null);
    }
    if (active && killSwitchOn(rollout)) {
      pauseIn(next, now, 'kill-switch', null, 'the kill switch is on (rollout enabled=false)');
      return finish(state, next, now, null);
    }
    // Still what the ramp saw when it decided the write: the write did not happen, make it again.
    // A halt's way back only lowers the percent and never touches `enabled`, so only a human's
    // percent overrules it, not the kill switch (cleared later, V2 would return at the failed step).
    const unchanged = next.status === 'halted' ? samePercent(rollout, next.owedOver) : sameRollout(rollout, next.owedOver);
    if (unchanged) return finish(state, next, now, owed);
    const seen = `rollout ${rollout.enabled ? 'enabled' : 'disabled'} at ${rollout.percent} % (${rollout.source.percent}) instead of the ramp's ${owed.percent} %`;
    if (active) pauseIn(next, now, 'manual-percent', null, `a manual change: ${seen}`);
    else {
      next.owed = null;
      next.owedOver = null;
      addNotice(next, now, 'write-overruled', `the ramp's write of ${owed.percent} % was overruled by a manual change: ${seen}`);
    }
    return finish(state, next, now, null);
  }

  if (!active) return finish(state, next, now, null);
  if (killSwitchOn(rollout)) {
    pauseIn(next, now, 'kill-switch', null, 'the kill switch is on (rollout enabled=false)');
    return finish(state, next, now, null);
  }
  // A cleared override shows as the environment's values: a human's change too.
  if (!rollout.enabled || rollout.percent !== next.appliedPercent || !fromOverride) {
    pauseIn(next, now, 'manual-percent', null, `a manual change: rollout ${rollout.enabled ? 'enabled' : 'disabled'} at ${rollout.percent} % (${rollout.source.percent}) instead of the ramp's ${next.appliedPercent} %`);
    return finish(state, next, now, null);
  }
  if (rampNeedsReadout(next, now)) {
    if (!tick.readout) throw new Error('advanceRamp: the step is due for judgement and no readout was given (see rampNeedsReadout)');
    judge(next, now, tick.readout, rollout);
    return finish(state, next, now, next.owed);
  }
  return finish(state, next, now, null);
}

/** On-call's pause (a manual percent through the admin path pauses this way first). Only an active ramp pauses. */
export function pauseRamp(state: RampState, command: { now: Date; by: string; cause?: Exclude<PauseCause, 'kill-switch'>; detail?: string }): RampResult {
  if (!ACTIVE.includes(state.status)) return { ok: false, error: `the ramp is ${state.status}, not running` };
  const next = draft(state);
  pauseIn(next, command.now, command.cause ?? 'manual-pause', command.by, command.detail ?? `paused by ${command.by}`);
  return { ok: true, ...finish(state, next, command.now, null) };
}

/**
 * On-call's resume of a paused ramp: the step it paused at starts again (a fresh dwell and
 * readout) once its percent, with `enabled: true`, is in force. Refused while the kill switch is on.
 */
export function resumeRamp(state: RampState, command: { now: Date; by: string; rollout: RolloutObservation }): RampResult {
  if (state.status !== 'paused') return { ok: false, error: `the ramp is ${state.status}, not paused` };
  if (killSwitchOn(command.rollout)) return { ok: false, error: 'the kill switch is on (rollout enabled=false): clear it before resuming the ramp' };
  const next = draft(state);
  const step = next.steps[next.current];
  next.status = 'running';
  next.pause = null;
  // `appliedPercent` stays the ramp's own: the percent in force now is the human's that paused it,
  // and taking it for the ramp's would make a human's later return to it look like the ramp's write.
  next.owed = { percent: step.percent, enabled: true };
  next.owedOver = command.rollout;
  step.outcome = 'pending';
  step.startedAt = null;
  addNotice(next, command.now, 'resumed', `ramp resumed at ${step.percent} % by ${command.by}`);
  const done = finish(state, next, command.now, next.owed);
  return { ok: true, ...done };
}

/** Drops the notices up to `seq` once the driver has recorded them. */
export function ackNotices(state: RampState, seq: number): RampState {
  const notices = state.notices.filter((n) => n.seq > seq);
  if (notices.length === state.notices.length) return state;
  return { ...state, notices, revision: state.revision + 1 };
}

const STATUSES: readonly RampStatus[] = ['running', 'waiting', 'passed', 'halted', 'done', 'paused'];

/**
 * A stored ramp read back (a restart resumes from it): the state when it has this module's
 * shape, else why not. A value from another schema is refused, not guessed at.
 */
export function parseRampState(value: unknown): { ok: true; state: RampState } | { ok: false; error: string } {
  const v = value as Partial<RampState> | null;
  if (typeof v !== 'object' || v === null) return { ok: false, error: 'a stored ramp must be an object' };
  if (v.schema !== RAMP_SCHEMA) return { ok: false, error: `unknown ramp schema ${String(v.schema)}` };
  const problems: string[] = [];
  const isInt = (n: unknown, min = 0) => Number.isSafeInteger(n) && (n as number) >= min;
  const isTime = (t: unknown) => typeof t === 'string' && !Number.isNaN(Date.parse(t));
  if (typeof v.id !== 'string' || typeof v.requestedBy !== 'string') problems.push('id and requestedBy must be strings');
  if (!isTime(v.createdAt) || !isTime(v.updatedAt)) problems.push('createdAt and updatedAt must be times');
  if (!isInt(v.revision, 1)) problems.push('revision must be a positive integer');
  if (!STATUSES.includes(v.status as RampStatus)) problems.push(`unknown status ${String(v.status)}`);
  if (!isInt(v.dwellMs, 1) || !isInt(v.recheckMs, 1)) problems.push('dwellMs and recheckMs must be positive integers');
  if (!Array.isArray(v.steps) || rampStepErrors(v.steps.map((s) => s?.percent)).length > 0) problems.push('steps must be a valid ramp');
  else if (!isInt(v.current) || (v.current as number) >= v.steps.length) problems.push('current must index a step');
  if (!isInt(v.appliedPercent) || (v.appliedPercent as number) > 100 || !isInt(v.lastGoodPercent) || (v.lastGoodPercent as number) > 100) problems.push('appliedPercent and lastGoodPercent must be percents');
  if (v.owed !== null && (typeof v.owed !== 'object' || !isInt(v.owed?.percent) || (v.owed?.percent as number) > 100)) problems.push('owed must be null or a rollout write');
  const o = v.owedOver;
  if (o !== null && (typeof o !== 'object' || typeof o?.enabled !== 'boolean' || !isInt(o.percent) || typeof o.source !== 'object')) problems.push('owedOver must be null or a rollout');
  if ((v.owed === null) !== (o === null)) problems.push('owed and owedOver go together');
  if (v.judgeAt !== null && !isTime(v.judgeAt)) problems.push('judgeAt must be null or a time');
  if (!Array.isArray(v.notices) || !isInt(v.nextSeq, 1) || !Array.isArray(v.haltReasons)) problems.push('notices, nextSeq and haltReasons are missing');
  if (problems.length === 0) {
    try {
      stepGuards(v.guards);
    } catch (err) {
      problems.push(`guards: ${(err as Error).message}`);
    }
  }
  return problems.length > 0 ? { ok: false, error: problems.join('; ') } : { ok: true, state: v as RampState };
}
