/**
 * A lease in Redis: one holder, named by a random token (SET NX PX), renewed and released only by
 * it (Lua), so a dead holder's lapses within one term. The build lock and the controller (R10, R21).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { runScript } from './lua-scripts';
import type { Redis } from './redis-client';

/** How often a waiting holder looks whether the lease is free. */
export const LEASE_POLL_MS = 250;

export class Lease {
  readonly token = randomUUID();
  private heartbeat?: NodeJS.Timeout;

  constructor(private readonly redis: Redis, readonly key: string, private readonly termMs: number) {}

  /** Takes the lease when nobody holds it; whether we got it. */
  async acquire(): Promise<boolean> {
    return (await this.redis.set(this.key, this.token, { NX: true, PX: this.termMs })) === 'OK';
  }

  /** Takes the lease, or renews it when we hold it already: whether we hold it now. */
  async hold(): Promise<boolean> {
    return (await this.acquire()) || (await this.renew());
  }

  /** Starts a new term of ours; false when the lease lapsed or another holds it. */
  async renew(): Promise<boolean> {
    return (await runScript<number>(this.redis, 'extend-lock', [this.key], [this.token, String(this.termMs)])) === 1;
  }

  /** Renews every third of the term until `release`; `lost` hears each refused or failed renewal. */
  keepRenewing(lost: (err?: unknown) => void): void {
    this.heartbeat = setInterval(() => {
      this.renew().then((renewed) => renewed || lost(), lost);
    }, Math.max(100, Math.floor(this.termMs / 3)));
    this.heartbeat.unref();
  }

  /** Ends our term and the renewals; false when the lease had lapsed or is another's. */
  async release(): Promise<boolean> {
    clearInterval(this.heartbeat);
    return (await runScript<number>(this.redis, 'release-lock', [this.key], [this.token])) === 1;
  }

  /** What is left of the holder's term, in ms (0 when nobody holds it). */
  async remainingMs(): Promise<number> {
    return Math.max(0, await this.redis.pTTL(this.key));
  }

  /** Waits until nobody holds the lease (released, or lapsed with its holder), at most `maxWaitMs`; true when free. */
  async waitUntilFree(maxWaitMs: number, signal?: AbortSignal): Promise<boolean> {
    const started = performance.now();
    for (;;) {
      signal?.throwIfAborted();
      if ((await this.redis.exists(this.key)) === 0) return true;
      if (performance.now() - started >= maxWaitMs) return false;
      await sleep(LEASE_POLL_MS, undefined, { signal });
    }
  }
}
