/**
 * bench/RESULTS.md is written by the scripts, never by hand. It has four sections, each replaced
 * whole by the script that owns it: the speed table (bench/run.ts), the memory table (bench/memory.ts),
 * the batch API's (bench/run.ts --scenario batch) and the fault matrix (bench/faults.ts).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { join } from 'node:path'
import { ROOT } from './processes.js'
import type { Row } from './scenarios.js'
import { P99_SVG, THROUGHPUT_SVG } from './charts.js'
import { BEFORE_PREFIX } from './before.js'

export const RESULTS_PATH = join(ROOT, 'bench', 'RESULTS.md')

export function machine (): string {
  const cpu = cpus()
  return `${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}, ${process.platform}/${process.arch}`
}

function fixed (n: number | undefined, digits: number): string {
  return n === undefined || !Number.isFinite(n) ? '—' : n.toFixed(digits)
}

function ratio (a: number | undefined, b: number | undefined): string {
  return a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0 ? '—' : `${(a / b).toFixed(2)}×`
}

/** Ratios are computed against the floor and nginx rows of the same scenario. */
export function speedTable (rows: readonly Row[]): string {
  const header = '| Scenario | Server | req/s | p50 ms | p99 ms | req/s ÷ floor | p99 ÷ floor | req/s ÷ nginx | Hit ratio | Upstream req / client req | Added latency p50 / p99 ms | Notes |'
  const rule = '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|'
  const lines = [header, rule]
  for (const row of rows) {
    if (row.skipped !== undefined || row.result === undefined) {
      lines.push(`| ${row.scenario} | ${row.server} | — | — | — | — | — | — | — | — | — | ${row.skipped ?? 'no result'} |`)
      continue
    }
    const same = rows.filter((r) => r.scenario === row.scenario && r.result !== undefined)
    const floor = same.find((r) => r.server.startsWith('floor'))?.result
    const nginx = same.find((r) => r.server.startsWith('nginx'))?.result
    const r = row.result
    const isFloor = row.server.startsWith('floor')
    const isNginx = row.server.startsWith('nginx')
    const added = row.addedP50 === undefined ? '—' : `${fixed(row.addedP50, 2)} / ${fixed(row.addedP99, 2)}`
    lines.push([
      '', row.scenario, row.server, fixed(r.rps, 0), fixed(r.p50, 2), fixed(r.p99, 2),
      isFloor ? '1.00×' : ratio(r.rps, floor?.rps),
      isFloor ? '1.00×' : ratio(r.p99, floor?.p99),
      isNginx ? '1.00×' : isFloor ? '—' : ratio(r.rps, nginx?.rps),
      fixed(row.hitRatio, 3), fixed(row.upstreamPerRequest, 4), added, (row.note ?? '').replace(/\|/g, '/'), ''
    ].join(' | ').trim())
  }
  return lines.join('\n')
}

/**
 * `--before`: per scenario with a floor, the --before build and ours (the work tree's build), each
 * divided by the floor of the same run. Empty when there is no --before row.
 */
export function beforeAfterTable (rows: readonly Row[]): string {
  const beforeName = rows.find((r) => r.server.startsWith(BEFORE_PREFIX))?.server
  if (beforeName === undefined) return ''
  const lines = [
    '| Scenario | req/s ÷ floor, before | req/s ÷ floor, after | p99 ÷ floor, before | p99 ÷ floor, after |',
    '|---|--:|--:|--:|--:|'
  ]
  const withoutFloor: string[] = []
  for (const scenario of new Set(rows.map((r) => r.scenario))) {
    const same = rows.filter((r) => r.scenario === scenario)
    const before = same.find((r) => r.server === beforeName)
    const after = same.find((r) => r.server === 'doi-proxy')
    if (before === undefined && after === undefined) continue
    const floor = same.find((r) => r.server.startsWith('floor'))?.result
    if (floor === undefined) {
      withoutFloor.push(scenario)
      continue
    }
    const cell = (row: Row | undefined, pick: (r: NonNullable<Row['result']>) => number, base: number): string =>
      row?.result === undefined ? (row?.skipped !== undefined ? 'skipped' : '—') : ratio(pick(row.result), base)
    lines.push(`| ${scenario} | ${cell(before, (r) => r.rps, floor.rps)} | ${cell(after, (r) => r.rps, floor.rps)} | ${cell(before, (r) => r.p99, floor.p99)} | ${cell(after, (r) => r.p99, floor.p99)} |`)
  }
  const text = [
    '### Before → after',
    '',
    `Before: ${beforeName}; after: doi-proxy. Both measured in this run, each divided by the floor of its scenario in this run.`,
    '',
    ...(lines.length > 2 ? lines : ['_No scenario with a floor was run._'])
  ]
  if (withoutFloor.length > 0) text.push('', `${new Intl.ListFormat('en').format(withoutFloor)}: no floor; compare their rows in the table above.`)
  return text.join('\n')
}

