/**
 * Guests reading feed pages from a running API while a test does something to its stores: what
 * each page was (ring version or not), every failed answer, every position served twice. And
 * `sampleReadiness`: what /readyz said every 0.5 s meanwhile, for the test's log.
 */
import { randomBytes } from 'node:crypto';

export interface Page {
  /** performance.now() when the answer arrived. */
  at: number;
  device: string;
  /** The page's queueVersion: a YYYYMMDD when the ring served it. */
  version: string;
  vids: string[];
}

export interface Reading {
  pages: Page[];
  /** Every 5xx or failed request, as status or error text. */
  errors: string[];
  /** Videos a device was served twice by one ring version (R11: each position once until the wrap). */
  servedTwice: number;
}

export interface ReadOptions {
  clients: number;
  /** Pages per client; absent: until `until` says stop. */
  pages?: number;
  until?: () => Promise<boolean> | boolean;
  /** Hard bound of the whole reading (default 120 s). */
  maxMs?: number;
  /** A video served again after this many others is the ring's wrap, not a position twice (default: never). */
  wrapAfter?: number;
}

export async function readThrough(api: string, options: ReadOptions): Promise<Reading> {
  const pages: Page[] = [];
  const errors: string[] = [];
  const stopAt = performance.now() + (options.maxMs ?? 120_000);
  const client = async () => {
    const device = `reader-${randomBytes(4).toString('hex')}`;
    for (let n = 0; n < (options.pages ?? Infinity) && performance.now() < stopAt && !(await options.until?.()); n++) {
      try {
        const res = await fetch(`${api}/api/app/recommend/vid/list?pageSize=3`, { headers: { 'X-Device-Id': device } });
        if (res.status >= 500) errors.push(`${res.status} ${await res.text()}`);
        else {
          const body = (await res.json()) as { queueVersion: string; vInfos: Array<{ vid: string }> };
          pages.push({ at: performance.now(), device, version: body.queueVersion, vids: body.vInfos.map((v) => v.vid) });
        }
      } catch (err) {
        errors.push(String(err));
      }
    }
  };
  await Promise.all(Array.from({ length: options.clients }, client));
  // When each device was last served each video of a ring version, counted in videos served to it.
  const lastServed = new Map<string, number>();
  const servedTo = new Map<string, number>();
  let servedTwice = 0;
  for (const page of pages.filter((p) => /^\d{8}$/.test(p.version))) {
    for (const vid of page.vids) {
      const n = (servedTo.get(page.device) ?? 0) + 1;
      servedTo.set(page.device, n);
      const key = `${page.device} ${page.version} ${vid}`;
      const before = lastServed.get(key);
      if (before !== undefined && n - before < (options.wrapAfter ?? Infinity)) servedTwice++;
      lastServed.set(key, n);
    }
  }
  return { pages, errors, servedTwice };
}

/**
 * Asks each deployable's /readyz every `everyMs` (1 s timeout) until `stop` (at most `maxMs`), which resolves with
 * one line per deployable: its answers in runs, e.g. `api 200 ready redis=ok x4, 200 degraded redis=down x3`.
 */
export function sampleReadiness(bases: Record<string, string>, everyMs = 500, maxMs = 180_000): { stop(): Promise<string> } {
  const seen = new Map<string, Array<{ said: string; times: number }>>(Object.keys(bases).map((name) => [name, []]));
  let stopped = false;
  const ask = async (base: string) => {
    try {
      const res = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(1_000) });
      const body = (await res.json()) as Record<string, string>;
      return `${res.status} ${body.status} redis=${body.redis} mongo=${body.mongo}`;
    } catch (err) {
      return (err as Error).name === 'TimeoutError' ? 'no answer in 1 s' : `error ${String((err as { cause?: { code?: string } }).cause?.code ?? err)}`;
    }
  };
  const sampling = (async () => {
    for (const end = performance.now() + maxMs; !stopped && performance.now() < end; ) {
      const started = performance.now();
      const said = await Promise.all(Object.values(bases).map(ask));
      for (const [i, name] of Object.keys(bases).entries()) {
        const runs = seen.get(name)!;
        if (runs.at(-1)?.said === said[i]) runs.at(-1)!.times++;
        else runs.push({ said: said[i], times: 1 });
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, everyMs - (performance.now() - started))));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await sampling;
      return [...seen].map(([name, runs]) => `/readyz ${name} every ${everyMs} ms: ${runs.map((r) => `${r.said} x${r.times}`).join(', ')}`).join('\n');
    },
  };
}
