/**
 * A worker killed while it builds (SPEC R21): with several worker processes running, Redis is
 * emptied (as by FLUSHALL: the controller then repairs at once), the worker that builds is
 * SIGKILLed as soon as it logs the given phase, and the time until today's ring is back (current
 * = today's version, complete) is measured. Shared by the Jest test and `pnpm test:reliability`.
 */
import { freePort, waitUntil, type Managed } from '../support/processes';
import type { Suite } from './suite';

/** The build's phases a kill may land in (daily-build.ts; `publish` is the first step of `switch`). */
export const KILL_PHASES = ['read', 'assemble', 'write', 'verify', 'switch', 'legacy', 'scores'] as const;
export type KillPhase = (typeof KILL_PHASES)[number];

/** R21: a killed build costs at most this. */
export const RING_BACK_WITHIN_MS = 120_000;

export interface KillSetup {
  /** The running workers; the killed one is replaced by a new one (started by `startWorker`). */
  workers: Managed[];
  startWorker(): Promise<Managed>;
  /** Empties the service's Redis keys (FLUSHALL, or the test's prefix). */
  flush(): Promise<void>;
  /** Whether today's version is current and complete. */
  ringIsBack(): Promise<boolean>;
}

const phaseLine = (phase: string) => new RegExp(`daily build phase.*"phase":"${phase}"`);

export async function killBuildAt(phase: KillPhase, setup: KillSetup) {
  const marks = setup.workers.map((worker) => worker.output.length);
  const logged = (i: number) => setup.workers[i].output.slice(marks[i]).join('');
  await setup.flush();
  let building = -1;
  await waitUntil(`a worker to log the ${phase} phase`, async () => (building = setup.workers.findIndex((_, i) => phaseLine(phase).test(logged(i)))) !== -1, RING_BACK_WITHIN_MS);
  const killed = setup.workers[building];
  await killed.stop('SIGKILL');
  const killedAt = performance.now();
  const phases = [...logged(building).matchAll(/daily build phase.*"phase":"(\w+)"/g)].map((m) => m[1]);
  // The replacement starts meanwhile: the two other workers are the ones that repair.
  const replacement = setup.startWorker();
  replacement.catch(() => undefined);
  await waitUntil(`today's ring after the kill in ${phase}`, setup.ringIsBack, RING_BACK_WITHIN_MS);
  const secondsToRing = Math.round((performance.now() - killedAt) / 100) / 10;
  setup.workers[building] = await replacement;
  // lastLogged: the last phase the killed worker logged: the kill lands in it (a fast phase may have ended first).
  return { phase, lastLogged: phases.at(-1) ?? phase, secondsToRing };
}

/**
 * Group `kill` (R21): the building worker SIGKILLed at each phase, 3 workers with the default
 * 30 s lease; about a minute a phase, so only in the full run (or --only kill).
 */
export async function killChecks(suite: Suite): Promise<void> {
  if (suite.options.quick && !suite.options.only?.includes('kill')) return;
  const { businessDay, check, keys, pageVersion, redisClient, summary } = suite;
  await suite.workerProcess?.stop();
  const killWorkers: Managed[] = [];
  const startKillWorker = async () => {
    const started = await suite.startWorker(await freePort(), { BUILD_LOCK_TTL_MS: '30000' });
    killWorkers.push(started);
    return started;
  };
  const workers = [await startKillWorker(), await startKillWorker(), await startKillWorker()];
  const today = () => businessDay(new Date().toISOString());
  const table: string[] = [];
  for (const phase of KILL_PHASES) {
    await check('kill', `3 workers, Redis flushed, the building worker SIGKILLed in its ${phase} phase: today's ring back within 2 minutes`, async () => {
      const outcome = await killBuildAt(phase, {
        workers,
        startWorker: startKillWorker,
        flush: async () => void (await redisClient.flushAll()),
        ringIsBack: async () => (await redisClient.get(keys.current)) === today() && Boolean(await redisClient.hExists(keys.meta(today()), 'completedAt')),
      });
      table.push(`${phase}: ${outcome.secondsToRing} s`);
      return `killed after its ${outcome.lastLogged} log line; ring back ${outcome.secondsToRing} s after the kill`;
    });
  }
  summary.killTable = table.join(', ');
  await Promise.all(killWorkers.map((w) => w.stop('SIGKILL')));
  suite.workerProcess = await suite.startWorker();
  await waitUntil('the ring after the kill checks', async () => (await pageVersion()) !== 'legacy', 150_000);
}
