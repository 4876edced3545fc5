/**
 * The V2 vs legacy readout (SPEC D7): each page and engagement counts for the variant the user's
 * rollout bucket gives (whatever strategy served), in Prometheus and in Redis's hourly tally (one
 * batch per instance every few seconds). An action counts once per first success (as R3) and at
 * most READOUT_CLIENT_HOURLY_CAP per client and hour. New guest devices and request health are
 * tallied beside for the ramp's judge (R23). Rules: docs/design.md, "Rollout and audit".
 */
import { logger } from '@feed/logger';
import { freshField, guestField, statsHour, unitsField, variantField, VIEWERS, type Deadline, type GuestSight, type ReadoutStore, type Variant, type VariantEvent, type VariantHealthEvent, VariantStatsNotWritten } from '@feed/storage';
import type { Identity } from '../http/identity';
import type { ApiMetrics } from '../metrics';

const FLUSH_EVERY_MS = 5_000;
/** A guest first seen this recently is tagged: the hourly hashes (and so any step's readout) reach back 48 h. */
const FRESH_FOR_MS = 48 * 3_600_000;

/** The variant serving a client and the rollout percent in force (the split asked for). */
export type Arm = { variant: Variant; percent: number };

export interface VariantReadoutOptions {
  /** Redis's admission and hourly tally (storage's `readoutStore`). */
  store: ReadoutStore;
  metrics: ApiMetrics;
  /** The variant that serves this user now (the feed's rollout in force), read within `deadline`. */
  variantOf: (identity: Identity, deadline: Deadline) => Promise<Arm>;
  /** When a guest device was first seen (its record), for the actions whose caller does not say. */
  firstSeenOf?: (identity: Identity) => Promise<Date | null>;
}

export class VariantReadout {
  private pending = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly o: VariantReadoutOptions) {
    this.timer = setInterval(() => void this.flush(), FLUSH_EVERY_MS).unref();
  }

  /** One action, unless a repeat on `vid` or past the client's hourly cap; without Redis (or past `deadline`) uncounted, never a failed or held-up request. */
  async record(identity: Identity, event: Exclude<VariantEvent, 'page'>, deadline: Deadline, vid?: string, sight?: GuestSight): Promise<void> {
    let arm: Arm;
    let admitted: number;
    let firstSeen: Date | null | undefined = sight?.firstSeen;
    const now = new Date();
    try {
      // The variant too: it reads the rollout, which a loaded Redis may answer past its deadline.
      arm = await this.o.variantOf(identity, deadline);
      const { variant } = arm;
      admitted = sight ? sight.admitted : await deadline.run(() => this.o.store.admit(identity.key, now, variant, event, vid), 'readout admission');
      const { firstSeenOf } = this.o;
      if (admitted > 0 && !sight && identity.deviceId !== undefined && firstSeenOf) firstSeen = await deadline.run(() => firstSeenOf(identity), 'guest first seen');
    } catch (err) {
      logger.warn('action not counted by the readout: Redis unavailable', { event, err: err instanceof Error ? err.message : String(err) });
      return;
    }
    if (admitted <= 0) return;
    this.count(arm.variant, event);
    if (identity.userId === undefined) this.add(guestField(arm.variant, event));
    if (firstSeen && now.getTime() - firstSeen.getTime() < FRESH_FOR_MS) this.add(freshField(arm.variant, event, statsHour(firstSeen)));
    if (admitted === 1 && event === 'view') {
      this.countHealth(arm.variant, VIEWERS);
      this.add(unitsField(arm.variant, arm.percent));
    }
  }

  /** A valid share: a user's when the service made its share record (`first`), a guest's once per video. */
  async recordShare(identity: Identity, vid: string, first: boolean, deadline: Deadline): Promise<void> {
    if (identity.userId === undefined || first) await this.record(identity, 'share', deadline, vid);
  }

  count(variant: Variant, event: VariantEvent): void {
    if (event === 'page') this.o.metrics.variantPages.inc({ variant });
    else this.o.metrics.variantEngagement.inc({ variant, action: event });
    this.add(variantField(variant, event));
  }

  private add(field: string): void {
    this.pending.set(field, (this.pending.get(field) ?? 0) + 1);
  }

  /** A request's health for R23's guards: Redis's tally only (Prometheus has service-wide figures). */
  countHealth(variant: Variant, event: VariantHealthEvent | typeof VIEWERS): void {
    this.add(variantField(variant, event));
  }

  /** Adds the counts so far to Redis's tally; kept for the next flush when Redis does not take them. */
  async flush(): Promise<void> {
    const batch = this.pending;
    if (batch.size === 0) return;
    this.pending = new Map();
    try {
      await this.o.store.add(new Date(), batch);
    } catch (err) {
      // Only what did not run is kept: an increment Redis ran (but no replica confirmed) must not be added twice.
      for (const [field, n] of err instanceof VariantStatsNotWritten ? err.left : batch) this.pending.set(field, (this.pending.get(field) ?? 0) + n);
      logger.warn('variant readout not written to Redis; kept for the next flush', { err: err instanceof Error ? err.message : String(err) });
    }
  }

  /** Stops the timer and writes what is left (shutdown). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