export interface SpeedRun {
  mode: string
  settingsLine: string
  /** What was measured: the commit of ours (and of the --before build). */
  code?: string
  rows: readonly Row[]
}

export function speedSection (run: SpeedRun): string {
  const beforeAfter = beforeAfterTable(run.rows)
  return [
    '## Throughput and latency',
    '',
    `Machine: ${machine()}  `,
    `Date: ${new Date().toISOString()}  `,
    ...(run.code === undefined ? [] : [`Code: ${run.code}  `]),
    `Mode: ${run.mode}. ${run.settingsLine}`,
    '',
    speedTable(run.rows),
    '',
    ...(beforeAfter === '' ? [] : [beforeAfter, '']),
    // Drawn by bench/lib/charts.ts from the same rows (bench/run.ts writes both).
    `![Throughput per scenario, higher is better](${THROUGHPUT_SVG})`,
    '',
    `![p99 latency per scenario, lower is better](${P99_SVG})`,
    ''
  ].join('\n')
}

const SECTIONS = ['speed', 'memory', 'batch', 'faults'] as const
type Section = typeof SECTIONS[number]

/** Replace one section of RESULTS.md, keeping the other as it was. */
export function writeSection (section: Section, body: string): void {
  const current = existsSync(RESULTS_PATH) ? readFileSync(RESULTS_PATH, 'utf8') : ''
  const parts: Record<Section, string> = { speed: '', memory: '', batch: '', faults: '' }
  const command: Record<Section, string> = { speed: 'bench', memory: 'bench:memory', batch: 'bench:batch', faults: 'bench:faults' }
  for (const name of SECTIONS) {
    const m = new RegExp(`<!-- ${name}:start -->\\n([\\s\\S]*?)<!-- ${name}:end -->`).exec(current)
    parts[name] = m?.[1] ?? `_Not measured yet: run \`npm run ${command[name]}\`._\n`
  }
  parts[section] = body.endsWith('\n') ? body : body + '\n'
  const text = [
    '# Benchmark results',
    '',
    '<!-- Written by bench/run.ts, bench/memory.ts and bench/faults.ts. Do not edit by hand: run `npm run bench` / `npm run bench:memory` / `npm run bench:batch` / `npm run bench:faults`. -->',
    'How to read this: [bench/README.md](README.md).',
    '',
    ...SECTIONS.flatMap((name) => [`<!-- ${name}:start -->`, parts[name].trimEnd(), `<!-- ${name}:end -->`, ''])
  ].join('\n')
  writeFileSync(RESULTS_PATH, text)
}

/** Print a bench script's report, and write it to `output` unless that is `-`. */
export function writeReport (output: string, text: string, log: (line: string) => void): void {
  process.stdout.write('\n' + text + '\n')
  if (output === '-') return
  writeFileSync(output, text)
  log(`wrote ${output}`)
}

/** Run a bench script's main: a failure is its stack on stderr and exit code 1. */
export function runBench (main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    process.stderr.write(`bench failed: ${(err as Error)?.stack ?? String(err)}\n`)
    process.exit(1)
  })
}
