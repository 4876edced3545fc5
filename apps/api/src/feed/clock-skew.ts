/**
 * How far this host's clock is from Redis's (SPEC R11): measured, exported, alerted on, used for
 * nothing else (no read-path decision compares two clocks). One measure: Redis's TIME minus the
 * midpoint of the local send and receive, accurate to half the round trip.
 */
import type { Gauge } from 'prom-client';
import { logger } from '@feed/logger';
import { withDeadline } from '@feed/storage';

/** How often an instance measures, at most: skew moves slowly, a step (a resumed VM) shows within this. */
export const SKEW_MEASURE_EVERY_MS = 15_000;
const MEASURE_DEADLINE_MS = 1_000;
/** Past this (seconds) a measure is logged too: the alert fires on the gauge. */
const SKEW_WARN_SECONDS = 2;

export class ClockSkewProbe {
  private lastMeasuredAt = -Infinity;
  private measuring?: Promise<number | null>;

  constructor(
    /** Redis's clock in ms (storage's `redisClockMs`). */
    private readonly redisClockMs: () => Promise<number>,
    private readonly gauge: Gauge,
  ) {}

  /** Redis's clock minus ours, in seconds; null when Redis did not answer. */
  async measure(): Promise<number | null> {
    const sentAt = Date.now();
    const started = performance.now();
    try {
      const redisMs = await withDeadline(this.redisClockMs(), MEASURE_DEADLINE_MS, 'redis time');
      const roundTrip = performance.now() - started;
      const skew = (redisMs - (sentAt + roundTrip / 2)) / 1000;
      this.gauge.set(skew);
      if (Math.abs(skew) > SKEW_WARN_SECONDS) logger.warn('host clock differs from redis', { skewSeconds: Number(skew.toFixed(3)), roundTripMs: Math.round(roundTrip) });
      return skew;
    } catch {
      // Redis failing is counted where the feed meets it; the gauge keeps its last measure.
      return null;
    }
  }

  /** Measures in the background unless one was made within SKEW_MEASURE_EVERY_MS (called at each read-state refresh). */
  maybeMeasure(): void {
    const now = performance.now();
    if (this.measuring || now - this.lastMeasuredAt < SKEW_MEASURE_EVERY_MS) return;
    this.lastMeasuredAt = now;
    this.measuring = this.measure().finally(() => {
      this.measuring = undefined;
    });
  }
}
