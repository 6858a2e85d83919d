import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { crossrefRecordOf, CROSSREF_TYPES } from '../../../src/handle/copy/crossref-record.js'
import type { CopyRecord } from '../../../src/handle/copy/types.js'

// Sources: CR = Crossref REST API work schema (api.crossref.org/swagger-docs, "Work"); CSL = CSL-JSON 1.0.2 schema
// (citation-style-language/schema csl-data.json) and its type list; issue 43 §2 (the registered URL is
// `resource.primary.URL`), §5 (bad input skipped and named); plan-43 §9.6 (`indexed` as the stamp).

const works = (
  JSON.parse(readFileSync(new URL('../../fixtures/copy/crossref-works.json', import.meta.url), 'utf8')) as {
    items: Record<string, unknown>[]
  }
).items
const [nature, cvpr, preprint, chapter] = works as [
  Record<string, unknown>,
  Record<string, unknown>,
  Record<string, unknown>,
  Record<string, unknown>
]
const ALL = { abstracts: true }

function mapped(work: unknown, opts = ALL): CopyRecord {
  const r = crossrefRecordOf(work, opts)
  if (typeof r === 'string') throw new Error(r)
  return r
}
const cslOf = (work: unknown, opts = ALL): Record<string, unknown> => mapped(work, opts).csl as Record<string, unknown>
const withFields = (base: Record<string, unknown>, fields: Record<string, unknown>): Record<string, unknown> => ({ ...base, ...fields })

