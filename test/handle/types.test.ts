import { describe, expect, it } from 'vitest'
import { asciiUpperCase, hasType, isType } from '../../src/handle/types.js'
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
