/**
 * `doi-proxy check --verify metadata,retraction,landing` at speed (issue 41, item 6): the real command
 * (`node bin/doi-proxy.js check --server URL`), a process of its own, against our server (`node
 * dist/main.js`), a process of its own, against fakes in this process (bench/lib/verify-fakes.ts: the
 * Handle API, an agency, Crossref's REST API and a landing site per host on 127.0.x.y), every one of
 * them answering after the same latency.
 *
 * - cached: a 1,000-entry .bib verified once, then three more times (target: under 2 s), beside the same
 *   check without --verify on the same cached server, and `check --help` (starting node and the command);
 *   each beside its floor: the same check against bench/baselines/floor.mjs writing our server's own
 *   answers to the check's batches (POST /api/batch, and ?verify=…; one batch each, CHUNK entries at most),
 *   what the command itself costs when the server costs nothing;
 * - uncached: the same .bib on a fresh server, at LANDING_HOST_DELAY_MS as set (1,000 ms, the default) and
 *   at 0; its time ÷ the ideal, the longest any one limit alone makes it take (below), and each fake's
 *   own count: requests, the most in flight at once, the shortest gap between two starts;
 * - memory: 10,000, 50,000 and 100,000 entries (.bib files of 10,000), each on a fresh server, latency and
 *   delay 0: the check's heap after a full GC when it writes its report (it then holds every entry and
 *   verdict) and its peak RSS, the server's heap after a full GC at rest after the run, per entry.
 *
 *   npm run bench:verify
 *   npm run bench:verify -- --quick                 200 entries, memory at 2,000 and 10,000
 *   npm run bench:verify -- --memory 0 --output -   speed only, printed
 *
 * Writes the verify section of bench/RESULTS.md.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { CHUNK } from '../src/command/check/ask.js'
import { OPTIONS } from '../src/config/schema.js'
import { addEnvPair, forEachOption } from './lib/args.js'
import { codeVersion } from './lib/children.js'
import { answerBytes, describeAnswer, recordAnswers, writeAnswersFile } from './lib/floor-answer.js'
import { cpuMs, ensureBuilt, ROOT, startFloor, startOurs, track } from './lib/processes.js'
import type { Target, UpstreamProcess } from './lib/processes.js'
import { machine, runBench, writeSection, RESULTS_PATH } from './lib/results.js'
import { startVerifyFakes } from './lib/verify-fakes.js'
import type { Counter, VerifyFakes } from './lib/verify-fakes.js'
import { landingHosts, workOf, writeBib } from './lib/verify-works.js'

const HELP = `Usage: npm run bench:verify [-- options]
  --entries N        entries of the timed .bib (default 1000)
  --hosts N          landing hosts the works are spread over, seeded and uniform (default 50)
  --latency MS       every fake's latency per answer (default 50)
  --delay MS         LANDING_HOST_DELAY_MS of the first uncached run (default 1000, the default; the second runs at 0)
  --per-host N       LANDING_PER_HOST (default 2, the default)
  --page-bytes N     size of a landing page (default 20000)
  --memory A,B,C     entries of the memory runs (default 10000,50000,100000; 0: none)
  --seed N           the landing hosts' seed (default 41)
  --quick            200 entries; memory at 2000,10000
  --server-env K=V   more environment for our server (repeatable)
  --output FILE      "-" prints the section instead of writing bench/RESULTS.md`

const LEVELS = 'metadata,retraction,landing'
const TARGET_CACHED_S = 2
const TARGET_RATIO = 1.1
const DEFAULT_ENTRIES = 1000
/** A load average (1 min) at which the run's figures are marked provisional: the 2-core machine was shared. */
const BUSY_LOAD = 3
const MB = 2 ** 20
const PROBE = pathToFileURL(join(ROOT, 'bench', 'lib', 'memory-probe.mjs')).href
const BIN = join(ROOT, 'bin', 'doi-proxy.js')

interface Settings {
  entries: number
  hosts: number
  latencyMs: number
  delayMs: number
  perHost: number
  pageBytes: number
  memory: number[]
  seed: number
  serverEnv: Record<string, string>
  output: string
}

