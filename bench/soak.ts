/**
 * The soak: our server under sustained mixed load, for a configurable time, against a fake upstream
 * that fails on a schedule (bench/soak-upstream.ts: healthy → down → healthy → slow → 429 → 500 …).
 * Samples requests, answers by status and X-Cache, errors by kind, stale answers, RSS, heap and the
 * circuit breaker; prints a report and writes it to bench/SOAK.md. Exit code 1 when a verdict fails:
 * "memory flat" or "zero non-upstream errors".
 *
 * `npm run soak` (120 s), `npm run soak -- --quick` (30 s), `npm run soak -- --help`.
 */
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { mkdirSync, openSync, closeSync, readFileSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { createInterface } from 'node:readline'
import { Pool } from 'undici'
import { zipfSampler } from './lib/load.js'
import { seededRandom } from './lib/random.js'
import { addEnvPair, forEachOption } from './lib/args.js'
import { ensureBuilt, freePort, ROOT, stop, TMP, track } from './lib/processes.js'
import { parseSchedule } from './soak-upstream.js'
import type { Phase, ScheduleStep } from './soak-upstream.js'

const HELP = `Usage: node --import tsx bench/soak.ts [options]     (npm run soak -- [options])
  --duration S            seconds of load (default 120)
  --quick                 30 s, a shorter schedule and shorter TTLs
  --concurrency N         requests in flight at once (default 32)
  --timeout S             client timeout per request (default 15)
  --sample S              seconds per table row (default 5; 2 with --quick)
  --schedule P:S,…        the upstream's cycling phases (healthy, down, slow, 429, 500) and seconds
                          (default ${'healthy:20,down:12,healthy:12,slow:12,429:12,500:12'})
  --latency MS            the healthy upstream's latency (default 30)
  --server-env KEY=VALUE  extra or overriding environment for our server; repeatable
  --output FILE           where the report goes (default bench/SOAK.md; "-" for stdout only)`

// ------------------------------------------------------------------ settings

interface Args {
  durationS: number
  quick: boolean
  concurrency: number
  timeoutS: number
  sampleS: number
  steps: ScheduleStep[]
  latencyMs: number
  serverEnv: Record<string, string>
  output: string
}

const DEFAULT_SCHEDULE = 'healthy:20,down:12,healthy:12,slow:12,429:12,500:12'
const QUICK_SCHEDULE = 'healthy:6,down:4,healthy:4,slow:5,429:4,500:4'

function parseArgs(argv: string[]): Args {
  const quick = argv.includes('--quick')
  const args: Args = {
    durationS: quick ? 30 : 120,
    quick,
    concurrency: 32,
    timeoutS: 15,
    sampleS: quick ? 2 : 5,
    steps: parseSchedule(quick ? QUICK_SCHEDULE : DEFAULT_SCHEDULE),
    latencyMs: 30,
    serverEnv: {},
    output: join(ROOT, 'bench', 'SOAK.md')
  }
  forEachOption(argv, HELP, (arg, value) => {
    const positive = (): number => {
      const n = Number(value())
      if (!Number.isFinite(n) || n <= 0) throw new Error(`${arg} needs a number > 0`)
      return n
    }
    if (arg === '--quick') return true
    else if (arg === '--duration') args.durationS = positive()
    else if (arg === '--concurrency') args.concurrency = Math.round(positive())
    else if (arg === '--timeout') args.timeoutS = positive()
    else if (arg === '--sample') args.sampleS = positive()
    else if (arg === '--schedule') args.steps = parseSchedule(value())
    else if (arg === '--latency') args.latencyMs = Number(value())
    else if (arg === '--output') args.output = value()
    else if (arg === '--server-env') addEnvPair(value(), args.serverEnv)
    else return false
    return true
  })
  return args
}

/** Our server's environment for the soak: short timeouts and TTLs so every failure path runs. */
function serverEnv(args: Args): Record<string, string> {
  return {
    LOG_LEVEL: 'warn',
    LOCAL_STORE_DIR: '', // no sample store: every DOI comes from the failing upstream
    CACHE_FILE: '', // no snapshot: each soak starts cold
    UPSTREAM_TIMEOUT_MS: '1500', // the slow phase (2–5 s) is past it
    CACHE_MAX_TTL_SECONDS: args.quick ? '10' : '20', // records expire during the run: stale serving happens
    CACHE_MIN_TTL_SECONDS: '5',
    NEGATIVE_TTL_SECONDS: '10',
    // A small cache fills within seconds, so any later growth of the heap is not the cache filling.
    CACHE_MAX_ENTRIES: '2000',
    BREAKER_RESET_MS: '3000', // phases are seconds long: probe soon
    BREAKER_WINDOW_MS: '10000',
    SHUTDOWN_GRACE_MS: '3000',
    ...args.serverEnv
  }
}

// ------------------------------------------------------------------ processes

function spawnChild(args: string[], env: NodeJS.ProcessEnv, stdout: 'pipe' | number, stderr: number): ChildProcess {
  // Tracked by bench/lib/processes.ts: nothing we start outlives us.
  return track(spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', stdout, stderr] }))
}

async function waitReady(child: ChildProcess, name: string, url: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited before it was ready (see bench/.tmp)`)
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1_000) })
      await res.arrayBuffer()
      if (res.status === 200) return
    } catch {
      /* not listening yet */
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`${name} did not become ready at ${url} within ${timeoutMs} ms`)
}

interface PhaseChange {
  phase: Phase
  at: number
  ended?: { phase: Phase; requests: number }
}

interface Upstream {
  origin: string
  changes: PhaseChange[]
  child: ChildProcess
}

async function startSoakUpstream(args: Args, logPath: string): Promise<Upstream> {
  const port = await freePort()
  const log = openSync(logPath, 'w')
  const schedule = args.steps.map((s) => `${s.phase}:${s.seconds}`).join(',')
  const child = spawnChild(
    [
      '--import',
      'tsx',
      join(ROOT, 'bench', 'soak-upstream.ts'),
      '--port',
      String(port),
      '--latency',
      String(args.latencyMs),
      '--schedule',
      schedule
    ],
    process.env,
    'pipe',
    log
  )
  closeSync(log)
  const changes: PhaseChange[] = []
  if (child.stdout !== null) {
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const event = JSON.parse(line) as Partial<PhaseChange>
        if (typeof event.phase === 'string' && typeof event.at === 'number') changes.push(event as PhaseChange)
      } catch {
        /* not ours */
      }
    })
  }
  const origin = `http://127.0.0.1:${port}`
  await waitReady(child, 'soak upstream', `${origin}/__stats`)
  return { origin, changes, child }
}

async function startServer(
  upstream: Upstream,
  env: Record<string, string>,
  logPath: string
): Promise<{ baseUrl: string; child: ChildProcess }> {
  const port = await freePort()
  const log = openSync(logPath, 'w')
  const child = spawnChild(
    [join(ROOT, 'dist', 'main.js')],
    {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      UPSTREAM_URL: `${upstream.origin}/api/handles`,
      ...env
    },
    log,
    log
  )
  closeSync(log)
  const baseUrl = `http://127.0.0.1:${port}`
  await waitReady(child, 'doi-proxy', `${baseUrl}/readyz`)
  return { baseUrl, child }
}

// ------------------------------------------------------------------ the request mix

type Kind = 'doi' | 'new' | 'missing' | 'api' | 'noredirect' | 'conneg'

/** Share of each kind of request, in percent. */
const MIX: ReadonlyArray<[Kind, number]> = [
  ['doi', 55],
  ['new', 5],
  ['missing', 8],
  ['api', 12],
  ['noredirect', 8],
  ['conneg', 12]
]
const POPULAR_DOIS = 20_000
const HOT_RANKS = 100 // the DOIs "everyone" asks for: they must keep resolving through every phase
const MISSING_DOIS = 500

interface Planned {
  kind: Kind
  path: string
  headers: Record<string, string>
  hot: boolean
}

function requestPlanner(seed: number): () => Planned {
  const random = seededRandom(seed)
  const popular = zipfSampler(POPULAR_DOIS, 1.2, random)
  const missing = zipfSampler(MISSING_DOIS, 1.0, random)
  const total = MIX.reduce((sum, [, w]) => sum + w, 0)
  let fresh = 0
  const doi = (rank: number): string => `10.${5000 + (rank % 10)}/soak.${rank}`
  const pick = (): Kind => {
    let u = random() * total
    for (const [kind, weight] of MIX) {
      if ((u -= weight) < 0) return kind
    }
    return 'doi'
  }
  return (): Planned => {
    const kind = pick()
    if (kind === 'new') return { kind, path: `/10.5000/new.${seed}.${fresh++}`, headers: {}, hot: false }
    if (kind === 'missing') return { kind, path: `/10.5001/missing-${missing()}`, headers: {}, hot: false }
    const rank = popular()
    const hot = rank < HOT_RANKS
    if (kind === 'api') return { kind, path: `/api/handles/${doi(rank)}`, headers: {}, hot }
    if (kind === 'noredirect') return { kind, path: `/${doi(rank)}?noredirect`, headers: {}, hot }
    if (kind === 'conneg') return { kind, path: `/${doi(rank)}`, headers: { accept: 'application/x-bibtex' }, hot }
    return { kind, path: `/${doi(rank)}`, headers: {}, hot }
  }
}

// ------------------------------------------------------------------ counting

/** What one answer (or failure) was. */
type Outcome =
  | { ok: true; status: number; cache: string }
  | { ok: false; upstream: true; status: number; cache: string }
  | { ok: false; upstream: false; error: string }

/** Counters for one interval (a table row), a phase, or the whole run. */
class Tally {
  requests = 0
  s2xx = 0
  s3xx = 0
  s404 = 0
  upstream5xx = 0
  ours = 0 // non-upstream errors
  stale = 0
  hot = 0
  hotOk = 0
  latencies: number[] = []
  byCache = new Map<string, number>()
  byError = new Map<string, number>()

  add(outcome: Outcome, ms: number, hot: boolean): void {
    this.requests++
    this.latencies.push(ms)
    if (hot) this.hot++
    if (outcome.ok || outcome.upstream) bump(this.byCache, outcome.cache)
    if (outcome.ok) {
      if (hot) this.hotOk++
      if (outcome.status === 404) this.s404++
      else if (outcome.status < 300) this.s2xx++
      else this.s3xx++
      if (outcome.cache === 'STALE') this.stale++
    } else if (outcome.upstream) {
      this.upstream5xx++
      bump(this.byError, `${outcome.status} (upstream)`)
    } else {
      this.ours++
      bump(this.byError, outcome.error)
    }
  }

  percentile(p: number): number {
    if (this.latencies.length === 0) return NaN
    const sorted = Float64Array.from(this.latencies).sort()
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN
  }
}

function bump(map: Map<string, number>, key: string, by = 1): void {
  map.set(key, (map.get(key) ?? 0) + by)
}

// Our error pages and API errors name the registry when it caused them (the DOI registry, or the registry
// server of one prefix), and the deadline page says a lookup took too long (src/resolve/upstream/errors.ts); load
// shedding and our own faults say neither.
const UPSTREAM_MESSAGE = /registry|took longer than we allow a request/

/** Sort an answer into ok / upstream-caused / ours. */
function classify(status: number, cache: string, body: string): Outcome {
  if ((status >= 200 && status < 400) || status === 404) return { ok: true, status, cache }
  if ((status === 502 || status === 503 || status === 504) && UPSTREAM_MESSAGE.test(body)) {
    return { ok: false, upstream: true, status, cache }
  }
  if (status >= 500) return { ok: false, upstream: false, error: `${status} (ours)` }
  return { ok: false, upstream: false, error: `unexpected ${status}` }
}

function describeFailure(err: unknown, timedOut: boolean): string {
  if (timedOut) return 'client timeout'
  const e = err as { code?: string; cause?: { code?: string }; message?: string }
  const code = e?.code ?? e?.cause?.code ?? ''
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'connection reset by our server'
  if (code === 'ECONNREFUSED') return 'connection refused by our server'
  return `client error ${code === '' ? String(e?.message ?? err) : code}`
}

// ------------------------------------------------------------------ load

interface Clock {
  startedAt: number
}

async function drive(
  baseUrl: string,
  args: Args,
  clock: Clock,
  onAnswer: (planned: Planned, outcome: Outcome, startedAt: number, ms: number) => void
): Promise<void> {
  const pool = new Pool(baseUrl, { connections: args.concurrency, keepAliveTimeout: 2_000 })
  const next = requestPlanner(0x50a4)
  const deadline = clock.startedAt + args.durationS * 1000
  async function worker(): Promise<void> {
    while (Date.now() < deadline) {
      const planned = next()
      const signal = AbortSignal.timeout(args.timeoutS * 1000)
      const started = Date.now()
      const t0 = performance.now()
      let outcome: Outcome
      try {
        const res = await pool.request({
          path: planned.path,
          method: 'GET',
          headers: { 'user-agent': 'doi-proxy-soak', ...planned.headers },
          signal
        })
        const cache = String(res.headers['x-cache'] ?? '-').toUpperCase()
        const body = res.statusCode >= 500 ? await res.body.text() : (await res.body.dump(), '')
        outcome = classify(res.statusCode, cache, body)
      } catch (err) {
        outcome = { ok: false, upstream: false, error: describeFailure(err, signal.aborted) }
      }
      onAnswer(planned, outcome, started, performance.now() - t0)
    }
  }
  try {
    await Promise.all(Array.from({ length: args.concurrency }, worker))
  } finally {
    await pool.destroy()
  }
}

// ------------------------------------------------------------------ metrics

interface Scrape {
  at: number
  rss: number
  heap: number
  breaker: number
  entries: number
  staleTotal: number
  retries: number
  queue: number
}

/** The few metrics the soak needs, from Prometheus text. */
function parseMetrics(text: string, at: number): Scrape {
  const values = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue
    const space = line.lastIndexOf(' ')
    const name = line.slice(0, space)
    values.set(name, Number(line.slice(space + 1)))
  }
  const get = (name: string): number => values.get(name) ?? NaN
  return {
    at,
    rss: get('doi_proxy_process_resident_memory_bytes'),
    heap: get('doi_proxy_nodejs_heap_size_used_bytes'),
    breaker: get('doi_proxy_upstream_circuit_state'),
    entries: get('doi_proxy_cache_entries'),
    staleTotal: get('doi_proxy_stale_answers_total'),
    retries: get('doi_proxy_upstream_retries_total'),
    queue: get('doi_proxy_upstream_queue_length')
  }
}

async function scrape(baseUrl: string): Promise<Scrape> {
  const res = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(5_000) })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`)
  return parseMetrics(text, Date.now())
}

const BREAKER = ['closed', 'half-open', 'open']

// ------------------------------------------------------------------ verdicts

const MiB = 1024 * 1024
/**
 * The heap's lowest point may rise at most 10 % from the middle third to the last. Not a regression
 * slope: under this load V8 lets old-space garbage pile up for ~50 s before a major GC (a 300 s run
 * saw 29 → 123 → 30 MiB), a ramp that would dominate any slope fitted over one minute.
 */
const HEAP_FLOOR_GROWTH_LIMIT = 1.1
const RSS_GROWTH_LIMIT = 1.2
/** Least-squares slope of y over x. */
function slope(points: ReadonlyArray<[number, number]>): number {
  const n = points.length
  if (n < 2) return NaN
  const mx = points.reduce((s, [x]) => s + x, 0) / n
  const my = points.reduce((s, [, y]) => s + y, 0) / n
  let num = 0
  let den = 0
  for (const [x, y] of points) {
    num += (x - mx) * (y - my)
    den += (x - mx) ** 2
  }
  return den === 0 ? NaN : num / den
}

interface Row {
  t0: number
  t1: number
  phases: string
  tally: Tally
  rss: number
  heap: number
  heapFloor: number
  breaker: string
  entries: number
  staleMetric: number
}

interface Verdict {
  name: string
  pass: boolean
  rule: string
  evidence: string
}

function memoryVerdict(rows: readonly Row[], scrapes: readonly Scrape[], startedAt: number, durationS: number): Verdict {
  const rule =
    `the lowest heap used (\`doi_proxy_nodejs_heap_size_used_bytes\`, sampled every second) in the last third of the run ≤ ${HEAP_FLOOR_GROWTH_LIMIT} × the lowest in the middle third, ` +
    `and the highest RSS in the last third ≤ ${RSS_GROWTH_LIMIT} × the highest in the middle third (the heap-floor slope is shown for information: one major-GC cycle lasts about a minute here, so it is no leak test in a short run)`
  const third = (durationS * 1000) / 3
  const within = (from: number, to: number, pick: (s: Scrape) => number): number[] =>
    scrapes
      .filter((s) => s.at >= startedAt + from && s.at < startedAt + to)
      .map(pick)
      .filter(Number.isFinite)
  const middleRss = Math.max(...within(third, 2 * third, (s) => s.rss))
  const lastRss = Math.max(...within(2 * third, 3 * third + 60_000, (s) => s.rss))
  const middleHeap = Math.min(...within(third, 2 * third, (s) => s.heap))
  const lastHeap = Math.min(...within(2 * third, 3 * third + 60_000, (s) => s.heap))
  const heapOk = Number.isFinite(middleHeap) && Number.isFinite(lastHeap) && lastHeap <= HEAP_FLOOR_GROWTH_LIMIT * middleHeap
  const rssOk = Number.isFinite(middleRss) && Number.isFinite(lastRss) && lastRss <= RSS_GROWTH_LIMIT * middleRss
  const half = startedAt + durationS * 500
  const floors = rows
    .filter((r) => r.t0 >= half && Number.isFinite(r.heapFloor))
    .map((r): [number, number] => [(r.t0 + r.t1) / 2 / 60_000, r.heapFloor / MiB])
  const evidence =
    `lowest heap middle third ${fmt(middleHeap / MiB, 1)} MiB, last third ${fmt(lastHeap / MiB, 1)} MiB (${fmt(lastHeap / middleHeap, 3)}×, limit ${HEAP_FLOOR_GROWTH_LIMIT}×); ` +
    `highest RSS middle third ${fmt(middleRss / MiB, 1)} MiB, last third ${fmt(lastRss / MiB, 1)} MiB (${fmt(lastRss / middleRss, 3)}×, limit ${RSS_GROWTH_LIMIT}×); ` +
    `heap-floor slope over the second half ${fmt(slope(floors), 2)} MiB/min (information)`
  return { name: 'memory flat', pass: heapOk && rssOk, rule, evidence }
}

