/**
 * The ramp's ranges (SPEC R23), for on-call's requests and any stored record; the state machine
 * (domain's ramp.ts) gets only values these let through.
 */
import Joi from 'joi';
import { ENGAGEMENT_GUARDS, MAX_DWELL_MS, MAX_RAMP_STEPS, MIN_DWELL_MS, OPERATIONAL_GUARDS, PAUSE_CAUSES, RAMP_NOTICE_KINDS, RAMP_SCHEMA, RAMP_STATUSES, RAMP_STEP_OUTCOMES, type RampState, type StepGuards } from '@feed/domain';

/** Samples each variant needs before a verdict: at most this many (more would never be reached in a dwell). */
export const MAX_MIN_SAMPLES = 100_000_000;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** "90s", "30m", "1h", "2d", "1h30m": up to four parts of up to 7 digits (the range check comes after). */
export const DURATION_PATTERN = /^(\d{1,7}[smhd]){1,4}$/;
export const DURATION_RANGE = `from ${MIN_DWELL_MS / 60_000}m to ${MAX_DWELL_MS / 86_400_000}d`;

/** A duration matching DURATION_PATTERN in milliseconds. */
export function durationMs(text: string): number {
  let ms = 0;
  for (const [, n, unit] of text.matchAll(/(\d+)([smhd])/g)) ms += Number(n) * UNIT_MS[unit];
  return ms;
}

const duration = () =>
  Joi.string()
    .pattern(DURATION_PATTERN, 'duration such as 90s, 30m, 1h, 1h30m')
    .custom((value: string, helpers) => (durationMs(value) >= MIN_DWELL_MS && durationMs(value) <= MAX_DWELL_MS ? value : helpers.message({ custom: `{{#label}} must be ${DURATION_RANGE}` })));

const increasing = (steps: number[], helpers: Joi.CustomHelpers) =>
  steps.every((step, i) => i === 0 || step > steps[i - 1]) ? steps : helpers.message({ custom: '{{#label}} must be strictly increasing' });
const stepsSchema = Joi.array().items(Joi.number().integer().strict().min(1).max(100)).min(1).max(MAX_RAMP_STEPS).custom(increasing);
const samples = () => Joi.number().integer().strict().min(1).max(MAX_MIN_SAMPLES);

/** On-call's ramp as the API's body and the CLI's options give it. */
export interface RampAskInput {
  steps: number[];
  dwell: string;
  recheck?: string;
  confidence?: number;
  minViews?: number;
  minRequests?: number;
}

export const rampAskSchema = Joi.object<RampAskInput>({
  steps: stepsSchema.required().description(`Percents 1-100, strictly increasing, 1-${MAX_RAMP_STEPS} steps, e.g. [1, 5, 25, 50, 100]`),
  dwell: duration().required().description(`How long each step runs before it is judged, ${DURATION_RANGE}: 90s, 30m, 1h, 1h30m`),
  recheck: duration().description(`How long a step with too few samples waits before it is judged again, ${DURATION_RANGE} (default: the dwell)`),
  confidence: Joi.number().strict().min(0.5).max(0.999).description('Confidence of the engagement tests, 0.5-0.999 (default 0.95)'),
  minViews: samples().description(`Views each variant needs before any verdict, 1-${MAX_MIN_SAMPLES} (default 20000)`),
  minRequests: samples().description(`Feed requests each variant needs before any verdict, 1-${MAX_MIN_SAMPLES} (default 2000)`),
});

/** A validated ask as the ramp's commands take it. */
export function rampAskOf(input: RampAskInput) {
  const guards = { confidence: input.confidence, minViews: input.minViews, minRequests: input.minRequests };
  const given = Object.fromEntries(Object.entries(guards).filter(([, v]) => v !== undefined)) as Partial<StepGuards>;
  return { steps: input.steps, dwellMs: durationMs(input.dwell), recheckMs: input.recheck === undefined ? undefined : durationMs(input.recheck), guards: given };
}

const time = () => Joi.string().isoDate();
const percent = () => Joi.number().integer().min(0).max(100);
const dwellMs = () => Joi.number().integer().min(MIN_DWELL_MS).max(MAX_DWELL_MS);
const guardsSchema = Joi.object<StepGuards>({
  confidence: Joi.number().min(0.5).max(0.999).required(),
  minViews: samples().required(),
  minRequests: samples().required(),
  margins: Joi.object(Object.fromEntries(OPERATIONAL_GUARDS.map((g) => [g, Joi.number().min(0).max(1).required()]))).required(),
  engagement: Joi.array().items(Joi.string().valid(...ENGAGEMENT_GUARDS)).unique().required(),
});

/** The stored record (RampState): anything else is reported, never driven. */
export const rampStateSchema = Joi.object<RampState>({
  schema: Joi.number().valid(RAMP_SCHEMA).required(),
  id: Joi.string().max(100).required(),
  requestedBy: Joi.string().allow('').max(500).required(),
  createdAt: time().required(),
  updatedAt: time().required(),
  revision: Joi.number().integer().min(1).max(Number.MAX_SAFE_INTEGER).required(),
  status: Joi.string().valid(...RAMP_STATUSES).required(),
  dwellMs: dwellMs().required(),
  recheckMs: dwellMs().required(),
  guards: guardsSchema.required(),
  steps: Joi.array()
    .items(Joi.object({ percent: percent().min(1).required(), outcome: Joi.string().valid(...RAMP_STEP_OUTCOMES).required(), startedAt: time().allow(null).required(), judgements: Joi.number().integer().min(0).required(), verdict: Joi.object().unknown().allow(null).required() }))
    .min(1)
    .max(MAX_RAMP_STEPS)
    .custom((steps: Array<{ percent: number }>, helpers) => (steps.every((s, i) => i === 0 || s.percent > steps[i - 1].percent) ? steps : helpers.message({ custom: '{{#label}} must be strictly increasing' })))
    .required(),
  current: Joi.number().integer().min(0).max(Joi.ref('steps', { adjust: (steps: unknown[]) => steps.length - 1 })).required(),
  judgeAt: time().allow(null).required(),
  lastGoodPercent: percent().required(),
  pause: Joi.object({ cause: Joi.string().valid(...PAUSE_CAUSES).required(), at: time().required(), by: Joi.string().allow(null, '').required(), detail: Joi.string().allow('').required() }).allow(null).required(),
  haltReasons: Joi.array().items(Joi.string().allow('')).required(),
  notices: Joi.array()
    .items(Joi.object({ seq: Joi.number().integer().min(1).required(), at: time().required(), kind: Joi.string().valid(...RAMP_NOTICE_KINDS).required(), percent: percent().required(), message: Joi.string().allow('').required(), alert: Joi.boolean().required() }))
    .required(),
  nextSeq: Joi.number().integer().min(1).max(Number.MAX_SAFE_INTEGER).required(),
});
