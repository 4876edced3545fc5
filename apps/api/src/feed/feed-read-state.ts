/**
 * What the feed reads before every page: which version to serve (`current`, and `previous` for
 * R17's first fallback), what those versions are (length, build id, offset buckets, expiry: their
 * meta and queue), and the rollout in force (R16's run-time override over the environment).
 * They are read outside the claim script — on Redis Cluster they live in other slots than the
 * offsets — and cached in process for CURRENT_CACHE_MS (<= 5 s), so a version switch, a forced
 * rebuild, a vanished queue or a kill switch reaches every instance within that time.
 */
import { readRingVersion, readRolloutOverride, resolveRollout, type Redis, type RedisKeys, type RingVersion, type Rollout, type RolloutInForce } from '@feed/storage';

export interface FeedReadState {
  current: string | null;
  previous: string | null;
  /** The published rings of current and previous; null where the queue or meta is gone. */
  rings: Map<string, RingVersion | null>;
  rollout: RolloutInForce;
}

export class FeedReadStateCache {
  private cached?: { value: FeedReadState; expiresAt: number };
  private inflight?: Promise<FeedReadState>;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly ttlMs: number,
    /** The environment's rollout, in force when no override is set or Redis cannot be read. */
    private readonly defaults: Rollout,
    private readonly onRefresh: (readState: FeedReadState) => void = () => undefined,
  ) {}

  /** The cached read state while fresh, without waiting. */
  peek(now = Date.now()): FeedReadState | undefined {
    return this.cached && this.cached.expiresAt > now ? this.cached.value : undefined;
  }

  /** The last read state read, however old; with nothing read yet, the environment's rollout and no version. */
  lastKnown(): FeedReadState {
    return this.cached?.value ?? { current: null, previous: null, rings: new Map(), rollout: resolveRollout(this.defaults, {}) };
  }

  async get(now = Date.now()): Promise<FeedReadState> {
    const fresh = this.peek(now);
    if (fresh) return fresh;
    // Once per instance per expiry, however many requests arrive meanwhile: two round trips in
    // sequence (the pointers and the rollout, then the named versions' meta and queue expiry).
    this.inflight ??= Promise.all([this.redis.get(this.keys.current), this.redis.get(this.keys.previous), readRolloutOverride(this.redis, this.keys)])
      .then(async ([current, previous, override]) => {
        const versions = [...new Set([current, previous].filter((v): v is string => Boolean(v)))];
        const rings = new Map(await Promise.all(versions.map(async (v) => [v, await readRingVersion(this.redis, this.keys, v)] as const)));
        const value = { current: current ?? null, previous: previous ?? null, rings, rollout: resolveRollout(this.defaults, override) };
        this.cached = { value, expiresAt: Date.now() + this.ttlMs };
        this.onRefresh(value);
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
