/**
 * Writes candidate ids to a Redis list or set in queue order, as 24-hex ids made batch by batch
 * from the columns' bytes: no second full copy of the ids is ever held.
 *
 * Each batch is one Buffer of hex digits, written straight from the columns, and one call of
 * lua/push-ids.lua, which splits it and RPUSHes (SADDs) the ids. Measured at 1M ids: about half
 * the time of one string argument per id (making, encoding and collecting a million strings cost
 * more than the Redis commands), and within 2x of a bare RPUSH of ready-made strings.
 */
import { ID_BYTES, type CandidateColumns } from '@feed/domain';
import { runScript, type Redis } from '@feed/storage';

/** Ids per script call: ~1 ms of Redis time, so other clients are never held up for long. */
const WRITE_BATCH = 5000;
/** Calls pipelined at once: enough to keep Redis busy while the next batch is made. */
const IN_FLIGHT = 8;

const HEX_BYTES = 2 * ID_BYTES;
/** ASCII of the two hex digits of each byte value: HEX_DIGITS[2b], HEX_DIGITS[2b + 1]. */
const HEX_DIGITS = Uint8Array.from({ length: 512 }, (_, i) => (i >> 1).toString(16).padStart(2, '0').charCodeAt(i & 1));

/** The hex digits of the ids at order[start, start + count), end to end. */
function packHexIds(bytes: Uint8Array, order: Uint32Array, start: number, count: number): Buffer {
  const packed = Buffer.allocUnsafe(count * HEX_BYTES);
  for (let i = 0; i < count; i++) {
    const from = order[start + i] * ID_BYTES;
    const to = i * HEX_BYTES;
    for (let k = 0; k < ID_BYTES; k++) {
      const digits = bytes[from + k] * 2;
      packed[to + 2 * k] = HEX_DIGITS[digits];
      packed[to + 2 * k + 1] = HEX_DIGITS[digits + 1];
    }
  }
  return packed;
}

export async function writeIds(redis: Redis, key: string, candidates: CandidateColumns, order: Uint32Array, command: 'RPUSH' | 'SADD', signal?: AbortSignal): Promise<void> {
  const pending: Promise<unknown>[] = [];
  for (let start = 0; start < order.length; start += WRITE_BATCH) {
    signal?.throwIfAborted();
    const packed = packHexIds(candidates.ids, order, start, Math.min(WRITE_BATCH, order.length - start));
    // Issued back to back on one connection: node-redis pipelines them and Redis applies them in order.
    pending.push(runScript(redis, 'push-ids', [key], [command, String(HEX_BYTES), packed]));
    if (pending.length >= IN_FLIGHT) await pending.shift();
  }
  await Promise.all(pending);
}
