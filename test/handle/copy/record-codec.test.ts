import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { copyKeyOf } from '../../../src/handle/copy/key.js'
import { CSL_DICTIONARIES, decodeCsl, decodeHead, encodeEntry, encodeRecord, varint } from '../../../src/handle/copy/record-codec.js'
import type { CopyRecord } from '../../../src/handle/copy/types.js'

// Source: plan-43 §1.5, the layout (version 1): head of 12 bytes (version, kind, agency, flags, stamp,
// importedAt), the DOI, the URL or alias target, then a dictionary id and the deflated CSL-JSON.

const CSL = {
  type: 'article-journal',
  DOI: '10.1000/182',
  title: 'The DOI Handbook',
  author: [{ family: 'Paskin', given: 'Norman' }],
  issued: { 'date-parts': [[2019, 6, 12]] },
  'container-title': 'Journal of Examples'
}
const IMPORTED = 1_800_000_000

describe('a record written and read back', () => {
  it.each<[string, CopyRecord, boolean]>([
    [
      'a Crossref work with CSL',
      { doi: '10.1000/182', kind: 'work', agency: 'crossref', url: 'https://www.doi.org/hb.html', stamp: 1_700_000_000, csl: CSL },
      true
    ],
    [
      'a DataCite work without CSL',
      { doi: '10.5281/zenodo.1', kind: 'work', agency: 'datacite', url: 'https://zenodo.org/record/1', stamp: 1_600_000_000 },
      false
    ],
    ['an alias (our mirror format)', { doi: '10.1000/OLD', kind: 'alias', agency: 'other', aliasOf: '10.1000/new', stamp: 1 }, true],
    [
      'a registered DOI with no public URL (DataCite CSV)',
      { doi: '10.5438/reg', kind: 'registered', agency: 'datacite', stamp: 1_650_000_000 },
      false
    ],
    [
      'non-ASCII DOI and URL',
      { doi: '10.5555/ÄÖÜ', kind: 'work', agency: 'crossref', url: 'https://example.org/é?q=ü', stamp: 5, abstractDropped: true },
      false
    ]
  ])('%s', (_, record, covered) => {
    const bytes = encodeRecord(record, { importedAt: IMPORTED, covered })
    expect(bytes[0]).toBe(1)
    expect(decodeHead(bytes)).toEqual({
      kind: record.kind,
      agency: record.agency,
      covered,
      hasCsl: record.csl !== undefined,
      abstractDropped: record.abstractDropped === true,
      stamp: record.stamp,
      importedAt: IMPORTED,
      doi: record.doi,
      target: record.url ?? record.aliasOf ?? ''
    })
    expect(decodeCsl(bytes)).toEqual(record.csl)
  })

  it('a registered record keeps no URL even if a mapper gave one', () => {
    const bytes = encodeRecord(
      { doi: '10.5438/r', kind: 'registered', agency: 'datacite', url: 'https://x.example/', stamp: 1 },
      { importedAt: 1, covered: false }
    )
    expect(decodeHead(bytes)).toMatchObject({ target: '' })
  })

  it.each([
    [-5, 0],
    [Number.NaN, 0],
    [1.9, 1],
    [2 ** 40, 0xffff_ffff] // u32 seconds: up to 2106
  ])('a stamp of %s is kept as %s, never thrown on', (stamp, kept) => {
    const bytes = encodeRecord(
      { doi: '10.1/x', kind: 'work', agency: 'crossref', url: 'https://x.example/', stamp },
      { importedAt: 0, covered: false }
    )
    expect(decodeHead(bytes)).toMatchObject({ stamp: kept })
  })

  it('the metadata is compressed: a typical work takes less than half its JSON', () => {
    const csl = {
      ...CSL,
      author: Array.from({ length: 12 }, (_, i) => ({ family: `Family${i}`, given: `Given ${i}` })),
      abstract: 'The '.repeat(40) + 'end.'
    }
    const bytes = encodeRecord(
      { doi: '10.1000/182', kind: 'work', agency: 'crossref', url: 'https://x.example/', stamp: 1, csl },
      { importedAt: 0, covered: true }
    )
    expect(bytes.length).toBeLessThan(JSON.stringify(csl).length / 2)
    expect(decodeCsl(bytes)).toEqual(csl)
  })

  it('with dictionary 0 (none) it reads back too', () => {
    const bytes = encodeRecord(
      { doi: '10.1/x', kind: 'work', agency: 'crossref', url: 'u', stamp: 1, csl: CSL },
      { importedAt: 0, covered: false, dictionary: 0 }
    )
    expect(decodeCsl(bytes)).toEqual(CSL)
  })

  it('an entry is the key of its DOI and its bytes', () => {
    const record: CopyRecord = { doi: '10.1000/abc', kind: 'work', agency: 'crossref', url: 'https://x.example/', stamp: 1 }
    const entry = encodeEntry(record, { importedAt: 2, covered: false })
    expect(entry.key.equals(copyKeyOf('10.1000/ABC'))).toBe(true)
    expect(entry.value.equals(encodeRecord(record, { importedAt: 2, covered: false }))).toBe(true)
  })
})

