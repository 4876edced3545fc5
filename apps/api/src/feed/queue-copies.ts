/**
 * In-process copies of published queues (SPEC R22): a queue never changes, so each instance reads
 * it once per build and claims touch only the offset bucket. A copy loads in the background
 * (jittered, so instances do not all hit one master at the switch) and is used once verified
 * against the meta; until then positions come from Redis. At most `queueCopiesMax` within
 * `maxBytes`, LRU: today's, yesterday's (R17's fallback), one being replaced (docs/design.md, "Layout at scale").
 */
import { logger } from '@feed/logger';
import type { RingVersion, VersionStore } from '@feed/storage';

const ID_BYTES = 12;
const HEX_ID = /^[0-9a-f]{24}$/;
/** Ids per LRANGE while loading: ~1 ms of Redis time each, so other clients are never held up. */
const LOAD_CHUNK = 10_000;

interface QueueCopy {
  buildId: string;
  length: number;
  ids: Buffer;
}

/** Preloads of a new version or build spread over this long (R22): a few seconds of LRANGE path, at most. */
export const PRELOAD_JITTER_MS = 5_000;

/** Whether `a` and `b` describe the same published build of a version (a copy is of exactly one). */
const sameBuild = (a: Pick<RingVersion, 'buildId' | 'length'>, b: Pick<RingVersion, 'buildId' | 'length'>) => a.buildId === b.buildId && a.length === b.length;

export interface QueueCopiesOptions {
  versions: VersionStore;
  queueCopiesMax: number;
  /** Their share of API_MEMORY_BUDGET_MB (none: unbounded). */
  maxBytes?: number;
  /** After each copy is loaded and verified (`feed_queue_copy_loads_total`). */
  onLoaded?: (version: string, bytes: number) => void;
  jitterMs?: number;
  random?: () => number;
}

export class QueueCopies {
  private readonly copies = new Map<string, QueueCopy>();
  private readonly loading = new Map<string, Promise<void>>();
  private readonly scheduled = new Map<string, NodeJS.Timeout>();
  /** Builds too large for `maxBytes` (version/buildId). */
  private readonly oversized = new Set<string>();
  private readonly maxBytes: number;

  constructor(private readonly o: QueueCopiesOptions) {
    this.maxBytes = o.maxBytes ?? Infinity;
  }

  /** Schedules `ring`'s load within `jitterMs` unless held, loading or scheduled; until then LRANGE serves. */
  preload(ring: RingVersion): void {
    const held = this.copies.get(ring.version);
    if (held && sameBuild(held, ring)) return;
    const key = `${ring.version}/${ring.buildId}`;
    if (this.loading.has(key) || this.scheduled.has(key)) return;
    const timer = setTimeout(() => {
      this.scheduled.delete(key);
      void this.ensure(ring);
    }, Math.floor((this.o.random ?? Math.random)() * (this.o.jitterMs ?? PRELOAD_JITTER_MS)));
    // A pending preload never keeps a stopping process alive.
    timer.unref();
    this.scheduled.set(key, timer);
  }

  /** The ids at ring positions [start, start + count) from the copy of exactly this build, or undefined. */
  idsAt(ring: RingVersion, start: number, count: number): string[] | undefined {
    const copy = this.copies.get(ring.version);
    if (!copy || !sameBuild(copy, ring)) {
      // Normally scheduled already by the read-state refresh that named this ring.
      this.preload(ring);
      return undefined;
    }
    // Most recently used last: Map keeps insertion order.
    this.copies.delete(ring.version);
    this.copies.set(ring.version, copy);
    const ids = new Array<string>(Math.min(count, ring.length));
    for (let i = 0; i < ids.length; i++) {
      const at = ((start + i) % ring.length) * ID_BYTES;
      ids[i] = copy.ids.toString('hex', at, at + ID_BYTES);
    }
    return ids;
  }

  /** Whether pages of `ring` are served at full speed: its copy is held, or it is too large ever to be copied. */
  ready(ring: RingVersion): boolean {
    const held = this.copies.get(ring.version);
    return (held !== undefined && sameBuild(held, ring)) || ring.length * ID_BYTES > this.maxBytes;
  }

  /** Bytes held by the copies (the memory bench, and `feed_queue_copy_bytes`). */
  bytes(): number {
    let total = 0;
    for (const copy of this.copies.values()) total += copy.ids.byteLength;
    return total;
  }

  /** Starts loading `ring`'s copy unless it is held or being loaded; resolves when it is ready or refused. */
  ensure(ring: RingVersion): Promise<void> {
    const held = this.copies.get(ring.version);
    if (held && sameBuild(held, ring)) return Promise.resolve();
    const key = `${ring.version}/${ring.buildId}`;
    if (ring.length * ID_BYTES > this.maxBytes) {
      // Said once per build, not on every request that finds no copy.
      if (!this.oversized.has(key)) {
        if (this.oversized.size >= 16) this.oversized.clear();
        this.oversized.add(key);
        logger.warn('queue larger than the copies\' memory share; reading positions from Redis', { version: ring.version, bytes: ring.length * ID_BYTES, maxBytes: this.maxBytes });
      }
      return Promise.resolve();
    }
    let loading = this.loading.get(key);
    if (!loading) {
      const started = this.load(ring)
        .catch((err: unknown) => {
          logger.warn('queue copy not loaded; reading positions from Redis meanwhile', { version: ring.version, err: err instanceof Error ? err.message : String(err) });
        })
        .finally(() => this.loading.delete(key));
      this.loading.set(key, started);
      loading = started;
    }
    return loading;
  }

  private async load(ring: RingVersion): Promise<void> {
    const ids = Buffer.alloc(ring.length * ID_BYTES);
    for (let start = 0; start < ring.length; start += LOAD_CHUNK) {
      const count = Math.min(LOAD_CHUNK, ring.length - start);
      const chunk = await this.o.versions.readQueueRange(ring.version, ring.length, start, count);
      if (chunk.length !== count) throw new Error(`queue ${ring.version} is shorter than meta.length ${ring.length}`);
      chunk.forEach((id, i) => {
        if (!HEX_ID.test(id)) throw new Error(`queue ${ring.version} holds "${id}" at ${start + i}, not a 24-hex id`);
        ids.write(id, (start + i) * ID_BYTES, ID_BYTES, 'hex');
      });
    }
    const after = await this.o.versions.completeness(ring.version);
    if (!after.complete) throw new Error(`queue ${ring.version} is not complete: ${after.problem}`);
    if (!sameBuild(after, ring)) throw new Error(`queue ${ring.version} was rebuilt while being copied`);
    this.copies.delete(ring.version);
    this.copies.set(ring.version, { buildId: ring.buildId, length: ring.length, ids });
    while (this.copies.size > this.o.queueCopiesMax || this.bytes() > this.maxBytes) this.copies.delete(this.copies.keys().next().value!);
    this.o.onLoaded?.(ring.version, ids.byteLength);
  }
}
