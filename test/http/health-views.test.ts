import { describe, expect, it } from 'vitest'
import type { BrokenRow, HealthReport, VerdictCounts } from '../../src/handle/health/types.js'
import { renderDoiHealthPage, renderHealthPage } from '../../src/http/views/health.js'

// Issue 42: /health is rendered from a report; every string in it came from a record or a page and may be hostile.
const ctx = { baseUrl: 'http://127.0.0.1:8000/' }
const NOW = Date.parse('2026-11-27T12:00:00Z')
const DAY = 86_400_000

function counts(more: Partial<VerdictCounts> = {}): VerdictCounts {
  return { alive: 0, unconfirmed: 0, blocked: 0, dead: 0, takeover: 0, 'not-found': 0, 'no-url': 0, unchecked: 0, ...more }
}

function broken(more: Partial<BrokenRow> = {}): BrokenRow {
  return {
    doi: '10.5555/dead-page',
    prefix: '10.5555',
    verdict: 'dead',
    since: NOW - 3 * DAY,
    confirmedAt: NOW - DAY,
    url: 'https://journal.example/article/1',
    status: 404,
    evidence: 'HTTP 404',
    registeredUrl: 'https://journal.example/article/1',
    lastGoodUrl: 'https://journal.example/article/1',
    lastGoodAt: NOW - 10 * DAY,
    checkedAt: NOW - DAY,
    ...more
  }
}

function report(rows: BrokenRow[]): HealthReport {
  return {
    generatedAt: NOW,
    settings: { intervalSeconds: 604800, confirm: 3, confirmGapSeconds: 21600, keepDays: 365 },
    checker: { state: 'running', lastCheckAt: NOW - 60_000, overdue: 0 },
    prefixes: [
      {
        prefix: '10.5555',
        watched: true,
        counts: counts({ alive: 10, dead: rows.length }),
        newlyBroken: rows.length,
        overdue: 0,
        history: [
          { day: '2026-11-26', counts: counts({ alive: 11 }) },
          { day: '2026-11-27', counts: counts({ alive: 10, dead: 1 }) }
        ]
      }
    ],
    broken: rows
  }
}

const options = { prefixes: ['10.5555'], next: null, brokenTotal: 1 }

describe('the /health page', () => {
  it('lists a broken DOI with since when, its evidence, the failing URL and its last good URL', () => {
    const html = renderHealthPage(ctx, report([broken()]), options)
    expect(html).toContain('<h1>DOI health</h1>')
    expect(html).toContain('href="http://127.0.0.1:8000/health?doi=10.5555%2Fdead-page"')
    expect(html).toContain('<time datetime="2026-11-24T12:00:00.000Z">2026-11-24 12:00</time>')
    expect(html).toContain('HTTP 404: HTTP 404')
    expect(html).toContain('<a href="https://journal.example/article/1">https://journal.example/article/1</a> (<time')
  })

  it('draws the verdicts of a prefix as a chart with a table of today beside it, and no script', () => {
    const html = renderHealthPage(ctx, report([broken()]), options)
    expect(html).toContain('<svg')
    expect(html).toContain('DOIs of 10.5555 by verdict, one point per day')
    expect(html).toContain('DOIs of 10.5555 by verdict now (as of 2026-11-27)')
    expect(html).not.toContain('<script')
  })

  it('escapes what a hostile page or record put in a DOI, evidence or URL, and never links a javascript: URL', () => {
    const evil = broken({
      doi: '10.5555/<img src=x onerror=alert(1)>',
      evidence: '<script>alert(2)</script>',
      url: 'javascript:alert(3)',
      lastGoodUrl: 'javascript:alert(4)'
    })
    const html = renderHealthPage(ctx, report([evil]), options)
    expect(html).not.toContain('<img src=x')
    expect(html).not.toContain('<script>alert(2)')
    expect(html).not.toContain('href="javascript:')
    expect(html).toContain('&lt;script&gt;alert(2)&lt;/script&gt;')
  })

  it('pages a long broken list with links that keep the prefix', () => {
    const html = renderHealthPage(ctx, report([broken()]), { ...options, prefix: '10.5555', after: 'c1', next: 'c2', brokenTotal: 450 })
    expect(html).toContain('href="http://127.0.0.1:8000/health?prefix=10.5555">First page</a>')
    expect(html).toContain('href="http://127.0.0.1:8000/health?prefix=10.5555&amp;after=c2">Next page</a>')
  })

  it('says when checking is paused, and why', () => {
    const r = report([])
    r.checker = { state: 'paused', reason: 'Redis cannot be reached: no lease can be proven', lastCheckAt: null, overdue: 12 }
    const html = renderHealthPage(ctx, r, { ...options, brokenTotal: 0 })
    expect(html).toContain('Checking is paused</span>: Redis cannot be reached: no lease can be proven; no check yet.')
    expect(html).toContain('12 DOIs are overdue')
  })
})

describe("one DOI's page", () => {
  it('shows its state and its checks, newest first', () => {
    const html = renderDoiHealthPage(ctx, {
      doi: '10.5555/dead-page',
      prefix: '10.5555',
      state: {
        verdict: 'alive',
        since: NOW - 10 * DAY,
        confirmedAt: NOW - 10 * DAY,
        streak: 2,
        streakVerdict: 'dead',
        streakFirstAt: NOW - DAY,
        streakLastAt: NOW - 60_000,
        window: 5,
        retries: 0,
        nextAt: NOW + 6 * 3_600_000
      },
      checks: [
        {
          at: NOW - 60_000,
          kind: 'confirm',
          verdict: 'dead',
          status: 404,
          registeredUrl: null,
          finalUrl: 'https://journal.example/a',
          domain: 'journal.example',
          evidence: 'HTTP 404',
          ms: 120
        },
        {
          at: NOW - DAY,
          kind: 'scheduled',
          verdict: 'dead',
          status: 404,
          registeredUrl: null,
          finalUrl: 'https://journal.example/a',
          domain: 'journal.example',
          evidence: 'HTTP 404',
          ms: 131
        }
      ]
    })
    expect(html).toContain('<h1>DOI health: 10.5555/dead-page</h1>')
    expect(html).toContain('2 failed checks in a row (dead) not yet confirmed.')
    expect(html.indexOf('confirm')).toBeLessThan(html.indexOf('scheduled'))
  })
})
