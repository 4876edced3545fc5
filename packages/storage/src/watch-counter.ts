/** Free watches (SPEC R15): a per-user, per-business-day SET of watched ids in Redis; a video counts once a day. */
import { versionFor } from '@feed/domain';
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';

const KEEP_SECONDS = 2 * 24 * 3600;

export interface WatchCount {
  watchCount: number;
  totalWatchCount: number;
}

export class WatchCounter {
  constructor(private readonly redis: Redis, private readonly keys: RedisKeys, private readonly totalWatch: number, private readonly timeZone: string) {}

  private key(userKey: string, now: Date): string {
    return this.keys.watches(userKey, versionFor(now, this.timeZone));
  }

  async count(userKey: string, now = new Date()): Promise<WatchCount> {
    const used = await this.redis.sCard(this.key(userKey, now));
    return { watchCount: Math.max(0, this.totalWatch - used), totalWatchCount: this.totalWatch };
  }

  /** Registers today's watch; past the free watches it is removed (a made-up device cannot store the catalogue), count 0. */
  async register(userKey: string, videoId: string, now = new Date()): Promise<WatchCount> {
    const key = this.key(userKey, now);
    // Pipelined on one connection, so SCARD sees the SADD; no transaction is needed for a count.
    const [added, , used] = await Promise.all([this.redis.sAdd(key, videoId), this.redis.expire(key, KEEP_SECONDS), this.redis.sCard(key)]);
    if (Number(added) > 0 && Number(used) > this.totalWatch) await this.redis.sRem(key, videoId);
    return { watchCount: Math.max(0, this.totalWatch - Number(used)), totalWatchCount: this.totalWatch };
  }
}
