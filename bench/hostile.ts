/**
 * The hostile-traffic benchmark: do well-behaved readers still get fast answers while one address
 * floods us with misses, junk the upstream refuses, and `?auth` requests?
 *
 * One run, two phases of the same length: *quiet* (readers only), then *flood* (readers and the
 * attacker). Readers are several clients, each from its own loopback address (127.0.0.2, .3, …),
 * each sending at a steady rate: mostly cached DOIs, some REST API, some DOIs never seen before.
 * The attacker is one address (127.0.0.66), in a process of its own, sending misses for random
 * DOIs, DOIs with `..` segments and very long ones (which the CDN-like upstream answers with HTML
 * 400/414 pages, see bench/lib/cdn-upstream.ts) and `?auth` requests.
 *
 * Reports the readers' p50/p99, error rate, 503s and 429s per phase (flood ÷ quiet), the attacker's
 * answers by kind, whether the upstream circuit breaker opened (from /metrics, scraped every 250 ms)
 * and what the upstream received; writes bench/HOSTILE.md. Exit code 1 when a goal is missed:
 * readers' p99 in the flood ≤ 2× quiet, no 503 for readers, the breaker never opened.
 *
 * `npm run bench:hostile`, `npm run bench:hostile -- --quick`, `… -- --help`.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join, relative } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { addEnvPair, forEachOption } from './lib/args.js'
import { codeVersion, exited, spawnTracked, startCdnUpstream } from './lib/children.js'
import type { Tracked } from './lib/children.js'
import type { CdnStats } from './lib/cdn-upstream.js'
import { cachedDoi, DEFAULT_ATTACK_MIX, parseAttackMix, readerPlanner, runPaced } from './lib/hostile-load.js'
import type { Answer, AttackerReport, AttackKind } from './lib/hostile-load.js'
import { percentile, warm } from './lib/load.js'
import { ensureBuilt, ROOT, startOurs } from './lib/processes.js'
import type { Target } from './lib/processes.js'
import { machine } from './lib/results.js'

const HELP = `Usage: node --import tsx bench/hostile.ts [options]     (npm run bench:hostile -- [options])
  --duration S            seconds per phase (quiet, then flood; default 15)
  --quick                 5 s per phase, shorter warm-ups (about 20-30 s in all)
  --latency MS            the fake upstream's latency (default 30)
  --readers N             well-behaved clients, one loopback address each (default 6)
  --reader-rate R         requests per second per reader (default 40)
  --attack-rate R         the attacker's requests per second (default 1000)
  --attack-connections N  the attacker's connections (default 256)
  --attack-mix K:W,…      kinds and weights (default ${Object.entries(DEFAULT_ATTACK_MIX)
    .map(([k, w]) => `${k}:${w}`)
    .join(',')})
  --timeout S             client timeout per request (default 10)
  --seed N                seed of the request sequences (default 1)
  --server-env KEY=VALUE  extra environment for our server (e.g. UPSTREAM_PER_CLIENT=4); repeatable
  --output FILE           the report (default bench/HOSTILE.md; "-" for stdout only)`

interface Args {
  durationS: number
  quick: boolean
  latencyMs: number
  readers: number
  readerRate: number
  attackRate: number
  attackConnections: number
  attackMix: Record<AttackKind, number>
  timeoutS: number
  seed: number
  serverEnv: Record<string, string>
  output: string
}

function parseArgs(argv: string[]): Args {
  const quick = argv.includes('--quick')
  const args: Args = {
    durationS: quick ? 5 : 15,
    quick,
    latencyMs: 30,
    readers: 6,
    readerRate: 40,
    attackRate: 1000,
    attackConnections: 256,
    attackMix: { ...DEFAULT_ATTACK_MIX },
    timeoutS: 10,
    seed: 1,
    serverEnv: {},
    output: join(ROOT, 'bench', 'HOSTILE.md')
  }
  forEachOption(argv, HELP, (arg, value) => {
    const positive = (): number => {
      const n = Number(value())
      if (!Number.isFinite(n) || n <= 0) throw new Error(`${arg} needs a number > 0`)
      return n
    }
    if (arg === '--quick') return true
    else if (arg === '--duration') args.durationS = positive()
    else if (arg === '--latency') args.latencyMs = Number(value())
    else if (arg === '--readers') args.readers = Math.min(60, Math.round(positive()))
    else if (arg === '--reader-rate') args.readerRate = positive()
    else if (arg === '--attack-rate') args.attackRate = positive()
    else if (arg === '--attack-connections') args.attackConnections = Math.round(positive())
    else if (arg === '--attack-mix') args.attackMix = parseAttackMix(value())
    else if (arg === '--timeout') args.timeoutS = positive()
    else if (arg === '--seed') args.seed = Math.round(Number(value()))
    else if (arg === '--server-env') addEnvPair(value(), args.serverEnv)
    else if (arg === '--output') args.output = value()
    else return false
    return true
  })
  if (!Number.isFinite(args.latencyMs) || args.latencyMs < 0) throw new Error('--latency wants a number of ms')
  return args
}

const CACHED_DOIS = 1_000
const ATTACKER_ADDRESS = '127.0.0.66'
const readerAddress = (i: number): string => `127.0.0.${2 + i}`

// ------------------------------------------------------------------ /metrics

type Sample = Map<string, number>

function parseMetrics(text: string): Sample {
  const out: Sample = new Map()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const space = line.lastIndexOf(' ')
    const value = Number(line.slice(space + 1))
    if (Number.isFinite(value)) out.set(line.slice(0, space), value)
  }
  return out
}

async function scrape(baseUrl: string): Promise<Sample | undefined> {
  try {
    const res = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(2_000) })
    return res.status === 200 ? parseMetrics(await res.text()) : undefined
  } catch {
    return undefined
  }
}

const nameOf = (key: string): string => key.replace(/\{.*$/, '')
// Gauges telling the breaker's state (0 closed, 1 half-open, 2 open in src/observe/metrics.ts); whatever they are called.
const isBreakerGauge = (key: string): boolean => /circuit|breaker/.test(nameOf(key)) && !/_(total|count|sum|bucket)$/.test(nameOf(key))
const isCounter = (key: string): boolean => /_(total|count)$/.test(nameOf(key))

interface MetricsWindow {
  first?: Sample
  last?: Sample
  /** When the phase's load started (epoch ms). */
  startAt: number
  breakerMax: number
  breakerSeries: Set<string>
  /** Seconds after startAt of the scrapes that saw the breaker open. */
  openSeen: number[]
  /** Longest event-loop delay of the server since the previous scrape, in ms, by the second of the phase. */
  lagBySecond: number[]
  /** The same for this process (the readers' clock): a stall here is the benchmark's, not the server's. */
  ownLagBySecond: number[]
  scrapes: number
  failures: number
}

