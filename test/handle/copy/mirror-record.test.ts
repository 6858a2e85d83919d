import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { MAX_VALUES, mirrorRecordOf } from '../../../src/handle/copy/mirror-record.js'

// Sources: LR = docs/local-records.md (`{"handle", "values"[, "metadata"]}`, metadata keyed by media type with
// {contentType, body}); the Handle REST API's value shape ({index, type, data: {format, value}, ttl, timestamp});
// behaviour.md R2 (the legacy URL choice) and §9 (URL rule); plan-43 §1.5 (mirror stamp: the newest value's timestamp).

const [doiHandbook, alias, report] = readFileSync(new URL('../../fixtures/copy/mirror-records.ndjson', import.meta.url), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as { handle: string; values: Record<string, unknown>[]; metadata?: unknown }) as [
  { handle: string; values: Record<string, unknown>[] },
  { handle: string; values: Record<string, unknown>[] },
  { handle: string; values: Record<string, unknown>[]; metadata: unknown }
]
const ALL = { abstracts: true }
const urlValue = (value: unknown): Record<string, unknown> => ({ index: 1, type: 'URL', data: { format: 'string', value }, ttl: 86400 })

describe('a record of our own format in the copy', () => {
  it.each([
    [
      'a mirrored DOI keeps its URL and its newest timestamp',
      doiHandbook,
      { doi: '10.1000/182', kind: 'work', agency: 'other', url: 'https://www.doi.org/the-identifier/resources/handbook', stamp: 1715163072 }
    ],
    [
      'an HS_ALIAS record is an alias',
      alias,
      { doi: '10.1234/ALIAS-OLD', kind: 'alias', agency: 'other', aliasOf: '10.1234/new-home', stamp: 1625097600 }
    ],
    [
      'a local record brings its stored CSL-JSON; no timestamp is stamp 0',
      report,
      {
        doi: '10.5555/local-report-7',
        kind: 'work',
        agency: 'other',
        url: 'https://reports.example.org/7',
        stamp: 0,
        csl: {
          type: 'report',
          id: '10.5555/local-report-7',
          DOI: '10.5555/local-report-7',
          title: 'Annual report 2023',
          author: [{ literal: 'Example Institute' }],
          issued: { 'date-parts': [[2024, 2]] },
          abstract: 'What we did.'
        }
      }
    ],
    [
      'URL beats a URL subtype (R2)',
      {
        handle: '10.1/a',
        values: [
          { ...urlValue('https://b.example/'), type: 'URL.mobile' },
          { ...urlValue('https://a.example/'), index: 2 }
        ]
      },
      { url: 'https://a.example/' }
    ],
    [
      'a blank URL gives way to the next (R2)',
      { handle: '10.1/a', values: [urlValue(' '), { ...urlValue('https://a.example/'), index: 2 }] },
      { url: 'https://a.example/' }
    ],
    [
      'a CSL array of one item is that item',
      { ...report, metadata: { 'application/vnd.citationstyles.csl+json': { contentType: 'x', body: '[{"type":"book","title":"T"}]' } } },
      { csl: { type: 'book', title: 'T' } }
    ]
  ])('%s', (_what, item, expected) => {
    expect(mirrorRecordOf(item, ALL)).toMatchObject(expected)
  })

  it('a record with only non-CSL metadata has no CSL', () => {
    expect(
      mirrorRecordOf({ ...report, metadata: { 'application/x-bibtex': { contentType: 'application/x-bibtex', body: '@misc{x}' } } }, ALL)
    ).not.toHaveProperty('csl')
  })

  it('--no-abstracts leaves the stored abstract out and says so', () => {
    expect(mirrorRecordOf(report, { abstracts: false })).toMatchObject({ abstractDropped: true, csl: { title: 'Annual report 2023' } })
    expect((mirrorRecordOf(report, { abstracts: false }) as { csl: object }).csl).not.toHaveProperty('abstract')
  })

  it.each([
    ['not an object', 'x', 'the item is not a record ({"handle", "values"})'],
    ['a control character in the handle', { ...doiHandbook, handle: '10.1000/1\u00072' }, 'the DOI has a control character (U+0007)'], // issue 43 §5
    ['a prefix handle', { ...doiHandbook, handle: '0.NA/10.1000' }, '"0.NA/10.1000" is not a DOI (10.<prefix>/<suffix>)'],
    ['no values', { handle: '10.1/a' }, '10.1/a: "values" is not an array'],
    [
      'too many values',
      { handle: '10.1/a', values: Array.from({ length: MAX_VALUES + 1 }, (_, i) => ({ ...urlValue('https://a.example/'), index: i + 1 })) },
      `10.1/a: more than ${MAX_VALUES} values (1001)`
    ],
    [
      'a value of the wrong shape',
      { handle: '10.1/a', values: [urlValue('https://a.example/'), { index: 2, type: 'URL' }] },
      '10.1/a: values[1] is not a handle value ({index, type, data: {format, value}, ttl})'
    ],
    [
      'no URL',
      { handle: '10.1/a', values: [{ index: 1, type: 'EMAIL', data: { format: 'string', value: 'a@b.example' }, ttl: 86400 }] },
      '10.1/a: the record has no URL'
    ],
    [
      'a javascript: URL',
      { handle: '10.1/a', values: [urlValue('javascript:alert(1)')] },
      '10.1/a: the URL "javascript:alert(1)" is not one the resolver redirects to (scheme not in http, https, ftp, a control character or a bad host)'
    ], // behaviour.md §9
    [
      'an alias target with a control character',
      { handle: '10.1/a', values: [{ ...urlValue('10.1/b\u0000'), type: 'HS_ALIAS' }] },
      '10.1/a: the HS_ALIAS target has a control character'
    ],
    [
      'CSL metadata that is not JSON',
      { ...report, metadata: { 'application/vnd.citationstyles.csl+json': { contentType: 'x', body: '{"type":' } } },
      '10.5555/local-report-7: metadata["application/vnd.citationstyles.csl+json"] is not one CSL-JSON item'
    ]
  ])('a record with %s is skipped and named', (_what, item, problem) => {
    expect(mirrorRecordOf(item, ALL)).toBe(problem)
  })
})
