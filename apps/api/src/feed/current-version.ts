/**
 * Which version to serve. `current` (and `previous`, R17's first fallback) are read outside the
 * ring script — on Redis Cluster they live in another slot than the version's keys — and cached
 * in process for CURRENT_CACHE_MS (<= 5 s), so a switch reaches every instance within that time.
 */
import type { Redis, RedisKeys } from '@feed/storage';

export interface VersionPointers {
  current: string | null;
  previous: string | null;
}

export class CurrentVersionCache {
  private cached?: { value: VersionPointers; expiresAt: number };
  private inflight?: Promise<VersionPointers>;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly ttlMs: number,
  ) {}

  /** The cached pointers while fresh, without waiting. */
  peek(now = Date.now()): VersionPointers | undefined {
    return this.cached && this.cached.expiresAt > now ? this.cached.value : undefined;
  }

  async get(now = Date.now()): Promise<VersionPointers> {
    const fresh = this.peek(now);
    if (fresh) return fresh;
    // One Redis read per instance per expiry, however many requests arrive meanwhile.
    this.inflight ??= Promise.all([this.redis.get(this.keys.current), this.redis.get(this.keys.previous)])
      .then(([current, previous]) => {
        const value = { current: current ?? null, previous: previous ?? null };
        this.cached = { value, expiresAt: Date.now() + this.ttlMs };
        return value;
      })
      .finally(() => {
        this.inflight = undefined;
      });
    return this.inflight;
  }

  /** Forget the cached pointers (the version they name turned out to be gone). */
  invalidate(): void {
    this.cached = undefined;
  }
}