function newWindow(startAt: number): MetricsWindow {
  return { startAt, breakerMax: 0, breakerSeries: new Set(), openSeen: [], lagBySecond: [], ownLagBySecond: [], scrapes: 0, failures: 0 }
}

function observe(w: MetricsWindow, s: Sample | undefined): void {
  if (s === undefined) {
    w.failures++
    return
  }
  w.scrapes++
  w.first ??= s
  w.last = s
  let state = 0
  for (const [key, value] of s) {
    if (!isBreakerGauge(key)) continue
    w.breakerSeries.add(nameOf(key))
    state = Math.max(state, value)
  }
  w.breakerMax = Math.max(w.breakerMax, state)
  const t = (Date.now() - w.startAt) / 1000
  if (state >= 2) w.openSeen.push(t)
  // prom-client's delay histogram is reset at each scrape: its max is the worst stall since the last one.
  const lag = s.get('doi_proxy_nodejs_eventloop_lag_max_seconds')
  const second = Math.floor(t - 0.001)
  if (lag !== undefined && second >= 0) w.lagBySecond[second] = Math.max(w.lagBySecond[second] ?? 0, lag * 1000)
  if (second >= 0) w.ownLagBySecond[second] = Math.max(w.ownLagBySecond[second] ?? 0, ownDelay.max / 1e6)
  ownDelay.reset()
}

const ownDelay = monitorEventLoopDelay({ resolution: 10 })
ownDelay.enable()

