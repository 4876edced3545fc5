/**
 * Writes candidate ids to a Redis list or set in queue order, as 24-hex strings made batch by
 * batch from the columns' bytes: no full second copy of the ids is ever held.
 */
import { ID_BYTES, type CandidateColumns } from '@feed/domain';
import type { Redis } from '@feed/storage';

/** Ids per RPUSH/SADD command. */
const WRITE_BATCH = 5000;
/** Commands pipelined at once: enough to keep Redis busy, few enough to bound the memory of encoded commands. */
const IN_FLIGHT = 8;

export async function writeIds(redis: Redis, key: string, candidates: CandidateColumns, order: Uint32Array, command: 'rPush' | 'sAdd', signal?: AbortSignal): Promise<void> {
  const bytes = Buffer.from(candidates.ids.buffer, candidates.ids.byteOffset, candidates.length * ID_BYTES);
  const scratch = Buffer.allocUnsafe(WRITE_BATCH * ID_BYTES);
  const pending: Promise<unknown>[] = [];
  for (let start = 0; start < order.length; start += WRITE_BATCH) {
    signal?.throwIfAborted();
    const end = Math.min(order.length, start + WRITE_BATCH);
    for (let i = start; i < end; i++) bytes.copy(scratch, (i - start) * ID_BYTES, order[i] * ID_BYTES, (order[i] + 1) * ID_BYTES);
    // One hex conversion per batch, then 24-char slices of it.
    const hex = scratch.toString('hex', 0, (end - start) * ID_BYTES);
    const ids = new Array<string>(end - start);
    for (let i = 0; i < ids.length; i++) ids[i] = hex.substring(i * 2 * ID_BYTES, (i + 1) * 2 * ID_BYTES);
    // Issued back to back on one connection: node-redis pipelines them and Redis applies them in order.
    pending.push(redis[command](key, ids));
    if (pending.length >= IN_FLIGHT) await pending.shift();
  }
  await Promise.all(pending);
}
