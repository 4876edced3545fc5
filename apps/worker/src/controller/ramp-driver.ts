/**
 * The rollout ramp's driver (SPEC R23), run once per check by the controller's lease holder, so
 * one replica drives it; state in Redis survives restarts. A tick reads ramp and rollout, the
 * step's readout (D7) when due, asks `advanceRamp`, and commits state and rollout together over
 * the revisions read (a human's earlier command wins), then audits, alerts and acknowledges the
 * notices. Order and failures: docs/design.md, "The ramp's driver".
 */
import { ackNotices, advanceRamp, rampNeedsReadout, rampReadoutHours, type RampNotice, type RampState } from '@feed/domain';
import type { Logger } from '@feed/logger';
import type { AuditTrail, Rollout, RolloutStore } from '@feed/storage';
import type { WorkerMetrics } from '../metrics';

export interface RampDriverDeps {
  store: RolloutStore;
  logger: Logger;
  metrics: WorkerMetrics;
  /** The environment's rollout (R16 defaults), as the API resolves it. */
  environment: Rollout;
  trail: AuditTrail;
  now?: () => Date;
  /** Aborted when the controller's check is abandoned: the tick then writes no more. */
  signal?: AbortSignal;
}

/** Who the audit trail names for the ramp's own writes and steps. */
const rampActor = (state: RampState) => `ramp ${state.id}`;

async function recordNotices(deps: RampDriverDeps, state: RampState): Promise<RampState> {
  const { logger, metrics, trail } = deps;
  let recorded = 0;
  for (const notice of state.notices) {
    try {
      await trail.record({ action: 'ramp-step', actor: rampActor(state), via: 'worker', before: { ramp: state.id, seq: notice.seq }, after: noticeEntry(notice) });
    } catch (err) {
      // Kept in the state's outbox: recorded at a later check, once MongoDB answers.
      logger.warn('ramp step not recorded in the audit trail yet', { ramp: state.id, kind: notice.kind, err: err instanceof Error ? err.message : String(err) });
      break;
    }
    metrics.rampSteps.inc({ kind: notice.kind });
    if (notice.alert) logger.error(notice.kind === 'halted' ? 'ramp halted' : 'ramp paused on a sample-ratio mismatch', { ramp: state.id, percent: notice.percent, reasons: state.haltReasons, message: notice.message });
    else logger.info('ramp step', { ramp: state.id, kind: notice.kind, percent: notice.percent, message: notice.message });
    recorded += 1;
  }
  if (recorded === 0) return state;
  const acked = ackNotices(state, state.notices[recorded - 1].seq);
  deps.signal?.throwIfAborted();
  return (await deps.store.commit({ rampRevision: String(state.revision), state: acked })) ? acked : state;
}

const noticeEntry = (n: RampNotice) => ({ kind: n.kind, percent: n.percent, message: n.message, at: n.at, ...(n.alert ? { alert: 'FeedRampHalted' } : {}) });

/** One tick of the ramp; the state after it (null when no ramp is stored or it is unreadable). */
export async function driveRamp(deps: RampDriverDeps): Promise<RampState | null> {
  const { store, logger, metrics, signal } = deps;
  if (await store.migrateRampKey()) logger.info('ramp moved to its key in the rollout slot', { from: store.keys.legacyRamp, to: store.keys.ramp });
  const stored = await store.ramp();
  metrics.rampUnreadable.set(stored.error ? 1 : 0);
  if (!stored.state) {
    if (stored.error) logger.error('stored ramp unreadable: not driven', { error: stored.error });
    metrics.rampHalted.set(0);
    metrics.rampSampleRatio.set(0);
    return null;
  }
  const state = stored.state;
  const now = deps.now?.() ?? new Date();
  const rollout = await store.observe(deps.environment);
  const step = state.steps[state.current];
  const readout = rampNeedsReadout(state, now) ? await store.stepReadout(now, rampReadoutHours(state, now), { startedAt: new Date(step.startedAt ?? now), percent: step.percent }) : undefined;
  const { state: next, write } = advanceRamp(state, { now, rollout, readout });
  if (next !== state) {
    signal?.throwIfAborted();
    // A human's command (or a change of the rollout) came first: this tick changes nothing, the next check decides afresh.
    if (!(await store.commit({ rampRevision: stored.revision, rolloutRevision: rollout.revision, state: next, rollout: write ?? undefined }))) {
      logger.info('ramp tick dropped: the ramp or the rollout changed since it read them', { ramp: state.id });
      return state;
    }
  }
  if (write) {
    const { revision: _before, ...before } = rollout;
    const { revision: _after, ...after } = await store.observe(deps.environment);
    await deps.trail
      .record({ action: 'rollout-set', actor: rampActor(next), via: 'worker', before, after })
      .catch((err: unknown) => logger.error('audit trail unwritable', { action: 'rollout-set', actor: rampActor(next), before, after, err }));
  }
  const settled = await recordNotices(deps, next);
  metrics.rampHalted.set(settled.status === 'halted' ? 1 : 0);
  metrics.rampSampleRatio.set(settled.pause?.cause === 'sample-ratio' ? 1 : 0);
  return settled;
}