/** The server's CPU seconds (user + system) during the window. */
function cpuSeconds(w: MetricsWindow): number {
  const key = 'doi_proxy_process_cpu_seconds_total'
  return (w.last?.get(key) ?? NaN) - (w.first?.get(key) ?? NaN)
}

/** "open from 9.3 s to 12.1 s" (scrapes 250 ms apart), or "". */
function openTimes(w: MetricsWindow): string {
  if (w.openSeen.length === 0) return ''
  const spans: Array<[number, number]> = []
  for (const t of w.openSeen) {
    const last = spans.at(-1)
    if (last !== undefined && t - last[1] < 0.6) last[1] = t
    else spans.push([t, t])
  }
  return spans.map(([a, b]) => (a === b ? `at ${a.toFixed(1)} s` : `${a.toFixed(1)}–${b.toFixed(1)} s`)).join(', ')
}

/** Counter increases between two samples (only those that moved), for the series `pick` keeps. */
function deltas(from: Sample | undefined, to: Sample | undefined, pick: (key: string) => boolean): Array<[string, number]> {
  if (to === undefined) return []
  const out: Array<[string, number]> = []
  for (const [key, value] of to) {
    if (!isCounter(key) || !pick(key)) continue
    const d = value - (from?.get(key) ?? 0)
    if (d !== 0) out.push([key, d])
  }
  return out.sort((a, b) => a[0].localeCompare(b[0]))
}

// ------------------------------------------------------------------ readers' tallies

class Tally {
  statuses = new Map<string, number>()
  all: number[] = []
  cached: number[] = []
  uncached: number[] = []
  requests = 0
  bad = 0
  n503 = 0
  n429 = 0
  skipped = 0
  upstreamBodies = 0
  samples503: string[] = []

  /** Latencies by the second (since the phase began) in which the request was sent. */
  bySecond: number[][] = []

  add(a: Answer, second?: number): void {
    if (second !== undefined && second >= 0) (this.bySecond[second] ??= []).push(a.ms)
    this.requests++
    const key = a.status === 0 ? (a.error ?? 'error') : String(a.status)
    this.statuses.set(key, (this.statuses.get(key) ?? 0) + 1)
    this.all.push(a.ms)
    ;(a.kind === 'uncached' ? this.uncached : this.cached).push(a.ms)
    const ok = (a.status >= 200 && a.status < 400) || a.status === 404
    if (!ok) this.bad++
    if (a.status === 503) {
      this.n503++
      if (a.body !== undefined && !this.samples503.includes(a.body) && this.samples503.length < 3) this.samples503.push(a.body)
    }
    if (a.status === 429) this.n429++
  }
}

/** p99 of the requests sent after the phase's first second (a flood's start can cost a transient). */
function p99After(t: Tally): number {
  return percentile(
    t.bySecond.slice(1).flatMap((ms) => ms ?? []),
    99
  )
}

// ------------------------------------------------------------------ the run

/** Busy and total CPU ticks of the whole machine (Linux /proc/stat), to see what else was running. */
function machineTicks(): { busy: number; total: number } | undefined {
  try {
    const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number)
    const total = fields.reduce((a, b) => a + b, 0)
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0)
    return Number.isFinite(total) && total > 0 ? { busy: total - idle, total } : undefined
  } catch {
    return undefined
  }
}

/** Cores' worth of CPU the whole machine used between two readings. */
function busyCores(a: ReturnType<typeof machineTicks>, b: ReturnType<typeof machineTicks>): number {
  if (a === undefined || b === undefined || b.total === a.total) return NaN
  return ((b.busy - a.busy) / (b.total - a.total)) * cpus().length
}

interface PhaseResult {
  name: string
  durationS: number
  /** Cores' worth of CPU used by every process on the machine during the phase. */
  machineCores: number
  readers: Tally
  metrics: MetricsWindow
  upstream: { answered: number; cdn: CdnStats }
}

