import { describe, expect, it } from 'vitest'
import { ItemRing, NumberRing, SlotRings } from '../../src/status/rings.js'

describe('number ring', () => {
  it('keeps the last values, oldest first, and never more than its capacity', () => {
    const ring = new NumberRing(3)
    for (let i = 1; i <= 5; i++) ring.push(i)
    expect(ring.toArray()).toEqual([3, 4, 5])
    expect(ring.length).toBe(3)
    expect(ring.sum()).toBe(12)
  })

  it('adds to the newest value', () => {
    const ring = new NumberRing(2)
    ring.addToLast(2)
    ring.push(1)
    ring.addToLast(4)
    expect(ring.toArray()).toEqual([2, 5])
  })

  it('raises the newest value to a maximum', () => {
    const ring = new NumberRing(2)
    ring.push(1)
    ring.maxIntoLast(2)
    ring.maxIntoLast(1)
    expect(ring.toArray()).toEqual([2])
  })

  it('refuses a ring that could hold nothing', () => {
    expect(() => new NumberRing(0)).toThrow(RangeError)
  })
})

describe('item ring', () => {
  it('keeps the last items, oldest first, and knows the newest', () => {
    const ring = new ItemRing<string>(2)
    for (const s of ['a', 'b', 'c']) ring.push(s)
    expect(ring.toArray()).toEqual(['b', 'c'])
    expect(ring.last()).toBe('c')
  })
})

describe('slot rings', () => {
  it("advance together, at most a ring's capacity at once", () => {
    const rings = new SlotRings(['a', 'b'] as const, 4)
    rings.advance(1)
    rings.add('a', 2)
    rings.advance(1_000_000)
    rings.add('b', 1)
    expect(rings.series('a')).toEqual([0, 0, 0, 0])
    expect(rings.series('b')).toEqual([0, 0, 0, 1])
    expect(rings.length).toBe(4)
  })
})
