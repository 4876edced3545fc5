/**
 * Writes candidate ids (and scores) to a build's staged keys in queue order: WRITE_BATCH values a
 * command, IN_FLIGHT pipelined, each batch made from the columns' bytes as sent. A batch's ids
 * are substrings of one hex string, kept by V8 as slices: no Buffer per id (docs/benchmarks.md).
 */
import { ID_BYTES, type CandidateColumns } from './candidate-columns';
import type { Append } from '@feed/storage';
import { InFlight } from './in-flight';

/** Ids per command: ~1 ms of Redis time, so other clients are never held up for long. */
const WRITE_BATCH = 5000;
/** Commands pipelined at once: enough to keep Redis busy while the next batch is made. */
const IN_FLIGHT = 8;

const HEX_BYTES = 2 * ID_BYTES;
/** An id is three 32-bit words: ids are gathered a word at a time (read once here: a re-exported constant is a getter). */
const ID_WORDS = ID_BYTES / 4;

/** The 24-hex ids at order[start, start + count), hex-encoded in one native call and cut into substrings. */
function hexIds(idWords: Uint32Array, order: Uint32Array, start: number, count: number): string[] {
  const gathered = new Uint32Array(count * ID_WORDS);
  for (let i = 0; i < count; i++) {
    const from = order[start + i] * ID_WORDS;
    const to = i * ID_WORDS;
    gathered[to] = idWords[from];
    gathered[to + 1] = idWords[from + 1];
    gathered[to + 2] = idWords[from + 2];
  }
  const digits = Buffer.from(gathered.buffer, 0, gathered.byteLength).toString('hex');
  const ids = new Array<string>(count);
  for (let i = 0; i < count; i++) ids[i] = digits.substring(i * HEX_BYTES, (i + 1) * HEX_BYTES);
  return ids;
}

export async function writeIds(append: Append, candidates: CandidateColumns, order: Uint32Array, signal?: AbortSignal): Promise<void> {
  // The columns own their id bytes from offset 0, so the word view is aligned.
  const idWords = new Uint32Array(candidates.ids.buffer, candidates.ids.byteOffset, candidates.ids.byteLength / 4);
  const writes = new InFlight(IN_FLIGHT);
  for (let start = 0; start < order.length; start += WRITE_BATCH) {
    signal?.throwIfAborted();
    const ids = hexIds(idWords, order, start, Math.min(WRITE_BATCH, order.length - start));
    // Issued back to back on one connection: node-redis pipelines them and Redis applies them in order.
    await writes.add(append(ids));
  }
  await writes.drain();
}

/** The build's scores in queue order beside the queue, for explain (number-to-string round-trips doubles exactly). */
export async function writeScores(append: Append, candidates: CandidateColumns, order: Uint32Array, signal?: AbortSignal): Promise<void> {
  const writes = new InFlight(IN_FLIGHT);
  for (let start = 0; start < order.length; start += WRITE_BATCH) {
    signal?.throwIfAborted();
    const count = Math.min(WRITE_BATCH, order.length - start);
    const scores = new Array<string>(count);
    for (let i = 0; i < count; i++) scores[i] = String(candidates.scores[order[start + i]]);
    await writes.add(append(scores));
  }
  await writes.drain();
}
