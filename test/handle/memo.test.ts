import { describe, expect, it } from 'vitest'
import { boundedMemo, createHotCache } from '../../src/handle/memo.js'

describe('memos', () => {
  it('a bounded memo computes each key once while it is held', () => {
    const calls: string[] = []
    const upper = boundedMemo(2, (s: string) => { calls.push(s); return s.toUpperCase() })
    expect([upper('a'), upper('a'), upper('b'), upper('b'), upper('a')]).toEqual(['A', 'A', 'B', 'B', 'A'])
    expect(calls).toEqual(['a', 'b'])
  })

  it('a full bounded memo drops the key used least recently, not everything', () => {
    const calls: string[] = []
    const upper = boundedMemo(2, (s: string) => { calls.push(s); return s.toUpperCase() })
    upper('a')
    upper('b')
    upper('a') // a is now the most recently used
    upper('c') // full: b goes
    expect([upper('a'), upper('c'), upper('b')]).toEqual(['A', 'C', 'B'])
    expect(calls).toEqual(['a', 'b', 'c', 'b'])
  })

  it('a bounded memo does not keep an undefined answer', () => {
    let calls = 0
    const nothing = boundedMemo(2, (): string | undefined => { calls++; return undefined })
    expect([nothing('x'), nothing('x')]).toEqual([undefined, undefined])
    expect(calls).toBe(2)
  })

  it('a hot cache holds at most twice its limit, dropping the least recently used first', () => {
    const cache = createHotCache<object, number>(2)
    const keys = [{}, {}, {}, {}, {}]
    keys.forEach((k, i) => cache.set(k, i))
    expect(keys.map((k) => cache.get(k))).toEqual([undefined, 1, 2, 3, 4])
  })

  it('a hot cache entry used again outlives entries set after it', () => {
    const cache = createHotCache<object, number>(1) // holds 2
    const hot = {}
    cache.set(hot, 1)
    cache.set({}, 2)
    expect(cache.get(hot)).toBe(1) // hot is now the most recently used
    const cold = {}
    cache.set(cold, 3) // full: the entry 2 goes, hot stays
    expect(cache.get(hot)).toBe(1)
    expect(cache.get(cold)).toBe(3)
  })

  it('a hot cache compares keys by identity', () => {
    const cache = createHotCache<number[], string>(4)
    const key = [1]
    cache.set(key, 'kept')
    expect(cache.get(key)).toBe('kept')
    expect(cache.get([1])).toBeUndefined()
  })
})
