/** Build-side metrics of SPEC R18. */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { expandBlocks, fullBlockRatio } from '@feed/domain';
import type { QueueMeta } from '@feed/storage';
import { REPAIR_REASONS } from './controller/repair-reasons';

export interface WorkerMetricsOptions {
  defaultMetrics?: boolean;
  /**
   * The current version's meta in Redis. When given, the build gauges are read from it at every
   * scrape, so each replica (and a restarted one, or after a CLI build) reports the same truth.
   */
  currentMeta?: () => Promise<QueueMeta | null>;
}

export function createWorkerMetrics(options: WorkerMetricsOptions = {}) {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const gauge = (name: string, help: string) => new Gauge({ name, help, registers: [registry] });
  const { currentMeta } = options;
  if (currentMeta) {
    // One read per scrape, through a gauge registered before the others, so they are read after it; a Redis error keeps the last values.
    new Gauge({
      name: 'feed_build_meta_up',
      help: 'Whether the current version\'s meta could be read from Redis at this scrape',
      registers: [registry],
      async collect() {
        const meta = await currentMeta().catch(() => undefined);
        if (meta) recordBuildMeta(metrics, meta);
        this.set(meta ? 1 : 0);
      },
    });
  }
  const metrics = {
    registry,
    buildDuration: new Histogram({
      name: 'feed_build_duration_seconds',
      help: 'Daily build duration by result',
      labelNames: ['result'],
      buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200],
      registers: [registry],
    }),
    builds: new Counter({ name: 'feed_builds_total', help: 'Builds by result (built, shadow, already-current, locked, failed, invalid job data)', labelNames: ['result'], registers: [registry] }),
    candidates: gauge('feed_build_candidates', 'Eligible videos read by the last build'),
    high: gauge('feed_build_high_pool', 'High-pool size of the last build'),
    fresh: gauge('feed_build_new_pool', 'New-pool size of the last build'),
    final: gauge('feed_build_queue_length', 'Queue length of the last build'),
    ratio: gauge('feed_build_full_17_3_block_ratio', 'Share of the last build\'s blocks that are exactly 17 high + 3 new'),
    duplicates: gauge('feed_build_duplicate_rate', 'Duplicate ids / queue length of the last build (0 when correct)'),
    switchTime: gauge('feed_version_switch_timestamp_seconds', 'Unix time of the last switch of current'),
    documentsSkipped: new Counter({
      name: 'feed_build_documents_skipped_total',
      help: 'Eligible documents a build skipped (unreadable) or corrected (a field read as 0), by reason (R1a)',
      labelNames: ['reason'],
      registers: [registry],
    }),
    repairs: new Counter({ name: 'feed_repairs_total', help: 'Repairs of the desired state by the controller, by reason (R21)', labelNames: ['reason'], registers: [registry] }),
    repairStopped: new Gauge({ name: 'feed_repair_stopped', help: 'Whether the controller stopped a repair that does not converge (1), by reason (R21): see the inspector', labelNames: ['reason'], registers: [registry] }),
    controllerFailures: new Counter({ name: 'feed_controller_failures_total', help: 'Controller checks that could not run or repair (Redis or BullMQ failing)', registers: [registry] }),
    counterRepairs: new Counter({ name: 'feed_counter_repairs_total', help: 'Interaction records the repair job counted into a video counter, by counter (R3)', labelNames: ['counter'], registers: [registry] }),
  };
  // Known at start-up: every repair reason exists at 0.
  for (const reason of REPAIR_REASONS) metrics.repairStopped.set({ reason }, 0);
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
