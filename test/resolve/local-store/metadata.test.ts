import { describe, expect, it } from 'vitest'
import { checkRecord, parseStoreFile } from '../../../src/resolve/local-store/file-format.js'
import type { LocalRecord } from '../../../src/resolve/local-store/file-format.js'
import { buildSnapshot } from '../../../src/resolve/local-store/record-set.js'

const VALUES = [{ index: 1, type: 'URL', data: { format: 'string', value: 'https://example.org/' } }]

describe('metadata in local records (docs/local-records.md "Metadata")', () => {
  it("a record with metadata by media type loads, keys normalised, in the record's order", () => {
    const record = checkRecord({
      handle: '10.5555/m',
      values: VALUES,
      metadata: {
        'Application/X-BibTeX': { contentType: 'application/x-bibtex', body: '@misc{m}' },
        'text/x-bibliography; style=apa': { contentType: 'text/x-bibliography; charset=utf-8', body: 'M.' }
      }
    }) as LocalRecord
    expect(typeof record).toBe('object')
    expect([...record.metadata!.keys()]).toEqual(['application/x-bibtex', 'text/x-bibliography;style=apa'])
  })

  it('a record without metadata is as before', () => {
    expect(checkRecord({ handle: '10.5555/m', values: VALUES })).toEqual({ handle: '10.5555/m', values: [{ ...VALUES[0], ttl: 86400 }] })
  })

  it.each([
    [[], /"metadata" must be an object/],
    [{ bibtex: { contentType: 'application/x-bibtex', body: '' } }, /metadata\["bibtex"\]: the key must be a media type/],
    [{ 'application/*': { contentType: 'application/x-bibtex', body: '' } }, /the key must be a media type/],
    [{ 'application/x-bibtex': 'x' }, /must be an object \{"contentType"/],
    [{ 'application/x-bibtex': { contentType: 'x', body: '' } }, /contentType must be a Content-Type/],
    [
      { 'application/x-bibtex': { contentType: 'application/x-bibtex\r\nSet-Cookie: a=b', body: '' } },
      /contentType must be a Content-Type/
    ],
    [{ 'application/x-bibtex': { contentType: 'application/x-bibtex', body: 42 } }, /body must be a string/],
    [
      {
        'application/x-bibtex': { contentType: 'application/x-bibtex', body: '' },
        'APPLICATION/X-BIBTEX': { contentType: 'application/x-bibtex', body: '' }
      },
      /given twice/
    ]
  ])('bad metadata %j is refused with a message naming the record and the field', (metadata, message) => {
    const checked = checkRecord({ handle: '10.5555/m', values: VALUES, metadata })
    expect(checked).toMatch(/^10\.5555\/m: /)
    expect(checked).toMatch(message)
  })

  it('a bad metadata line is skipped with its line number; the other records load', () => {
    const text = [
      JSON.stringify({ handle: '10.5555/a', values: VALUES }),
      JSON.stringify({ handle: '10.5555/b', values: VALUES, metadata: { 'application/x-bibtex': { contentType: 'application/x-bibtex' } } })
    ].join('\n')
    const { records, problems } = parseStoreFile('r.ndjson', text)
    expect(records.map((r) => r.handle)).toEqual(['10.5555/a'])
    expect(problems).toEqual([{ file: 'r.ndjson', line: 2, message: expect.stringMatching(/body must be a string/) }])
  })

  it('the later record of a handle wins, metadata included', () => {
    const withMeta = checkRecord({
      handle: '10.5555/a',
      values: VALUES,
      metadata: { 'application/x-bibtex': { contentType: 'application/x-bibtex', body: 'x' } }
    }) as LocalRecord
    const without = checkRecord({ handle: '10.5555/A', values: VALUES }) as LocalRecord
    expect(
      buildSnapshot([
        { name: 'a.ndjson', records: [without], problems: [], rejected: false },
        { name: 'b.ndjson', records: [withMeta], problems: [], rejected: false }
      ]).metadata.size
    ).toBe(1)
    expect(
      buildSnapshot([
        { name: 'a.ndjson', records: [withMeta], problems: [], rejected: false },
        { name: 'b.ndjson', records: [without], problems: [], rejected: false }
      ]).metadata.size
    ).toBe(0)
  })
})