async function readersPhase(
  args: Args,
  target: Target,
  phase: string,
  startAt: number,
  durationMs: number,
  tally: Tally | undefined
): Promise<void> {
  await Promise.all(
    Array.from({ length: args.readers }, async (_, i) => {
      const result = await runPaced({
        origin: target.baseUrl,
        localAddress: readerAddress(i),
        connections: 16,
        ratePerS: args.readerRate,
        maxInFlight: 256,
        startAt,
        durationMs,
        timeoutMs: args.timeoutS * 1000,
        next: readerPlanner(i, phase, CACHED_DOIS, args.seed * 1_000_003 + phase.length),
        onAnswer: (a, sentAt) => tally?.add(a, Math.floor((sentAt - startAt) / 1000))
      })
      if (tally !== undefined) tally.skipped += result.skipped
    })
  )
}

function diffCdn(a: CdnStats, b: CdnStats): CdnStats {
  const rejected: Record<string, number> = {}
  for (const [k, v] of Object.entries(b.rejected)) {
    const d = v - (a.rejected[k] ?? 0)
    if (d !== 0) rejected[k] = d
  }
  return { forwarded: b.forwarded - a.forwarded, rejected, hostile: b.hostile - a.hostile }
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2))
  const loadAtStart = loadavg()[0] ?? NaN
  const log = (line: string): void => {
    process.stderr.write(`[hostile] ${line}\n`)
  }
  if (loadAtStart > 0.5) log(`the machine's load average is ${loadAtStart.toFixed(2)} before we start: other work will skew the latencies`)
  ensureBuilt(log)
  const upstream = await startCdnUpstream({ latencyMs: args.latencyMs })
  let server: Target | undefined
  let attackReport: AttackerReport | undefined
  let flooder: Tracked | undefined
  try {
    server = await startOurs({ upstream, env: args.serverEnv })
    const baseUrl = server.baseUrl
    log(
      `server ${baseUrl} (dist/main.js), CDN-like upstream ${upstream.origin} (${args.latencyMs} ms); ${args.readers} readers × ${args.readerRate} req/s; attacker ${args.attackRate} req/s from ${ATTACKER_ADDRESS}; ${args.durationS} s per phase`
    )

    // The attacker loads now and waits for its start time on stdin.
    const durationMs = args.durationS * 1000
    const timeoutMs = args.timeoutS * 1000
    flooder = spawnTracked('attacker', join(ROOT, 'bench', 'lib', 'hostile-load.ts'), [
      '--attacker',
      JSON.stringify({
        origin: baseUrl,
        localAddress: ATTACKER_ADDRESS,
        connections: args.attackConnections,
        ratePerS: args.attackRate,
        maxInFlight: args.attackConnections * 4,
        durationMs,
        timeoutMs,
        seed: args.seed * 31 + 7,
        mix: args.attackMix,
        cachedCount: CACHED_DOIS
      })
    ])

    // Fill the cache with the readers' DOIs (and their prefixes), then a discarded warm-up of the readers.
    const warmStatuses = await warm(
      baseUrl,
      Array.from({ length: CACHED_DOIS }, (_, i) => cachedDoi(i)),
      { concurrency: 32 }
    )
    log(
      `cache filled: ${Object.entries(warmStatuses)
        .map(([s, n]) => `${s}×${n}`)
        .join(' ')}`
    )
    await readersPhase(args, server, 'warmup', Date.now() + 100, (args.quick ? 1 : 2) * 1000, undefined)

    const phases: PhaseResult[] = []
    for (const name of ['quiet', 'flood'] as const) {
      const startAt = Date.now() + 300
      const metrics = newWindow(startAt)
      const tally = new Tally()
      observe(metrics, await scrape(baseUrl))
      const ticksBefore = machineTicks()
      const cdnBefore = await upstream.cdnStats()
      const answeredBefore = await upstream.answered()
      const scraping = { on: true }
      const scraper = (async () => {
        while (scraping.on) {
          await new Promise((resolve) => setTimeout(resolve, 250))
          observe(metrics, await scrape(baseUrl))
        }
      })()
      let report: Promise<AttackerReport | undefined> = Promise.resolve(undefined)
      if (name === 'flood') {
        const attacker = flooder
        attacker.child.stdin?.write(JSON.stringify({ startAt }) + '\n')
        report = exited(attacker.child).then(() => {
          const last = attacker.stdout().trim().split('\n').at(-1) ?? ''
          try {
            return JSON.parse(last) as AttackerReport
          } catch {
            return undefined
          }
        })
      }
      log(`${name}: ${args.durationS} s`)
      await readersPhase(args, server, name, startAt, durationMs, tally)
      const machineCores = busyCores(ticksBefore, machineTicks())
      const attack = await report
      scraping.on = false
      await scraper
      observe(metrics, await scrape(baseUrl))
      const cdn = diffCdn(cdnBefore, await upstream.cdnStats())
      const answered = (await upstream.answered()) - answeredBefore
      phases.push({ name, durationS: args.durationS, machineCores, readers: tally, metrics, upstream: { answered, cdn } })
      if (name === 'flood') attackReport = attack
      log(
        `${name}: readers p50 ${fmt(percentile(tally.all, 50), 2)} ms, p99 ${fmt(percentile(tally.all, 99), 1)} ms, 503×${tally.n503}, 429×${tally.n429}, breaker max state ${metrics.breakerMax}`
      )
    }
    const alive = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.status === 200,
      () => false
    )
    const { text, pass } = render(args, phases, attackReport, alive, args.serverEnv, loadAtStart)
    process.stdout.write('\n' + text)
    if (args.output !== '-') {
      writeFileSync(args.output, text)
      log(`report written to ${relative(ROOT, args.output)}`)
    }
    return pass ? 0 : 1
  } finally {
    // On an error before the flood the attacker is still waiting for its start line: end it.
    if (flooder !== undefined && flooder.child.exitCode === null && flooder.child.signalCode === null) flooder.child.kill('SIGKILL')
    if (server !== undefined) await server.stop()
    await upstream.stop()
  }
}

