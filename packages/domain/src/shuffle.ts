/** Deterministic shuffling: the same version and block always give the same order (R9). */

/** cyrb128: a 128-bit string hash, as four 32-bit seeds for sfc32. */
function cyrb128(text: string): [number, number, number, number] {
  let h1 = 1779033703;
  let h2 = 3144134277;
  let h3 = 1013904242;
  let h4 = 2773480762;
  for (let i = 0; i < text.length; i++) {
    const k = text.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  h1 ^= h2 ^ h3 ^ h4;
  h2 ^= h1;
  h3 ^= h1;
  h4 ^= h1;
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0];
}

/** sfc32: a small, fast PRNG with good statistical quality; returns floats in [0, 1). */
function sfc32(a: number, b: number, c: number, d: number): () => number {
  return () => {
    a |= 0;
    b |= 0;
    c |= 0;
    d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
}

/** The project's one seeded PRNG: seeded by version and block index for the queue, by any text and stream elsewhere. */
export function seededRandom(seed: string, stream: number): () => number {
  const [a, b, c, d] = cyrb128(`${seed}:${stream}`);
  return sfc32(a, b, c, d);
}

/** Fisher–Yates over items[start, end) in place with the given PRNG. */
export function shuffleInPlace<A extends { [i: number]: unknown; length: number }>(items: A, random: () => number, start = 0, end = items.length): A {
  for (let i = end - start - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const swap = items[start + i];
    items[start + i] = items[start + j];
    items[start + j] = swap;
  }
  return items;
}
