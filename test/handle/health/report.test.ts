import { describe, expect, it } from 'vitest'
import { brokenJson, csvCell, csvHeader, csvRow, reportJson, summaryLine, textLine, textReport } from '../../../src/handle/health/report.js'
import type { BrokenRow, HealthReport, PrefixSummary, VerdictCounts } from '../../../src/handle/health/types.js'

const NOV_20 = Date.UTC(2026, 10, 20, 8, 0, 0)
const NOV_13 = Date.UTC(2026, 10, 13, 9, 30, 0)
const ROW: BrokenRow = {
  doi: '10.5555/abc',
  prefix: '10.5555',
  verdict: 'dead',
  since: NOV_20,
  confirmedAt: NOV_20 + 12 * 3_600_000,
  url: 'https://journal.example/a/1',
  status: 404,
  evidence: 'not found',
  registeredUrl: 'https://journal.example/a/1',
  lastGoodUrl: 'https://journal.example/a/1',
  lastGoodAt: NOV_13,
  checkedAt: NOV_20 + 12 * 3_600_000
}
const none: VerdictCounts = { alive: 0, unconfirmed: 0, blocked: 0, dead: 0, takeover: 0, 'not-found': 0, 'no-url': 0, unchecked: 0 }
const PREFIX: PrefixSummary = {
  prefix: '10.5555',
  watched: true,
  counts: { ...none, alive: 1100, dead: 3, takeover: 1 },
  newlyBroken: 2,
  overdue: 0,
  history: []
}
const bracketed = (s: string) => `[${s}]`

