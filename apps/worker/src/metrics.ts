/** Build-side metrics of SPEC R18. */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { expandBlocks, fullBlockRatio, RAMP_NOTICE_KINDS } from '@feed/domain';
import { COUNTER_KINDS, SCRAPE_WAIT_MS, STORES, withDeadline, type QueueMeta, type StoreHealth } from '@feed/storage';
import { declareLabels, dependencyUpGauge } from '@feed/telemetry';
import { REPAIR_REASONS } from './controller/repair-reasons';
import type { BuildStatus } from './daily-build/daily-build';
import type { DocumentIssue } from './daily-build/read-candidates';

/** Label values declared once, exported at 0 from the start (`increase()` sees a first failure); records over the code's types. */
export const BUILD_RESULTS = Object.keys({ built: 1, shadow: 1, held: 1, superseded: 1, 'already-current': 1, locked: 1, failed: 1, invalid: 1 } satisfies Record<BuildStatus | 'failed' | 'invalid', 1>);
export const DOCUMENT_ISSUES = Object.keys({ 'unreadable-id': 1, 'unreadable-document': 1, 'non-numeric-field': 1, 'saturated-score': 1 } satisfies Record<DocumentIssue, 1>);
export const RAMP_STEP_KINDS = [...RAMP_NOTICE_KINDS];
export const REPAIRED_COUNTERS = Object.values(COUNTER_KINDS).flatMap((kind) => [kind.recommend, kind.display]);

export interface WorkerMetricsOptions {
  defaultMetrics?: boolean;
  /** Current's meta: build gauges are read from it every scrape, so every replica reports the same. */
  currentMeta?: () => Promise<QueueMeta | null>;
  /** The stored ramp's status and pause (R23). When given, `feed_ramp_halted` and `feed_ramp_sample_ratio_mismatch` are read from it at every scrape, on every replica. */
  rampStatus?: () => Promise<{ status: string; pause: { cause: string } | null } | null>;
  /** The held version's day, if the release gate holds one (R23). When given, `feed_version_held` is read from it at every scrape. */
  heldVersion?: () => Promise<string | null>;
  /** The stores' probes, for `feed_dependency_up` (the same as `/readyz`'s). */
  health?: StoreHealth;
}

/** A scrape-time read of Redis, bounded so a frozen Redis never holds the scrape (R17); undefined when it failed or timed out. */
const readForScrape = <T>(read: (() => Promise<T>) | undefined) => (read ? withDeadline(read(), SCRAPE_WAIT_MS, 'scrape read').catch(() => undefined) : Promise.resolve(undefined));

