/**
 * The inspector's view of the rollout ramp (R23): its steps, the current one, and each step's
 * latest verdict with, per guard, the sample sizes, rates and confidence intervals it was judged on.
 */
import type { GuardResult, RampState } from '@feed/domain';
import { readRamp, type Redis, type RedisKeys } from '@feed/storage';

export interface RampGuardView {
  guard: GuardResult['guard'];
  kind: GuardResult['kind'];
  outcome: GuardResult['outcome'];
  confidence: number;
  ring: GuardResult['ring'];
  legacy: GuardResult['legacy'];
  difference: number | null;
  differenceInterval: GuardResult['differenceInterval'];
  margin?: number;
  pValue?: number | null;
  reason?: string;
}

export interface RampView {
  id: string;
  requestedBy: string;
  status: RampState['status'];
  dwellMs: number;
  current: number;
  lastGoodPercent: number;
  judgeAt: string | null;
  pause: RampState['pause'];
  haltReasons: string[];
  minViews: number;
  minRequests: number;
  steps: Array<{
    percent: number;
    outcome: RampState['steps'][number]['outcome'];
    startedAt: string | null;
    judgements: number;
    verdict: { outcome: string; judgedAt: string; reasons: string[]; guards: RampGuardView[] } | null;
  }>;
}

const guardView = (g: GuardResult): RampGuardView => ({
  guard: g.guard,
  kind: g.kind,
  outcome: g.outcome,
  confidence: g.confidence,
  ring: g.ring,
  legacy: g.legacy,
  difference: g.difference,
  differenceInterval: g.differenceInterval,
  ...(g.margin !== undefined ? { margin: g.margin } : {}),
  ...(g.pValue !== undefined ? { pValue: g.pValue } : {}),
  ...(g.reason ? { reason: g.reason } : {}),
});

/** What the page shows of the stored ramp; null when none, `{ error }` when it is unreadable. */
export async function rampView(redis: Redis, keys: RedisKeys): Promise<RampView | { error: string } | null> {
  const { state, error } = await readRamp(redis, keys);
  if (!state) return error ? { error } : null;
  return {
    id: state.id,
    requestedBy: state.requestedBy,
    status: state.status,
    dwellMs: state.dwellMs,
    current: state.current,
    lastGoodPercent: state.lastGoodPercent,
    judgeAt: state.judgeAt,
    pause: state.pause,
    haltReasons: state.haltReasons,
    minViews: state.guards.minViews,
    minRequests: state.guards.minRequests,
    steps: state.steps.map((step) => ({
      percent: step.percent,
      outcome: step.outcome,
      startedAt: step.startedAt,
      judgements: step.judgements,
      verdict: step.verdict ? { outcome: step.verdict.outcome, judgedAt: step.verdict.judgedAt, reasons: step.verdict.reasons, guards: step.verdict.guards.map(guardView) } : null,
    })),
  };
}
