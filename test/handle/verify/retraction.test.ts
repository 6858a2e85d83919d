import { describe, expect, it } from 'vitest'
import {
  crossrefDateOf,
  doiOf,
  noticeKindOf,
  noticesOfCrossrefWork,
  noticesOfRetractionWatch,
  retractionVerdictOf,
  retractionWatchDateOf
} from '../../../src/handle/verify/retraction.js'
import type { Notice } from '../../../src/handle/verify/retraction.js'

// Sources: Crossref's REST API `updated-by`/`update-to` entries ({updated: {date-parts, date-time}, DOI, type,
// source: publisher | retraction-watch, label, record-id}); Crossmark's update types; the Retraction Watch
// data set (gitlab.com/crossref/retraction-watch-data: RetractionNature Retraction | Correction |
// Expression of concern | Reinstatement, RetractionDate "M/D/YYYY H:MM"); plan-41 §1 and open question 7.

describe('what each kind of notice means', () => {
  it.each([
    ['retraction', 'retraction'], // Crossmark
    ['partial_retraction', 'retraction'], // plan-41 §1: a part retracted is retracted
    ['withdrawal', 'retraction'], // Crossmark: withdrawn (Elsevier's "Article withdrawn")
    ['removal', 'retraction'], // Crossmark: removed for legal reasons
    ['expression_of_concern', 'concern'], // Crossmark
    ['correction', 'correction'],
    ['corrigendum', 'correction'],
    ['erratum', 'correction'],
    ['addendum', 'correction'],
    ['clarification', 'correction'], // Crossmark: a clarification amends the record
    ['Retraction', 'retraction'], // Retraction Watch's RetractionNature
    ['Expression of concern', 'concern'], // RW, spaces and case
    ['Expression of Concern', 'concern'],
    ['expression-of-concern', 'concern'], // our wire spelling, should a source use it
    ['Correction', 'correction'],
    ['Reinstatement', 'reinstatement'], // RW (and Crossref's RW-sourced updates)
    ['new_version', undefined], // Crossmark: nothing against the work
    ['new_edition', undefined],
    ['', undefined],
    [42, undefined],
    [null, undefined]
  ])('%j → %j', (raw, kind) => {
    expect(noticeKindOf(raw)).toBe(kind)
  })
})

describe('the DOIs the sources write', () => {
  it.each([
    ['10.1016/s0140-6736(10)60175-4', '10.1016/s0140-6736(10)60175-4'],
    [' 10.1/x ', '10.1/x'], // CSV cells with spaces
    ['https://doi.org/10.1/x', '10.1/x'], // some RW rows give a URL
    ['doi:10.1/x', '10.1/x'],
    ['unavailable', null], // RW: the notice has no DOI
    ['Unavailable', null],
    ['', null],
    ['10.1/', null],
    ['10.1/a b', null],
    ['10.1/a\u0007', null],
    [`10.1/${'x'.repeat(2000)}`, null], // bounded
    [12, null]
  ])('%j → %j', (raw, doi) => {
    expect(doiOf(raw)).toBe(doi)
  })
})

describe('the dates of notices', () => {
  it.each([
    [{ 'date-parts': [[2010, 2, 2]], 'date-time': '2010-02-02T00:00:00Z', timestamp: 1265068800000 }, '2010-02-02'], // Crossref
    [{ 'date-parts': [[2021, 3, 4]] }, '2021-03-04'],
    [{ 'date-parts': [[2021, 3]], 'date-time': '2021-03-17T10:00:00Z' }, '2021-03-17'], // parts short, date-time whole
    [{ 'date-parts': [[2021]] }, null], // a year alone is no day: never invented
    [{ 'date-parts': [[2021, 2, 30]] }, null], // no such day
    [{ 'date-parts': [['2021', '3', '4']] }, '2021-03-04'], // numbers as strings
    [{ 'date-parts': [[null]] }, null], // Crossref's "unknown" date
    ['2021-03-04', null], // not Crossref's shape
    [undefined, null]
  ])('Crossref %j → %j', (raw, date) => {
    expect(crossrefDateOf(raw)).toBe(date)
  })

  it.each([
    ['3/9/2026 0:00', '2026-03-09'], // RW: month first
    ['12/31/2019 0:00', '2019-12-31'],
    ['5/31/2024', '2024-05-31'],
    ['2024-01-15', '2024-01-15'], // some exports
    ['31/12/2019 0:00', null], // day first: no month 31
    ['unavailable', null],
    ['', null]
  ])('Retraction Watch %j → %j', (raw, date) => {
    expect(retractionWatchDateOf(raw)).toBe(date)
  })
})

