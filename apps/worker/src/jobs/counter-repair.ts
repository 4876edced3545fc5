/**
 * The counter repair job (SPEC R3), scheduled every minute so one replica at a time tallies the
 * videos of records left dirty (counter-tally.ts). Bounded per run; what it repaired is counted in
 * `feed_counter_repairs_total{counter}` and logged per record (at most REPAIR_LOG_LINES).
 */
import { Queue, Worker } from 'bullmq';
import type { Logger } from '@feed/logger';
import { repairPendingCounters, type InteractionModels, type RepairReport, type VideoModel } from '@feed/storage';
import type { WorkerMetrics } from '../metrics';
import { bullErrorLogger, BullConnections, type BullConnection } from './bull-connection';

export const COUNTER_REPAIR_QUEUE = 'feed-counter-repair';
export const COUNTER_REPAIR_SCHEDULER_ID = 'counter-repair';
export const COUNTER_REPAIR_EVERY_MS = 60_000;
/** Dirty records taken per kind and run. */
const MAX_RECORDS_PER_RUN = 50_000;
/** Repaired records logged one by one per run; the rest are summed up in one line. */
const REPAIR_LOG_LINES = 20;

/** A repair run is short and idempotent: shutdown waits at most this long for it. */
const CLOSE_BOUND_MS = 1_500;

const JOB_OPTIONS = { attempts: 1, removeOnComplete: 50, removeOnFail: 50 } as const;

export interface CounterRepairOptions {
  connection: () => BullConnection;
  prefix: string;
  logger: Logger;
  metrics: WorkerMetrics;
  videos: VideoModel;
  records: InteractionModels;
  everyMs?: number;
  /** Records younger than this are left to their own request. */
  minAgeMs?: number;
}

export async function runCounterRepair(options: Pick<CounterRepairOptions, 'logger' | 'metrics' | 'videos' | 'records' | 'minAgeMs'>): Promise<RepairReport> {
  const { logger, metrics } = options;
  let logged = 0;
  const report = await repairPendingCounters(options.videos, options.records, {
    minAgeMs: options.minAgeMs,
    maxRecords: MAX_RECORDS_PER_RUN,
    onRepair: ({ kind, videoId, records, recommend, display, refused }) => {
      if (refused) logger.warn('counter repair left a video unfinished', { kind, videoId: videoId.toHexString(), reason: refused });
      for (const record of records) {
        if (logged++ >= REPAIR_LOG_LINES) break;
        logger.info('interaction record counted by the repair job', { kind, videoId: videoId.toHexString(), recordId: record.toHexString() });
      }
      logger.debug('video counters repaired', { kind, videoId: videoId.toHexString(), recommend, display });
    },
  });
  for (const [counter, repaired] of Object.entries(report)) if (repaired > 0) metrics.counterRepairs.inc({ counter }, repaired);
  if (logged > REPAIR_LOG_LINES) logger.info('more interaction records counted by the repair job', { notLogged: logged - REPAIR_LOG_LINES });
  return report;
}

export async function startCounterRepair(options: CounterRepairOptions) {
  const connections = new BullConnections(options.connection);
  const connection = connections.next;
  const queue = new Queue(COUNTER_REPAIR_QUEUE, { connection: connection(), prefix: options.prefix, defaultJobOptions: JOB_OPTIONS });
  queue.on('error', bullErrorLogger(options.logger, 'counter-repair'));
  /** Creates the job scheduler, or puts it back (the controller calls it after Redis lost it). */
  const ensureScheduler = async () => {
    await queue.upsertJobScheduler(COUNTER_REPAIR_SCHEDULER_ID, { every: options.everyMs ?? COUNTER_REPAIR_EVERY_MS }, { name: 'counter-repair', opts: JOB_OPTIONS });
  };
  await ensureScheduler();
  const worker = new Worker(COUNTER_REPAIR_QUEUE, () => runCounterRepair(options), { connection: connection(), prefix: options.prefix, concurrency: 1 });
  worker.on('failed', (job, err) => options.logger.warn('counter repair failed', { jobId: job?.id, err }));
  worker.on('error', bullErrorLogger(options.logger, 'counter-repair-worker'));
  return { queue, ensureScheduler, close: () => connections.closeWithin(CLOSE_BOUND_MS, [worker, queue], options.logger) };
}
