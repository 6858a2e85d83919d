/**
 * bench/RESULTS.md is written by the scripts, but for one section. It has eight, each replaced whole by
 * the script that owns it: the speed table (bench/run.ts), the memory table (bench/memory.ts), the restart
 * with a large snapshot (bench/restart.ts), the batch API's (bench/run.ts --scenario batch), the fault
 * matrix (bench/faults.ts), check --verify's (bench/verify.ts) and the registry copy's
 * (bench/registry-copy/registry-copy.ts); owners' health is written by hand from bench:health,
 * bench:health-db and bench:health-pages, and kept as it is.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { join } from 'node:path'
import { ROOT, TWIN_FLOOR } from './processes.js'
import type { Row } from './scenario-context.js'
import { P99_SVG, THROUGHPUT_SVG } from './charts.js'
import { BEFORE_PREFIX } from './before.js'

export const RESULTS_PATH = join(ROOT, 'bench', 'RESULTS.md')

export function machine(): string {
  const cpu = cpus()
  return `${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}, ${process.platform}/${process.arch}`
}

function fixed(n: number | undefined, digits: number): string {
  return n === undefined || !Number.isFinite(n) ? '—' : n.toFixed(digits)
}

function ratio(a: number | undefined, b: number | undefined): string {
  return a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0 ? '—' : `${(a / b).toFixed(2)}×`
}

function statusText(row: Row): string {
  return (row.note ?? '').replace(/\|/g, '/')
}

/** Ratios are computed against the floor and nginx rows of the same scenario. */
export function speedTable(rows: readonly Row[]): string {
  const header =
    '| Scenario | Server | req/s | p50 ms | p99 ms | req/s ÷ floor | p99 ÷ floor | req/s ÷ nginx | CPU µs / answer | CPU ÷ floor | Hit ratio | Upstream req / client req | Added latency p50 / p99 ms | Notes |'
  const rule = '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|'
  const lines = [header, rule]
  for (const row of rows) {
    if (row.skipped !== undefined || row.result === undefined) {
      lines.push(`| ${row.scenario} | ${row.server} | — | — | — | — | — | — | — | — | — | — | — | ${row.skipped ?? 'no result'} |`)
      continue
    }
    const same = rows.filter((r) => r.scenario === row.scenario && r.result !== undefined)
    const floorRow = same.find((r) => r.server.startsWith('floor'))
    const floor = floorRow?.result
    const nginx = same.find((r) => r.server.startsWith('nginx'))?.result
    const r = row.result
    const isFloor = row.server.startsWith('floor')
    const isNginx = row.server.startsWith('nginx')
    const added = row.addedP50 === undefined ? '—' : `${fixed(row.addedP50, 2)} / ${fixed(row.addedP99, 2)}`
    if (row.scenario === 'client') {
      // Trivial servers, not resolvers: no ratio to a floor or to nginx means anything here.
      lines.push(
        `| client | ${row.server} | ${fixed(r.rps, 0)} | ${fixed(r.p50, 2)} | ${fixed(r.p99, 2)} | — | — | — | ${fixed(row.cpuPerAnswerUs, 1)} | — | — | — | — | ${statusText(row)} |`
      )
      continue
    }
    lines.push(
      [
        '',
        row.scenario,
        row.server,
        fixed(r.rps, 0),
        fixed(r.p50, 2),
        fixed(r.p99, 2),
        isFloor ? '1.00×' : ratio(r.rps, floor?.rps),
        isFloor ? '1.00×' : ratio(r.p99, floor?.p99),
        isNginx ? '1.00×' : isFloor ? '—' : ratio(r.rps, nginx?.rps),
        fixed(row.cpuPerAnswerUs, 1),
        isFloor ? '1.00×' : ratio(row.cpuPerAnswerUs, floorRow?.cpuPerAnswerUs),
        fixed(row.hitRatio, 3),
        fixed(row.upstreamPerRequest, 4),
        added,
        (row.note ?? '').replace(/\|/g, '/'),
        ''
      ]
        .join(' | ')
        .trim()
    )
  }
  return lines.join('\n')
}