// The Lancet's Wakefield paper, as Crossref answers for it (a correction in 2004, the retraction in 2010).
const WAKEFIELD = {
  status: 'ok',
  'message-type': 'work',
  message: {
    DOI: '10.1016/s0140-6736(97)11096-0',
    title: ['RETRACTED: Ileal-lymphoid-nodular hyperplasia'],
    'updated-by': [
      {
        updated: { 'date-parts': [[2004, 3, 6]] },
        DOI: '10.1016/s0140-6736(04)15715-2',
        type: 'correction',
        source: 'publisher',
        label: 'Correction'
      },
      {
        updated: { 'date-parts': [[2010, 2, 6]], 'date-time': '2010-02-06T00:00:00Z' },
        DOI: '10.1016/s0140-6736(10)60175-4',
        type: 'retraction',
        source: 'retraction-watch',
        label: 'Retraction',
        'record-id': '1234'
      }
    ]
  }
}

describe("a work's notices in Crossref's answer", () => {
  it('reads each updated-by entry, its type, DOI, day and source', () => {
    expect(noticesOfCrossrefWork(WAKEFIELD)).toEqual([
      { kind: 'correction', doi: '10.1016/s0140-6736(04)15715-2', date: '2004-03-06', source: 'publisher' },
      { kind: 'retraction', doi: '10.1016/s0140-6736(10)60175-4', date: '2010-02-06', source: 'retraction-watch' }
    ])
  })

  it('reads the message alone as well as the whole answer', () => {
    expect(noticesOfCrossrefWork(WAKEFIELD.message)).toEqual(noticesOfCrossrefWork(WAKEFIELD))
  })

  it('takes an update-to naming the work itself as its notice (a retraction in place)', () => {
    const work = {
      DOI: '10.1/Same',
      'update-to': [{ updated: { 'date-parts': [[2020, 1, 2]] }, DOI: '10.1/same', type: 'retraction', source: 'publisher' }]
    }
    expect(noticesOfCrossrefWork(work)).toEqual([{ kind: 'retraction', doi: '10.1/same', date: '2020-01-02', source: 'publisher' }])
  })

  it('finds nothing against a notice that updates another work (update-to another DOI)', () => {
    const notice = { DOI: '10.1016/s0140-6736(10)60175-4', 'update-to': [{ DOI: '10.1016/s0140-6736(97)11096-0', type: 'retraction' }] }
    expect(noticesOfCrossrefWork(notice)).toEqual([])
  })

  it.each([
    [{ message: { DOI: '10.1/x' } }], // no notices
    [{ message: { 'updated-by': 'retraction' } }], // not a list
    [{ message: { 'updated-by': [null, 3, 'x', { type: 'new_version', DOI: '10.1/v2' }] } }], // nothing readable or relevant
    [null],
    ['{"message": {}}'],
    [[]]
  ])('finds none in %j', (json) => {
    expect(noticesOfCrossrefWork(json)).toEqual([])
  })

  it('keeps a notice whose DOI or date is unreadable, without them', () => {
    expect(noticesOfCrossrefWork({ 'updated-by': [{ type: 'retraction', DOI: 'junk', updated: 'yesterday' }] })).toEqual([
      { kind: 'retraction', doi: null, date: null, source: 'publisher' }
    ])
  })

  it('reads at most 1,000 notices of a hostile answer', () => {
    const many = Array.from({ length: 5000 }, () => ({ type: 'erratum', DOI: '10.1/e' }))
    expect(noticesOfCrossrefWork({ 'updated-by': many })).toHaveLength(1000)
  })
})

describe('a row of the Retraction Watch CSV', () => {
  const row = {
    'Record ID': '50438',
    Title: 'A title, with a comma',
    RetractionDate: '3/9/2026 0:00',
    RetractionDOI: '10.9999/notice',
    OriginalPaperDOI: '10.1234/Example',
    RetractionNature: 'Retraction'
  }

  it('gives the work it is about and its notice', () => {
    expect(noticesOfRetractionWatch(row)).toEqual({
      original: '10.1234/Example',
      notices: [{ kind: 'retraction', doi: '10.9999/notice', date: '2026-03-09', source: 'retraction-watch' }]
    })
  })

  it('gives a notice without a DOI when RW has none ("unavailable")', () => {
    expect(noticesOfRetractionWatch({ ...row, RetractionDOI: 'unavailable' })?.notices[0]?.doi).toBeNull()
  })

  it.each([
    [{ ...row, OriginalPaperDOI: 'unavailable' }], // a work without a DOI: nothing to key it by
    [{ ...row, RetractionNature: 'Something else' }],
    [{}]
  ])('gives nothing for %j', (r) => {
    expect(noticesOfRetractionWatch(r)).toBeUndefined()
  })
})