function parse(argv: string[]): Settings {
  const s: Settings = {
    entries: DEFAULT_ENTRIES,
    hosts: 50,
    latencyMs: 50,
    delayMs: OPTIONS.landingHostDelayMs.default,
    perHost: OPTIONS.landingPerHost.default,
    pageBytes: 20_000,
    memory: [10_000, 50_000, 100_000],
    seed: 41,
    serverEnv: {},
    output: RESULTS_PATH
  }
  const whole = (name: string, v: string, min = 0): number => {
    const n = Number(v)
    if (!Number.isSafeInteger(n) || n < min) throw new Error(`${name} wants a whole number ≥ ${min}, got "${v}"`)
    return n
  }
  forEachOption(argv, HELP, (arg, value) => {
    if (arg === '--entries') s.entries = whole(arg, value(), 1)
    else if (arg === '--hosts') s.hosts = whole(arg, value(), 1)
    else if (arg === '--latency') s.latencyMs = whole(arg, value())
    else if (arg === '--delay') s.delayMs = whole(arg, value())
    else if (arg === '--per-host') s.perHost = whole(arg, value(), 1)
    else if (arg === '--page-bytes') s.pageBytes = whole(arg, value())
    else if (arg === '--seed') s.seed = whole(arg, value())
    else if (arg === '--memory') {
      s.memory = value()
        .split(',')
        .map((v) => whole('--memory', v))
        .filter((n) => n > 0)
    } else if (arg === '--quick') {
      s.entries = 200
      s.memory = [2_000, 10_000]
    } else if (arg === '--server-env') addEnvPair(value(), s.serverEnv)
    else if (arg === '--output') s.output = value()
    else return false
    return true
  })
  if (s.hosts > 1000) throw new Error('--hosts: at most 1000 (127.0.1.10 to 127.0.5.209)')
  return s
}

const median = (xs: readonly number[]): number => (xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!)

function log(line: string): void {
  process.stderr.write(`[verify] ${line}\n`)
}

// ------------------------------------------------------------------ one run of the command

interface CheckRun {
  /** performance.now() at spawn. */
  startedAt: number
  ms: number
  code: number | null
  stdout: string
  stderr: string
  /** The command's own CPU time (user + system) and peak RSS, from the probe at exit. */
  cpuMs?: number
  maxRss?: number
  /** With `atReport`: heap and RSS after GC when the report was written. */
  heapAtReport?: number
  rssAtReport?: number
}

let probeRuns = 0

/**
 * `node bin/doi-proxy.js check ARGS`, timed from spawn to exit, under the memory probe (bench/lib/memory-probe.mjs:
 * its CPU time and peak RSS at exit; with `atReport`, its heap after GC when it writes its report).
 */
async function runCheck(args: string[], dir: string, atReport = false): Promise<CheckRun> {
  const probeFile = join(dir, `check-probe-${probeRuns++}.jsonl`)
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    BENCH_MEMORY_FILE: probeFile,
    BENCH_MEMORY_AT: atReport ? 'report' : ''
  }
  const started = performance.now()
  const child = spawn(process.execPath, ['--import', PROBE, BIN, 'check', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  track(child)
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (b: Buffer) => (stdout = (stdout + b.toString()).slice(-200_000)))
  child.stderr.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-20_000)))
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
  const ms = performance.now() - started
  const run: CheckRun = { startedAt: started, ms, code, stdout, stderr }
  const lines = existsSync(probeFile) ? readFileSync(probeFile, 'utf8').split('\n') : []
  for (const line of lines.filter((l) => l !== '')) {
    const m = JSON.parse(line) as { at: string; heapUsed?: number; rss?: number; maxRss?: number; cpuMs?: number }
    if (m.at === 'report') Object.assign(run, { heapAtReport: m.heapUsed, rssAtReport: m.rss })
    if (m.at === 'exit') Object.assign(run, { maxRss: m.maxRss, cpuMs: m.cpuMs })
  }
  rmSync(probeFile, { force: true })
  return run
}

interface Verdicts {
  found: number
  line: string
}

/**
 * What a run's text report says, checked against what the works are: every DOI registered, every title
 * matching, the retracted ones (and only they) retracted, every page alive. A run that verified anything
 * else measured something else: the bench stops.
 */
function expectReport(run: CheckRun, entries: number, verified: boolean): Verdicts {
  const checked =
    /Checked (\d+) DOIs? \((\d+) distinct\) in \d+ files?: (\d+) registered, (\d+) not registered, (\d+) could not be checked\./.exec(
      run.stdout
    )
  const retracted = Array.from({ length: entries }, (_, i) => i).filter((i) => workOf(i).retracted).length
  const want = verified
    ? `Verified: metadata ${entries} match, 0 mismatch (0 naming another work, 0 with other details), 0 unverifiable; ` +
      `retraction ${retracted} retracted, 0 corrected, 0 expression of concern, ${entries - retracted} none, 0 could not be checked; ` +
      `landing ${entries} alive, 0 unconfirmed, 0 blocked, 0 dead, 0 could not be checked.`
    : undefined
  const ok =
    checked !== null &&
    Number(checked[1]) === entries &&
    Number(checked[3]) === entries &&
    (want === undefined || run.stdout.includes(want)) &&
    run.code === (verified && retracted > 0 ? 1 : 0)
  if (!ok) {
    throw new Error(
      `the check did not report what the works are (exit ${run.code}; wanted ${want ?? `${entries} registered`}):\n` +
        `${run.stdout.split('\n').slice(-6).join('\n')}\n${run.stderr.slice(-2000)}`
    )
  }
  return { found: entries, line: want ?? checked[0] }
}

