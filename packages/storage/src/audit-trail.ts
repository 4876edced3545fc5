/**
 * On-call's trail (SPEC D6): every rollout override change and hand-requested build, with who,
 * when, before and after. In MongoDB, so Redis losing its data does not erase it: one capped
 * collection (AUDIT_TRAIL_MAX entries within AUDIT_TRAIL_BYTES), scoped to the key prefix.
 * Settings and job names only, never a secret; read behind the admin credentials.
 */
import type { Connection, mongo } from 'mongoose';
import { MongoBudget } from './deadline';

export const AUDIT_COLLECTION = 'audit_trail';
/** Entries kept (a capped collection drops the oldest beyond this count or AUDIT_TRAIL_BYTES). */
export const AUDIT_TRAIL_MAX = 10_000;
export const AUDIT_TRAIL_BYTES = 16 * 1024 * 1024;
/** A read's MongoDB budget when its caller gives none (the inspector, the CLI): an admin page never hangs on a frozen MongoDB. */
export const AUDIT_READ_MS = 2_000;
/** MongoDB's "NamespaceExists": another process created the collection first. */
const NAMESPACE_EXISTS = 48;

/** `ramp-*`: on-call's ramp commands; `ramp-step`: each automatic step of a ramp (R23), by the worker that drives it. */
export const AUDIT_ACTIONS = ['rollout-set', 'rollout-clear', 'build-requested', 'build-held', 'build-promoted', 'build-dismissed', 'ramp-start', 'ramp-pause', 'ramp-resume', 'ramp-step'] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditEntry {
  action: AuditAction;
  /** The admin user, or `user@host` for the CLI. */
  actor: string;
  /** Where it was done: `api`, `cli`, `dashboard`; `worker` for what the service did itself (a build the gate held, a ramp's steps and writes: R23). */
  via: 'api' | 'cli' | 'dashboard' | 'worker';
  /** JSON-able values before and after the change (a build: what was asked, and what came of it). */
  before: unknown;
  after: unknown;
}

export interface AuditRecord extends AuditEntry {
  id: string;
  /** ISO-8601, the writer's clock. */
  at: string;
}

interface StoredEntry {
  scope: string;
  at: Date;
  action: AuditAction;
  actor: string;
  via: AuditEntry['via'];
  /** JSON text: a value's keys are kept as sent (a `$` or `.` in a job's data is no field name here). */
  before: string;
  after: string;
}

export interface AuditTrail {
  /** Throws when the trail cannot be written now: asked first, so a change is refused rather than made unrecorded. */
  ready(): Promise<void>;
  /** Within `budget` when given (a request's: a frozen MongoDB does not hold its answer; a write cut so may still land). */
  record(entry: AuditEntry, budget?: MongoBudget): Promise<void>;
  /** The newest `count` entries, newest first, within `budget` (its time left closes the cursor too). */
  read(count?: number, budget?: MongoBudget): Promise<AuditRecord[]>;
}

const parseJson = (text: string | undefined): unknown => {
  try {
    return text === undefined ? null : JSON.parse(text);
  } catch {
    return text;
  }
};

/** The trail of the deployment whose keys start with `scope`; the collection is created capped at the first write. */
export function auditTrail(connection: Connection, scope: string): AuditTrail {
  let ready: Promise<void> | undefined;
  const ensure = () =>
    (ready ??= (async () => {
      try {
        await connection.createCollection(AUDIT_COLLECTION, { capped: true, size: AUDIT_TRAIL_BYTES, max: AUDIT_TRAIL_MAX });
      } catch (err) {
        if ((err as { code?: unknown }).code !== NAMESPACE_EXISTS) throw err;
      }
      await connection.collection(AUDIT_COLLECTION).createIndex({ scope: 1, at: -1 });
    })().catch((err: unknown) => {
      ready = undefined;
      throw err;
    }));
  const collection = () => connection.collection<StoredEntry>(AUDIT_COLLECTION);
  return {
    async ready() {
      await ensure();
      // ensure() is done once per process: this round trip is what tells MongoDB answers now.
      await collection().findOne({ scope }, { projection: { _id: 1 } });
    },
    async record(entry, budget) {
      const write = async (signal?: AbortSignal) => {
        await ensure();
        await collection().insertOne(
          { scope, at: new Date(), action: entry.action, actor: entry.actor, via: entry.via, before: JSON.stringify(entry.before ?? null), after: JSON.stringify(entry.after ?? null) },
          // The driver honours `signal` on every operation; its types list it on reads only.
          { signal } as mongo.InsertOneOptions,
        );
      };
      await (budget ? budget.run(write, 'audit trail write') : write());
    },
    async read(count = 50, budget = new MongoBudget(AUDIT_READ_MS)) {
      // No ensure(): a read (a GET, or a HEAD, of the audit) creates nothing; a missing collection reads as empty.
      const entries = await budget.run((signal) => collection().find({ scope }, { signal }).sort({ at: -1, _id: -1 }).limit(count).toArray(), 'audit trail read');
      return entries.map((entry) => ({
        id: entry._id.toHexString(),
        at: entry.at.toISOString(),
        action: entry.action,
        actor: entry.actor,
        via: entry.via,
        before: parseJson(entry.before),
        after: parseJson(entry.after),
      }));
    },
  };
}