/**
 * `--before`: per scenario with a floor, the --before build and ours (the work tree's build), each
 * divided by the floor of the same run. Empty when there is no --before row.
 */
export function beforeAfterTable(rows: readonly Row[]): string {
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
    const floorRow = same.find((r) => r.server.startsWith('floor'))
    const floor = floorRow?.result
    if (floor === undefined) {
      withoutFloor.push(scenario)
      continue
    }
    const cell = (row: Row | undefined, pick: (r: NonNullable<Row['result']>) => number, base: number): string =>
      row?.result === undefined ? (row?.skipped !== undefined ? 'skipped' : '—') : ratio(pick(row.result), base)
    lines.push(
      `| ${scenario} | ${cell(before, (r) => r.rps, floor.rps)} | ${cell(after, (r) => r.rps, floor.rps)} | ${cell(before, (r) => r.p99, floor.p99)} | ${cell(after, (r) => r.p99, floor.p99)} |`
    )
  }
  const text = [
    '### Before → after',
    '',
    `Before: ${beforeName}; after: doi-proxy. Both measured in this run, each divided by the floor of its scenario in this run.`,
    '',
    ...(lines.length > 2 ? lines : ['_No scenario with a floor was run._'])
  ]
  const coldBefore = rows.find((r) => r.scenario === 'cold' && r.server === beforeName)
  const coldAfter = rows.find((r) => r.scenario === 'cold' && r.server === 'doi-proxy')
  if (coldBefore?.addedP50 !== undefined && coldAfter?.addedP50 !== undefined) {
    text.push(
      '',
      `cold, added latency on a miss (minus the upstream asked directly, same run): before ${fixed(coldBefore.addedP50, 2)} ms p50 / ${fixed(coldBefore.addedP99, 2)} ms p99, after ${fixed(coldAfter.addedP50, 2)} ms / ${fixed(coldAfter.addedP99, 2)} ms.`
    )
  }
  const rest = withoutFloor.filter((n) => n !== 'cold' || coldAfter?.addedP50 === undefined)
  if (rest.length > 0) text.push('', `${new Intl.ListFormat('en').format(rest)}: no floor; compare their rows in the table above.`)
  return text.join('\n')
}

/**
 * The targets of issue 22, judged on this run's rows: the cached answers against their same-bytes floor,
 * the miss overhead against the upstream asked directly, zipf against nginx at the same upstream
 * concurrency; and the client's ceiling, so a reader sees no row was limited by the load generator.
 */