// ------------------------------------------------------------------ the ideal: each limit alone

interface Bound {
  what: string
  requests: number
  cap: string
  ms: number
  peak: number
  minGapMs: number
  /** The mean time the fake took per request, arrival to the answer's end. */
  meanMs: number
  /** The median time from an answer's end to the next request on its connection: the server's turnaround. */
  turnaroundMs: number
}

/**
 * How long each limit alone makes the run take, from what the fakes were asked: a pool of `cap` in flight
 * takes requests × latency ÷ cap; a landing host with n requests (robots.txt included) at most perHost at
 * once and their starts at least delay apart takes max((n − 1) × delay, (⌈n / perHost⌉ − 1) × latency) +
 * latency. The ideal is the largest: the run cannot end sooner.
 */
function bounds(fakes: VerifyFakes, s: Settings, delayMs: number, caps: { upstream: number; agency: number; crossref: number }): Bound[] {
  const L = s.latencyMs
  const pool = (what: string, c: Counter, cap: number): Bound => ({
    what,
    requests: c.requests,
    cap: `${cap} in flight`,
    ms: (c.requests * L) / cap,
    peak: c.peak,
    minGapMs: c.minGapMs(),
    meanMs: c.meanMs(),
    turnaroundMs: c.medianTurnaroundMs()
  })
  const host = (n: number): number => (n === 0 ? 0 : Math.max((n - 1) * delayMs, (Math.ceil(n / s.perHost) - 1) * L) + L)
  const busiest = fakes.landing.reduce((a, b) => (host(b.requests) > host(a.requests) ? b : a))
  const all = fakes.landing.filter((c) => c.requests > 0)
  return [
    pool('Handle API (records and prefixes)', fakes.handles, caps.upstream),
    pool('agency (CSL-JSON)', fakes.agency, caps.agency),
    pool("Crossref's REST API", fakes.crossref, caps.crossref),
    {
      what: `busiest landing host (${busiest.requests} requests)`,
      requests: busiest.requests,
      cap: `${s.perHost} at once, starts ${delayMs} ms apart`,
      ms: host(busiest.requests),
      peak: busiest.peak,
      minGapMs: busiest.minGapMs(),
      meanMs: busiest.meanMs(),
      turnaroundMs: busiest.medianTurnaroundMs()
    },
    {
      what: `every landing host (${all.length})`,
      requests: all.reduce((n, c) => n + c.requests, 0),
      cap: `${s.perHost} at once, starts ${delayMs} ms apart, each`,
      ms: Math.max(...all.map((c) => host(c.requests))),
      peak: Math.max(...all.map((c) => c.peak)),
      minGapMs: Math.min(...all.map((c) => c.minGapMs())),
      meanMs: all.reduce((n, c) => n + c.busyMs, 0) / all.reduce((n, c) => n + c.requests, 0),
      turnaroundMs: median(all.flatMap((c) => c.turnarounds))
    }
  ]
}

// ------------------------------------------------------------------ the server

function serverEnv(fakes: VerifyFakes, s: Settings, delayMs: number): Record<string, string> {
  return {
    UPSTREAM_URL: fakes.upstreamUrl,
    METADATA_HOSTS: fakes.agencyHost,
    CROSSREF_API_URL: fakes.crossrefUrl,
    CONTACT_EMAIL: 'bench@example.org',
    // The landing sites are on 127.0.x.y: the bench's only "intranet".
    LANDING_ALLOW_PRIVATE: '127.0.0.0/8',
    LANDING_HOST_DELAY_MS: String(delayMs),
    LANDING_PER_HOST: String(s.perHost),
    LOCAL_STORE_DIR: '',
    LOG_LEVEL: 'warn',
    // A busy 2-core machine lags past the shedding bound, and a refused batch measures nothing (as bench:batch).
    MAX_EVENT_LOOP_DELAY_MS: '0',
    ...s.serverEnv
  }
}

/** The fake upstream's place in startOurs (it reads only apiUrl); the fakes here are in this process. */
const upstreamOf = (fakes: VerifyFakes): UpstreamProcess => ({ apiUrl: fakes.upstreamUrl }) as unknown as UpstreamProcess

interface ServerMemory {
  heap: number
  rss: number
}

