/**
 * The scan of a ring (SPEC R11), for the feed (which claims) and explain (which peeks): positions
 * come from a `Positions`, ids from `RingReader.idsAt` (the verified in-process copy, else LRANGE).
 * `scanRing` takes positions until the page is full or a whole circle was scanned, judging each
 * with candidate-verdict.ts; skipped positions count as scanned. feed-service.ts assembles the page.
 */
import type { Deadline, MongoBudget, RingVersion, VersionStore } from '@feed/storage';
import type { Identity } from '../http/identity';
import type { UserFilter } from '@feed/storage';
import { judgeCandidate, type Verdict } from './candidate-verdict';
import type { QueueCopies } from './queue-copies';
import type { CatalogVideo, VideoCatalog } from './video-catalog';

export class RingReader {
  constructor(
    private readonly versions: VersionStore,
    /** Absent: every read goes to Redis (the CLI's one-off explain). */
    readonly copies?: QueueCopies,
  ) {}

  /** The ids at positions [start, start + count) of `ring`, wrapping at its length. */
  async idsAt(ring: RingVersion, start: number, count: number): Promise<string[]> {
    return this.copies?.idsAt(ring, start, count) ?? this.versions.readQueueRange(ring.version, ring.length, start, count);
  }

  /** The positions from `offset` on, read without claiming them (explain, HEAD), each read within `deadline` when given. */
  peekFrom(ring: RingVersion, offset: number, deadline?: Deadline): Positions {
    const read = (start: number, count: number) => this.idsAt(ring, start, count);
    return { take: async (count, scanned) => ({ start: offset + scanned, ids: await (deadline ? deadline.run(() => read(offset + scanned, count), 'queue read') : read(offset + scanned, count)) }) };
  }
}

/** Where a scan's positions come from: the next `count`, `scanned` past where the scan began; null to stop early. */
export interface Positions {
  take(count: number, scanned: number): Promise<TakenPositions | null>;
}

/** Positions taken by one step of the scan: the first one's index and the ids from there. */
export interface TakenPositions {
  start: number;
  ids: string[];
}

export interface ScannedCandidate {
  position: number;
  vid: string;
  video: CatalogVideo | undefined;
  verdict: Verdict;
}

export interface ScanRequest {
  ring: RingVersion;
  identity: Identity;
  pageSize: number;
  catalog: VideoCatalog;
  filter: Promise<UserFilter>;
  /** The request's MongoDB budget for the video look-ups. */
  budget: MongoBudget;
  positions: Positions;
}

/** Scans `ring` as the feed serves it; every candidate in ring order, with its verdict. */
export async function scanRing({ ring, identity, pageSize, catalog, filter, budget, positions }: ScanRequest): Promise<ScannedCandidate[]> {
  const candidates: ScannedCandidate[] = [];
  const inPage = new Set<string>();
  let served = 0;
  for (let scanned = 0; served < pageSize && scanned < ring.length; ) {
    const taken = await positions.take(Math.min(pageSize - served, ring.length - scanned), scanned);
    if (!taken || taken.ids.length === 0) break;
    const [videos, userFilter] = await Promise.all([catalog.load(taken.ids, budget), filter]);
    taken.ids.forEach((vid, i) => {
      const video = videos.get(vid);
      const verdict = judgeCandidate(vid, video, userFilter, identity, inPage);
      if (verdict === 'serve') {
        inPage.add(vid);
        served++;
      }
      candidates.push({ position: (taken.start + i) % ring.length, vid, video, verdict });
    });
    scanned += taken.ids.length;
  }
  return candidates;
}
