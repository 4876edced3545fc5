import fc from 'fast-check';
import { assembleQueue, BLOCK_SIZE, countDuplicates, expandBlocks, fullBlockRatio, summarizeBlocks } from '../src';

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(23 - prefix.length + 1, '0')}`);

/** Two disjoint pools of unique ids, sized up to `max`. */
const pools = (max: number) =>
  fc.tuple(fc.nat({ max }), fc.nat({ max })).map(([h, f]) => ({ high: ids('a', h), fresh: ids('b', f) }));

function blocksOf(queue: string[]): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < queue.length; i += BLOCK_SIZE) out.push(queue.slice(i, i + BLOCK_SIZE));
  return out;
}

describe('assembleQueue (R9) over random pools', () => {
  it('when assembled, then every id appears exactly once and nothing pads', () => {
    fc.assert(
      fc.property(pools(300), fc.string({ minLength: 8, maxLength: 8 }), ({ high, fresh }, version) => {
        const { ids: queue } = assembleQueue(high, fresh, version);
        expect(queue.length).toBe(high.length + fresh.length);
        expect(countDuplicates(queue)).toBe(0);
        expect(new Set(queue)).toEqual(new Set([...high, ...fresh]));
      }),
    );
  });

  it('when assembled, then every block but the last has exactly 20 and the summary matches the ids', () => {
    fc.assert(
      fc.property(pools(300), ({ high, fresh }) => {
        const { ids: queue, blocks } = assembleQueue(high, fresh, '20260101');
        const chunks = blocksOf(queue);
        expect(blocks.length).toBe(chunks.length);
        chunks.forEach((chunk, i) => {
          if (i < chunks.length - 1) expect(chunk.length).toBe(BLOCK_SIZE);
          const freshSet = new Set(fresh);
          expect(chunk.filter((id) => freshSet.has(id)).length).toBe(blocks[i].fresh);
          expect(chunk.length).toBe(blocks[i].fresh + blocks[i].high);
        });
        expect(expandBlocks(summarizeBlocks(blocks))).toEqual(blocks);
      }),
    );
  });

  it('when both pools still have enough, then a block holds min(3, new left) new; after new runs out blocks are all high; after high runs out new fill', () => {
    fc.assert(
      fc.property(pools(300), ({ high, fresh }) => {
        const { blocks } = assembleQueue(high, fresh, '20260101');
        let highLeft = high.length;
        let freshLeft = fresh.length;
        for (const block of blocks) {
          const wantFresh = Math.min(3, freshLeft);
          if (highLeft >= BLOCK_SIZE - wantFresh) {
            expect(block.fresh).toBe(wantFresh);
          } else {
            // High runs out inside this block: all remaining high, new fill up to 20.
            expect(block.high).toBe(highLeft);
            expect(block.fresh).toBe(Math.min(BLOCK_SIZE - highLeft, freshLeft));
          }
          if (freshLeft === 0) expect(block.fresh).toBe(0);
          highLeft -= block.high;
          freshLeft -= block.fresh;
        }
      }),
    );
  });

  it('when blocks are taken in order, then each takes the best remaining of each pool', () => {
    fc.assert(
      fc.property(pools(200), ({ high, fresh }) => {
        const { ids: queue, blocks } = assembleQueue(high, fresh, '20260101');
        let h = 0;
        let f = 0;
        blocksOf(queue).forEach((chunk, i) => {
          const expected = new Set([...high.slice(h, h + blocks[i].high), ...fresh.slice(f, f + blocks[i].fresh)]);
          expect(new Set(chunk)).toEqual(expected);
          h += blocks[i].high;
          f += blocks[i].fresh;
        });
      }),
    );
  });

  it('when the same input and version are used twice, then the queue is identical', () => {
    fc.assert(
      fc.property(pools(200), ({ high, fresh }) => {
        expect(assembleQueue(high, fresh, '20260724').ids).toEqual(assembleQueue(high, fresh, '20260724').ids);
      }),
    );
  });

  it('when the version differs, then block membership is the same but in-block order differs', () => {
    const high = ids('a', 170);
    const fresh = ids('b', 30);
    const a = assembleQueue(high, fresh, '20260724').ids;
    const b = assembleQueue(high, fresh, '20260725').ids;
    expect(a).not.toEqual(b);
    blocksOf(a).forEach((chunk, i) => expect(new Set(chunk)).toEqual(new Set(blocksOf(b)[i])));
  });

  it('when blocks are shuffled, then each block has a seed of its own (version and block index), not one order for all', () => {
    // All high: block i holds high[20i .. 20i+19], so its shuffle is read off as a permutation of 0..19.
    const high = ids('a', 200);
    const rank = new Map(high.map((id, i) => [id, i % BLOCK_SIZE]));
    const permutations = blocksOf(assembleQueue(high, [], '20260724').ids).map((chunk) => chunk.map((id) => rank.get(id)).join(','));
    // Ten blocks seeded alike would share one permutation; per-block seeds give ten (20! orders each).
    expect(new Set(permutations).size).toBe(permutations.length);
  });
});

describe('assembleQueue named cases', () => {
  const composition = (high: number, fresh: number) => assembleQueue(ids('a', high), ids('b', fresh), 'v').blocks;

  it('when there are 170 high and 30 new, then every block is 17+3', () => {
    expect(composition(170, 30)).toEqual(Array.from({ length: 10 }, () => ({ high: 17, fresh: 3 })));
  });

  it.each([
    [0, { high: 20, fresh: 0 }],
    [1, { high: 19, fresh: 1 }],
    [2, { high: 18, fresh: 2 }],
    [3, { high: 17, fresh: 3 }],
  ])('when the new pool has %i, then the first block has that many new and more high', (fresh, first) => {
    const blocks = composition(100, fresh);
    expect(blocks[0]).toEqual(first);
    expect(blocks.slice(1).every((b) => b.fresh === 0)).toBe(true);
  });

  it('when the new pool is exhausted, then later blocks are all high', () => {
    expect(composition(100, 7)).toEqual([
      { high: 17, fresh: 3 },
      { high: 17, fresh: 3 },
      { high: 19, fresh: 1 },
      { high: 20, fresh: 0 },
      { high: 20, fresh: 0 },
      { high: 7, fresh: 0 },
    ]);
  });

  it('when the high pool is too small, then new videos fill that block and the following ones', () => {
    expect(composition(20, 30)).toEqual([
      { high: 17, fresh: 3 },
      { high: 3, fresh: 17 },
      { high: 0, fresh: 10 },
    ]);
  });

  it('when the queue is shorter than 20, then there is one short block', () => {
    expect(composition(5, 2)).toEqual([{ high: 5, fresh: 2 }]);
    expect(assembleQueue([], [], 'v').ids).toEqual([]);
  });
});

describe('block figures (R18, R23)', () => {
  it('when blocks are 17+3, short, all high or mostly new, then fullBlockRatio counts only the 17+3 ones', () => {
    const blocks = [{ high: 17, fresh: 3 }, { high: 20, fresh: 0 }, { high: 3, fresh: 17 }, { high: 5, fresh: 3 }, { high: 17, fresh: 2 }];
    expect(fullBlockRatio(blocks)).toBe(1 / 5);
    expect(fullBlockRatio([])).toBe(0);
  });
  it('when blocks repeat, then summarizeBlocks runs them together and expandBlocks gives them back', () => {
    const blocks = [{ high: 17, fresh: 3 }, { high: 17, fresh: 3 }, { high: 17, fresh: 2 }, { high: 20, fresh: 2 }, { high: 20, fresh: 2 }];
    const runs = summarizeBlocks(blocks);
    expect(runs).toEqual([{ count: 2, high: 17, fresh: 3 }, { count: 1, high: 17, fresh: 2 }, { count: 2, high: 20, fresh: 2 }]);
    expect(expandBlocks(runs)).toEqual(blocks);
  });
  it('when ids repeat, then countDuplicates counts each extra occurrence', () => {
    expect(countDuplicates(['a', 'b', 'a', 'a', 'c'])).toBe(2);
    expect(countDuplicates([])).toBe(0);
  });
});

describe('assembleQueue over candidate indices (the build path)', () => {
  it('when pools are given as indices, then the queue is the id queue mapped to indices', () => {
    fc.assert(
      fc.property(pools(300), ({ high, fresh }) => {
        const all = [...high, ...fresh];
        const index = new Map(all.map((id, i) => [id, i]));
        const byIndex = assembleQueue(Uint32Array.from(high, (id) => index.get(id)!), Uint32Array.from(fresh, (id) => index.get(id)!), '20260724');
        const byId = assembleQueue(high, fresh, '20260724');
        expect(byIndex.ids).toBeInstanceOf(Uint32Array);
        expect(Array.from(byIndex.ids, (i) => all[i])).toEqual(byId.ids);
        expect(byIndex.blocks).toEqual(byId.blocks);
      }),
    );
  });
});
