import { describe, expect, it } from 'vitest'
import { checkedDoi, copyKeyOf, isHashedKey, LONGEST_PLAIN_KEY, prefixKeyOf, sameDoi } from '../../../src/handle/copy/key.js'

// Sources: §2.8 = docs/behaviour.md §2.8 (names compare with ASCII a–z folded only); LR = docs/local-records.md
// (a handle: non-empty, no control character, no white space at the ends); plan-43 §1.6 (LMDB's key limit,
// 1,978 bytes with 4 KiB pages: lmdb-js README "Keys").

describe('which DOIs the copy accepts from a data file', () => {
  it.each([
    ['10.1000/182', '10.1000/182'], // the DOI Handbook's
    ['10.1002/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-0', '10.1002/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-0'], // SICI: kept as is
    ['10.5555/ÄÖÜ-é', '10.5555/ÄÖÜ-é'], // non-ASCII suffixes are names too (§2.8)
    ['10.1000/a b', '10.1000/a b'] // a space inside is a character of the name
  ])('%j is a DOI', (raw, doi) => {
    expect(checkedDoi(raw)).toEqual({ doi })
  })

  it.each([
    [undefined, 'the DOI is not text (undefined)'],
    [null, 'the DOI is not text (null)'],
    [182, 'the DOI is not text (number)'],
    ['', 'the DOI is empty'],
    ['10.1000/a\u0007b', 'the DOI has a control character (U+0007)'], // LR; issue 43 §5
    ['10.1000/a\u0085', 'the DOI has a control character (U+0085)'], // C1 controls too
    [' 10.1000/182', 'the DOI " 10.1000/182" starts or ends with white space'], // LR: no request could reach it
    ['10.1000/', '"10.1000/" is not a DOI (10.<prefix>/<suffix>)'],
    ['10.1000', '"10.1000" is not a DOI (10.<prefix>/<suffix>)'],
    ['11.1000/x', '"11.1000/x" is not a DOI (10.<prefix>/<suffix>)'],
    ['10./x', '"10./x" is not a DOI (10.<prefix>/<suffix>)'],
    ['https://doi.org/10.1000/182', '"https://doi.org/10.1000/182" is not a DOI (10.<prefix>/<suffix>)']
  ])('%j is refused: %s', (raw, problem) => {
    expect(checkedDoi(raw)).toEqual({ problem })
  })
})

describe("the copy's keys", () => {
  it.each([
    ['10.1000/abc', '10.1000/ABC'], // §2.8: ASCII a–z folded
    ['10.1000/ABC', '10.1000/ABC'],
    ['10.5555/straße', '10.5555/STRAßE'], // §2.8: never other letters (ß stays)
    ['10.5555/é', '10.5555/é']
  ])('%j is kept under %j', (doi, key) => {
    expect(copyKeyOf(doi).toString('utf8')).toBe(key)
    expect(isHashedKey(copyKeyOf(doi))).toBe(false)
  })

  it('a DOI too long for an LMDB key is kept under 0x01 and its SHA-256, the same for every spelling', () => {
    const long = '10.1000/' + 'x'.repeat(LONGEST_PLAIN_KEY)
    const key = copyKeyOf(long)
    expect(key.length).toBe(33)
    expect(isHashedKey(key)).toBe(true)
    expect(copyKeyOf(long.toUpperCase()).equals(key)).toBe(true)
    // The longest plain key: exactly the limit, in bytes (é is two).
    const edge = '10.1000/' + 'é'.repeat((LONGEST_PLAIN_KEY - 8) / 2)
    expect(copyKeyOf(edge).length).toBe(LONGEST_PLAIN_KEY)
    expect(isHashedKey(copyKeyOf(edge + 'x'))).toBe(true)
  })

  it.each([
    ['10.1000/ABC', '10.1000/abc', true],
    ['10.5555/STRASSE', '10.5555/straße', false], // §2.8
    ['10.1000/a', '10.1000/b', false]
  ])('the stored DOI %j answers for %j: %s', (stored, asked, same) => {
    expect(sameDoi(stored, asked)).toBe(same)
  })

  it('a prefix is kept under its folded name', () => {
    expect(prefixKeyOf('10.abc').toString()).toBe('10.ABC')
  })
})