export function targetsTable(rows: readonly Row[]): string {
  const lines = ['| Check | Target | Measured | Met |', '|---|---|---|---|']
  const find = (scenario: string, pred: (server: string) => boolean): Row | undefined =>
    rows.find((r) => r.scenario === scenario && r.result !== undefined && pred(r.server))
  const yes = (ok: boolean): string => (ok ? 'yes' : '**no**')
  for (const scenario of ['hot', 'not-found', 'api']) {
    const ours = find(scenario, (n) => n === 'doi-proxy')?.result
    const floor = find(scenario, (n) => n.startsWith('floor'))?.result
    if (ours === undefined || floor === undefined) continue
    const rps = ours.rps / floor.rps
    const p99 = ours.p99 / floor.p99
    const paired = find(scenario, (n) => n === 'doi-proxy')?.paired
    // Judged on the merged rounds; the paired medians beside them, for a reader to weigh the noise.
    const pairedText = paired === undefined ? '' : ` (paired rounds' median: ${paired.rps.toFixed(2)}×, ${paired.p99.toFixed(2)}×)`
    lines.push(
      `| ${scenario}: doi-proxy ÷ same-bytes floor | req/s ≥ 0.95×, p99 ≤ 1.3× | ${rps.toFixed(2)}×, ${p99.toFixed(2)}×${pairedText} | ${yes(rps >= 0.95 && p99 <= 1.3)} |`
    )
    // Not a target: the same floor in a second process, divided by the first: what noise alone makes of one server in this run.
    const twin = find(scenario, (n) => n === TWIN_FLOOR)
    if (twin?.result !== undefined) {
      const twinPaired =
        twin.paired === undefined ? '' : ` (paired rounds' median: ${twin.paired.rps.toFixed(2)}×, ${twin.paired.p99.toFixed(2)}×)`
      lines.push(
        `| ${scenario}, for reference (A/A): the same floor in a second process ÷ the floor | — | ${(twin.result.rps / floor.rps).toFixed(2)}×, ${(twin.result.p99 / floor.p99).toFixed(2)}×${twinPaired} | — |`
      )
    }
  }
  const cold = find('cold', (n) => n === 'doi-proxy')
  if (cold?.addedP50 !== undefined && cold.addedP99 !== undefined && find('cold', (n) => n.startsWith('fake upstream')) !== undefined) {
    lines.push(
      `| cold: doi-proxy minus the upstream asked directly | ≤ 1 ms p50, ≤ 3 ms p99 | ${cold.addedP50.toFixed(2)} ms, ${cold.addedP99.toFixed(2)} ms | ${yes(cold.addedP50 <= 1 && cold.addedP99 <= 3)} |`
    )
    // Not a target: what bare Node adds to a miss on this machine, so a reader can tell whether the target is within reach here.
    const missFloor = find('cold', (n) => n.startsWith('floor'))
    if (missFloor?.addedP50 !== undefined && missFloor.addedP99 !== undefined) {
      lines.push(
        `| cold, for reference: the miss floor (bare node:http + undici, no cache) minus the upstream asked directly | — | ${missFloor.addedP50.toFixed(2)} ms, ${missFloor.addedP99.toFixed(2)} ms | — |`
      )
    }
  }
  const nginx = find('zipf', (n) => n.startsWith('nginx'))?.result
  const zipfSame = rows.find((r) => r.scenario === 'zipf' && r.result !== undefined && r.server.includes('(= nginx)'))
  if (nginx !== undefined && zipfSame?.result !== undefined) {
    const rps = zipfSame.result.rps / nginx.rps
    lines.push(
      `| zipf at nginx's upstream concurrency: ${zipfSame.server} ÷ nginx | req/s ≥ 1.0×, p99 ≤ nginx's | ${rps.toFixed(2)}×, p99 ${zipfSame.result.p99.toFixed(1)} ms vs ${nginx.p99.toFixed(1)} ms | ${yes(rps >= 1 && zipfSame.result.p99 <= nginx.p99)} |`
    )
  }
  const ceiling = rows
    .filter((r) => r.scenario === 'client' && r.result !== undefined && !r.server.includes('autocannon'))
    .reduce<Row | undefined>(
      (a, b) => (a?.result !== undefined && b.result !== undefined && a.result.rps >= b.result.rps ? a : b),
      undefined
    )
  if (ceiling?.result !== undefined) {
    const top = rows
      .filter((r) => r.scenario !== 'client' && r.result !== undefined && r.scenario !== 'storm')
      .reduce<Row | undefined>(
        (a, b) => (a?.result !== undefined && b.result !== undefined && a.result.rps >= b.result.rps ? a : b),
        undefined
      )
    if (top?.result !== undefined) {
      const share = top.result.rps / ceiling.result.rps
      lines.push(
        `| the client is not the limit: fastest row ÷ the client's ceiling (${ceiling.server}, ${ceiling.result.rps.toFixed(0)} req/s) | well under 1× | ${top.scenario} ${top.server}: ${top.result.rps.toFixed(0)} req/s, ${share.toFixed(2)}× | ${yes(share < 0.8)} |`
      )
    }
  }
  return lines.length > 2 ? ['### Targets (issue 22)', '', ...lines].join('\n') : ''
}

export interface SpeedRun {
  mode: string
  settingsLine: string
  /** What was measured: the commit of ours (and of the --before build). */
  code?: string
  rows: readonly Row[]
}

