/**
 * The desired-state controller over real BullMQ queues (no worker processes their jobs: a test
 * reads what the controller queued), closed after the test.
 */
import { Queue } from 'bullmq';
import { createLogger } from '@feed/logger';
import { BuildStore } from '@feed/storage';
import { bullConnectionFactory, BullConnections } from '../../src/jobs/bull-connection';
import { BUILD_QUEUE, buildJobOptions, SCHEDULER_ID, type BuildJobData } from '../../src/jobs/build-queue';
import { COUNTER_REPAIR_QUEUE, COUNTER_REPAIR_SCHEDULER_ID } from '../../src/jobs/counter-repair';
import type { ControllerDeps } from '../../src/controller/desired-state';
import { createWorkerMetrics } from '../../src/metrics';
import type { TestServices } from '../../../../test/support/services';

export interface ControllerUnderTest {
  deps: ControllerDeps;
  connections: BullConnections;
  buildQueue: Queue<BuildJobData>;
  counterQueue: Queue;
}

/** A controller on `s`'s Redis, daily cron `cron` in `timeZone`, its clock `now()`. */
export function controllerUnderTest(s: TestServices, options: { cron: string; timeZone: string; now: () => Date }): ControllerUnderTest {
  const connections = new BullConnections(bullConnectionFactory(s.config));
  const buildQueue = new Queue<BuildJobData>(BUILD_QUEUE, { connection: connections.next(), prefix: s.keys.bullPrefix, defaultJobOptions: buildJobOptions(30_000) });
  const counterQueue = new Queue(COUNTER_REPAIR_QUEUE, { connection: connections.next(), prefix: s.keys.bullPrefix });
  const deps: ControllerDeps = {
    store: new BuildStore(s.redis, s.keys),
    logger: createLogger({ silent: true }),
    metrics: createWorkerMetrics(),
    buildQueue,
    ensureBuildScheduler: async () => void (await buildQueue.upsertJobScheduler(SCHEDULER_ID, { pattern: options.cron, tz: options.timeZone }, { name: 'daily-build' })),
    counterRepairQueue: counterQueue,
    ensureCounterRepairScheduler: async () => void (await counterQueue.upsertJobScheduler(COUNTER_REPAIR_SCHEDULER_ID, { every: 60_000 }, { name: 'counter-repair' })),
    cron: options.cron,
    timeZone: options.timeZone,
    now: options.now,
  };
  s.disposeAfter(() => connections.closeWithin(2_000, [buildQueue, counterQueue], deps.logger));
  return { deps, connections, buildQueue, counterQueue };
}
