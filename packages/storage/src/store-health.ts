/**
 * What a deployable knows of its stores (SPEC R17). Probes are bounded and shared. A store is
 * `failing` only after FAILING_AFTER_MS of failed probes, so a shared store's moment of slowness
 * does not take the fleet out of rotation. A scrape probes SCRAPE_WAIT_MS at most.
 */
import type { Connection } from 'mongoose';
import { withDeadline } from './deadline';
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';

export const STORES = ['redis', 'mongo'] as const;
export type Store = (typeof STORES)[number];
/** How long a store must fail every probe before readiness acts on it. */
export const FAILING_AFTER_MS = 3_000;
/** Longest a scrape waits for a probe: a store that has not answered by then is reported down. */
export const SCRAPE_WAIT_MS = 250;

type Probed = { up: boolean; at: number; failingSince?: number };
export type StoreStates = Record<Store, 'ok' | 'down'> & { failing: Store[] };

export class StoreHealth {
  private readonly probed = new Map<Store, Probed>();
  private probing?: Promise<void>;

  constructor(
    /** Each store's bounded probe. */
    private readonly probes: Record<Store, () => Promise<'ok' | 'down'>>,
    private readonly failingAfterMs = FAILING_AFTER_MS,
  ) {}

  /** Probes both stores (one probe for concurrent asks): each one's last answer, and those failing for FAILING_AFTER_MS. */
  async probe(): Promise<StoreStates> {
    await (this.probing ??= this.probeAll().finally(() => (this.probing = undefined)));
    const states = Object.fromEntries(STORES.map((store) => [store, this.probed.get(store)?.up ? 'ok' : 'down'])) as Record<Store, 'ok' | 'down'>;
    const failing = STORES.filter((store) => {
      const { at, failingSince } = this.probed.get(store)!;
      return failingSince !== undefined && at - failingSince >= this.failingAfterMs;
    });
    return { ...states, failing };
  }

  /** 1 per store that answered a probe within this scrape's SCRAPE_WAIT_MS (one in flight is joined), else 0. */
  async upForScrape(): Promise<Record<Store, number>> {
    const started = performance.now();
    await withDeadline(this.probe(), SCRAPE_WAIT_MS, 'store probe for a scrape').catch(() => undefined);
    const answered = (probed?: Probed) => probed !== undefined && probed.at >= started && probed.up;
    return Object.fromEntries(STORES.map((store) => [store, answered(this.probed.get(store)) ? 1 : 0])) as Record<Store, number>;
  }

  private async probeAll(): Promise<void> {
    const started = performance.now();
    await Promise.all(
      STORES.map(async (store) => {
        const up = (await this.probes[store]()) === 'ok';
        this.probed.set(store, { up, at: performance.now(), failingSince: up ? undefined : (this.probed.get(store)?.failingSince ?? started) });
      }),
    );
  }
}

/** `ok` when `call` settles within `ms`, else `down`. */
const probeStore = (store: Store, call: () => Promise<unknown>, ms: number) =>
  withDeadline(Promise.resolve().then(call), ms, `${store} probe`).then(() => 'ok' as const, () => 'down' as const);

/** The probes of the service's stores: a keyed Redis read (it routes on a cluster, PING does not) and a MongoDB ping. */
export function storeHealth(stores: { redis: Redis; keys: RedisKeys; mongo: Connection }, probeMs: Record<Store, number>, failingAfterMs?: number): StoreHealth {
  return new StoreHealth(
    {
      redis: () => probeStore('redis', () => stores.redis.get(stores.keys.current), probeMs.redis),
      // The signal closes a ping's socket on a frozen server: probes do not pile up in the pool.
      mongo: () => probeStore('mongo', () => stores.mongo.db!.command({ ping: 1 }, { signal: AbortSignal.timeout(probeMs.mongo) }), probeMs.mongo),
    },
    failingAfterMs,
  );
}
