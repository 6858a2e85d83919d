import { describe, expect, it } from 'vitest'
import { boundedMemo } from '../../src/handle/memo.js'

describe('memos', () => {
  it('a bounded memo computes each key once while it is held', () => {
    const calls: string[] = []
    const upper = boundedMemo(2, (s: string) => {
      calls.push(s)
      return s.toUpperCase()
    })
    expect([upper('a'), upper('a'), upper('b'), upper('b'), upper('a')]).toEqual(['A', 'A', 'B', 'B', 'A'])
    expect(calls).toEqual(['a', 'b'])
  })

  it('a full bounded memo drops the key used least recently, not everything', () => {
    const calls: string[] = []
    const upper = boundedMemo(2, (s: string) => {
      calls.push(s)
      return s.toUpperCase()
    })
    upper('a')
    upper('b')
    upper('a') // a is now the most recently used
    upper('c') // full: b goes
    expect([upper('a'), upper('c'), upper('b')]).toEqual(['A', 'C', 'B'])
    expect(calls).toEqual(['a', 'b', 'c', 'b'])
  })

  it('a bounded memo does not keep an undefined answer', () => {
    let calls = 0
    const nothing = boundedMemo(2, (): string | undefined => {
      calls++
      return undefined
    })
    expect([nothing('x'), nothing('x')]).toEqual([undefined, undefined])
    expect(calls).toBe(2)
  })
})
