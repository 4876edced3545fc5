/** SPEC R9: the queue, assembled block by block from the two pools. */
import { seededRandom, shuffleInPlace } from './shuffle';

export const BLOCK_SIZE = 20;
export const NEW_PER_BLOCK = 3;

export interface BlockComposition {
  high: number;
  fresh: number;
}

/** Consecutive blocks of the same composition, for meta and inspection. */
export interface BlockRun extends BlockComposition {
  count: number;
}

export interface AssembledQueue<Ids> {
  ids: Ids;
  blocks: BlockComposition[];
}

/**
 * Each block takes up to 3 new videos and fills to 20 from the high pool (new ones fill when it
 * runs out). Every id appears once, nothing pads, only the last block may be short. Each block is
 * shuffled with a PRNG seeded by version and block index. The build passes indices, so no id is
 * copied.
 *
 * @param high high pool in serving order (R8)
 * @param fresh new pool in serving order (R7)
 * @param version the version (YYYYMMDD) that seeds the shuffle
 */
export function assembleQueue(high: Uint32Array, fresh: Uint32Array, version: string): AssembledQueue<Uint32Array>;
export function assembleQueue(high: readonly string[], fresh: readonly string[], version: string): AssembledQueue<string[]>;
export function assembleQueue<T>(high: ArrayLike<T>, fresh: ArrayLike<T>, version: string): AssembledQueue<Uint32Array | T[]> {
  const total = high.length + fresh.length;
  const ids: { [i: number]: unknown; length: number } = high instanceof Uint32Array ? new Uint32Array(total) : new Array<T>(total);
  const blocks: BlockComposition[] = [];
  let h = 0;
  let f = 0;
  let at = 0;
  while (h < high.length || f < fresh.length) {
    let takeFresh = Math.min(NEW_PER_BLOCK, fresh.length - f);
    const takeHigh = Math.min(BLOCK_SIZE - takeFresh, high.length - h);
    takeFresh += Math.min(BLOCK_SIZE - takeFresh - takeHigh, fresh.length - f - takeFresh);
    const start = at;
    for (let k = 0; k < takeFresh; k++) ids[at++] = fresh[f++];
    for (let k = 0; k < takeHigh; k++) ids[at++] = high[h++];
    shuffleInPlace(ids, seededRandom(version, blocks.length), start, at);
    blocks.push({ high: takeHigh, fresh: takeFresh });
  }
  return { ids: ids as Uint32Array | T[], blocks };
}

/** Run-length summary of block compositions. */
export function summarizeBlocks(blocks: readonly BlockComposition[]): BlockRun[] {
  const runs: BlockRun[] = [];
  for (const block of blocks) {
    const last = runs[runs.length - 1];
    if (last && last.high === block.high && last.fresh === block.fresh) last.count += 1;
    else runs.push({ count: 1, ...block });
  }
  return runs;
}

/** Expands a run-length summary back to one entry per block. */
export function expandBlocks(runs: readonly BlockRun[]): BlockComposition[] {
  return runs.flatMap((run) => Array.from({ length: run.count }, () => ({ high: run.high, fresh: run.fresh })));
}

/** Share of blocks that are exactly 17 high + 3 new (0 for an empty queue). */
export function fullBlockRatio(blocks: readonly BlockComposition[]): number {
  if (blocks.length === 0) return 0;
  return blocks.filter((b) => b.fresh === NEW_PER_BLOCK && b.high === BLOCK_SIZE - NEW_PER_BLOCK).length / blocks.length;
}

/** Number of ids that occur more than once (0 for every valid queue). */
export function countDuplicates(ids: readonly string[]): number {
  return ids.length - new Set(ids).size;
}