describe('damaged or foreign bytes are named, never thrown on', () => {
  // 12 head bytes, 1 + 11 of DOI, 1 + 18 of URL: the metadata's dictionary id is at 43.
  const META_AT = 43
  const good = encodeRecord(
    { doi: '10.1000/182', kind: 'work', agency: 'crossref', url: 'https://x.example/', stamp: 1, csl: CSL },
    { importedAt: 0, covered: false }
  )
  it.each<[string, Uint8Array, RegExp]>([
    ['empty', new Uint8Array(0), /shorter than its head/],
    ['a newer layout', Buffer.concat([Buffer.of(2), good.subarray(1)]), /layout 2 \(this version reads 1\)/],
    ['an unknown kind', Buffer.concat([Buffer.of(1, 9), good.subarray(2)]), /unknown kind 9/],
    ['cut inside the DOI', good.subarray(0, 15), /DOI runs past its end/],
    ['a DOI length of 2^35', Buffer.concat([good.subarray(0, 12), Buffer.of(0xff, 0xff, 0xff, 0xff, 0xff, 0x01)]), /DOI runs past its end/]
  ])('%s: the head', (_, bytes, problem) => {
    expect(decodeHead(bytes)).toMatch(problem)
  })

  it.each<[string, Uint8Array, RegExp]>([
    ['cut before its metadata', good.subarray(0, META_AT), /metadata is cut off/],
    ['an unknown dictionary', Buffer.concat([good.subarray(0, META_AT), Buffer.of(7), Buffer.from('x')]), /dictionary 7/],
    [
      'garbage where the deflated JSON is',
      Buffer.concat([good.subarray(0, META_AT), Buffer.of(1), Buffer.from('not deflate')]),
      /cannot be read/
    ]
  ])('%s: the metadata', (_, bytes, problem) => {
    expect(decodeCsl(bytes)).toMatch(problem)
  })
})

describe('the preset dictionaries', () => {
  it("dictionary 1's bytes never change (records written with it must stay readable)", () => {
    const one = CSL_DICTIONARIES.get(1)
    expect(one?.length).toBeLessThan(1024)
    expect(
      createHash('sha256')
        .update(one ?? '')
        .digest('hex')
    ).toMatchInlineSnapshot(`"f61f745f8fb03083f1450846f848c82ed2205975b8f66e9c3a9f637f012f5452"`)
  })
})

describe('varints (LEB128, unsigned)', () => {
  it.each([
    [0, [0]],
    [127, [0x7f]],
    [128, [0x80, 0x01]],
    [300, [0xac, 0x02]],
    [2 ** 32, [0x80, 0x80, 0x80, 0x80, 0x10]]
  ])('%s is %j', (n, bytes) => {
    expect([...varint(n)]).toEqual(bytes)
  })
})
