/**
 * Seeded random numbers for the benches and the matcher's corpus: the same seed, the same sequence, on
 * every machine and in every run. No imports, so a script that needs only this (the corpus generator, the
 * soak's upstream) loads no load generator with it.
 */

/** mulberry32 (public domain): a small, fast PRNG; numbers in [0, 1), as Math.random. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}
