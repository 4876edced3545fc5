/**
 * SPEC R23, second part: the self-driving rollout ramp as a pure state machine. The lease
 * holder's driver calls `advanceRamp` each check with what it observed; the answer is the next
 * state and at most one rollout write, stored together atomically. No clock, store or range check
 * here (storage's ramp-schema.ts checks). States: `running`, `waiting` (never passes underpowered),
 * `halted`, `done`, `paused` (a human, or a sample-ratio mismatch). `notices` is an outbox for the
 * audit trail (D6) and alerts. In full: docs/design.md, "The ramp's states".
 */
import { judgeStep, stepGuards, type StepGuards, type StepJudgement, type StepReadout } from './ramp-judge';

export const RAMP_SCHEMA = 1;
export const MAX_RAMP_STEPS = 20;
/** Shortest dwell (and recheck): a step shorter than a minute measures nothing. */
export const MIN_DWELL_MS = 60_000;
/** Longest dwell (and recheck): 30 days; longer is a typo, and past the readout's hourly keys anyway. */
export const MAX_DWELL_MS = 30 * 86_400_000;
/** Notices kept when a driver never acknowledges them: the oldest go first. */
export const MAX_NOTICES = 100;

export const RAMP_STATUSES = ['running', 'waiting', 'halted', 'done', 'paused'] as const;
export type RampStatus = (typeof RAMP_STATUSES)[number];
export const RAMP_STEP_OUTCOMES = ['pending', 'running', 'waiting', 'passed', 'failed', 'reached'] as const;
export type RampStepOutcome = (typeof RAMP_STEP_OUTCOMES)[number];
export const PAUSE_CAUSES = ['manual-percent', 'kill-switch', 'manual-pause', 'sample-ratio'] as const;
export type PauseCause = (typeof PAUSE_CAUSES)[number];
export const RAMP_NOTICE_KINDS = ['started', 'step-started', 'step-passed', 'waiting', 'halted', 'done', 'paused', 'resumed'] as const;
export type RampNoticeKind = (typeof RAMP_NOTICE_KINDS)[number];

export type RampVerdict = StepJudgement & { judgedAt: string };
/** `startedAt`: when its percent was written (its dwell's start); `judgements`: one per dwell end or recheck; `verdict`: the latest. */
export type RampStep = { percent: number; outcome: RampStepOutcome; startedAt: string | null; judgements: number; verdict: RampVerdict | null };
/** `by` is null when the ramp saw the change itself. */
export type RampPause = { cause: PauseCause; at: string; by: string | null; detail: string };
/** About the step of `percent`; `alert` fires FeedRampHalted as well. */
export type RampNotice = { seq: number; at: string; kind: RampNoticeKind; percent: number; message: string; alert: boolean };
/** A rollout write: `enabled` only when a human started or resumed the ramp. */
export type RolloutWrite = { percent: number; enabled?: true };

/** The stored ramp: `revision` +1 per change (saved only over the one read), `lastGoodPercent` where a halt goes back to. */
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
  judgeAt: string | null;
  lastGoodPercent: number;
  pause: RampPause | null;
  haltReasons: string[];
  notices: RampNotice[];
  nextSeq: number;
}

/** The rollout in force as the API applies it (R16): storage's RolloutInForce fits. */
export type RolloutObservation = { enabled: boolean; percent: number; source: { enabled: 'override' | 'environment'; percent: 'override' | 'environment' } };
/** `readout`: the step's since it started, required when `rampNeedsReadout` is true. */
export type RampTick = { now: Date; rollout: RolloutObservation; readout?: StepReadout };
/** `write`: the rollout write to store with `state`, or null. */
export type RampAdvance = { state: RampState; write: RolloutWrite | null };
export type RampResult = ({ ok: true } & RampAdvance) | { ok: false; error: string };

/** On-call's ramp as the edges' schema hands it over; `recheckMs` defaults to the dwell, `by` is the admin user or the CLI's user@host. */
export type RampRequest = { id: string; steps: number[]; dwellMs: number; recheckMs?: number; guards?: Partial<StepGuards>; by: string; now: Date };