function errorsVerdict(total: Tally, scrapeFailures: number, serverExit: string | undefined): Verdict {
  const rule =
    'no answer or failure caused by our server: no 500, no 5xx that does not name the upstream (e.g. load shedding), no unexpected status, no connection reset or refused by our server, no client timeout, no failed /metrics scrape, and the server still running at the end'
  const kinds = [...total.byError].filter(([k]) => !k.endsWith('(upstream)'))
  const count = total.ours + scrapeFailures + (serverExit === undefined ? 0 : 1)
  const parts = kinds.map(([k, n]) => `${k}: ${n}`)
  if (scrapeFailures > 0) parts.push(`/metrics scrape failed: ${scrapeFailures}`)
  if (serverExit !== undefined) parts.push(`server exited during the run: ${serverExit}`)
  return {
    name: 'zero non-upstream errors',
    pass: count === 0,
    rule,
    evidence: count === 0 ? `0 of ${total.requests} requests` : parts.join('; ')
  }
}

// ------------------------------------------------------------------ report

function fmt(n: number, digits = 0): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '?'
}

function int(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '?'
}

function table(header: string[], rows: string[][]): string {
  const align = header.map((_, i) => (i <= 1 ? '---' : '---:'))
  return [header, align, ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n')
}

interface LogSummary {
  byMessage: Map<string, number>
  errorCodes: Map<string, number>
  breakerChanges: Array<{ at: number; state: string }>
  samples: string[]
}

/** Count the server's log lines by level and message; keep the first few non-upstream error lines as evidence. */
function summariseLog(path: string): LogSummary {
  const summary: LogSummary = { byMessage: new Map(), errorCodes: new Map(), breakerChanges: [], samples: [] }
  let text = ''
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    return summary
  }
  const levels: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' }
  for (const line of text.split('\n')) {
    if (line === '') continue
    let entry: { level?: number; time?: number; msg?: string; code?: string; state?: string }
    try {
      entry = JSON.parse(line)
    } catch {
      bump(summary.byMessage, `(not JSON) ${line.slice(0, 80)}`)
      continue
    }
    bump(summary.byMessage, `${levels[entry.level ?? 0] ?? entry.level} · ${entry.msg ?? ''}`)
    if (entry.level !== undefined && entry.level >= 50) {
      bump(summary.errorCodes, entry.code ?? '(no code)')
      if (!(entry.code ?? '').startsWith('DP_UPSTREAM_') && summary.samples.length < 5) summary.samples.push(line.slice(0, 600))
    }
    if (entry.state !== undefined && summary.breakerChanges.length < 200) {
      summary.breakerChanges.push({ at: entry.time ?? NaN, state: entry.state })
    }
  }
  return summary
}

