import { describe, expect, it } from 'vitest'
import { crossrefRecordOf } from '../../../src/handle/copy/crossref-record.js'
import { dataciteRecordOf } from '../../../src/handle/copy/datacite-record.js'
import { mirrorRecordOf } from '../../../src/handle/copy/mirror-record.js'

// House rule: every record may be hostile; a mapper never throws, it maps or names the problem (issue 43 §5).

const ODD = [null, 0, -1, 1e308, 'x', '', [], [null], [[]], {}, { 'date-parts': 'x' }, { 'date-parts': [['a', {}]] }, true]
const ALL = { abstracts: true }

describe('mappers given fields of every wrong shape', () => {
  const crossrefFields = [
    'title',
    'subtitle',
    'author',
    'editor',
    'container-title',
    'issued',
    'published-print',
    'indexed',
    'resource',
    'event',
    'ISSN',
    'ISBN',
    'abstract',
    'page',
    'type',
    'subtype'
  ]
  const dataciteFields = [
    'titles',
    'creators',
    'contributors',
    'dates',
    'publicationYear',
    'publisher',
    'container',
    'types',
    'descriptions',
    'state',
    'url',
    'updated',
    'version'
  ]
  const base = {
    DOI: '10.1/a',
    doi: '10.1/a',
    handle: '10.1/a',
    resource: { primary: { URL: 'https://a.example/' } },
    url: 'https://a.example/',
    indexed: { timestamp: 1 },
    updated: '2024-01-01T00:00:00Z',
    values: [{ index: 1, type: 'URL', data: { format: 'string', value: 'https://a.example/' }, ttl: 1 }]
  }

  it.each(crossrefFields.flatMap((f) => ODD.map((v) => [f, v] as const)))('Crossref %s = %j maps or is named', (field, v) => {
    const r = crossrefRecordOf({ ...base, [field]: v }, ALL)
    expect(typeof r === 'string' || r.doi === '10.1/a').toBe(true)
  })

  it.each(dataciteFields.flatMap((f) => ODD.map((v) => [f, v] as const)))('DataCite %s = %j maps or is named', (field, v) => {
    const r = dataciteRecordOf({ id: '10.1/a', type: 'dois', attributes: { ...base, [field]: v } }, ALL)
    expect(typeof r === 'string' || r.doi === '10.1/a').toBe(true)
  })

  it.each(['values', 'metadata'].flatMap((f) => ODD.map((v) => [f, v] as const)))('ours %s = %j maps or is named', (field, v) => {
    const r = mirrorRecordOf({ ...base, [field]: v }, ALL)
    expect(typeof r === 'string' || r.doi === '10.1/a').toBe(true)
  })

  it('a title of 10 MB is cut, not kept', () => {
    const r = crossrefRecordOf({ ...base, title: ['t'.repeat(10_000_000)] }, ALL)
    expect(typeof r !== 'string' && (r.csl?.title as string).length).toBe(100_000)
  })
})