const ACTIVE: readonly RampStatus[] = ['running', 'waiting'];
export const rampActive = (state: RampState) => ACTIVE.includes(state.status);

/** The kill switch is the override's `enabled: false`; V2 off by environment is not one. */
export const killSwitchOn = (rollout: RolloutObservation) => !rollout.enabled && rollout.source.enabled === 'override';

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

/** The current step's percent is written now: its dwell starts (a step of 100 % is the end). */
function enterStep(state: RampState, now: Date): void {
  const step = state.steps[state.current];
  step.startedAt = now.toISOString();
  state.status = 'running';
  if (step.percent === 100) {
    step.outcome = 'reached';
    state.status = 'done';
    state.judgeAt = null;
    addNotice(state, now, 'done', 'ramp done: 100 % in force');
    return;
  }
  step.outcome = 'running';
  state.judgeAt = new Date(now.getTime() + state.dwellMs).toISOString();
  addNotice(state, now, 'step-started', `ramp step ${state.current + 1}/${state.steps.length}: ${step.percent} % in force, judged after ${state.dwellMs / 1000} s`);
}

/** A new ramp from on-call's request, with its first step's write (and `enabled: true`). */
export function startRamp(request: RampRequest): RampAdvance {
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
    recheckMs: request.recheckMs ?? request.dwellMs,
    guards: stepGuards(request.guards),
    steps: request.steps.map((percent) => ({ percent, outcome: 'pending', startedAt: null, judgements: 0, verdict: null })),
    current: 0,
    judgeAt: null,
    lastGoodPercent: 0,
    pause: null,
    haltReasons: [],
    notices: [],
    nextSeq: 1,
  };
  addNotice(state, request.now, 'started', `ramp ${request.steps.join(',')} % with a dwell of ${request.dwellMs / 1000} s started by ${request.by}`);
  enterStep(state, request.now);
  return { state, write: { percent: request.steps[0], enabled: true } };
}

/** True when `advanceRamp` at `now` judges the step, so the driver must read the step's readout. */
export function rampNeedsReadout(state: RampState, now: Date): boolean {
  return rampActive(state) && state.judgeAt !== null && now.getTime() >= Date.parse(state.judgeAt);
}

/** UTC hours of readout (D7) covering the step up to `now`, start hour included (both variants share it: no bias). */
export function rampReadoutHours(state: RampState, now: Date): number {
  const startedAt = state.steps[state.current].startedAt;
  if (!startedAt) return 0;
  const hour = 3_600_000;
  return Math.max(1, Math.floor(now.getTime() / hour) - Math.floor(Date.parse(startedAt) / hour) + 1);
}

function pauseIn(state: RampState, now: Date, cause: PauseCause, by: string | null, detail: string, alert = false): void {
  state.status = 'paused';
  state.judgeAt = null;
  state.pause = { cause, at: now.toISOString(), by, detail };
  const step = state.steps[state.current];
  if (step.outcome === 'running' || step.outcome === 'waiting') step.outcome = 'pending';
  addNotice(state, now, 'paused', `ramp paused at ${step.percent} %: ${detail}`, alert);
}