interface Report {
  args: Args
  env: Record<string, string>
  startedAt: number
  endedAt: number
  rows: Row[]
  phases: Map<string, Tally>
  upstreamByPhase: Map<string, number>
  total: Tally
  scrapes: Scrape[]
  scrapeFailures: number
  verdicts: Verdict[]
  log: LogSummary
  logPath: string
}

function render(r: Report): string {
  const { args, total } = r
  const seconds = (r.endedAt - r.startedAt) / 1000
  const first = r.scrapes[0]
  const lastScrape = r.scrapes.at(-1)
  const out: string[] = []
  out.push('# Soak results', '')
  out.push(
    `Written by \`bench/soak.ts\` (${args.quick ? '`npm run soak -- --quick`' : '`npm run soak`'}) on ${new Date(r.startedAt).toISOString()}, Node ${process.version}. Do not edit by hand.`,
    ''
  )
  out.push(
    `${fmt(seconds, 1)} s of load at concurrency ${args.concurrency}, client timeout ${args.timeoutS} s; upstream schedule (cycling) \`${args.steps.map((s) => `${s.phase}:${s.seconds}`).join(',')}\`, healthy latency ${args.latencyMs} ms.`
  )
  out.push(
    `Server environment: ${Object.entries(r.env)
      .map(([k, v]) => `\`${k}=${v}\``)
      .join(', ')}. Log: \`${relative(ROOT, r.logPath)}\`.`,
    ''
  )
  out.push('## Verdicts', '')
  for (const v of r.verdicts) out.push(`- **${v.name}: ${v.pass ? 'PASS' : 'FAIL'}**: ${v.evidence}.  \n  Rule: ${v.rule}.`)
  out.push('', '## Over time', '')
  out.push(
    table(
      ['t (s)', 'phase', 'req/s', '2xx', '3xx', '404', '5xx up', 'ours', 'stale', 'p99 ms', 'entries', 'RSS MiB', 'heap MiB', 'breaker'],
      r.rows.map((row) => [
        `${fmt((row.t0 - r.startedAt) / 1000)}–${fmt((row.t1 - r.startedAt) / 1000)}`,
        row.phases,
        fmt(row.tally.requests / ((row.t1 - row.t0) / 1000)),
        int(row.tally.s2xx),
        int(row.tally.s3xx),
        int(row.tally.s404),
        int(row.tally.upstream5xx),
        int(row.tally.ours),
        int(row.tally.stale),
        fmt(row.tally.percentile(99)),
        int(row.entries),
        fmt(row.rss / MiB, 1),
        fmt(row.heap / MiB, 1),
        row.breaker
      ])
    )
  )
  out.push(
    '',
    '`5xx up`: 502/503/504 whose page names the upstream. `ours`: non-upstream errors. `stale`: answers with `X-Cache: STALE`. RSS and heap: the last sample of the row; breaker: its state at the end of the row.',
    ''
  )
  out.push('## Totals', '')
  const statuses = `2xx ${int(total.s2xx)}, 3xx ${int(total.s3xx)}, 404 ${int(total.s404)}, upstream 5xx ${int(total.upstream5xx)}, non-upstream errors ${int(total.ours)}`
  out.push(`- requests served: **${int(total.requests)}** (${fmt(total.requests / seconds)} req/s); ${statuses}`)
  out.push(
    `- X-Cache: ${[...total.byCache]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${int(n)}`)
      .join(', ')}`
  )
  out.push(
    `- stale answers: ${int(total.stale)} seen by the client, ${int((lastScrape?.staleTotal ?? NaN) - (first?.staleTotal ?? 0))} counted by \`doi_proxy_stale_answers_total\` (it counts stale *records*: one redirect may use three, the DOI's, its prefix's and the prefix's service handle's, while X-Cache shows the DOI's own)`
  )
  out.push(
    `- hot DOIs (Zipf ranks < ${HOT_RANKS}) answered: ${int(total.hotOk)} of ${int(total.hot)} (${fmt((100 * total.hotOk) / total.hot, 2)} %)`
  )
  out.push(`- latency: p50 ${fmt(total.percentile(50), 1)} ms, p99 ${fmt(total.percentile(99))} ms, max ${fmt(total.percentile(100))} ms`)
  out.push(
    `- upstream retries (\`doi_proxy_upstream_retries_total\`): ${int((lastScrape?.retries ?? NaN) - (first?.retries ?? 0))}; breaker state changes in the log: ${r.log.breakerChanges.length} (opened ${r.log.breakerChanges.filter((c) => c.state === 'open').length}×)`
  )
  if (r.log.breakerChanges.length > 0) {
    out.push(
      `- breaker (seconds after the load started): ${r.log.breakerChanges.map((c) => `${fmt((c.at - r.startedAt) / 1000, 1)} ${c.state}`).join(', ')}`
    )
  }
  const rss = r.scrapes.map((s) => s.rss / MiB).filter(Number.isFinite)
  const heap = r.scrapes.map((s) => s.heap / MiB).filter(Number.isFinite)
  out.push(
    `- memory (${r.scrapes.length} samples, 1 s apart): RSS ${fmt(Math.min(...rss), 1)}–${fmt(Math.max(...rss), 1)} MiB, heap used ${fmt(Math.min(...heap), 1)}–${fmt(Math.max(...heap), 1)} MiB`,
    ''
  )
  out.push('## Errors by kind', '')
  const errors = [...total.byError].sort((a, b) => b[1] - a[1])
  out.push(
    errors.length === 0
      ? 'None.'
      : table(
          ['kind', 'caused by', 'count'],
          errors.map(([k, n]) => [k, k.endsWith('(upstream)') ? 'upstream' : '**us**', int(n)])
        )
  )
  if (r.scrapeFailures > 0) out.push('', `/metrics scrapes that failed: ${r.scrapeFailures}`)
  out.push('', '## By upstream phase', '')
  out.push('Requests are counted in the phase in which they were sent.', '')
  out.push(
    table(
      ['phase', 'requests', 'ok (2xx/3xx/404)', 'upstream 5xx', 'stale', 'hot DOIs ok', 'p50 ms', 'p99 ms', 'upstream requests'],
      [...r.phases].map(([phase, t]) => [
        phase,
        int(t.requests),
        `${fmt((100 * (t.s2xx + t.s3xx + t.s404)) / t.requests, 1)} %`,
        int(t.upstream5xx),
        int(t.stale),
        `${fmt((100 * t.hotOk) / t.hot, 2)} %`,
        fmt(t.percentile(50), 1),
        fmt(t.percentile(99)),
        phase === 'down' ? '(refused)' : int(r.upstreamByPhase.get(phase) ?? NaN)
      ])
    )
  )
  out.push('', '## Server log', '')
  const lines = [...r.log.byMessage].sort((a, b) => b[1] - a[1])
  out.push(
    lines.length === 0
      ? 'Empty.'
      : table(
          ['level · message', 'lines'],
          lines.map(([k, n]) => [k, int(n)])
        )
  )
  if (r.log.errorCodes.size > 0) out.push('', `Error lines by code: ${[...r.log.errorCodes].map(([k, n]) => `${k} ${int(n)}`).join(', ')}`)
  if (r.log.samples.length > 0) out.push('', 'First non-upstream error lines:', '', '```', ...r.log.samples, '```')
  return out.join('\n') + '\n'
}