/** The server's heap and RSS after a full GC (its memory probe, on SIGWINCH). */
async function serverMemory(server: Target, file: string): Promise<ServerMemory> {
  const before = existsSync(file) ? readFileSync(file, 'utf8').split('\n').length : 0
  process.kill(server.pid!, 'SIGWINCH')
  for (let waited = 0; waited < 30_000; waited += 50) {
    const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : []
    if (lines.length > before) {
      const m = JSON.parse(lines[lines.length - 2]!) as { heapUsed: number; rss: number }
      return { heap: m.heapUsed, rss: m.rss }
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error('the server did not answer its memory probe')
}

/** The highest VmRSS of `pid` while `work` runs, sampled every 100 ms from /proc. */
async function peakRss<T>(pid: number | undefined, work: () => Promise<T>): Promise<{ value: T; peak: number }> {
  let peak = 0
  const read = (): void => {
    try {
      const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
      if (kb !== undefined) peak = Math.max(peak, Number(kb) * 1024)
    } catch {} // no /proc, or gone
  }
  const timer = setInterval(read, 100)
  try {
    const value = await work()
    read()
    return { value, peak }
  } finally {
    clearInterval(timer)
  }
}

// ------------------------------------------------------------------ the runs

interface Uncached {
  delayMs: number
  run: CheckRun
  bounds: Bound[]
  idealMs: number
  loopDelayMaxMs: number
  fakesCpuMs: number
  serverCpuMs: number
  requests: number
  /** When the fakes had the command's first request, after spawn (node's start, reading and parsing the .bib). */
  firstRequestMs: number
}

async function uncached(
  fakes: VerifyFakes,
  s: Settings,
  bib: string,
  delayMs: number,
  dir: string
): Promise<{ result: Uncached; server: Target }> {
  const env = serverEnv(fakes, s, delayMs)
  const server = await startOurs({ upstream: upstreamOf(fakes), env, readyTimeoutMs: 60_000 })
  fakes.reset()
  const lag = monitorEventLoopDelay({ resolution: 10 })
  lag.enable()
  const cpu = process.cpuUsage()
  const serverCpu = cpuMs(server.pid) ?? NaN
  const run = await runCheck(['--server', server.baseUrl, '--verify', LEVELS, bib], dir)
  const used = process.cpuUsage(cpu)
  const serverCpuMs = (cpuMs(server.pid) ?? NaN) - serverCpu
  lag.disable()
  expectReport(run, s.entries, true)
  const caps = {
    upstream: Number(env.UPSTREAM_MAX_CONCURRENT ?? OPTIONS.upstreamMaxConcurrent.default),
    agency: Number(env.METADATA_AGENCY_CONCURRENCY ?? OPTIONS.metadataAgencyConcurrency.default),
    crossref: Number(env.CROSSREF_CONCURRENCY ?? OPTIONS.crossrefConcurrency.default)
  }
  const b = bounds(fakes, s, delayMs, caps)
  const all = [fakes.handles, fakes.agency, fakes.crossref, ...fakes.landing]
  const result: Uncached = {
    delayMs,
    run,
    bounds: b,
    idealMs: Math.max(...b.map((x) => x.ms)),
    loopDelayMaxMs: lag.max / 1e6,
    fakesCpuMs: (used.user + used.system) / 1000,
    serverCpuMs,
    requests: all.reduce((n, c) => n + c.requests, 0),
    firstRequestMs: Math.min(...all.map((c) => c.starts[0] ?? Infinity)) - run.startedAt
  }
  log(
    `uncached, delay ${delayMs} ms: ${(run.ms / 1000).toFixed(2)} s, ideal ${(result.idealMs / 1000).toFixed(2)} s, ${(run.ms / result.idealMs).toFixed(2)}×`
  )
  return { result, server }
}

/**
 * The floor of the cached runs: bench/baselines/floor.mjs writing our server's own answers to the check's
 * batches, so that "ours ÷ floor" is what the server costs and the floor's own time is the command's
 * (node's start, reading the .bib, sending a batch and reading its NDJSON, the report): the client's
 * ceiling. The answers are recorded from real runs of the command, which must report as against ours, and
 * both batches are asked of ours and of the floor again and compared before measuring. One batch per
 * request line, so at most CHUNK entries (more would send several batches to one path).
 */
async function batchFloor(s: Settings, server: Target, bib: string, dir: string): Promise<Target | undefined> {
  if (s.entries > CHUNK) {
    log(`no floor: ${s.entries} entries are more than one batch of ${CHUNK}`)
    return undefined
  }
  const recorded = await recordAnswers(server.baseUrl, async (url) => {
    expectReport(await runCheck(['--server', url, bib], dir), s.entries, false)
    expectReport(await runCheck(['--server', url, '--verify', LEVELS, bib], dir), s.entries, true)
  })
  const paths = recorded.map((r) => r.path)
  if (new Set(paths).size !== paths.length || paths.length !== 2) {
    throw new Error(`the check did not ask one batch a path: ${paths.join(', ')}`)
  }
  const floor = await startFloor({
    answersFile: writeAnswersFile(recorded.map((r) => [r.path, r.answer])),
    name: 'floor (node:http, same bytes)'
  })
  for (const r of recorded) {
    const ours = await answerBytes(server.baseUrl, r.path, r.headers, r.ask)
    const theirs = await answerBytes(floor.baseUrl, r.path, r.headers, r.ask)
    if (ours !== theirs) {
      await floor.stop()
      throw new Error(`the floor does not answer POST ${r.path} as ours did:\n${ours.slice(0, 600)}\n${theirs.slice(0, 600)}`)
    }
  }
  floor.note = recorded
    .map((r) => `POST ${r.path}: ${describeAnswer(r.answer)}, asked with a request body of ${Buffer.byteLength(r.ask.body)} bytes`)
    .join('; ')
  log(`floor: ${floor.note}; checked, identical but for Date`)
  return floor
}

interface Cached {
  help: number[]
  plain: number[]
  verify: number[]
  /** The same two checks against the floor (empty without one). */
  floorPlain: number[]
  floorVerify: number[]
  /** CPU time of the last --verify run: the command's and the server's; the command's against the floor. */
  checkCpuMs: number
  serverCpuMs: number
  floorCheckCpuMs: number
  /** Requests the fakes had during the cached runs with --verify, by fake. */
  asked: Record<string, number>
}

async function cached(
  fakes: VerifyFakes,
  s: Settings,
  server: Target,
  floor: Target | undefined,
  bib: string,
  dir: string
): Promise<Cached> {
  const out: Cached = {
    help: [],
    plain: [],
    verify: [],
    floorPlain: [],
    floorVerify: [],
    checkCpuMs: NaN,
    serverCpuMs: NaN,
    floorCheckCpuMs: NaN,
    asked: {}
  }
  fakes.reset()
  // Alternating, so a busy minute of the machine weighs on all of them alike.
  for (let round = 0; round < 3; round++) {
    out.help.push((await runCheck(['--help'], dir)).ms)
    const plain = await runCheck(['--server', server.baseUrl, bib], dir)
    expectReport(plain, s.entries, false)
    out.plain.push(plain.ms)
    const serverCpu = cpuMs(server.pid) ?? NaN
    const verify = await runCheck(['--server', server.baseUrl, '--verify', LEVELS, bib], dir)
    out.serverCpuMs = (cpuMs(server.pid) ?? NaN) - serverCpu
    out.checkCpuMs = verify.cpuMs ?? NaN
    expectReport(verify, s.entries, true)
    out.verify.push(verify.ms)
    if (floor === undefined) continue
    const floorPlain = await runCheck(['--server', floor.baseUrl, bib], dir)
    expectReport(floorPlain, s.entries, false)
    out.floorPlain.push(floorPlain.ms)
    const floorVerify = await runCheck(['--server', floor.baseUrl, '--verify', LEVELS, bib], dir)
    expectReport(floorVerify, s.entries, true)
    out.floorVerify.push(floorVerify.ms)
    out.floorCheckCpuMs = floorVerify.cpuMs ?? NaN
  }
  out.asked = {
    'Handle API': fakes.handles.requests,
    agency: fakes.agency.requests,
    Crossref: fakes.crossref.requests,
    'landing sites': fakes.landing.reduce((n, c) => n + c.requests, 0)
  }
  log(
    `cached: --help ${median(out.help).toFixed(0)} ms, plain ${median(out.plain).toFixed(0)} ms (floor ${median(out.floorPlain).toFixed(0)}), ` +
      `--verify ${median(out.verify).toFixed(0)} ms (floor ${median(out.floorVerify).toFixed(0)})`
  )
  return out
}

interface MemoryRow {
  entries: number
  files: number
  run: CheckRun
  serverRest: ServerMemory
  serverAfter: ServerMemory
  serverPeakRss: number
}

async function memoryRun(fakes: VerifyFakes, s: Settings, entries: number, dir: string): Promise<MemoryRow> {
  const files = writeBib(join(dir, `memory-${entries}`), entries)
  const probeFile = join(dir, `server-memory-${entries}.jsonl`)
  rmSync(probeFile, { force: true })
  const env = { ...serverEnv(fakes, s, 0), NODE_OPTIONS: `--import=${PROBE}`, BENCH_MEMORY_FILE: probeFile }
  const server = await startOurs({ upstream: upstreamOf(fakes), env, readyTimeoutMs: 60_000 })
  try {
    const serverRest = await serverMemory(server, probeFile)
    const { value: run, peak } = await peakRss(server.pid, async () =>
      runCheck(['--server', server.baseUrl, '--verify', LEVELS, join(dir, `memory-${entries}`)], dir, true)
    )
    expectReport(run, entries, true)
    const serverAfter = await serverMemory(server, probeFile)
    log(
      `memory, ${entries} entries: ${(run.ms / 1000).toFixed(1)} s; check heap ${((run.heapAtReport ?? NaN) / MB).toFixed(1)} MiB, ` +
        `peak RSS ${((run.maxRss ?? NaN) / MB).toFixed(0)} MiB; server heap ${(serverAfter.heap / MB).toFixed(1)} MiB (at rest before ${(serverRest.heap / MB).toFixed(1)})`
    )
    return { entries, files: files.length, run, serverRest, serverAfter, serverPeakRss: peak }
  } finally {
    await server.stop()
  }
}

// ------------------------------------------------------------------ the section

const sec = (ms: number): string => (ms / 1000).toFixed(2)
const mib = (b: number | undefined): string => (b === undefined ? '—' : (b / MB).toFixed(1))
const gap = (ms: number): string => (Number.isFinite(ms) ? ms.toFixed(1) : '—')

function section(
  s: Settings,
  load: { start: number; end: number },
  c: Cached,
  runs: Uncached[],
  memory: MemoryRow[],
  baseline: CheckRun | undefined,
  floor: Target | undefined
): string {
  const cachedMedian = median(c.verify)
  const plainMedian = median(c.plain)
  const helpMedian = median(c.help)
  const all = (xs: number[]): string => xs.map((x) => x.toFixed(0)).join(', ')
  const asked = Object.entries(c.asked)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')
  const target = `target < ${TARGET_CACHED_S} s: **${cachedMedian < TARGET_CACHED_S * 1000 ? 'met' : 'missed'}**; asked of the fakes meanwhile: ${asked}`
  const cpu = `CPU of the last: the command ${c.checkCpuMs.toFixed(0)} ms, the server ${c.serverCpuMs.toFixed(0)} ms`
  const floorPlain = median(c.floorPlain)
  const floorVerify = median(c.floorVerify)
  const cachedRows =
    floor === undefined
      ? [
          `| ${s.entries} entries, cached, without --verify (the baseline) | ${sec(plainMedian)} s | — | 1.00× | median of 3 (${all(c.plain)} ms); no floor: more than one batch of ${CHUNK} |`,
          `| ${s.entries} entries, cached, \`--verify ${LEVELS}\` | **${sec(cachedMedian)} s** | the baseline, same server, alternating runs | ${(cachedMedian / plainMedian).toFixed(2)}× | median of 3 (${all(c.verify)} ms) after the uncached run; ${cpu}; ${target} |`
        ]
      : [
          `| ${s.entries} entries, without --verify, against the floor | ${sec(floorPlain)} s | — | 1.00× | median of 3 (${all(c.floorPlain)} ms): the command's own time, the server costing nothing |`,
          `| ${s.entries} entries, cached, without --verify | ${sec(plainMedian)} s | its floor, alternating runs | ${(plainMedian / floorPlain).toFixed(2)}× | median of 3 (${all(c.plain)} ms); our server's share ${sec(plainMedian - floorPlain)} s |`,
          `| ${s.entries} entries, \`--verify ${LEVELS}\`, against the floor | ${sec(floorVerify)} s | — | 1.00× | median of 3 (${all(c.floorVerify)} ms): the command's own time, the server costing nothing; CPU of the last: the command ${c.floorCheckCpuMs.toFixed(0)} ms |`,
          `| ${s.entries} entries, cached, \`--verify ${LEVELS}\` | **${sec(cachedMedian)} s** | its floor, alternating runs | **${(cachedMedian / floorVerify).toFixed(2)}×** | median of 3 (${all(c.verify)} ms) after the uncached run; our server's share ${sec(cachedMedian - floorVerify)} s; ${(cachedMedian / plainMedian).toFixed(2)}× the check without --verify; ${cpu}; ${target} |`
        ]
  const speed = [
    '| Run | Wall time | Compared with | Ratio | Notes |',
    '|---|--:|---|--:|---|',
    `| \`check --help\` (starting node and the command) | ${sec(helpMedian)} s | — | — | median of 3 (${all(c.help)} ms) |`,
    ...cachedRows,
    ...runs.map((r) => {
      const top = r.bounds.reduce((a, b) => (b.ms > a.ms ? b : a))
      const ratio = r.run.ms / r.idealMs
      return `| ${s.entries} entries, uncached, LANDING_HOST_DELAY_MS ${r.delayMs} | **${sec(r.run.ms)} s** | the ideal, ${sec(r.idealMs)} s: ${top.what} | **${ratio.toFixed(2)}×** | target ≤ ${TARGET_RATIO}×: **${ratio <= TARGET_RATIO ? 'met' : 'missed'}**; the first of ${r.requests} requests to the fakes ${sec(r.firstRequestMs)} s after spawn; CPU: the command ${(r.run.cpuMs ?? NaN).toFixed(0)} ms, the server ${r.serverCpuMs.toFixed(0)} ms, the fakes ${r.fakesCpuMs.toFixed(0)} ms, their event loop delayed at most ${r.loopDelayMaxMs.toFixed(1)} ms (their latency: ${s.latencyMs} ms) |`
    })
  ]
  const limits = [
    '| Run | Limit | Requests | Cap | Alone it takes | Most in flight | Mean in flight over the run | Mean answer (ms) | Median turnaround (ms) | Shortest gap between starts (ms) |',
    '|---|---|--:|---|--:|--:|--:|--:|--:|--:|',
    ...runs.flatMap((r) =>
      r.bounds.map(
        (b) =>
          `| delay ${r.delayMs} ms | ${b.what} | ${b.requests} | ${b.cap} | ${sec(b.ms)} s | ${b.peak} | ${((b.requests * b.meanMs) / r.run.ms).toFixed(2)} | ${b.meanMs.toFixed(1)} | ${gap(b.turnaroundMs)} | ${gap(b.minGapMs)} |`
      )
    )
  ]
  const mem =
    memory.length === 0
      ? []
      : [
          '| Entries | Files | Check wall time | Check heap after GC at its report (MiB) | B / entry over the baseline | Check peak RSS (MiB) | Server heap after GC, before → after (MiB) | Server B / entry | Server peak RSS (MiB) |',
          '|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
          ...(baseline === undefined
            ? []
            : [
                `| ${s.entries} (the baseline: the timed .bib, cached) | 1 | ${sec(baseline.ms)} s | ${mib(baseline.heapAtReport)} | — | ${mib(baseline.maxRss)} | — | — | — |`
              ]),
          ...memory.map((m) => {
            const perEntry =
              baseline?.heapAtReport === undefined || m.run.heapAtReport === undefined
                ? '—'
                : ((m.run.heapAtReport - baseline.heapAtReport) / (m.entries - s.entries)).toFixed(0)
            return `| ${m.entries.toLocaleString('en-US')} | ${m.files} | ${sec(m.run.ms)} s | ${mib(m.run.heapAtReport)} | ${perEntry} | ${mib(m.run.maxRss)} | ${mib(m.serverRest.heap)} → ${mib(m.serverAfter.heap)} | ${((m.serverAfter.heap - m.serverRest.heap) / m.entries).toFixed(0)} | ${mib(m.serverPeakRss)} |`
          })
        ]
  return [
    '## check --verify',
    '',
    `Machine: ${machine()}  `,
    `Date: ${new Date().toISOString()}  `,
    `Code: ${codeVersion()}  `,
    `Load average (1 min): ${load.start.toFixed(2)} at the start, ${load.end.toFixed(2)} at the end (2 cores: above 1, something else ran too; read the ratios)  `,
    ...(Math.max(load.start, load.end) >= BUSY_LOAD
      ? [
          `**Provisional**: the machine was busy with other work (load average ${BUSY_LOAD} or more on 2 cores)${s.entries < DEFAULT_ENTRIES ? ` and only ${s.entries} entries were timed` : ''}; every time here is longer than on a quiet machine, and the ratios noisier. Run \`npm run bench:verify\` again on a quiet one.  `
        ]
      : []),
    `Method (\`npm run bench:verify\`, bench/verify.ts): the real command, \`node bin/doi-proxy.js check --server URL --verify ${LEVELS} refs.bib\`, a process of its own, timed from spawn to exit, against our server (\`node dist/main.js\`, its defaults but LANDING_ALLOW_PRIVATE=127.0.0.0/8, LANDING_HOST_DELAY_MS as the row says, MAX_EVENT_LOOP_DELAY_MS=0${
      Object.keys(s.serverEnv).length === 0
        ? ''
        : `, ${Object.entries(s.serverEnv)
            .map(([k, v]) => `${k}=${v}`)
            .join(', ')}`
    }), against fakes in the bench's process (bench/lib/verify-fakes.ts): the Handle API, an agency's CSL-JSON, Crossref's REST API and ${s.hosts} landing sites, one per address (127.0.1.10 and up; each work's host drawn uniformly, seed ${s.seed}), each answering after ${s.latencyMs} ms, a page ${s.pageBytes} bytes naming its DOI. The .bib's ${s.entries} entries (bench/lib/verify-works.ts) give title (LaTeX braces, a subtitle), authors (accents) and a year one after the registered one for half of them; one in a hundred is retracted. Every run's report is checked: every title matching, those retractions and no other, every page alive. The ideal of an uncached run is the longest any one limit alone makes it take, from what the fakes were asked: a pool takes requests × latency ÷ its cap; a landing host with n requests (robots.txt included) takes max((n − 1) × delay, (⌈n ÷ LANDING_PER_HOST⌉ − 1) × latency) + latency, since LANDING_HOST_DELAY_MS spaces the *starts*.${
      floor === undefined
        ? ''
        : ` The floor of the cached runs: the same command against bench/baselines/floor.mjs (bare node:http) writing our server's own answers, recorded in this run from the command's batches through a stand-in that handed them to our server (bench/lib/floor-answer.ts recordAnswers; ${floor.note}), each batch's body read whole before answering, checked before measuring: identical but for Date. Its time is what the command costs when the server costs nothing (node's start, reading the .bib, sending the batch and reading the NDJSON, the report): the load generator's own ceiling, so ours ÷ floor is our server's share.`
    }`,
    '',
    speed.join('\n'),
    '',
    "Each limit alone, from the fakes' own counts, all measured at the fake: the most in flight must stay ≤ its cap, and a landing host's shortest gap between starts ≥ LANDING_HOST_DELAY_MS, less the jitter of two event loops; the mean in flight over the run (requests × mean answer ÷ the run's time) says how busy the command kept it, its cap at most; the mean answer, the latency plus the fake's own delay; the median turnaround, the time from an answer's end to the server's next request on that connection (kept alive), what the server adds to each request of a pool:",
    '',
    limits.join('\n'),
    '',
    ...(mem.length === 0
      ? s.output === '-'
        ? []
        : keptMemory()
      : [
          `Memory: .bib files of 10,000 entries (\`check\` reads at most 20 MB a file), each size on a fresh server, latency 0 and LANDING_HOST_DELAY_MS 0; the check under bench/lib/memory-probe.mjs (3 full GCs when it first writes to stdout: its report, when it holds every entry and verdict; its peak RSS at exit), the server's heap after 3 full GCs at rest before and after the run (SIGWINCH to the same probe), its RSS sampled every 100 ms.`,
          '',
          mem.join('\n'),
          ''
        ])
  ].join('\n')
}

/**
 * A run without memory runs (--memory 0) keeps the memory table RESULTS.md already has, said to be from
 * the run that measured it (its date and code), rather than dropping it.
 */
function keptMemory(): string[] {
  const current = existsSync(RESULTS_PATH) ? readFileSync(RESULTS_PATH, 'utf8') : ''
  const verify = /<!-- verify:start -->\n([\s\S]*?)<!-- verify:end -->/.exec(current)?.[1] ?? ''
  const at = verify.indexOf('\nMemory')
  if (at < 0) return []
  const date = /^Date: (\S+)/m.exec(verify)?.[1] ?? 'an earlier run'
  const code = /^Code: (.+?)\s*$/m.exec(verify)?.[1] ?? 'unknown'
  const kept = verify.slice(at + 1).trimEnd()
  // Kept twice: still the run that measured it.
  if (kept.startsWith('Memory (kept from')) return [kept, '']
  return [kept.replace(/^Memory:/, `Memory (kept from the run of ${date}, ${code}: this one measured speed only):`), '']
}

// ------------------------------------------------------------------ main

async function main(): Promise<void> {
  const s = parse(process.argv.slice(2))
  ensureBuilt(log)
  const load = { start: loadavg()[0] ?? NaN, end: NaN }
  // Outside the repository: bench/.tmp is in .gitignore, and check skips what git ignores.
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-bench-verify-'))
  const most = Math.max(s.entries, ...s.memory)
  const fakes = await startVerifyFakes({
    latencyMs: s.latencyMs,
    hostOf: landingHosts(most, s.hosts, s.seed),
    hosts: s.hosts,
    pageBytes: s.pageBytes
  })
  const servers: Target[] = []
  try {
    const bib = writeBib(join(dir, 'timed'), s.entries)[0]!
    log(`${s.entries} entries over ${s.hosts} hosts, latency ${s.latencyMs} ms; load ${load.start.toFixed(2)}`)
    const first = await uncached(fakes, s, bib, s.delayMs, dir)
    servers.push(first.server)
    const floor = await batchFloor(s, first.server, bib, dir)
    if (floor !== undefined) servers.push(floor)
    const c = await cached(fakes, s, first.server, floor, bib, dir)
    const baseline =
      s.memory.length === 0 ? undefined : await runCheck(['--server', first.server.baseUrl, '--verify', LEVELS, bib], dir, true)
    if (baseline !== undefined) expectReport(baseline, s.entries, true)
    await first.server.stop()
    await floor?.stop()
    const second = s.delayMs === 0 ? undefined : await uncached(fakes, s, bib, 0, dir)
    if (second !== undefined) await second.server.stop()
    const runs = second === undefined ? [first.result] : [first.result, second.result]
    fakes.setLatency(0)
    const memory: MemoryRow[] = []
    for (const n of s.memory) memory.push(await memoryRun(fakes, s, n, dir))
    load.end = loadavg()[0] ?? NaN
    const text = section(s, load, c, runs, memory, baseline, floor)
    if (s.output === '-') process.stdout.write(text + '\n')
    else {
      writeSection('verify', text)
      log(`wrote the verify section of ${RESULTS_PATH}`)
    }
  } finally {
    for (const server of servers) await server.stop()
    await fakes.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

runBench(main)