const n = (kind: Notice['kind'], doi: string | null, date: string | null): Notice => ({ kind, doi, date, source: 'publisher' })

describe('the verdict of the notices', () => {
  it.each<[string, Notice[], { verdict: string; notice: string | null; date: string | null }]>([
    ['no notice', [], { verdict: 'none', notice: null, date: null }],
    ['a retraction', [n('retraction', '10.1/r', '2021-03-04')], { verdict: 'retracted', notice: '10.1/r', date: '2021-03-04' }],
    ['a correction', [n('correction', '10.1/c', '2020-01-01')], { verdict: 'corrected', notice: '10.1/c', date: '2020-01-01' }],
    ['a concern', [n('concern', '10.1/e', '2019-05-05')], { verdict: 'expression-of-concern', notice: '10.1/e', date: '2019-05-05' }],
    // Precedence (plan-41 §1): retracted > expression of concern > corrected, whatever the order or dates.
    [
      'a retraction before a later correction',
      [n('retraction', '10.1/r', '2019-01-01'), n('correction', '10.1/c', '2020-01-01')],
      { verdict: 'retracted', notice: '10.1/r', date: '2019-01-01' }
    ],
    [
      'a concern, then a retraction',
      [n('concern', '10.1/e', '2018-01-01'), n('retraction', '10.1/r', '2019-01-01')],
      { verdict: 'retracted', notice: '10.1/r', date: '2019-01-01' }
    ],
    [
      'a correction and a concern',
      [n('correction', '10.1/c', '2021-01-01'), n('concern', '10.1/e', '2018-01-01')],
      { verdict: 'expression-of-concern', notice: '10.1/e', date: '2018-01-01' }
    ],
    // The latest notice of the winning kind gives the DOI and date.
    [
      'two corrections',
      [n('correction', '10.1/c2', '2022-06-01'), n('correction', '10.1/c1', '2020-01-01')],
      { verdict: 'corrected', notice: '10.1/c2', date: '2022-06-01' }
    ],
    [
      'a dated notice and an undated one',
      [n('retraction', '10.1/undated', null), n('retraction', '10.1/dated', '2001-01-01')],
      { verdict: 'retracted', notice: '10.1/dated', date: '2001-01-01' }
    ],
    [
      'the same day from two sources, one without a DOI (RW "unavailable")',
      [n('retraction', null, '2020-02-02'), n('retraction', '10.1/r', '2020-02-02')],
      { verdict: 'retracted', notice: '10.1/r', date: '2020-02-02' }
    ],
    ['a retraction without DOI or date', [n('retraction', null, null)], { verdict: 'retracted', notice: null, date: null }],
    // Open question 7: a reinstatement after a retraction: corrected, the reinstatement the notice.
    [
      'a retraction, then a reinstatement',
      [n('retraction', '10.1/r', '2015-01-01'), n('reinstatement', '10.1/back', '2016-01-01')],
      { verdict: 'corrected', notice: '10.1/back', date: '2016-01-01' }
    ],
    [
      'a reinstatement without a date (only ever after a retraction)',
      [n('retraction', '10.1/r', '2015-01-01'), n('reinstatement', '10.1/back', null)],
      { verdict: 'corrected', notice: '10.1/back', date: null }
    ],
    [
      'a retraction again after the reinstatement',
      [n('retraction', '10.1/r1', '2015-01-01'), n('reinstatement', '10.1/back', '2016-01-01'), n('retraction', '10.1/r2', '2018-01-01')],
      { verdict: 'retracted', notice: '10.1/r2', date: '2018-01-01' }
    ],
    [
      'a reinstatement and a concern',
      [n('retraction', '10.1/r', '2015-01-01'), n('reinstatement', '10.1/back', '2016-01-01'), n('concern', '10.1/e', '2017-01-01')],
      { verdict: 'expression-of-concern', notice: '10.1/e', date: '2017-01-01' }
    ]
  ])('%s', (_what, notices, expected) => {
    expect(retractionVerdictOf(notices)).toEqual(expected)
  })

  it('gives the Wakefield paper retracted, with its 2010 notice', () => {
    expect(retractionVerdictOf(noticesOfCrossrefWork(WAKEFIELD))).toEqual({
      verdict: 'retracted',
      notice: '10.1016/s0140-6736(10)60175-4',
      date: '2010-02-06'
    })
  })
})
