/**
 * On-call's decision on a version the release gate held (SPEC R23), behind the CLI (`pnpm cli build
 * --promote V` / `--dismiss V`), the admin endpoints and the dashboard's `promote-held` job. All
 * that can refuse is decided before anything moves (the held record, the build lock, the shadow
 * keys being the held build and whole). Then, under the build lock, a promote publishes the
 * shadow's keys as live (the publish script rechecks atomically) and switches `current` unless the
 * day is older; a dismiss (only of a day older than current) publishes nothing. Either clears the
 * held record and writes the audit entry (D6).
 */
import type { Logger } from '@feed/logger';
import type { AuditEntry, AuditTrail, BuildStore, HeldVersion, QueueMeta, VersionStore } from '@feed/storage';
import { acquireBuildLock, type BuildLock } from './build-lock';
import { BuildVerificationError, publish } from './daily-build';

export interface PromoteDeps {
  store: BuildStore;
  logger: Logger;
  keyTtlHours: number;
  lockTtlMs: number;
  /** On-call's trail: asked before anything moves, so a promote is refused rather than made without its entry. */
  audit: AuditTrail;
}

/** Why a promote was refused; `status` is the HTTP answer the admin endpoint gives. */
export class PromoteRefusedError extends Error {
  constructor(readonly status: 404 | 409, message: string) {
    super(message);
  }
}

/** On-call's two answers to a held version. */
export type HeldDecision = 'promote' | 'dismiss';

export interface PromoteResult {
  version: string;
  /** `promoted`: current now; `published`: its live keys, current a newer day; `dismissed`: nothing published. */
  status: 'promoted' | 'published' | 'dismissed';
  /** The version current before. */
  replaced: string | null;
  /** The version current after. */
  current: string | null;
  /** The held record that was decided (its verdict and compared figures). */
  held: HeldVersion;
}

type Outcome = Pick<PromoteResult, 'status' | 'current'> & Partial<Pick<PromoteResult, 'replaced'>>;

/** The held build's shadow meta; refused (nothing moved yet) unless its keys are there and whole. */
async function heldShadow(versions: VersionStore, held: HeldVersion): Promise<QueueMeta> {
  const { version } = held;
  const shadow = await versions.readMeta(version, 'shadow');
  if (!shadow || shadow.buildId !== held.buildId) {
    throw new PromoteRefusedError(409, `the shadow keys of ${version} are not the held build ${held.buildId} (${shadow ? `a later shadow build ${shadow.buildId} replaced it` : 'they expired'}): build the day again`);
  }
  // Its queue lost (an eviction, a hand DEL) while its meta stayed: nothing whole to publish.
  const whole = await versions.completeness(version, 'shadow');
  if (!whole.complete) throw new PromoteRefusedError(409, `the held build's shadow keys of ${version} are not whole (${whole.problem}): build the day again`);
  return shadow;
}

async function decideLocked(deps: PromoteDeps, held: HeldVersion, lock: BuildLock, decision: HeldDecision, current: string | null): Promise<Outcome> {
  const { store } = deps;
  const { version } = held;
  const older = current !== null && version < current;
  if (decision === 'dismiss') {
    // The due day dismissed would be built again by the controller: promote it, or build it with --skip-gate.
    if (!older) throw new PromoteRefusedError(409, `${version} is not older than current ${current}: promote it, or build the day with --skip-gate`);
    return { status: 'dismissed', current };
  }
  const { versions } = store;
  // The script checks lock, held build and lengths again with the rename: refused there, nothing moved either.
  await publish(deps, await heldShadow(versions, held), lock, 'live', 'shadow').catch((err: unknown) => {
    throw err instanceof BuildVerificationError ? new PromoteRefusedError(409, `${err.message}: build the day again`) : err;
  });
  if (older) return { status: 'published', current };
  const outcome = await store.makeCurrent(version);
  if (!outcome.switched) return { status: 'published', current: outcome.current };
  await versions.markSwitched(version, new Date().toISOString());
  // The legacy random set (R17) from the promoted queue, staged under this lock's token and swapped in whole.
  await versions.refillLegacyFromQueue(version, lock, deps.keyTtlHours * 3600);
  // Finished: a later build of the day finds it current and done (its score write-back waits for the next day's build).
  await versions.markFinished(version, new Date().toISOString());
  return { status: 'promoted', current: version, replaced: outcome.replaced };
}

/**
 * Promotes (or dismisses) the held `version`, refused with nothing changed: 404 when not the held
 * one; 409 when its build holds the lock, its shadow is not the held build or whole, or a dismissed
 * day is not older than current.
 */
export async function promoteHeldVersion(deps: PromoteDeps, version: string, who: Pick<AuditEntry, 'actor' | 'via'>, decision: HeldDecision = 'promote'): Promise<PromoteResult> {
  const { store, logger } = deps;
  const held = await store.heldVersion();
  if (!held || held.version !== version) throw new PromoteRefusedError(404, held ? `${version} is not held; the held version is ${held.version}` : `${version} is not held: no version is held`);
  await deps.audit.ready();
  const lock = await acquireBuildLock(store.buildLock(version, false, deps.lockTtlMs), logger);
  if (!lock) throw new PromoteRefusedError(409, `a build of ${version} holds its build lock; promote again when it finished`);
  const before = await store.versions.current();
  let outcome: Outcome;
  try {
    outcome = await decideLocked(deps, held, lock, decision, before);
    await store.clearHeld(version, true);
  } finally {
    // Logged, not counted: the lock lapses with its lease.
    await lock.release().catch((err: unknown) => logger.warn('build lock not released: it lapses with its lease', { version, err }));
  }
  const replaced = outcome.replaced ?? before;
  logger.warn(`held version ${outcome.status}`, { version, replaced, current: outcome.current, actor: who.actor, via: who.via });
  const action = decision === 'dismiss' ? 'build-dismissed' : 'build-promoted';
  const entry: AuditEntry = { action, ...who, before: { current: replaced, held: version, reasons: held.verdict.reasons }, after: { current: outcome.current, [outcome.status]: version } };
  try {
    await deps.audit.record(entry);
  } catch (err) {
    // Decided already (the trail answered a moment ago): a failed answer would mislead on-call.
    logger.error('audit trail unwritable', { ...entry, err });
  }
  return { version, status: outcome.status, current: outcome.current, replaced, held };
}