export function createWorkerMetrics(options: WorkerMetricsOptions = {}) {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  /** A gauge; with `collect`, read at every scrape. */
  const gauge = (name: string, help: string, collect?: (this: Gauge) => Promise<void>) => new Gauge({ name, help, registers: [registry], collect });
  const { currentMeta } = options;
  // One meta read per scrape, shared by the gauges. A Redis error or a read past SCRAPE_WAIT_MS
  // keeps the last values, marked stale by feed_build_meta_up 0.
  let reading: Promise<QueueMeta | null> | undefined;
  /** Reads current's meta into the build gauges; false when there is none or it could not be read in time. */
  const readMeta =
    currentMeta &&
    (async () => {
      const meta = await readForScrape(() => (reading ??= currentMeta().finally(() => (reading = undefined))));
      if (meta) recordBuildMeta(metrics, meta);
      return Boolean(meta);
    });
  if (readMeta) {
    gauge('feed_build_meta_up', "Whether the current version's meta could be read from Redis at this scrape", async function () {
      this.set((await readMeta()) ? 1 : 0);
    });
  }
  const buildGauge = (name: string, help: string) => gauge(name, help, readMeta && (async () => void (await readMeta())));
  const { rampStatus, heldVersion } = options;
  const counter = (name: string, help: string, labels: Record<string, readonly string[]>) => declareLabels(new Counter({ name, help, labelNames: Object.keys(labels), registers: [registry] }), labels);
  const metrics = {
    registry,
    buildDuration: declareLabels(
      new Histogram({ name: 'feed_build_duration_seconds', help: 'Daily build duration by result', labelNames: ['result'], buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200], registers: [registry] }),
      { result: BUILD_RESULTS },
    ),
    builds: counter('feed_builds_total', 'Builds by result (built, shadow, held by the release gate, superseded, already-current, locked, failed, invalid job data)', { result: BUILD_RESULTS }),
    candidates: buildGauge('feed_build_candidates', 'Eligible videos read by the last build'),
    high: buildGauge('feed_build_high_pool', 'High-pool size of the last build'),
    fresh: buildGauge('feed_build_new_pool', 'New-pool size of the last build'),
    final: buildGauge('feed_build_queue_length', 'Queue length of the last build'),
    ratio: buildGauge('feed_build_full_17_3_block_ratio', 'Share of the last build\'s blocks that are exactly 17 high + 3 new'),
    duplicates: buildGauge('feed_build_duplicate_rate', 'Duplicate ids / queue length of the last build (0 when correct)'),
    switchTime: buildGauge('feed_version_switch_timestamp_seconds', 'Unix time of the last switch of current'),
    documentsSkipped: counter('feed_build_documents_skipped_total', 'Eligible documents a build skipped (unreadable) or corrected (a field read as 0), by reason (R1a)', { reason: DOCUMENT_ISSUES }),
    repairs: counter('feed_repairs_total', 'Repairs of the desired state by the controller, by reason (R21)', { reason: REPAIR_REASONS }),
    repairStopped: declareLabels(
      new Gauge({ name: 'feed_repair_stopped', help: 'Whether the controller stopped a repair that does not converge (1), by reason (R21): see the inspector', labelNames: ['reason'], registers: [registry] }),
      { reason: REPAIR_REASONS },
    ),
    controllerFailures: new Counter({ name: 'feed_controller_failures_total', help: 'Controller checks that could not run or repair (Redis or BullMQ failing)', registers: [registry] }),
    rampHalted: gauge(
      'feed_ramp_halted',
      'Whether the rollout ramp is halted by a failing guard (1) until on-call acts (R23): see the inspector and the audit trail',
      async function () {
        // A Redis error or timeout keeps the last value (the driver's).
        const ramp = await readForScrape(rampStatus);
        if (ramp !== undefined) this.set(ramp?.status === 'halted' ? 1 : 0);
      },
    ),
    rampSampleRatio: gauge(
      'feed_ramp_sample_ratio_mismatch',
      "Whether the rollout ramp is paused at its step on a sample-ratio mismatch (1), the arms' units off the split asked for, until on-call resumes it (R23)",
      async function () {
        const ramp = await readForScrape(rampStatus);
        if (ramp !== undefined) this.set(ramp?.pause?.cause === 'sample-ratio' ? 1 : 0);
      },
    ),
    rampUnreadable: gauge('feed_ramp_unreadable', 'Whether the stored rollout ramp is a record this version cannot read (1): it is not driven, the controller goes on; see the inspector (R23)'),
    versionHeld: gauge(
      'feed_version_held',
      'Whether the release gate holds a version as a shadow (1) until on-call promotes it or a later day switches (R23): see the inspector',
      async function () {
        // Read from the held record, so it lasts exactly as long as the hold, on every replica; a Redis error keeps the last value.
        const held = await readForScrape(heldVersion);
        if (held !== undefined) this.set(held ? 1 : 0);
      },
    ),
    rampSteps: counter('feed_ramp_steps_total', "The rollout ramp's automatic steps and on-call's pauses and resumes, as recorded in the audit trail (R23)", { kind: RAMP_STEP_KINDS }),
    dependencyUp: dependencyUpGauge(Gauge, registry, STORES, async () => options.health?.upForScrape()),
    counterRepairs: counter('feed_counter_repairs_total', 'Interaction records the repair job counted into a video counter, by counter (R3)', { counter: REPAIRED_COUNTERS }),
  };
  return metrics;
}

export type WorkerMetrics = ReturnType<typeof createWorkerMetrics>;

export function recordBuildMeta(metrics: WorkerMetrics, meta: QueueMeta): void {
  metrics.candidates.set(meta.candidateCount);
  metrics.high.set(meta.highCount);
  metrics.fresh.set(meta.newCount);
  metrics.final.set(meta.finalCount);
  metrics.ratio.set(fullBlockRatio(expandBlocks(meta.blocks)));
  metrics.duplicates.set(meta.length ? meta.duplicateCount / meta.length : 0);
  if (meta.switchedAt) metrics.switchTime.set(Date.parse(meta.switchedAt) / 1000);
}
