import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { dataciteRecordOf, dataciteStateOf, DATACITE_TYPES } from '../../../src/handle/copy/datacite-record.js'
import type { CopyRecord } from '../../../src/handle/copy/types.js'

// Sources: DC = DataCite Metadata Schema 4.5 and its REST API JSON (support.datacite.org, "DataCite REST API
// Guide": `{id, type: "dois", attributes}`); CSL = CSL-JSON 1.0.2 (csl-data.json); DataCite public data file
// (JSON lines of that shape, and a DOI/state CSV `doi,state,client_id,updated`); issue 43 §2 (`url`), §5.

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/copy/${name}`, import.meta.url), 'utf8')
const lines = fixture('datacite-dois.jsonl')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as { id: string; type: string; attributes: Record<string, unknown> })
const [zenodo, schema, pangaea] = lines as [(typeof lines)[0], (typeof lines)[0], (typeof lines)[0]]
const csvRows = fixture('datacite-states.csv')
  .trim()
  .split('\n')
  .slice(1)
  .map((l) => {
    const [doi, state, client, updated] = l.split(',')
    return { doi, state, client_id: client, updated }
  })
const ALL = { abstracts: true }

function mapped(line: unknown, opts = ALL): CopyRecord {
  const r = dataciteRecordOf(line, opts)
  if (typeof r === 'string') throw new Error(r)
  return r
}
const cslOf = (line: unknown): Record<string, unknown> => mapped(line).csl as Record<string, unknown>
const withAttributes = (fields: Record<string, unknown>, base = zenodo): unknown => ({
  ...base,
  attributes: { ...base.attributes, ...fields }
})

describe('a DataCite record in the copy', () => {
  it('software on Zenodo keeps its URL, its stamp and its citation', () => {
    expect(mapped(zenodo)).toEqual({
      doi: '10.5281/zenodo.3233118',
      kind: 'work',
      agency: 'datacite',
      url: 'https://zenodo.org/record/3233118', // DC url
      stamp: 1722857234, // DC updated
      csl: {
        id: '10.5281/zenodo.3233118',
        type: 'article', // DC types.citeproc
        DOI: '10.5281/zenodo.3233118',
        URL: 'https://doi.org/10.5281/zenodo.3233118',
        title: 'scipy/scipy: SciPy 1.3.0',
        author: [{ family: 'Virtanen', given: 'Pauli' }, { family: 'Gommers', given: 'Ralf' }, { literal: 'SciPy Developers' }],
        issued: { 'date-parts': [[2019, 5, 17]] },
        publisher: 'Zenodo',
        abstract: 'SciPy 1.3.0 is the culmination of 5 months of hard work.',
        version: 'v1.3.0',
        source: 'DataCite'
      }
    })
  })

  it.each([
    // [what, line, CSL fields expected]
    [
      'a subtitle follows the title',
      schema,
      {
        title:
          'DataCite Metadata Schema Documentation for the Publication and Citation of Research Data and Other Research Outputs: Version 4.4'
      }
    ], // DC titleType Subtitle
    ['the publisher may be an object', schema, { publisher: 'DataCite', language: 'en', type: 'article-journal' }], // DC publisher {name}
    ['editors come from contributors, others not', schema, { editor: [{ family: 'Starr', given: 'Joan' }] }], // DC contributorType Editor
    [
      'only the Abstract description is the abstract',
      schema,
      { abstract: 'The DataCite Metadata Schema is a list of core metadata properties.' }
    ],
    ['bare attributes are a record too', schema.attributes, { DOI: '10.14454/fxws-0523' }], // DataCite data file lines may be attributes only
    [
      'a dataset has its container, volume, issue and pages',
      pangaea,
      {
        type: 'dataset',
        'container-title': 'PANGAEA - Data Publisher for Earth & Environmental Science',
        volume: '12',
        issue: '3',
        page: '101-119'
      }
    ],
    ['without an Issued date the publication year is the date', pangaea, { issued: { 'date-parts': [[2022]] } }], // DC publicationYear
    ['the DOI keeps its registered case', pangaea, { DOI: '10.1594/PANGAEA.941127', author: [{ family: 'Müller', given: 'Jörg' }] }],
    [
      'an unknown citeproc type falls back to the general type',
      withAttributes({ types: { citeproc: 'bogus', resourceTypeGeneral: 'Dissertation' } }),
      { type: 'thesis' }
    ],
    ['without any type it is a document', withAttributes({ types: undefined }), { type: 'document' }]
  ])('%s', (_what, line, fields) => {
    expect(cslOf(line)).toMatchObject(fields)
  })

  it.each(Object.entries(DATACITE_TYPES))('resourceTypeGeneral %s is CSL %s', (general, cslType) => {
    expect(cslOf(withAttributes({ types: { resourceTypeGeneral: general } })).type).toBe(cslType)
  })

  it('an Organizational creator with a comma stays one literal name', () => {
    expect(cslOf(withAttributes({ creators: [{ name: 'Museum of London, Archaeology', nameType: 'Organizational' }] })).author).toEqual([
      { literal: 'Museum of London, Archaeology' }
    ])
  })

  it('--no-abstracts leaves the abstract out and says so', () => {
    const r = mapped(zenodo, { abstracts: false })
    expect(r.csl).not.toHaveProperty('abstract')
    expect(r.abstractDropped).toBe(true)
  })

  it('a Registered DOI without a URL is known, with no URL', () => {
    expect(mapped(withAttributes({ state: 'registered', url: null }))).toEqual({
      doi: '10.5281/zenodo.3233118',
      kind: 'registered',
      agency: 'datacite',
      stamp: 1722857234
    })
  })

  it.each([
    ['not an object', 'x', 'the item is not a DataCite record (an object)'],
    ['a control character in the DOI', withAttributes({ doi: '10.5281/zen\u0007odo' }), 'the DOI has a control character (U+0007)'], // issue 43 §5
    ['no URL', withAttributes({ url: null }), '10.5281/zenodo.3233118: the record has no URL'],
    [
      'a javascript: URL',
      withAttributes({ url: 'javascript:alert(document.domain)' }),
      '10.5281/zenodo.3233118: the URL "javascript:alert(document.domain)" is not one the resolver redirects to (scheme not in http, https, ftp, a control character or a bad host)'
    ],
    ['a draft state', withAttributes({ state: 'draft' }), '10.5281/zenodo.3233118: a draft DOI is not registered'],
    [
      'only a date past 2106',
      withAttributes({ updated: '2200-01-01T00:00:00Z', registered: undefined, created: undefined }),
      '10.5281/zenodo.3233118: the record has no date (updated, registered or created)'
    ], // u32 stamps (record-codec)
    [
      'no date',
      withAttributes({ updated: undefined, registered: undefined, created: 'yesterday' }),
      '10.5281/zenodo.3233118: the record has no date (updated, registered or created)'
    ]
  ])('a record with %s is skipped and named', (_what, line, problem) => {
    expect(dataciteRecordOf(line, ALL)).toBe(problem)
  })
})

describe('a row of DataCite DOI/state file in the copy', () => {
  it.each([
    [csvRows[0], undefined], // findable: its JSON line brings it
    [csvRows[1], { doi: '10.80000/registered-only-0042', kind: 'registered', agency: 'datacite', stamp: 1675238400 }],
    [csvRows[2], undefined], // a draft is not a DOI yet
    [{ doi: '10.80000/x', state: 'Tombstoned', updated: '2023-02-01T08:00:00Z' }, '10.80000/x: unknown state "Tombstoned"'],
    [{ doi: '10.80000/x', state: 'registered', updated: '' }, '10.80000/x: the row has no updated date'],
    [{ doi: 'not-a-doi', state: 'registered' }, '"not-a-doi" is not a DOI (10.<prefix>/<suffix>)']
  ])('%j → %j', (row, expected) => {
    expect(dataciteStateOf(row ?? {})).toEqual(expected)
  })
})