describe('a Crossref work in the copy', () => {
  it('a journal article keeps its registered URL, its stamp and its citation', () => {
    expect(mapped(nature)).toEqual({
      doi: '10.1038/nature14539',
      kind: 'work',
      agency: 'crossref',
      url: 'https://www.nature.com/articles/nature14539', // CR resource.primary.URL, not URL (doi.org's)
      stamp: 1741929161, // CR indexed.timestamp (ms) in seconds
      csl: {
        id: '10.1038/nature14539',
        type: 'article-journal',
        DOI: '10.1038/nature14539',
        URL: 'https://doi.org/10.1038/nature14539',
        title: 'Deep learning',
        'container-title': 'Nature',
        'container-title-short': 'Nature',
        author: [
          { family: 'LeCun', given: 'Yann' },
          { family: 'Bengio', given: 'Yoshua' },
          { family: 'Hinton', given: 'Geoffrey' }
        ],
        issued: { 'date-parts': [[2015, 5, 28]] }, // published-print first
        volume: '521',
        issue: '7553',
        page: '436-444',
        ISSN: '0028-0836',
        publisher: 'Springer Science and Business Media LLC',
        language: 'en',
        source: 'Crossref'
      }
    })
  })

  it.each([
    // [what, work, CSL fields expected]
    [
      'a proceedings paper names its conference',
      cvpr,
      {
        type: 'paper-conference',
        event: '2016 IEEE Conference on Computer Vision and Pattern Recognition (CVPR)',
        'event-place': 'Las Vegas, NV, USA',
        ISBN: '9781467388511',
        issued: { 'date-parts': [[2016, 6]] }
      }
    ], // CR event.name/location
    [
      'a preprint is an article with its subtitle and abstract as text',
      preprint,
      {
        type: 'article',
        title: 'Long-read assembly at scale: a benchmark of twelve assemblers',
        abstract: 'We present a method for de novo assembly & annotation of long reads.'
      }
    ], // CR subtype; JATS dropped
    [
      'an organisation author is a literal name',
      preprint,
      { author: [{ family: 'García-López', given: 'Ana' }, { literal: 'The Genome Assembly Consortium' }] }
    ], // CR author.name
    [
      'a chapter has its book, series, editors and place',
      chapter,
      {
        type: 'chapter',
        title: '学術情報の流通',
        'container-title': 'Scholarly Communication in East Asia',
        'collection-title': 'Oxford Scholarship Online',
        editor: [{ family: 'Tanaka', given: 'Hiroshi' }],
        'publisher-place': 'Oxford'
      }
    ],
    ['without published-print the online date is the date', chapter, { issued: { 'date-parts': [[2020, 1, 23]] } }], // CR published-online
    [
      'without either the issued date is',
      withFields(nature, { 'published-print': undefined, 'published-online': undefined }),
      { issued: { 'date-parts': [[2015, 5, 27]] } }
    ], // CR issued
    ['an article number is the CSL number', withFields(nature, { 'article-number': 'e1002' }), { number: 'e1002' }], // CR article-number
    [
      'a translator is kept',
      withFields(nature, { translator: [{ given: 'Jean', family: 'Dupont' }] }),
      { translator: [{ family: 'Dupont', given: 'Jean' }] }
    ],
    [
      'a name suffix is kept',
      withFields(nature, { author: [{ given: 'Martin', family: 'King', suffix: 'Jr.' }] }),
      { author: [{ family: 'King', given: 'Martin', suffix: 'Jr.' }] }
    ],
    [
      'markup in a title is dropped',
      withFields(nature, { title: ['Spin in <i>Drosophila</i> &lt;1 K'] }),
      { title: 'Spin in Drosophila <1 K' }
    ],
    [
      'a date with a month out of range keeps its year',
      withFields(nature, { 'published-print': { 'date-parts': [[2015, 13, 2]] } }),
      { issued: { 'date-parts': [[2015]] } }
    ]
  ])('%s', (_what, work, fields) => {
    expect(cslOf(work)).toMatchObject(fields)
  })

  it.each(Object.entries(CROSSREF_TYPES))('type %s is CSL %s', (crossrefType, cslType) => {
    expect(cslOf(withFields(nature, { type: crossrefType })).type).toBe(cslType)
  })

  it('an unknown type is a CSL document', () => {
    expect(cslOf(withFields(nature, { type: 'hologram' })).type).toBe('document')
  })

  it('a thousand authors are all kept', () => {
    const author = Array.from({ length: 1000 }, (_, i) => ({ given: 'A.', family: `Author${i}` }))
    expect((cslOf(withFields(nature, { author })).author as unknown[]).length).toBe(1000)
  })

  it('--no-abstracts leaves the abstract out and says so', () => {
    const r = mapped(preprint, { abstracts: false })
    expect(r.csl).not.toHaveProperty('abstract')
    expect(r.abstractDropped).toBe(true)
    expect(mapped(nature, { abstracts: false }).abstractDropped).toBeUndefined() // nothing was dropped
  })

  it('without indexed the deposited date is the stamp', () => {
    expect(mapped(withFields(nature, { indexed: undefined })).stamp).toBe(1685565127)
    expect(mapped(withFields(nature, { indexed: undefined, deposited: { 'date-time': '2023-05-31T20:32:07Z' } })).stamp).toBe(1685565127)
    expect(mapped(withFields(nature, { indexed: { timestamp: 1e308 } })).stamp).toBe(1685565127) // past 2106: a broken date, not the newest
  })

  it.each([
    ['not an object', [], 'the item is not a Crossref work (an object)'],
    ['no DOI', withFields(nature, { DOI: undefined }), 'the DOI is not text (undefined)'],
    ['a control character in the DOI', withFields(nature, { DOI: '10.1038/nat\u0007ure' }), 'the DOI has a control character (U+0007)'], // issue 43 §5
    ['no resource', withFields(nature, { resource: undefined }), '10.1038/nature14539: the record has no URL'], // issue 43 §5
    ['an empty URL', withFields(nature, { resource: { primary: { URL: ' ' } } }), '10.1038/nature14539: the record has no URL'],
    [
      'a javascript: URL',
      withFields(nature, { resource: { primary: { URL: 'javascript:alert(1)' } } }),
      '10.1038/nature14539: the URL "javascript:alert(1)" is not one the resolver redirects to (scheme not in http, https, ftp, a control character or a bad host)'
    ], // behaviour.md §9
    [
      'a control character in the URL',
      withFields(nature, { resource: { primary: { URL: 'https://a.example/\u0000x' } } }),
      '10.1038/nature14539: the URL "https://a.example/\\u0000x" is not one the resolver redirects to (scheme not in http, https, ftp, a control character or a bad host)'
    ],
    [
      'a URL of 8,001 characters',
      withFields(nature, { resource: { primary: { URL: 'https://a.example/' + 'x'.repeat(7983) } } }),
      '10.1038/nature14539: the URL is longer than 8000 characters (8001)'
    ],
    [
      'no date at all',
      withFields(nature, { indexed: undefined, deposited: undefined, created: undefined }),
      '10.1038/nature14539: the work has no date (indexed, deposited or created)'
    ]
  ])('a work with %s is skipped and named', (_what, work, problem) => {
    expect(crossrefRecordOf(work, ALL)).toBe(problem)
  })
})