// ------------------------------------------------------------------ the run

function phasesDuring(changes: readonly PhaseChange[], t0: number, t1: number): string {
  let current: string | undefined
  const seen: string[] = []
  for (const c of changes) {
    if (c.at <= t0) current = c.phase
    else if (c.at < t1) seen.push(c.phase)
  }
  const names = [current ?? 'healthy', ...seen]
  return names.filter((name, i) => name !== names[i - 1]).join(' → ')
}

function phaseAt(changes: readonly PhaseChange[], t: number): string {
  let current = 'healthy'
  for (const c of changes) {
    if (c.at <= t) current = c.phase
    else break
  }
  return current
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2))
  const log = (line: string): void => {
    process.stderr.write(`[soak] ${line}\n`)
  }
  ensureBuilt(log)
  mkdirSync(TMP, { recursive: true })
  const logPath = join(TMP, 'soak-server.log')
  const env = serverEnv(args)
  const upstream = await startSoakUpstream(args, join(TMP, 'soak-upstream.log'))
  let server: { baseUrl: string; child: ChildProcess } | undefined
  try {
    server = await startServer(upstream, env, logPath)
    let serverExit: string | undefined
    server.child.once('exit', (code, signal) => {
      serverExit = `code ${code}, signal ${signal}`
    })
    log(
      `server ${server.baseUrl}, upstream ${upstream.origin}; ${args.durationS} s of load at concurrency ${args.concurrency}; log ${relative(ROOT, logPath)}`
    )

    const total = new Tally()
    const phases = new Map<string, Tally>()
    let interval = new Tally()
    const scrapes: Scrape[] = []
    let scrapeFailures = 0
    const rows: Row[] = []
    const clock: Clock = { startedAt: Date.now() }
    await (await fetch(`${upstream.origin}/__start`)).arrayBuffer()

    const baseUrl = server.baseUrl
    const sampleMetrics = async (): Promise<void> => {
      try {
        scrapes.push(await scrape(baseUrl))
      } catch {
        scrapeFailures++
      }
    }
    let rowStart = clock.startedAt
    const closeRow = (): void => {
      const now = Date.now()
      const inRow = scrapes.filter((s) => s.at >= rowStart && s.at <= now)
      const last = inRow.at(-1) ?? scrapes.at(-1)
      const row: Row = {
        t0: rowStart,
        t1: now,
        phases: phasesDuring(upstream.changes, rowStart, now),
        tally: interval,
        rss: last?.rss ?? NaN,
        heap: last?.heap ?? NaN,
        heapFloor: Math.min(...inRow.map((s) => s.heap).filter(Number.isFinite)),
        breaker: BREAKER[last?.breaker ?? -1] ?? '?',
        entries: last?.entries ?? NaN,
        staleMetric: last?.staleTotal ?? NaN
      }
      rows.push(row)
      const t = (now - clock.startedAt) / 1000
      log(
        `${fmt(t).padStart(4)} s  ${row.phases.padEnd(18)} ${fmt(interval.requests / ((now - rowStart) / 1000)).padStart(6)} req/s  5xx up ${String(interval.upstream5xx).padStart(5)}  ours ${interval.ours}  stale ${String(interval.stale).padStart(5)}  RSS ${fmt(row.rss / MiB, 1)} MiB  heap ${fmt(row.heap / MiB, 1)} MiB  breaker ${row.breaker}`
      )
      interval = new Tally()
      rowStart = now
    }
    let scraping = Promise.resolve()
    const scrapeTimer = setInterval(() => {
      scraping = scraping.then(sampleMetrics)
    }, 1_000)
    const rowTimer = setInterval(() => {
      scraping = scraping.then(closeRow)
    }, args.sampleS * 1000)

    await drive(baseUrl, args, clock, (planned, outcome, sentAt, ms) => {
      const phase = phaseAt(upstream.changes, sentAt)
      let perPhase = phases.get(phase)
      if (perPhase === undefined) phases.set(phase, (perPhase = new Tally()))
      for (const t of [total, interval, perPhase]) t.add(outcome, ms, planned.hot)
    })
    clearInterval(scrapeTimer)
    clearInterval(rowTimer)
    await scraping
    await sampleMetrics()
    if (interval.requests > 0) closeRow()
    const endedAt = Date.now()
    const exitBeforeStop = serverExit

    await stop(server.child)
    await stop(upstream.child)
    const upstreamByPhase = new Map<string, number>()
    for (const c of upstream.changes) if (c.ended !== undefined) bump(upstreamByPhase, c.ended.phase, c.ended.requests)

    const verdicts = [memoryVerdict(rows, scrapes, clock.startedAt, args.durationS), errorsVerdict(total, scrapeFailures, exitBeforeStop)]
    const report = render({
      args,
      env,
      startedAt: clock.startedAt,
      endedAt,
      rows,
      phases,
      upstreamByPhase,
      total,
      scrapes,
      scrapeFailures,
      verdicts,
      log: summariseLog(logPath),
      logPath
    })
    process.stdout.write('\n' + report)
    if (args.output !== '-') {
      writeFileSync(args.output, report)
      log(`report written to ${relative(ROOT, args.output)}`)
    }
    return verdicts.every((v) => v.pass) ? 0 : 1
  } finally {
    if (server !== undefined) await stop(server.child)
    await stop(upstream.child)
  }
}

main().then(
  (code) => {
    process.exitCode = code
  },
  (err: unknown) => {
    process.stderr.write(`[soak] ${(err as Error)?.stack ?? String(err)}\n`)
    process.exitCode = 2
  }
)
