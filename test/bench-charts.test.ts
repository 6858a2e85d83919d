import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { P99_SVG, THROUGHPUT_SVG, rowsFromResults, speedCharts } from '../bench/lib/charts.js'
import { speedSection } from '../bench/lib/results.js'

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
    expect(charts.throughput).toContain('>floor (node:http)</text>')
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
