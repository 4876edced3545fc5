/**
 * The build queue as the dashboard (bull-board) gets it (SPEC D6): every job it adds, retries,
 * promotes, reschedules or edits is audited with the dashboard's user. The job is the unit, not
 * the URL, so no path spelling escapes it. The scheduler's and controller's jobs are not audited.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Job, Queue } from 'bullmq';
import { logger } from '@feed/logger';
import type { AuditTrail, VersionStore } from '@feed/storage';

/** The dashboard request being served: who is signed in, and what they asked. */
export interface DashboardRequest {
  actor: string;
  request: string;
}

const dashboardRequests = new AsyncLocalStorage<DashboardRequest>();

/** Runs `fn` (the rest of a dashboard request) so that the queue calls it makes are attributed to `request`. */
export function asDashboardRequest<T>(request: DashboardRequest, fn: () => T): T {
  return dashboardRequests.run(request, fn);
}

type How = 'add' | 'retry' | 'promote' | 'reschedule' | 'update-data';

export interface AuditedQueueDeps {
  trail: AuditTrail;
  versions: Pick<VersionStore, 'current'>;
}

/** `queue` for the dashboard: the same queue, with the calls that start a job recorded once they succeeded. */
export function auditedQueue(queue: Queue, { trail, versions }: AuditedQueueDeps): Queue {
  const currentVersion = () => versions.current().catch(() => null);
  // Before the queue is touched: with MongoDB down the click fails (503) and no build runs off the trail.
  const trailReady = () => trail.ready();
  const audit = async (how: How, job: Pick<Job, 'id' | 'name' | 'data'>, before: Record<string, unknown>) => {
    const asked = dashboardRequests.getStore() ?? { actor: 'unknown', request: 'outside a dashboard request' };
    try {
      await trail.record({ action: 'build-requested', actor: asked.actor, via: 'dashboard', before, after: { request: asked.request, how, jobId: job.id, name: job.name, data: job.data as unknown } });
    } catch (err) {
      // The job exists already (MongoDB went away after trailReady): on-call's to know, not a reason to fail the click.
      logger.error('audit trail unwritable', { how, jobId: job.id, actor: asked.actor, err });
    }
  };
  const audited = <A extends unknown[], R>(how: How, job: Job, run: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await trailReady();
      // Replaced data is what the entry is about: the data it replaced goes with it.
      const before = { current: await currentVersion(), state: await job.getState().catch(() => 'unknown'), ...(how === 'update-data' ? { data: job.data as unknown } : {}) };
      const result = await run(...args);
      await audit(how, job, before);
      return result;
    };
  const watched = (job: Job | undefined): Job | undefined => {
    if (!job) return job;
    job.retry = audited('retry', job, job.retry.bind(job));
    job.promote = audited('promote', job, job.promote.bind(job));
    // A delay edited to now runs the build now, edited data forces another build: both by hand.
    job.changeDelay = audited('reschedule', job, job.changeDelay.bind(job));
    job.updateData = audited('update-data', job, job.updateData.bind(job));
    return job;
  };
  /** Adds the job (or jobs) once the trail is ready, then records each. */
  const added = async <R extends Job | Job[]>(add: () => Promise<R>): Promise<R> => {
    await trailReady();
    const before = { current: await currentVersion() };
    const result = await add();
    for (const job of [result].flat()) await audit('add', job, before);
    return result;
  };
  const overrides: Partial<Record<keyof Queue, unknown>> = {
    add: (...args: Parameters<Queue['add']>) => added(() => queue.add(...args)),
    addBulk: (...args: Parameters<Queue['addBulk']>) => added(() => queue.addBulk(...args)),
    getJob: async (...args: Parameters<Queue['getJob']>) => watched(await queue.getJob(...args)),
    getJobs: async (...args: Parameters<Queue['getJobs']>) => (await queue.getJobs(...args)).map((job) => watched(job)),
    promoteJobs: async (...args: Parameters<Queue['promoteJobs']>) => {
      await trailReady();
      const before = { current: await currentVersion(), state: 'delayed' };
      const delayed = await queue.getJobs(['delayed']);
      await queue.promoteJobs(...args);
      for (const job of delayed) await audit('promote', job, before);
    },
  };
  return new Proxy(queue, {
    get(target, property) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof Queue];
      const value: unknown = Reflect.get(target, property);
      // The queue's own methods run on the queue itself, not on this proxy.
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
