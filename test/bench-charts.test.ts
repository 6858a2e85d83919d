import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { P99_SVG, THROUGHPUT_SVG, rowsFromResults, speedCharts } from '../bench/lib/charts.js'
import { beforeAfterTable, speedSection, targetsTable } from '../bench/lib/results.js'
import { TWIN_FLOOR } from '../bench/lib/processes.js'
import type { Row } from '../bench/lib/scenario-context.js'

// bench/RESULTS.md and the two pictures beside it (issue 15): drawn from the same numbers.
const BENCH = new URL('../bench/', import.meta.url)
const results = readFileSync(new URL('RESULTS.md', BENCH), 'utf8')
const rows = rowsFromResults(results)

describe('benchmark pictures', () => {
  it('read every row of the speed table, and nothing from the memory table', () => {
    expect(rows.length).toBeGreaterThan(5)
    expect(rows.every((r) => r.result !== undefined && r.result.rps > 0)).toBe(true)
    expect(rows.some((r) => r.server.startsWith('floor'))).toBe(true)
  })

  it('show a bar for every measured row, throughput and p99 alike', () => {
    const charts = speedCharts(rows)
    expect(charts.throughput.match(/<rect class="bar"/g)).toHaveLength(rows.length)
    expect(charts.p99.match(/<rect class="bar"/g)).toHaveLength(rows.length)
    expect(charts.throughput).toMatch(/>floor \(node:http[^<]*<\/text>/)
    expect(charts.throughput).toContain('>nginx proxy_cache</text>')
  })

  it('beside RESULTS.md are the pictures of its numbers', () => {
    const charts = speedCharts(rows)
    expect(readFileSync(new URL(THROUGHPUT_SVG, BENCH), 'utf8')).toBe(charts.throughput)
    expect(readFileSync(new URL(P99_SVG, BENCH), 'utf8')).toBe(charts.p99)
  })

  it('are linked from RESULTS.md, and from every speed section the benchmark writes', () => {
    const section = speedSection({ mode: 'quick', settingsLine: '', rows: [] })
    for (const text of [results, section]) {
      expect(text).toContain(`](${THROUGHPUT_SVG})`)
      expect(text).toContain(`](${P99_SVG})`)
    }
  })
})

// npm run bench -- --before <ref>: an older build measured in the same run, one more row per scenario.
describe('benchmark results with --before', () => {
  const before = 'doi-proxy before (abc1234)'
  const result = (rps: number, p99: number): Row['result'] => ({
    requests: rps * 10,
    durationS: 10,
    rps,
    p50: p99 / 2,
    p90: p99 * 0.8,
    p99,
    max: p99 * 2,
    statuses: { 302: rps * 10 },
    errors: 0,
    timeouts: 0,
    cacheHits: 0,
    cacheAnswers: 0
  })
  const measured: Row[] = [
    { scenario: 'hot', server: 'doi-proxy', result: result(40_000, 3) },
    { scenario: 'hot', server: before, result: result(30_000, 6) },
    { scenario: 'hot', server: 'floor (node:http)', result: result(50_000, 2) },
    { scenario: 'hot', server: 'nginx proxy_cache', result: result(52_000, 2.5) },
    { scenario: 'storm', server: 'doi-proxy', result: result(4_000, 200) },
    { scenario: 'storm', server: before, result: result(3_000, 250) },
    { scenario: 'api', server: 'doi-proxy', result: result(45_000, 2.4) },
    { scenario: 'api', server: before, skipped: 'skipped: not available (GET /api/handles/10.1000/api.0 answered 404)' },
    { scenario: 'api', server: 'floor (node:http)', result: result(50_000, 2) }
  ]
  const section = speedSection({ mode: 'quick', settingsLine: '', rows: measured })

  it('draw the older build as its own series beside doi-proxy, and say what it is', () => {
    const charts = speedCharts(measured)
    const bars = measured.filter((r) => r.result !== undefined).length
    expect(charts.throughput.match(/<rect class="bar"/g)).toHaveLength(bars)
    expect(charts.p99.match(/<rect class="bar"/g)).toHaveLength(bars)
    expect(charts.throughput).toContain(`>${before}</text>`)
    expect(charts.throughput).toContain(`${before} is an older commit of doi-proxy`)
  })

  it('compare before and after, each against the floor of the same run', () => {
    const table = beforeAfterTable(measured)
    expect(table).toContain('### Before → after')
    // req/s ÷ floor before, after; p99 ÷ floor before, after.
    expect(table).toContain('| hot | 0.60× | 0.80× | 3.00× | 1.50× |')
    expect(table).toContain('| api | skipped | 0.90× | skipped | 1.20× |')
    expect(table).not.toContain('| storm |')
    expect(table).toContain('storm: no floor')
    expect(section).toContain(table)
    expect(beforeAfterTable(measured.filter((r) => r.server !== before))).toBe('')
  })

  it('read back from RESULTS.md without the before → after table', () => {
    const back = rowsFromResults(`<!-- speed:start -->\n${section}<!-- speed:end -->\n`)
    expect(back.map((r) => r.server)).toEqual(measured.map((r) => r.server))
    expect(back.find((r) => r.scenario === 'hot' && r.server === before)?.result).toEqual({ rps: 30_000, p99: 6 })
  })
})

// The hot scenario's A/A row: a second process of the same floor, so a reader sees the run's own noise.
describe('benchmark results with the A/A row', () => {
  const result = (rps: number, p99: number): Row['result'] => ({
    requests: rps * 10,
    durationS: 10,
    rps,
    p50: p99 / 2,
    p90: p99 * 0.8,
    p99,
    max: p99 * 2,
    statuses: { 302: rps * 10 },
    errors: 0,
    timeouts: 0,
    cacheHits: 0,
    cacheAnswers: 0
  })
  const measured: Row[] = [
    { scenario: 'hot', server: 'doi-proxy', result: result(45_000, 3) },
    { scenario: 'hot', server: 'floor (node:http, same bytes)', result: result(50_000, 2) },
    { scenario: 'hot', server: TWIN_FLOOR, result: result(44_000, 2.2), paired: { rps: 0.9, p99: 1.05 } }
  ]

  it('divide every row by the first floor, the A/A row too, and say in the Targets table what noise alone made of one server', () => {
    const table = targetsTable(measured)
    expect(table).toContain('| hot: doi-proxy ÷ same-bytes floor | req/s ≥ 0.95×, p99 ≤ 1.3× | 0.90×, 1.50× | **no** |')
    expect(table).toContain(
      "| hot, for reference (A/A): the same floor in a second process ÷ the floor | — | 0.88×, 1.10× (paired rounds' median: 0.90×, 1.05×) | — |"
    )
    expect(speedSection({ mode: 'quick', settingsLine: '', rows: measured })).toMatch(
      /\| hot \| same-bytes floor again, a second process \(A\/A\) \| 44000 \| [^|]+\| [^|]+\| 0\.88× \| 1\.10× \|/
    )
  })

  it('leave the A/A line out when no second floor ran', () => {
    expect(targetsTable(measured.slice(0, 2))).not.toContain('A/A')
  })
})