// ------------------------------------------------------------------ report

function fmt(n: number, digits = 0): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '—'
}

function int(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '—'
}

function ratio(flood: number, quiet: number): string {
  if (!Number.isFinite(flood) || !Number.isFinite(quiet)) return '—'
  if (quiet === 0) return flood === 0 ? '1.00×' : '∞'
  return `${(flood / quiet).toFixed(2)}×`
}

function table(header: string[], rows: string[][]): string {
  return [header, header.map((_, i) => (i === 0 ? '---' : '---:')), ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n')
}

function statuses(m: Map<string, number> | Record<string, number>): string {
  const entries = m instanceof Map ? [...m] : Object.entries(m)
  return (
    entries
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k}×${int(n)}`)
      .join(' ') || '—'
  )
}

const BREAKER_STATE = ['closed', 'half-open', 'open']

function render(
  args: Args,
  phases: PhaseResult[],
  attack: AttackerReport | undefined,
  alive: boolean,
  env: Record<string, string>,
  loadAtStart: number
): { text: string; pass: boolean } {
  const quiet = phases.find((p) => p.name === 'quiet')
  const flood = phases.find((p) => p.name === 'flood')
  if (quiet === undefined || flood === undefined) throw new Error('a phase is missing')
  const q = quiet.readers
  const f = flood.readers
  const rate = (t: Tally, p: PhaseResult): number => t.requests / p.durationS
  const errRate = (t: Tally): number => (t.requests === 0 ? NaN : t.bad / t.requests)
  const circuitOpenRefusals = (p: PhaseResult): number =>
    deltas(p.metrics.first, p.metrics.last, (k) => k.includes('CIRCUIT_OPEN')).reduce((s, [, d]) => s + d, 0)
  const breakerOpened = (p: PhaseResult): boolean => p.metrics.breakerMax >= 2 || circuitOpenRefusals(p) > 0
  const p99q = percentile(q.all, 99)
  const p99f = percentile(f.all, 99)
  const goals = [
    {
      name: "readers' p99 in the flood ≤ 2× the quiet run's",
      pass: p99f <= 2 * p99q,
      evidence: `${fmt(p99f, 1)} ms vs ${fmt(p99q, 1)} ms (${ratio(p99f, p99q)})`
    },
    { name: 'no 503 for readers', pass: f.n503 === 0 && q.n503 === 0, evidence: `${f.n503} in the flood, ${q.n503} in the quiet run` },
    {
      name: 'the breaker never opened',
      pass: !breakerOpened(flood) && !breakerOpened(quiet),
      evidence:
        `highest state seen: ${BREAKER_STATE[flood.metrics.breakerMax] ?? flood.metrics.breakerMax} (${[...flood.metrics.breakerSeries].join(', ') || 'no breaker gauge found in /metrics'})` +
        `${flood.metrics.openSeen.length > 0 ? `, seen open ${openTimes(flood.metrics)} after the flood began (sending lasts ${args.durationS} s, then answers drain)` : ''}` +
        `; lookups refused because it was open: ${int(circuitOpenRefusals(flood))}`
    },
    { name: 'the server still answers /healthz after the flood', pass: alive, evidence: alive ? '200' : 'no answer' }
  ]
  const rows: string[][] = [
    ['requests answered or failed', int(q.requests), int(f.requests), ratio(f.requests, q.requests), ''],
    ['req/s', fmt(rate(q, quiet)), fmt(rate(f, flood)), ratio(rate(f, flood), rate(q, quiet)), ''],
    ['p50 ms', fmt(percentile(q.all, 50), 2), fmt(percentile(f.all, 50), 2), ratio(percentile(f.all, 50), percentile(q.all, 50)), ''],
    ['p99 ms', fmt(p99q, 1), fmt(p99f, 1), ratio(p99f, p99q), '≤ 2.00×'],
    ['p99 ms, leaving out the first second', fmt(p99After(q), 1), fmt(p99After(f), 1), ratio(p99After(f), p99After(q)), ''],
    [
      'p99 ms, cached DOIs',
      fmt(percentile(q.cached, 99), 1),
      fmt(percentile(f.cached, 99), 1),
      ratio(percentile(f.cached, 99), percentile(q.cached, 99)),
      ''
    ],
    [
      'p99 ms, uncached DOIs',
      fmt(percentile(q.uncached, 99), 1),
      fmt(percentile(f.uncached, 99), 1),
      ratio(percentile(f.uncached, 99), percentile(q.uncached, 99)),
      ''
    ],
    ['max ms', fmt(percentile(q.all, 100), 1), fmt(percentile(f.all, 100), 1), ratio(percentile(f.all, 100), percentile(q.all, 100)), ''],
    ['error rate', `${fmt(100 * errRate(q), 2)} %`, `${fmt(100 * errRate(f), 2)} %`, ratio(errRate(f), errRate(q)), ''],
    ['503s', int(q.n503), int(f.n503), ratio(f.n503, q.n503), '0'],
    ['429s', int(q.n429), int(f.n429), ratio(f.n429, q.n429), ''],
    [
      'server: longest event-loop stall ms',
      fmt(Math.max(0, ...quiet.metrics.lagBySecond.filter(Number.isFinite)), 0),
      fmt(Math.max(0, ...flood.metrics.lagBySecond.filter(Number.isFinite)), 0),
      '',
      ''
    ],
    [
      'machine: CPU busy, cores (every process)',
      fmt(quiet.machineCores, 2),
      fmt(flood.machineCores, 2),
      ratio(flood.machineCores, quiet.machineCores),
      ''
    ],
    [
      'server: CPU seconds per second',
      fmt(cpuSeconds(quiet.metrics) / quiet.durationS, 2),
      fmt(cpuSeconds(flood.metrics) / flood.durationS, 2),
      ratio(cpuSeconds(flood.metrics), cpuSeconds(quiet.metrics)),
      ''
    ],
    ['not sent (over 256 in flight per reader)', int(q.skipped), int(f.skipped), ratio(f.skipped, q.skipped), ''],
    [
      'breaker: highest state seen',
      BREAKER_STATE[quiet.metrics.breakerMax] ?? '?',
      BREAKER_STATE[flood.metrics.breakerMax] ?? '?',
      '',
      'never open'
    ],
    [
      'upstream requests received',
      int(quiet.upstream.cdn.forwarded + sumValues(quiet.upstream.cdn.rejected)),
      int(flood.upstream.cdn.forwarded + sumValues(flood.upstream.cdn.rejected)),
      ratio(
        flood.upstream.cdn.forwarded + sumValues(flood.upstream.cdn.rejected),
        quiet.upstream.cdn.forwarded + sumValues(quiet.upstream.cdn.rejected)
      ),
      ''
    ]
  ]
  const out: string[] = []
  out.push('# Hostile traffic', '')
  out.push(
    `Written by \`bench/hostile.ts\` (${args.quick ? '`npm run bench:hostile -- --quick`' : '`npm run bench:hostile`'}) on ${new Date().toISOString()}. Do not edit by hand.  `
  )
  out.push(`Code: ${codeVersion()}.  `)
  out.push(
    `Machine: ${machine()}. Load average (1 min) when the run began: ${fmt(loadAtStart, 2)}${loadAtStart > 0.5 ? ' (**other work was running: the latencies are skewed**)' : ''}.`,
    ''
  )
  out.push(
    `Two phases of ${args.durationS} s each in one run: **quiet** (readers only), then **flood** (readers and the attacker). ` +
      `${args.readers} readers, each from its own address (127.0.0.2–127.0.0.${1 + args.readers}), each sending ${args.readerRate} req/s paced (open loop): ` +
      '85 % cached DOIs, 5 % the same through `/api/handles/`, 10 % DOIs never asked before. ' +
      `The attacker, from ${ATTACKER_ADDRESS} in its own process, sends ${args.attackRate} req/s over up to ${args.attackConnections} connections: ` +
      `${Object.entries(args.attackMix)
        .map(([k, w]) => `${k} ${w}`)
        .join(', ')} (weights; see the attacker table). ` +
      `Upstream: the bench fake upstream behind CDN-like edge rules (bench/lib/cdn-upstream.ts), ${args.latencyMs} ms away. Client timeout ${args.timeoutS} s.`,
    ''
  )
  out.push(
    'Server: `node dist/main.js` as `startOurs` (bench/lib/processes.ts) starts it for every scenario: its defaults except what that sets (HOST, PORT, UPSTREAM_URL, …)' +
      `${
        Object.keys(env).length === 0
          ? '; no extra environment'
          : `, with ${Object.entries(env)
              .map(([k, v]) => `\`${k}=${v}\``)
              .join(', ')}`
      }.`,
    ''
  )
  out.push('## Goals', '')
  for (const g of goals) out.push(`- **${g.name}: ${g.pass ? 'PASS' : 'FAIL'}** (${g.evidence})`)
  out.push('', '## Readers, quiet vs flood', '')
  out.push(table(['', 'quiet', 'flood', 'flood ÷ quiet', 'goal'], rows))
  const perSecond = (t: Tally): string => Array.from(t.bySecond, (ms) => fmt(percentile(ms ?? [], 99), 0)).join(' ')
  const lags = (w: MetricsWindow): string => Array.from(w.lagBySecond, (ms) => fmt(ms ?? NaN, 0)).join(' ')
  out.push(
    '',
    "Second by second (the second in which a request was sent; the stall is the server's longest event-loop delay seen by the /metrics scrapes in that second):",
    ''
  )
  out.push(
    table(
      ['', 'ms each second'],
      [
        ["readers' p99, quiet", perSecond(q)],
        ["readers' p99, flood", perSecond(f)],
        ['server stall, quiet', lags(quiet.metrics)],
        ['server stall, flood', lags(flood.metrics)],
        ["benchmark (readers') own stall, quiet", Array.from(quiet.metrics.ownLagBySecond, (ms) => fmt(ms ?? NaN, 0)).join(' ')],
        ["benchmark (readers') own stall, flood", Array.from(flood.metrics.ownLagBySecond, (ms) => fmt(ms ?? NaN, 0)).join(' ')]
      ]
    )
  )
  out.push('', `Answers, quiet: ${statuses(q.statuses)}  `, `Answers, flood: ${statuses(f.statuses)}`)
  if (f.samples503.length > 0) {
    out.push(
      '',
      "What the readers' 503 pages in the flood said (text, distinct ones):",
      '',
      ...f.samples503.map((s) => `- \`${s.replace(/`/g, "'")}\``)
    )
  }
  out.push(
    '',
    'Error rate: answers other than 2xx, 3xx and 404, and failures without an answer, over all requests. Latency is measured from handing the request to the client pool (its queue included) to the end of the body; failures count with the time they took.'
  )
  out.push('', '## Attacker (flood phase)', '')
  if (attack === undefined) {
    out.push('No report from the attacker process.')
  } else {
    out.push(
      `Sent ${int(attack.sent)} (${fmt(attack.sent / args.durationS)} req/s), not sent because ${args.attackConnections * 4} were in flight: ${int(attack.skipped)}; answered ${int(attack.answered)}; p50 ${fmt(attack.p50, 1)} ms, p99 ${fmt(attack.p99, 1)} ms.`,
      ''
    )
    const kinds: Record<string, string> = {
      miss: 'a unique random DOI (cache miss)',
      dotdot: 'a DOI with `..` segments (raw, or `..%2F`)',
      long: "a DOI of 2,000 'é' (12 KB encoded)",
      huge: "a DOI of 3,900 'é' (23 KB encoded)",
      auth: '`?auth` on a cached DOI'
    }
    out.push(
      table(
        ['kind', 'request', 'answers'],
        Object.entries(attack.byKind).map(([k, m]) => [k, kinds[k] ?? k, statuses(m)])
      )
    )
  }
  out.push('', '## Upstream', '')
  out.push(
    table(
      ['', 'quiet', 'flood'],
      [
        ['requests answered by the fake upstream (records, 404s)', int(quiet.upstream.answered), int(flood.upstream.answered)],
        ['refused by the edge (HTML)', statuses(quiet.upstream.cdn.rejected), statuses(flood.upstream.cdn.rejected)]
      ]
    )
  )
  out.push('', "Our server's own count (`/metrics`, increase during the phase):", '')
  const keys = new Set<string>()
  const dq = new Map(deltas(quiet.metrics.first, quiet.metrics.last, interesting))
  const df = new Map(deltas(flood.metrics.first, flood.metrics.last, interesting))
  for (const k of [...dq.keys(), ...df.keys()]) keys.add(k)
  out.push(
    keys.size === 0
      ? 'No counters moved (or /metrics could not be read).'
      : table(
          ['series', 'quiet', 'flood'],
          [...keys].sort().map((k) => [`\`${k}\``, int(dq.get(k) ?? 0), int(df.get(k) ?? 0)])
        )
  )
  out.push(
    '',
    `/metrics scrapes: quiet ${quiet.metrics.scrapes} (failed ${quiet.metrics.failures}), flood ${flood.metrics.scrapes} (failed ${flood.metrics.failures}).`
  )
  out.push('', '## Reading this', '')
  out.push(
    "- Everything runs on this machine: the server, the fake upstream, the readers (this process) and the attacker share the cores, so part of any flood slowdown is CPU the attacker's client and the upstream take. Compare the two phases of the same run."
  )
  out.push(
    "- The edge rules: a `.`/`..` path segment or a bad %-escape is an HTML 400, a request line over 8,192 bytes an HTML 414, over 32 KB of headers an HTML 431, each after the same latency as an API answer. The 3,900-'é' DOI is over our own MAX_HEADER_BYTES (16 KB): we refuse it ourselves (431) and it never reaches the upstream."
  )
  out.push(
    '- "Breaker opened" means a gauge named like `…circuit…`/`…breaker…` in /metrics reached 2 (open) in a scrape (every 250 ms), or a lookup was refused because the breaker was open (`DP_UPSTREAM_CIRCUIT_OPEN` in `doi_proxy_upstream_errors_total`).'
  )
  const text = out.join('\n') + '\n'
  return { text, pass: goals.every((g) => g.pass) }
}

/** The counters the report lists: upstream traffic, cache, outcomes, refusals, the breaker. */
function interesting(key: string): boolean {
  return /^doi_proxy_(upstream_|cache_lookups|resolutions|refusals|[a-z_]*(breaker|circuit))/.test(key)
}

function sumValues(r: Record<string, number>): number {
  return Object.values(r).reduce((a, b) => a + b, 0)
}

main().then(
  (code) => {
    process.exitCode = code
  },
  (err: unknown) => {
    process.stderr.write(`[hostile] ${(err as Error)?.stack ?? String(err)}\n`)
    process.exitCode = 2
  }
)
