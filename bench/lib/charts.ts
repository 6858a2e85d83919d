/**
 * Benchmark results as pictures (issue 15): throughput and p99 per scenario, each server a bar, so
 * doi-proxy stands beside the floor and nginx (and, with --before, beside its older build). SVG files beside RESULTS.md, drawn by the same pure
 * chart module as the status page; they follow the reader's light or dark scheme.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { barChart } from '../../src/http/views/svg.js'
import type { BarGroup } from '../../src/http/views/svg.js'
import { ROOT } from './processes.js'
import { BEFORE_PREFIX } from './before.js'

export const THROUGHPUT_SVG = 'results-throughput.svg'
export const P99_SVG = 'results-p99.svg'

/** What a chart needs of a row of the speed table. */
export interface ChartRow {
  scenario: string
  server: string
  result?: { rps: number; p99: number } | undefined
}

function groups(rows: readonly ChartRow[], pick: (r: { rps: number; p99: number }) => number): BarGroup[] {
  const scenarios = [...new Set(rows.map((r) => r.scenario))]
  return scenarios.map((scenario) => ({
    label: scenario,
    bars: rows
      .filter((r) => r.scenario === scenario)
      .map((r) => ({ name: r.server, value: r.result === undefined ? null : pick(r.result) }))
  }))
}

export function speedCharts(rows: readonly ChartRow[]): { throughput: string; p99: string } {
  // With --before, an older build of ours is one more series, beside doi-proxy.
  const before = rows.find((r) => r.server.startsWith(BEFORE_PREFIX))?.server
  const also = before === undefined ? '' : ` ${before} is an older commit of doi-proxy, measured in the same run.`
  // As wide as it takes to keep the bars as wide as with four servers.
  const width = Math.max(860, Math.round((860 * new Set(rows.map((r) => r.server)).size) / 4))
  return {
    throughput:
      barChart({
        id: 'throughput',
        title: 'Throughput per scenario (requests per second, higher is better)',
        desc:
          'For each benchmark scenario, the requests per second of doi-proxy and of the baselines measured in the same run: the bare node:http floor and nginx with proxy_cache.' +
          also,
        unit: 'req/s',
        groups: groups(rows, (r) => r.rps),
        width,
        standalone: true
      }) + '\n',
    p99:
      barChart({
        id: 'p99',
        title: 'p99 latency per scenario (milliseconds, lower is better)',
        desc: 'For each benchmark scenario, the 99th percentile latency of doi-proxy and of the baselines measured in the same run.' + also,
        unit: 'ms',
        groups: groups(rows, (r) => r.p99),
        width,
        standalone: true
      }) + '\n'
  }
}

/** Writes both charts beside RESULTS.md (bench/run.ts calls this with the rows it measured). */
export function writeSpeedCharts(rows: readonly ChartRow[], dir = join(ROOT, 'bench')): string[] {
  const charts = speedCharts(rows)
  const written = [join(dir, THROUGHPUT_SVG), join(dir, P99_SVG)]
  writeFileSync(written[0] as string, charts.throughput)
  writeFileSync(written[1] as string, charts.p99)
  return written
}

/** The rows of a speed table as RESULTS.md holds it (to redraw the charts without measuring again), but the client's ceiling: trivial servers, not resolvers, drawn nowhere. */
export function rowsFromResults(markdown: string): ChartRow[] {
  const rows: ChartRow[] = []
  const speed = /<!-- speed:start -->([\s\S]*?)<!-- speed:end -->/.exec(markdown)?.[1] ?? ''
  let inTable = false
  for (const line of speed.split('\n')) {
    const cells = line.split('|').map((c) => c.trim())
    // Only the speed table (| Scenario | Server | …), not the before → after table below it.
    if (cells[1] === 'Scenario' && cells[2] === 'Server') {
      inTable = true
      continue
    }
    if (!inTable) continue
    if (!line.startsWith('|')) break
    // | scenario | server | req/s | p50 | p99 | …
    if (cells.length < 7 || cells[1]?.startsWith('---') === true || cells[1] === '' || cells[1] === 'client') continue
    const rps = Number(cells[3])
    const p99 = Number(cells[5])
    rows.push({
      scenario: cells[1] as string,
      server: cells[2] as string,
      result: Number.isFinite(rps) && Number.isFinite(p99) && cells[3] !== '—' ? { rps, p99 } : undefined
    })
  }
  return rows
}
