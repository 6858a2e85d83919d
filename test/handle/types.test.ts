import { describe, expect, it } from 'vitest'
import { asciiUpperCase, hasType, isHandleValue, isType } from '../../src/handle/types.js'
import type { HandleValue } from '../../src/handle/types.js'

const value = (type: unknown): HandleValue => ({ index: 1, type, data: { format: 'string', value: '' }, ttl: 86400 }) as HandleValue

// [HNS92] hdllib Util.equalsCI / upperCaseInPlace: only the bytes a–z are folded.
describe('asciiUpperCase: handle types fold ASCII letters only', () => {
  it.each([
    ['URL', 'URL'], // no lower-case letter: the string itself
    ['10320/loc', '10320/LOC'],
    ['hs_admin', 'HS_ADMIN'],
    ['Url.Metadata', 'URL.METADATA'],
    ['ıd', 'ıD'], // dotless i is not i (JavaScript's toUpperCase would make it I)
    ['ſ', 'ſ'], // nor long s an s
    ['', '']
  ])('%j folds to %j', (input, expected) => {
    expect(asciiUpperCase(input)).toBe(expected)
  })
})

// [HNS92] HandleValue.hasType: equal, or a subtype (`type.xxx`), case-insensitively.
describe("hasType and isType: a value's type against a wanted type", () => {
  it.each([
    ['URL', 'URL', true, true],
    ['url', 'URL', true, true],
    ['URL.METADATA', 'URL', true, false], // a subtype
    ['URLX', 'URL', false, false], // not a subtype: no dot
    ['UR', 'URL', false, false], // shorter: never
    ['10320/LOC', '10320/loc', true, true], // b2handle writes it upper-case
    ['10320/loc.extra', '10320/LOC', true, false],
    ['HS_ADMIN', '10320/loc', false, false],
    ['HS_NAMESPACE', '10320/loc', false, false], // longer, but not a subtype
    ['ıD', 'ID', false, false] // dotless i
  ])('type %j, wanted %j: hasType %j, isType %j', (type, wanted, has, is) => {
    expect(hasType(value(type), wanted)).toBe(has)
    expect(isType(value(type), wanted)).toBe(is)
  })

  it('a value whose type is not a string has no type', () => {
    expect(hasType(value(7), 'URL')).toBe(false)
    expect(isType(value(null), 'URL')).toBe(false)
  })
})

// The REST API's handle value (behaviour.md R7): an index, a type, data with a format; ttl a number, a
// string or absent. Anything else, from the upstream or read back from a cache tier, is refused.
describe('isHandleValue: the shape of a value from the upstream or a cache tier', () => {
  const data = { format: 'string', value: 'https://example.org/' }
  it.each([
    [{ index: 1, type: 'URL', data, ttl: 86400 }, true],
    [{ index: 1, type: 'URL', data, ttl: '86400' }, true],
    [{ index: 1, type: 'URL', data }, true],
    [{ index: 1.5, type: 'URL', data }, false], // an index is an integer
    [{ type: 'URL', data }, false],
    [{ index: 1, type: 7, data }, false],
    [{ index: 1, type: 'URL', data: null }, false],
    [{ index: 1, type: 'URL', data: { value: 'x' } }, false], // data without a format
    [{ index: 1, type: 'URL', data, ttl: null }, false],
    [[1, 'URL', data], false],
    [null, false],
    ['URL', false]
  ])('%j → %j', (value, expected) => {
    expect(isHandleValue(value)).toBe(expected)
  })
})
