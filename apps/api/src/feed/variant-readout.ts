/**
 * The V2 vs legacy readout (SPEC D7): each page served and each engagement is counted for the
 * variant the user's rollout bucket gives them at that moment (`ring` or `legacy`, whatever
 * strategy actually served: a degraded ring user stays `ring`), in Prometheus counters and in
 * Redis's hourly tally. Redis gets one batch per instance every few seconds, not a write per
 * event; a crash loses at most that batch, which a rate over a day does not notice.
 *
 * An action counts once per first success, as R3 counts it: the callers record a like or collect
 * only when the service made the user's record (a toggled like is one like), a comment only when
 * its Idempotency-Key is new, a user's share only when it made the share record; a guest has no
 * record, so a guest's share counts once per guest and video by a marker in Redis.
 *
 * Beside engagement, each feed request's health is tallied per variant (`countHealth`): answered,
 * 5xx, degraded, empty; the worker's ramp judges a step on them (R23).
 */
import { logger } from '@feed/logger';
import { addVariantStats, variantField, type Redis, type RedisKeys, type Variant, type VariantEvent, type VariantHealthEvent } from '@feed/storage';
import type { Identity } from '../http/identity';
import type { ApiMetrics } from '../metrics';

const FLUSH_EVERY_MS = 5_000;
/** How long a guest's counted share is remembered: longer than any rollout step is judged over. */
const GUEST_SHARE_TTL_S = 30 * 24 * 3600;

export class VariantReadout {
  private pending = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly metrics: ApiMetrics,
    /** The variant that serves this user now (the feed's rollout in force). */
    private readonly variantOf: (identity: Identity) => Promise<Variant>,
  ) {
    this.timer = setInterval(() => void this.flush(), FLUSH_EVERY_MS).unref();
  }

  async record(identity: Identity, event: VariantEvent): Promise<void> {
    this.count(await this.variantOf(identity), event);
  }

  /**
   * A valid share: counted when it is the identity's first of the video (`first` from the
   * service for a user; the Redis marker for a guest). Without Redis a guest's share goes
   * uncounted rather than failing the share.
   */
  async recordShare(identity: Identity, vid: string, first: boolean): Promise<void> {
    if (identity.userId === undefined) {
      try {
        first = (await this.redis.set(this.keys.guestShareCounted(identity.key, vid), '1', { NX: true, EX: GUEST_SHARE_TTL_S })) === 'OK';
      } catch (err) {
        logger.warn('guest share not counted by the readout: Redis unavailable', { err: err instanceof Error ? err.message : String(err) });
        return;
      }
    }
    if (first) await this.record(identity, 'share');
  }

  count(variant: Variant, event: VariantEvent): void {
    if (event === 'page') this.metrics.variantPages.inc({ variant });
    else this.metrics.variantEngagement.inc({ variant, action: event });
    const field = variantField(variant, event);
    this.pending.set(field, (this.pending.get(field) ?? 0) + 1);
  }

  /**
   * A feed request's health for the variant (R23's operational guards): Redis's tally only, in the
   * same batches; Prometheus has the service-wide figures already (feed_pages_total and others).
   */
  countHealth(variant: Variant, event: VariantHealthEvent): void {
    const field = variantField(variant, event);
    this.pending.set(field, (this.pending.get(field) ?? 0) + 1);
  }

  /** Adds the counts so far to Redis's tally; kept for the next flush when Redis does not take them. */
  async flush(): Promise<void> {
    const batch = this.pending;
    if (batch.size === 0) return;
    this.pending = new Map();
    try {
      await addVariantStats(this.redis, this.keys, new Date(), batch);
    } catch (err) {
      for (const [field, n] of batch) this.pending.set(field, (this.pending.get(field) ?? 0) + n);
      logger.warn('variant readout not written to Redis; kept for the next flush', { err: err instanceof Error ? err.message : String(err) });
    }
  }

  /** Stops the timer and writes what is left (shutdown). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