export function speedSection(run: SpeedRun): string {
  const beforeAfter = beforeAfterTable(run.rows)
  const targets = targetsTable(run.rows)
  return [
    '## Throughput and latency',
    '',
    `Machine: ${machine()}  `,
    `Date: ${new Date().toISOString()}  `,
    loadLine(loadavg()[0] ?? NaN),
    ...(run.code === undefined ? [] : [`Code: ${run.code}  `]),
    `Mode: ${run.mode}. ${run.settingsLine}`,
    '',
    speedTable(run.rows),
    '',
    ...(targets === '' ? [] : [targets, '']),
    ...(beforeAfter === '' ? [] : [beforeAfter, '']),
    // Drawn by bench/lib/charts.ts from the same rows (bench/run.ts writes both).
    `![Throughput per scenario, higher is better](${THROUGHPUT_SVG})`,
    '',
    `![p99 latency per scenario, lower is better](${P99_SVG})`,
    ''
  ].join('\n')
}

// `health` is written by hand from bench:health, bench:health-db and bench:health-pages (issue 42); kept as it is here.
const SECTIONS = ['speed', 'memory', 'restart', 'batch', 'faults', 'verify', 'health', 'copy'] as const
type Section = (typeof SECTIONS)[number]

/** Replace one section of RESULTS.md, keeping the other as it was. */
export function writeSection(section: Section, body: string): void {
  const current = existsSync(RESULTS_PATH) ? readFileSync(RESULTS_PATH, 'utf8') : ''
  const parts: Record<Section, string> = { speed: '', memory: '', restart: '', batch: '', faults: '', verify: '', health: '', copy: '' }
  const command: Record<Section, string> = {
    speed: 'bench',
    memory: 'bench:memory',
    restart: 'bench:restart',
    batch: 'bench:batch',
    faults: 'bench:faults',
    verify: 'bench:verify',
    health: 'bench:health',
    copy: 'bench:copy'
  }
  for (const name of SECTIONS) {
    const m = new RegExp(`<!-- ${name}:start -->\\n([\\s\\S]*?)<!-- ${name}:end -->`).exec(current)
    parts[name] = m?.[1] ?? `_Not measured yet: run \`npm run ${command[name]}\`._\n`
  }
  parts[section] = body.endsWith('\n') ? body : body + '\n'
  const text = [
    '# Benchmark results',
    '',
    '<!-- Written by bench/run.ts, bench/memory.ts, bench/restart.ts, bench/faults.ts, bench/verify.ts and bench/registry-copy/registry-copy.ts. Do not edit by hand: run `npm run bench` / `npm run bench:memory` / `npm run bench:restart` / `npm run bench:batch` / `npm run bench:faults` / `npm run bench:verify` / `npm run bench:copy`. The health section alone is written by hand, from `npm run bench:health`, `bench:health-db` and `bench:health-pages`. -->',
    'How to read this: [bench/README.md](README.md).',
    '',
    ...SECTIONS.flatMap((name) => [`<!-- ${name}:start -->`, parts[name].trimEnd(), `<!-- ${name}:end -->`, ''])
  ].join('\n')
  writeFileSync(RESULTS_PATH, text)
}

/** Print a bench script's report, and write it to `output` unless that is `-`. */
export function writeReport(output: string, text: string, log: (line: string) => void): void {
  process.stdout.write('\n' + text + '\n')
  if (output === '-') return
  writeFileSync(output, text)
  log(`wrote ${output}`)
}

/** Run a bench script's main: a failure is its stack on stderr and exit code 1. */
export function runBench(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    process.stderr.write(`bench failed: ${(err as Error)?.stack ?? String(err)}\n`)
    process.exit(1)
  })
}

/** The load average as the run ended, and what it says: on 2 cores, above 1 means something else ran too. */
function loadLine(load: number): string {
  const verdict =
    load > 1
      ? 'above 1 on 2 cores: something else was running; re-run before trusting a ratio'
      : 'at most 1 on 2 cores: nothing else to speak of'
  return `Load average (1 min) when the run ended: ${load.toFixed(2)} (${verdict})  `
}
