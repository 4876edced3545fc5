/**
 * What the feed reads before every page: the versions to serve (`current`, and `previous` for
 * R17's fallback), their length, build id, buckets and expiry, and the rollout in force (R16's
 * override). Read outside the claim script (other cluster slots) and cached for CURRENT_CACHE_MS
 * (<= 5 s), so a switch, rebuild, vanished queue or kill switch reaches every instance within it.
 * When Redis misses a request's deadline the last known state serves (counted, logged).
 */
import { fnv1a32 } from '@feed/domain';
import { logger } from '@feed/logger';
import { resolveRollout, type Deadline, type RingVersion, type Rollout, type RolloutInForce, type VersionStore } from '@feed/storage';
import type { Identity } from '../http/identity';
import type { ApiMetrics } from '../metrics';
import type { Arm } from './variant-readout';

export interface FeedReadState {
  current: string | null;
  previous: string | null;
  /** The published rings of current and previous; null where the queue or meta is gone. */
  rings: Map<string, RingVersion | null>;
  rollout: RolloutInForce;
}

/** Whether the ring serves this user under the rollout in force (R16, D7's `ring` variant): FNV-1a of the identity key is its fixed bucket. */
export const servesRing = ({ rollout }: FeedReadState, identity: Identity): boolean => rollout.enabled && fnv1a32(identity.key) % 100 < rollout.percent;

export interface ReadStateOptions {
  versions: VersionStore;
  currentCacheMs: number;
  /** The environment's rollout, in force when no override is set or Redis cannot be read. */
  defaults: Rollout;
  metrics: ApiMetrics;
  /** After each read from Redis (the queue copies' preloads, the clock skew's measure). */
  onRefresh?: (readState: FeedReadState) => void;
}

export class FeedReadStateCache {
  private cached?: { value: FeedReadState; expiresAt: number }; // performance.now: a wall clock stepped back never keeps a switch out
  private inflight?: Promise<FeedReadState>;

  constructor(private readonly o: ReadStateOptions) {
    // Until Redis is first read, the environment's values are in force.
    this.showRollout(this.lastKnown());
  }

  private showRollout({ rollout }: FeedReadState): void {
    this.o.metrics.rolloutEnabled.set(rollout.enabled ? 1 : 0);
    this.o.metrics.rolloutPercent.set(rollout.percent);
  }

  /** A fresh read state, or the last known one when Redis does not answer within `deadline`. */
  async read(deadline: Deadline, requestId?: string): Promise<FeedReadState> {
    const cached = this.peek();
    if (cached) return cached;
    try {
      return await deadline.run(() => this.get(), 'feed read state');
    } catch (err) {
      // 'settings': the label's name from before the rename (a dashboard and alert contract).
      this.o.metrics.redisFailures.inc({ operation: 'settings' });
      logger.warn('feed read state unreadable, using the last known', { requestId, err: err instanceof Error ? err.message : String(err) });
      return this.lastKnown();
    }
  }

  /** The variant that serves this user under the rollout in force (D7), and its percent (the split asked for): read as a page request reads it. */
  async variantOf(identity: Identity, deadline: Deadline): Promise<Arm> {
    const readState = await this.read(deadline);
    const { enabled, percent } = readState.rollout;
    return { variant: servesRing(readState, identity) ? 'ring' : 'legacy', percent: enabled ? percent : 0 };
  }

  /** The cached read state while fresh, without waiting. */
  peek(now = performance.now()): FeedReadState | undefined {
    return this.cached && this.cached.expiresAt > now ? this.cached.value : undefined;
  }

  /** The last read state read, however old; with nothing read yet, the environment's rollout and no version. */
  lastKnown(): FeedReadState {
    return this.cached?.value ?? { current: null, previous: null, rings: new Map(), rollout: resolveRollout(this.o.defaults, {}) };
  }

  async get(now = performance.now()): Promise<FeedReadState> {
    const fresh = this.peek(now);
    if (fresh) return fresh;
    // Once per instance per expiry: the pointers and rollout, then the versions' meta and expiry.
    const { versions } = this.o;
    this.inflight ??= versions
      .pointers()
      .then(async ({ current, previous, override }) => {
        const named = [...new Set([current, previous].filter((v): v is string => Boolean(v)))];
        const rings = new Map(await Promise.all(named.map(async (v) => [v, await versions.ring(v)] as const)));
        const value = { current: current ?? null, previous: previous ?? null, rings, rollout: resolveRollout(this.o.defaults, override) };
        this.cached = { value, expiresAt: performance.now() + this.o.currentCacheMs };
        this.showRollout(value);
        this.o.onRefresh?.(value);
        return value;
      })
      .finally(() => {
        this.inflight = undefined;
      });
    return this.inflight;
  }

  /** Forget the cached read state (the version it names turned out to be gone, or on-call changed the rollout). */
  invalidate(): void {
    this.cached = undefined;
  }
}
