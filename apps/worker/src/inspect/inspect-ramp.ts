/**
 * The inspector's view of the ramp (R23): steps, the current one, each step's latest verdict with
 * per-guard samples, rates and intervals (trusted units), the sample-ratio units, and new devices.
 */
import type { GuardResult } from '@feed/domain';
import type { RolloutStore } from '@feed/storage';

/** One guard of a verdict as the page shows it. */
const guardView = (g: GuardResult) => ({
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
export async function rampView(rollout: RolloutStore) {
  const { state, error } = await rollout.ramp();
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
      verdict: step.verdict
        ? { outcome: step.verdict.outcome, judgedAt: step.verdict.judgedAt, reasons: step.verdict.reasons, guards: step.verdict.guards.map(guardView), sampleRatio: step.verdict.sampleRatio ?? null, fresh: step.verdict.fresh ?? null }
        : null,
    })),
  };
}
