/**
 * On-call's promotion of a version the release gate held (SPEC R23): one function behind the
 * CLI (`pnpm cli build --promote V`), the worker's admin endpoint and the dashboard's
 * `promote-held` job. Under the version's build lock it publishes the held shadow's own keys as
 * the version's live keys (the same publish script as a build: lock and lengths checked, one
 * step), switches `current` by compare-and-set, refills the legacy set from the promoted queue,
 * clears the held record and writes the audit entry (D6). The queue switched is the one that was
 * judged: a later shadow build of the day (another buildId on the shadow keys) is refused.
 */
import type { Logger } from '@feed/logger';
import { clearHeldVersion, makeCurrent, readHeldVersion, VersionStore, type AuditEntry, type AuditTrail, type HeldVersion, type Redis, type RedisKeys } from '@feed/storage';
import { acquireBuildLock, type BuildLock } from './build-lock';
import { publish } from './daily-build';

export interface PromoteDeps {
  redis: Redis;
  keys: RedisKeys;
  logger: Logger;
  keyTtlHours: number;
  lockTtlMs: number;
  /** On-call's trail: asked before anything moves, so a promote is refused rather than made without its entry. */
  audit: AuditTrail;
}

/** Why a promote was refused; `status` is the HTTP answer the admin endpoint gives. */
export class PromoteRefusedError extends Error {
  constructor(
    readonly status: 404 | 409,
    message: string,
  ) {
    super(message);
  }
}

export interface PromoteResult {
  version: string;
  status: 'promoted';
  /** The version current before the promote. */
  replaced: string | null;
  /** The held record that was promoted (its verdict and compared figures). */
  held: HeldVersion;
}

async function promoteLocked(deps: PromoteDeps, held: HeldVersion, lock: BuildLock): Promise<string | null> {
  const { redis, keys } = deps;
  const { version } = held;
  const versions = new VersionStore(redis, keys);
  const shadow = await versions.readMeta(version, 'shadow');
  if (!shadow || shadow.buildId !== held.buildId) {
    throw new PromoteRefusedError(409, `the shadow keys of ${version} are not the held build ${held.buildId} (${shadow ? `a later shadow build ${shadow.buildId} replaced it` : 'they expired'}): build the day again`);
  }
  // Its queue lost (an eviction, a hand DEL) while its meta stayed: nothing whole to publish.
  const whole = await versions.completeness(version, 'shadow');
  if (!whole.complete) throw new PromoteRefusedError(409, `the held build's shadow keys of ${version} are not whole (${whole.problem}): build the day again`);
  // Live from here on: the meta says so before it is renamed into place.
  await versions.markShadow(version, 'shadow', false);
  await publish(deps, { ...shadow, shadow: false }, lock, 'live', 'shadow');
  const outcome = await makeCurrent(redis, keys, version);
  if (!outcome.switched) throw new PromoteRefusedError(409, `current holds the newer ${outcome.current}: ${version} stays published, not current`);
  await versions.markSwitched(version, new Date().toISOString());
  // The legacy random set (R17) from the promoted queue, staged under this lock's token and swapped in whole.
  await versions.refillLegacyFromQueue(version, lock, deps.keyTtlHours * 3600);
  // Finished: a later build of the day finds it current and done (its score write-back waits for the next day's build).
  await versions.markFinished(version, new Date().toISOString());
  await clearHeldVersion(redis, keys, version);
  if ((await redis.get(keys.shadow)) === version) await redis.del(keys.shadow);
  return outcome.replaced;
}

/**
 * Makes the held `version` current. Refused with 404 when no version is held or another one is,
 * 409 when a build of it holds the lock, its shadow keys are not the held build, or current moved
 * to a newer day meanwhile. `who` names the admin user, the CLI's user@host or the dashboard job.
 */
export async function promoteHeldVersion(deps: PromoteDeps, version: string, who: Pick<AuditEntry, 'actor' | 'via'>): Promise<PromoteResult> {
  const { redis, keys, logger } = deps;
  const held = await readHeldVersion(redis, keys);
  if (!held || held.version !== version) throw new PromoteRefusedError(404, held ? `${version} is not held; the held version is ${held.version}` : `${version} is not held: no version is held`);
  await deps.audit.ready();
  const lock = await acquireBuildLock(redis, keys.buildLock(version), deps.lockTtlMs, logger);
  if (!lock) throw new PromoteRefusedError(409, `a build of ${version} holds its build lock; promote again when it finished`);
  let replaced: string | null;
  try {
    replaced = await promoteLocked(deps, held, lock);
  } finally {
    // Logged, not counted: the lock lapses with its lease.
    await lock.release().catch((err: unknown) => logger.warn('build lock not released: it lapses with its lease', { version, err }));
  }
  logger.warn('held version promoted', { version, replaced, actor: who.actor, via: who.via });
  const entry: AuditEntry = { action: 'build-promoted', ...who, before: { current: replaced, held: version, reasons: held.verdict.reasons }, after: { current: version } };
  try {
    await deps.audit.record(entry);
  } catch (err) {
    // Promoted already (the trail answered a moment ago): a failed answer would mislead on-call.
    logger.error('audit trail unwritable', { ...entry, err });
  }
  return { version, status: 'promoted', replaced, held };
}
