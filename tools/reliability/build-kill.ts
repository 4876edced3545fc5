/**
 * A worker killed while it builds (SPEC R21): with several worker processes running, Redis is
 * emptied (as by FLUSHALL: the controller then repairs at once), the worker that builds is
 * SIGKILLed as soon as it logs the given phase, and the time until today's ring is back (current
 * = today's version, complete) is measured. Shared by the Jest test and `pnpm test:reliability`.
 */
import type { Managed } from '../support/processes';
import { waitUntil } from '../support/processes';

/** The build's phases a kill may land in (daily-build.ts; `publish` is the first step of `switch`). */
export const KILL_PHASES = ['read', 'assemble', 'write', 'verify', 'switch', 'legacy', 'scores'] as const;
export type KillPhase = (typeof KILL_PHASES)[number];

/** R21: a killed build costs at most this. */
export const RING_BACK_WITHIN_MS = 120_000;

export interface KillOutcome {
  phase: KillPhase;
  /** The last phase the killed worker logged: the kill lands in it (a fast phase may have ended first). */
  lastLogged: string;
  secondsToRing: number;
}

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

export async function killBuildAt(phase: KillPhase, setup: KillSetup): Promise<KillOutcome> {
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
  return { phase, lastLogged: phases.at(-1) ?? phase, secondsToRing };
}