/** Judges the step in force; the write it decides (the next step's percent, or a halt's way back), or null. */
function judge(state: RampState, now: Date, readout: StepReadout): RolloutWrite | null {
  const step = state.steps[state.current];
  const judgement = judgeStep(readout, state.guards, step.percent / 100);
  step.verdict = { ...judgement, judgedAt: now.toISOString() };
  step.judgements += 1;
  // A broken sample is no evidence either way: neither advanced nor rolled back, on-call decides.
  if (judgement.outcome === 'mismatch') {
    pauseIn(state, now, 'sample-ratio', null, judgement.reasons.join('; '), true);
    return null;
  }
  if (judgement.outcome === 'wait') {
    if (state.status !== 'waiting') addNotice(state, now, 'waiting', `ramp step ${step.percent} % waits for samples: ${judgement.reasons.join('; ')}`);
    state.status = 'waiting';
    step.outcome = 'waiting';
    state.judgeAt = new Date(now.getTime() + state.recheckMs).toISOString();
    return null;
  }
  state.judgeAt = null;
  if (judgement.outcome === 'fail') {
    step.outcome = 'failed';
    state.status = 'halted';
    state.haltReasons = judgement.reasons;
    addNotice(state, now, 'halted', `ramp halted at ${step.percent} %, back to ${state.lastGoodPercent} %: ${judgement.reasons.join('; ')}`, true);
    return { percent: state.lastGoodPercent };
  }
  step.outcome = 'passed';
  state.lastGoodPercent = step.percent;
  if (state.current === state.steps.length - 1) {
    state.status = 'done';
    addNotice(state, now, 'done', `ramp done: its last step ${step.percent} % passed`);
    return null;
  }
  addNotice(state, now, 'step-passed', `ramp step ${step.percent} % passed, next ${state.steps[state.current + 1].percent} %`);
  state.current += 1;
  enterStep(state, now);
  return { percent: state.steps[state.current].percent };
}

/** One check: the kill switch or a foreign rollout pauses an active ramp; a due step is judged from `tick.readout` (required). */
export function advanceRamp(state: RampState, tick: RampTick): RampAdvance {
  const { now, rollout } = tick;
  if (!rampActive(state)) return { state, write: null };
  const next = draft(state);
  const percent = next.steps[next.current].percent;
  if (killSwitchOn(rollout)) pauseIn(next, now, 'kill-switch', null, 'the kill switch is on (rollout enabled=false)');
  // A cleared override shows as the environment's values: a human's change too.
  else if (!rollout.enabled || rollout.percent !== percent || rollout.source.percent !== 'override') {
    pauseIn(next, now, 'manual-percent', null, `a manual change: rollout ${rollout.enabled ? 'enabled' : 'disabled'} at ${rollout.percent} % (${rollout.source.percent}) instead of the ramp's ${percent} %`);
  } else if (rampNeedsReadout(next, now)) {
    if (!tick.readout) throw new Error('advanceRamp: the step is due for judgement and no readout was given (see rampNeedsReadout)');
    return finish(state, next, now, judge(next, now, tick.readout));
  }
  return finish(state, next, now, null);
}

/** On-call's pause (a manual change of the rollout pauses this way in the same step). Only an active ramp pauses. */
export function pauseRamp(state: RampState, command: { now: Date; by: string; cause?: Exclude<PauseCause, 'kill-switch'>; detail?: string }): RampResult {
  if (!rampActive(state)) return { ok: false, error: `the ramp is ${state.status}, not running` };
  const next = draft(state);
  pauseIn(next, command.now, command.cause ?? 'manual-pause', command.by, command.detail ?? `paused by ${command.by}`);
  return { ok: true, ...finish(state, next, command.now, null) };
}

/** On-call's resume of a paused ramp: the step it paused at is written again (with `enabled: true`) and starts a fresh dwell. */
export function resumeRamp(state: RampState, command: { now: Date; by: string }): RampResult {
  if (state.status !== 'paused') return { ok: false, error: `the ramp is ${state.status}, not paused` };
  const next = draft(state);
  next.pause = null;
  addNotice(next, command.now, 'resumed', `ramp resumed at ${next.steps[next.current].percent} % by ${command.by}`);
  enterStep(next, command.now);
  return { ok: true, ...finish(state, next, command.now, { percent: next.steps[next.current].percent, enabled: true }) };
}

/** Drops the notices up to `seq` once the driver has recorded them. */
export function ackNotices(state: RampState, seq: number): RampState {
  const notices = state.notices.filter((n) => n.seq > seq);
  if (notices.length === state.notices.length) return state;
  return { ...state, notices, revision: state.revision + 1 };
}