// Issue 42, plan §5: exactly doi,verdict,since,url,evidence; RFC 4180; a formula cell defused (OWASP CSV injection).
describe('the CSV of broken DOIs for a publisher', () => {
  it.each([
    ['plain', 'plain'],
    ['', ''],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\nlines', '"two\nlines"'],
    ['=HYPERLINK("http://evil")', `"'=HYPERLINK(""http://evil"")"`],
    ['+1', "'+1"],
    ['-1', "'-1"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\tx', "'\tx"],
    ['\rx', `"'\rx"`],
    ['a=b', 'a=b']
  ])('the cell %j is written %j', (value, cell) => {
    expect(csvCell(value)).toBe(cell)
  })

  it('the header names the five columns and lines end in CRLF', () => {
    expect(csvHeader()).toBe('doi,verdict,since,url,evidence\r\n')
  })

  it('a broken DOI is one line: since in ISO 8601, the failing URL', () => {
    expect(csvRow(ROW)).toBe('10.5555/abc,dead,2026-11-20T08:00:00.000Z,https://journal.example/a/1,not found\r\n')
  })

  it('a DOI with no URL has an empty url cell, and hostile evidence stays in its cell', () => {
    expect(csvRow({ ...ROW, verdict: 'not-found', url: null, evidence: '=cmd|"/c calc"!A1, then' })).toBe(
      `10.5555/abc,not-found,2026-11-20T08:00:00.000Z,,"'=cmd|""/c calc""!A1, then"\r\n`
    )
  })
})

// Issue 42, plan §5: /health.json times are ISO 8601 UTC.
describe('the JSON of /health.json', () => {
  it('a broken row has its times in ISO 8601, a DOI never seen alive null', () => {
    expect(brokenJson({ ...ROW, lastGoodUrl: null, lastGoodAt: null })).toMatchObject({
      doi: '10.5555/abc',
      since: '2026-11-20T08:00:00.000Z',
      confirmedAt: '2026-11-20T20:00:00.000Z',
      checkedAt: '2026-11-20T20:00:00.000Z',
      lastGoodAt: null,
      lastGoodUrl: null
    })
  })

  it('the report has its generation, last check and history gap in ISO 8601', () => {
    const report: HealthReport = {
      generatedAt: NOV_20,
      settings: { intervalSeconds: 604_800, confirm: 3, confirmGapSeconds: 21_600, keepDays: 365 },
      checker: { state: 'running', lastCheckAt: NOV_13, overdue: 0, historyGap: { from: NOV_13, to: NOV_20 } },
      prefixes: [PREFIX],
      broken: [ROW]
    }
    expect(reportJson(report)).toEqual({
      generatedAt: '2026-11-20T08:00:00.000Z',
      settings: report.settings,
      checker: {
        state: 'running',
        lastCheckAt: '2026-11-13T09:30:00.000Z',
        overdue: 0,
        historyGap: { from: '2026-11-13T09:30:00.000Z', to: '2026-11-20T08:00:00.000Z' }
      },
      prefixes: [PREFIX],
      broken: [brokenJson(ROW)]
    })
    expect(reportJson({ ...report, checker: { state: 'off', lastCheckAt: null, overdue: 0 } }).checker).toEqual({
      state: 'off',
      lastCheckAt: null,
      overdue: 0
    })
  })
})

// Issue 42, plan §5: the command's text, every string from pages and servers passed through the caller's `show`.
describe('the text of doi-proxy health', () => {
  it.each([
    [
      ROW,
      '[10.5555/abc]  dead since 2026-11-20: HTTP 404 at [https://journal.example/a/1] ([not found]) · last good [https://journal.example/a/1] (2026-11-13)'
    ],
    [
      {
        ...ROW,
        verdict: 'takeover',
        status: 200,
        url: 'https://casino.example/',
        evidence: 'landed on casino.example; alive on journal.example until 2026-11-13'
      },
      '[10.5555/abc]  takeover since 2026-11-20: HTTP 200 at [https://casino.example/] ([landed on casino.example; alive on journal.example until 2026-11-13]) · last good [https://journal.example/a/1] (2026-11-13)'
    ],
    [
      { ...ROW, verdict: 'not-found', status: null, url: null, evidence: 'not registered', lastGoodUrl: null, lastGoodAt: null },
      '[10.5555/abc]  not-found since 2026-11-20: [not registered]'
    ],
    [
      { ...ROW, status: null, evidence: 'connection refused' },
      '[10.5555/abc]  dead since 2026-11-20: [connection refused] at [https://journal.example/a/1] · last good [https://journal.example/a/1] (2026-11-13)'
    ]
  ] as Array<[BrokenRow, string]>)('%o is printed as %s', (row, line) => {
    expect(textLine(row, bracketed)).toBe(line)
  })

  it.each([
    [PREFIX, '[10.5555]  1104 DOIs: 1100 alive, 3 dead, 1 takeover (2 newly broken this week)'],
    [
      { ...PREFIX, counts: { ...none, unchecked: 1 }, newlyBroken: 0, overdue: 1 },
      '[10.5555]  1 DOI: 1 unchecked (0 newly broken this week, 1 overdue)'
    ],
    [{ ...PREFIX, counts: none, newlyBroken: 0 }, '[10.5555]  0 DOIs (0 newly broken this week)']
  ] as Array<[PrefixSummary, string]>)('the prefix %o is summed up as %s', (prefix, line) => {
    expect(summaryLine(prefix, bracketed)).toBe(line)
  })

  it('the report lists the broken DOIs, then one line per prefix', () => {
    const report: HealthReport = {
      generatedAt: NOV_20,
      settings: { intervalSeconds: 604_800, confirm: 3, confirmGapSeconds: 21_600, keepDays: 365 },
      checker: { state: 'running', lastCheckAt: NOV_13, overdue: 0 },
      prefixes: [PREFIX, { ...PREFIX, prefix: '10.1234', watched: false }],
      broken: [ROW]
    }
    expect(textReport(report, bracketed)).toEqual([
      textLine(ROW, bracketed),
      summaryLine(PREFIX, bracketed),
      summaryLine({ ...PREFIX, prefix: '10.1234' }, bracketed)
    ])
  })
})
