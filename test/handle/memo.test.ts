import { describe, expect, it } from 'vitest'
import { boundedMemo, createHotCache } from '../../src/handle/memo.js'

describe('memos', () => {
  it('a bounded memo computes each key once until it is full, then starts over', () => {
    const calls: string[] = []
    const upper = boundedMemo(2, (s: string) => { calls.push(s); return s.toUpperCase() })
    expect([upper('a'), upper('a'), upper('b'), upper('c'), upper('a')]).toEqual(['A', 'A', 'B', 'C', 'A'])
    expect(calls).toEqual(['a', 'b', 'c', 'a'])
  })

  it('a hot cache keeps what is used and holds at most twice its limit', () => {
    const cache = createHotCache<object, number>(2)
    const keys = [{}, {}, {}, {}, {}]
    keys.forEach((k, i) => cache.set(k, i))
    // Generations of 2: {4} current, {2,3} previous, {0,1} dropped.
    expect(keys.map((k) => cache.get(k))).toEqual([undefined, undefined, 2, 3, 4])
  })

  it('a hot cache entry used again survives the next generation', () => {
    const cache = createHotCache<object, number>(2)
    const hot = {}
    cache.set(hot, 1)
    cache.set({}, 2)
    cache.set({}, 3) // hot moves to the previous generation
    expect(cache.get(hot)).toBe(1) // and back into the current one
    cache.set({}, 4)
    cache.set({}, 5)
    expect(cache.get(hot)).toBe(1)
  })
})
