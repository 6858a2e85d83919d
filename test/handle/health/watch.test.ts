import { describe, expect, it } from 'vitest'
import { prefixLabel, prefixOfKey, watchedBy } from '../../../src/handle/health/watch.js'

// Issue 42, plan D9: the DOIs of the prefixes in HEALTH_WATCH are watched; prefix records (no '/') never are.
describe('which DOIs are watched', () => {
  it.each([
    ['10.5555/ABC', '10.5555'],
    ['10.5555/abc/def', '10.5555'],
    ['10.ABCD/x', '10.abcd'],
    ['10.5555', null],
    ['10.5555/', null],
    ['/abc', null],
    ['', null]
  ])('the key %s has the prefix %s', (key, prefix) => {
    expect(prefixOfKey(key)).toBe(prefix)
  })

  it.each([
    [['10.5555'], '10.5555/ABC', true],
    [['10.5555'], '10.55555/ABC', false],
    [['10.5555'], '10.5555', false],
    [['10.ABCD'], '10.abcd/x', true],
    [['10.1234', '10.5555'], '10.1234/x', true],
    [[], '10.5555/ABC', false]
  ] as Array<[string[], string, boolean]>)('HEALTH_WATCH=%j watches %s: %s', (prefixes, key, watched) => {
    expect(watchedBy(prefixes)(key)).toBe(watched)
  })
})

// Issue 42, plan §2: metric labels are bounded: watched prefixes + the first 100 others, then `other`.
describe('the prefix a health metric names', () => {
  it('watched prefixes are always named, whatever came before', () => {
    const label = prefixLabel(['10.5555'], 2)
    expect([label('10.1'), label('10.2'), label('10.3'), label('10.5555')]).toEqual(['10.1', '10.2', 'other', '10.5555'])
  })

  it('the first others keep their names; past the limit the rest are other', () => {
    const label = prefixLabel([])
    const labels = Array.from({ length: 150 }, (_, i) => label(`10.${1000 + i}`))
    expect(labels.slice(0, 100)).toEqual(Array.from({ length: 100 }, (_, i) => `10.${1000 + i}`))
    expect(new Set(labels.slice(100))).toEqual(new Set(['other']))
    expect(label('10.1000')).toBe('10.1000')
  })

  it('a prefix in another case is the same label', () => {
    const label = prefixLabel(['10.ABCD'], 0)
    expect([label('10.abcd'), label('10.AbCd'), label('10.9')]).toEqual(['10.abcd', '10.abcd', 'other'])
  })
})
