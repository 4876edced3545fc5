/**
 * The build's candidates in typed-array columns, not an object and a string per video: 12-byte
 * ids, scores, review times and last written score, ~36 bytes a video. A candidate is its index.
 * The domain's rules see it through `PoolCandidates`.
 */
import type { PoolCandidates } from '@feed/domain';

export const ID_BYTES = 12;

/** One candidate as an object: for tests, fixtures and small inputs. */
export interface Candidate {
  /** 24-hex ObjectId string: byte order is string order. */
  id: string;
  score: number;
  /** Epoch milliseconds of approval; null when unknown (never "new"). */
  reviewAt: number | null;
  /** The recommendScore last written back to the document; null when never written (R2). */
  storedScore?: number | null;
}

export class CandidateColumns implements PoolCandidates {
  length = 0;
  ids: Uint8Array;
  scores: Float64Array;
  /** Epoch milliseconds; -Infinity when unknown, so it sorts last and is never new. */
  reviewAt: Float64Array;
  /** NaN when never written back, so it differs from every score. */
  storedScores: Float64Array;

  /** @param capacity expected count (e.g. from a count query); the columns grow past it if needed. */
  constructor(capacity = 1024) {
    const size = Math.max(1, capacity);
    this.ids = new Uint8Array(size * ID_BYTES);
    this.scores = new Float64Array(size);
    this.reviewAt = new Float64Array(size);
    this.storedScores = new Float64Array(size);
  }

  static from(candidates: readonly Candidate[]): CandidateColumns {
    const columns = new CandidateColumns(candidates.length);
    for (const c of candidates) columns.push(hexToBytes(c.id), c.score, c.reviewAt, c.storedScore ?? null);
    return columns;
  }

  /** Appends a candidate, its 12 id bytes read from `id` at `idOffset` (no view per video); returns its index. */
  push(id: ArrayLike<number>, score: number, reviewAt: number | null, storedScore: number | null, idOffset = 0): number {
    if (this.length === this.scores.length) this.grow();
    const i = this.length++;
    for (let k = 0; k < ID_BYTES; k++) this.ids[i * ID_BYTES + k] = id[idOffset + k];
    this.scores[i] = score;
    this.reviewAt[i] = reviewAt ?? -Infinity;
    this.storedScores[i] = storedScore ?? NaN;
    return i;
  }

  idHex(i: number): string {
    return Buffer.from(this.ids.buffer, this.ids.byteOffset + i * ID_BYTES, ID_BYTES).toString('hex');
  }

  /** Byte order of the ids, i.e. ObjectId order: negative when a sorts before b. */
  compareIds(a: number, b: number): number {
    const ids = this.ids;
    for (let k = 0; k < ID_BYTES; k++) {
      const d = ids[a * ID_BYTES + k] - ids[b * ID_BYTES + k];
      if (d !== 0) return d;
    }
    return 0;
  }

  /** Candidates whose score differs from the one last written back (or never written): R2's delta. */
  changedScores(): Uint32Array {
    let count = 0;
    for (let i = 0; i < this.length; i++) if (this.scores[i] !== this.storedScores[i]) count++;
    const changed = new Uint32Array(count);
    for (let i = 0, n = 0; i < this.length; i++) if (this.scores[i] !== this.storedScores[i]) changed[n++] = i;
    return changed;
  }

  /** Number of candidates whose id occurs earlier too (0 for a valid read). */
  countDuplicateIds(): number {
    // Open addressing on the ids' last 4 bytes (they vary most); the table holds index + 1, 0 empty.
    let size = 1;
    while (size < this.length * 2) size <<= 1;
    const table = new Uint32Array(size);
    const ids = this.ids;
    let duplicates = 0;
    for (let i = 0; i < this.length; i++) {
      const o = i * ID_BYTES + 8;
      let slot = Math.imul((ids[o] << 24) | (ids[o + 1] << 16) | (ids[o + 2] << 8) | ids[o + 3], 0x9e3779b1) >>> 0;
      for (;;) {
        slot &= size - 1;
        const other = table[slot];
        if (other === 0) {
          table[slot] = i + 1;
          break;
        }
        if (this.compareIds(other - 1, i) === 0) {
          duplicates++;
          break;
        }
        slot++;
      }
    }
    return duplicates;
  }

  private grow(): void {
    const capacity = this.scores.length * 2;
    const ids = new Uint8Array(capacity * ID_BYTES);
    ids.set(this.ids);
    this.ids = ids;
    this.scores = resized(this.scores, capacity);
    this.reviewAt = resized(this.reviewAt, capacity);
    this.storedScores = resized(this.storedScores, capacity);
  }
}

function resized(column: Float64Array, capacity: number): Float64Array {
  const next = new Float64Array(capacity);
  next.set(column);
  return next;
}

function hexToBytes(hex: string): Buffer {
  if (!/^[0-9a-f]{24}$/i.test(hex)) throw new Error(`not a 24-hex ObjectId: ${hex}`);
  return Buffer.from(hex, 'hex');
}
