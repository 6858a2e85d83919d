/**
 * Resolution health at scale (issue 42 item 5, plan §10): the real app (`buildApp`, listening, so health starts as
 * it does in the server) checks the DOIs of a local store on a schedule, on the real clock, against 1,000 fake
 * landing sites in a child process (bench/lib/health-fakes.ts; their CPU is not this process's). Names are resolved
 * by an injected lookup (no DNS); the prober is allowed onto 127.0.0.0/8 and nothing else changes: the real
 * scheduler, checker, landing prober, fleet log (in-process) and SQLite history.
 *
 * Measured, and judged (exit 1 when a limit is broken):
 * - each DOI checked once in each of its windows (schedule.ts `windowOf` of its `slotOf`), never twice: counted
 *   from the history after the run;
 * - per host, at the fakes: the most requests in flight (≤ LANDING_PER_HOST) and the shortest gap between two
 *   starts (≥ LANDING_HOST_DELAY_MS, less the fakes' worst event-loop delay or `--gap-tolerance`: a fake times an
 *   arrival on its own loop);
 * - per host, as we write them (undici's `sendHeaders` channel, bench/lib/write-gaps.ts): no two requests less
 *   than LANDING_HOST_DELAY_MS apart;
 * - every DOI's first check within a minute (a tenth of a short interval) of its due time, and nothing overdue at
 *   the end (the pages' count, and DOIs due over that minute ago);
 * - the heap after a full GC every `--sample` seconds: its slope over the second half of the run (flat: it grows
 *   by at most 10 % of itself over that half).
 * Reported: checks per minute (max, mean), RSS, the event loop's delay (p50, p99, max), the file's bytes a check.
 *
 * `--one-big-host`: 20,000 DOIs on one site. At one start a LANDING_HOST_DELAY_MS, the host cannot take its DOIs in
 * one interval: the checks fall behind (overdue grows) and the host's limits hold. Its limits are the per-host ones
 * and "never twice"; being behind is what it shows.
 *
 *   npm run bench:health                                   100,000 DOIs, 1,000 hosts, interval 1800 s, 2 windows (60–90 min)
 *   npm run bench:health -- --dois 2000 --hosts 40 --interval 120     a few minutes (at 20 hosts, 100 DOIs a
 *                                                                      host in 120 s at a start a second is near what
 *                                                                      a host takes: first checks fall late)
 *   npm run bench:health -- --one-big-host --interval 600
 *
 * Prints its figures, then one line of JSON; bench/RESULTS.md's rows are written from them by hand.
 */
import { appendFileSync, mkdirSync, rmSync, statSync, existsSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { pino } from 'pino'
import { buildApp } from '../src/app.js'
import { buildConfig } from '../src/config/schema.js'
import { firstCheckAt, slotOf, windowOf } from '../src/handle/health/schedule.js'
import { CHECK_KINDS, CHECK_VERDICTS } from '../src/handle/health/types.js'
import { openHealthDb } from '../src/resolve/health/db.js'
import type { HealthDb } from '../src/resolve/health/db.js'
import { createHealthReader } from '../src/resolve/health/reader.js'
import type { Services } from '../src/services.js'
import { fakeLookup } from '../test/support/landing-dns.js'
import { addEnvPair, forEachOption } from './lib/args.js'
import { codeVersion } from './lib/children.js'
import { doiOf, SHORT_BY, startHealthFakes } from './lib/health-fakes.js'
import type { FakeSite, FakesReport } from './lib/health-fakes.js'
import { freePort, TMP } from './lib/processes.js'
import { machine, runBench } from './lib/results.js'
import { watchWriteGaps, type WriteGaps } from './lib/write-gaps.js'

const HELP = `Usage: npm run bench:health [-- options]
  --dois N            watched DOIs, in a local store (default 100000; 20000 with --one-big-host)
  --hosts N           landing sites they are spread over, DOI n on site n mod N (default 1000; 1 with --one-big-host)
  --interval S        HEALTH_INTERVAL_SECONDS (default 1800)
  --windows N         windows every DOI must have been checked in (default 2): the run lasts until each DOI's last
                      one has closed, between N and N + 1 intervals
  --one-big-host      20,000 DOIs on one site: the host's limits win over the interval
  --sample S          seconds between heap samples (a full GC each; default 30)
  --page-bytes N      a landing page's size (default 20000)
  --slow-ms MS        how late the slow pages (1 %) answer (default 3000)
  --gap-tolerance MS  the least jitter allowed below LANDING_HOST_DELAY_MS at the fakes (default 50; the fakes'
                      worst event-loop delay when longer: they time arrivals on that loop)
  --seed N            which pages lack the DOI, are 404 or slow (default 42)
  --server-env K=V    another setting for the app (repeatable), e.g. HEALTH_CONCURRENCY=128
  --keep              keep the run's directory (bench/.tmp/health-<pid>: the store and the history)`

interface Args {
  dois: number
  hosts: number
  interval: number
  windows: number
  oneBigHost: boolean
  sample: number
  pageBytes: number
  slowMs: number
  gapTolerance: number
  seed: number
  env: Record<string, string>
  keep: boolean
}

function wholeNumber(arg: string, value: string, min = 1): number {
  const n = Number(value.replace(/_/g, ''))
  if (!Number.isSafeInteger(n) || n < min) throw new Error(`${arg} wants a whole number of at least ${min}, got "${value}"`)
  return n
}

function parseArgs(argv: string[]): Args {
  const args: Args = {
    dois: 0,
    hosts: 0,
    interval: 1800,
    windows: 2,
    oneBigHost: false,
    sample: 30,
    pageBytes: 20_000,
    slowMs: 3_000,
    gapTolerance: 50,
    seed: 42,
    env: {},
    keep: false
  }
  forEachOption(argv, HELP, (arg, value) => {
    if (arg === '--dois') args.dois = wholeNumber(arg, value())
    else if (arg === '--hosts') args.hosts = wholeNumber(arg, value())
    else if (arg === '--interval') args.interval = wholeNumber(arg, value(), 60)
    else if (arg === '--windows') args.windows = wholeNumber(arg, value())
    else if (arg === '--one-big-host') args.oneBigHost = true
    else if (arg === '--sample') args.sample = wholeNumber(arg, value())
    else if (arg === '--page-bytes') args.pageBytes = wholeNumber(arg, value(), 0)
    else if (arg === '--slow-ms') args.slowMs = wholeNumber(arg, value(), 0)
    else if (arg === '--gap-tolerance') args.gapTolerance = wholeNumber(arg, value(), 0)
    else if (arg === '--seed') args.seed = wholeNumber(arg, value(), 0)
    else if (arg === '--server-env') addEnvPair(value(), args.env)
    else if (arg === '--keep') args.keep = true
    else return false
    return true
  })
  if (args.dois === 0) args.dois = args.oneBigHost ? 20_000 : 100_000
  if (args.hosts === 0) args.hosts = args.oneBigHost ? 1 : 1000
  if (args.hosts > args.dois) throw new Error(`--hosts (${args.hosts}) is more than --dois (${args.dois})`)
  return args
}

const PREFIX = '10.5555'
const SECOND = 1000
const MINUTE = 60_000
/** A check this long after it was due is late (the scheduler's turns and a host's queue are shorter): a minute, a tenth of a short interval. */
const lateMs = (intervalMs: number): number => Math.min(MINUTE, intervalMs / 10)
const log = { info() {}, warn: (obj: object, msg: string) => process.stderr.write(`${msg} ${JSON.stringify(obj)}\n`) }

/** The app's settings: the plan's, and what a bench needs (no cache file, loopback landing pages, a contact). */
function settingsOf(args: Args, dir: string, upstreamPort: number): Record<string, string> {
  return {
    LOG_LEVEL: 'warn',
    // Every DOI is a local record: a lookup that went upstream would fail (nothing listens there) and show as `error`.
    UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}/api/handles`,
    LOCAL_STORE_DIR: join(dir, 'store'),
    LOCAL_STORE_WATCH: 'false',
    CACHE_FILE: '',
    CONTACT_EMAIL: 'bench@example.org',
    HEALTH_WATCH: PREFIX,
    HEALTH_DB: join(dir, 'health.sqlite'),
    HEALTH_INTERVAL_SECONDS: String(args.interval),
    // The defaults' proportions to a week (a day's verdict cache, 6 h between confirmations, an hour for a dead
    // page's verdict), so every scheduled check visits its page as it does when the interval is a week.
    HEALTH_CONFIRM_GAP_SECONDS: String(Math.floor((args.interval * 21_600) / 604_800)),
    LANDING_TTL_SECONDS: String(Math.floor((args.interval * 86_400) / 604_800)),
    LANDING_SHORT_TTL_SECONDS: String(Math.floor((args.interval * 3_600) / 604_800)),
    HEALTH_CONCURRENCY: '64',
    LANDING_PER_HOST: '2',
    LANDING_HOST_DELAY_MS: '1000',
    LANDING_ALLOW_PRIVATE: '127.0.0.0/8',
    ...args.env
  }
}

/** The local store: DOI n registered at its site's /article/n. */
function writeStore(dir: string, args: Args, sites: readonly FakeSite[]): void {
  mkdirSync(dir, { recursive: true })
  const file = join(dir, 'records.ndjson')
  rmSync(file, { force: true })
  // The prefix's own record, as a registry has it: every DOI's lookup reads it (HS_NAMESPACE), here locally.
  const admin = { handle: `0.NA/${PREFIX}`, index: 200, permissions: '111111110010' }
  let lines: string[] = [
    JSON.stringify({
      handle: PREFIX,
      values: [{ index: 100, type: 'HS_ADMIN', data: { format: 'admin', value: admin }, ttl: 86_400, timestamp: '2026-01-01T00:00:00Z' }]
    })
  ]
  for (let n = 0; n < args.dois; n++) {
    const site = sites[n % args.hosts] as FakeSite
    const url = `http://${site.name}:${site.port}/article/${n}`
    lines.push(
      JSON.stringify({
        handle: doiOf(PREFIX, n),
        values: [{ index: 1, type: 'URL', data: { format: 'string', value: url }, ttl: 86_400, timestamp: '2026-01-01T00:00:00Z' }]
      })
    )
    if (lines.length === 10_000 || n === args.dois - 1) {
      appendFileSync(file, lines.join('\n') + '\n')
      lines = []
    }
  }
}

interface Watched {
  id: number
  key: string
  slot: number
  addedAt: number
  /** The window its first check is due in (schedule.ts firstCheckAt from when it was added). */
  first: number
}

function watchedOf(db: HealthDb, intervalMs: number): Watched[] {
  const rows = db.sqlite.prepare('SELECT id, key, added_at AS addedAt FROM dois WHERE sources <> 0').all() as Array<{
    id: number
    key: string
    addedAt: number
  }>
  return rows.map(({ id, key, addedAt }) => {
    const slot = slotOf(key, intervalMs)
    return { id, key, slot, addedAt, first: windowOf(firstCheckAt(addedAt, slot, intervalMs), slot, intervalMs) }
  })
}

/** When the k-th window (0: the one its first check is due in) of a DOI closes. */
const windowEnd = (w: Watched, k: number, intervalMs: number): number => w.slot + (w.first + k + 1) * intervalMs

interface Sample {
  t: number
  heap: number
  rss: number
  checks: number
}

/** Least-squares slope of y over t. */
function slope(points: ReadonlyArray<{ t: number; y: number }>): number {
  const n = points.length
  if (n < 2) return Number.NaN
  const mt = points.reduce((s, p) => s + p.t, 0) / n
  const my = points.reduce((s, p) => s + p.y, 0) / n
  const num = points.reduce((s, p) => s + (p.t - mt) * (p.y - my), 0)
  const den = points.reduce((s, p) => s + (p.t - mt) ** 2, 0)
  return den === 0 ? Number.NaN : num / den
}

const mb = (bytes: number): string => (bytes / 2 ** 20).toFixed(1)
const int = (n: number): string => n.toLocaleString('en')
const round = (n: number, digits = 1): number => Number(n.toFixed(digits))

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2))
  const gc = globalThis.gc
  if (typeof gc !== 'function') throw new Error('run with node --expose-gc (npm run bench:health does)')
  const dir = join(TMP, `health-${process.pid}`)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const scenario = args.oneBigHost ? 'one big host' : 'spread'
  process.stdout.write(
    `# bench:health (${scenario}) — ${int(args.dois)} DOIs on ${int(args.hosts)} hosts, HEALTH_INTERVAL_SECONDS ${args.interval}, ${args.windows} windows\n`
  )
  process.stdout.write(`${machine()}; ${codeVersion()}; load average ${loadavg()[0]?.toFixed(2)} at the start\n`)

  // The settings first: what they say (after --server-env) is what the fakes and the limits use.
  const env = settingsOf(args, dir, await freePort())
  const config = buildConfig(undefined, env)
  args.interval = config.healthIntervalSeconds
  const limits = { perHost: config.landingPerHost, delayMs: config.landingHostDelayMs }
  const fakes = await startHealthFakes({
    dois: args.dois,
    hosts: args.hosts,
    prefix: PREFIX,
    seed: args.seed,
    pageBytes: args.pageBytes,
    slowMs: args.slowMs,
    delayMs: limits.delayMs
  })
  let stopped = false
  try {
    writeStore(join(dir, 'store'), args, fakes.sites)
    process.stdout.write(
      `pages: ${Object.entries(fakes.kinds)
        .map(([k, n]) => `${k} ${int(n)}`)
        .join(', ')} (${args.pageBytes} bytes, slow ones after ${args.slowMs} ms)\n`
    )
    process.stdout.write(
      `settings: ${Object.entries(env)
        .filter(([k]) => k.startsWith('HEALTH_') || k.startsWith('LANDING_'))
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}\n\n`
    )

    const lookup = fakeLookup(Object.fromEntries(fakes.sites.map((s) => [s.name, s.address])))
    const siteHosts = new Set(fakes.sites.map((s) => `${s.name}:${s.port}`))
    const writes = watchWriteGaps(limits.delayMs, (host) => siteHosts.has(host))
    const loop = monitorEventLoopDelay({ resolution: 10 })
    let services: Services | undefined
    const logger = pino({ level: config.logLevel }, pino.destination(2))
    const app = await buildApp(config, { landingLookup: lookup, logger, onServices: (s) => (services = s) })
    loop.enable()
    const started = Date.now()
    await app.listen({ host: '127.0.0.1', port: 0 })

    const intervalMs = args.interval * SECOND
    // The watched DOIs, once the sources have synced: when each one's last judged window closes.
    const reading = openHealthDb({ file: env.HEALTH_DB, readonly: true, log })
    const watchedCount = reading.sqlite.prepare('SELECT count(*) FROM dois WHERE sources <> 0').pluck()
    for (const deadline = Date.now() + 5 * MINUTE; (watchedCount.get() as number) < args.dois; await sleep(200)) {
      if (Date.now() > deadline) throw new Error(`only ${String(watchedCount.get())} of ${args.dois} DOIs watched after 5 minutes`)
    }
    const watched = watchedOf(reading, intervalMs)
    const endAt = watched.reduce((end, w) => Math.max(end, windowEnd(w, args.windows - 1, intervalMs)), 0) + SECOND
    process.stdout.write(
      `${int(watched.length)} DOIs watched ${((Date.now() - started) / 1000).toFixed(1)} s after the start; the run ends at ${new Date(endAt).toISOString()} (${((endAt - started) / MINUTE).toFixed(1)} min)\n`
    )

    const samples: Sample[] = []
    const lastId = reading.sqlite.prepare('SELECT coalesce(max(id), 0) AS n FROM checks').pluck()
    const takeSample = (): Sample => {
      gc()
      const m = process.memoryUsage()
      // The lookup's record of names asked is the test helper's, not the app's: emptied so it is not counted.
      lookup.asked.length = 0
      const s = { t: Date.now() - started, heap: m.heapUsed, rss: m.rss, checks: lastId.get() as number }
      samples.push(s)
      const before = samples.at(-2)
      const rate = before === undefined ? 0 : ((s.checks - before.checks) / (s.t - before.t)) * MINUTE
      process.stdout.write(
        `  ${(s.t / 1000).toFixed(0).padStart(6)} s  checks ${int(s.checks).padStart(9)}  (${rate.toFixed(0).padStart(5)}/min)  in flight ${String(services?.health?.inFlight() ?? '?').padStart(3)}  heap ${mb(s.heap).padStart(6)} MiB  rss ${mb(s.rss).padStart(6)} MiB\n`
      )
      return s
    }
    takeSample()
    while (Date.now() < endAt) {
      await sleep(Math.min(args.sample * SECOND, endAt - Date.now()))
      takeSample()
    }
    const stopAt = Date.now()
    loop.disable()
    await app.close()
    await reading.close()
    writes.stop()
    const fakesSaw = await fakes.report()
    await fakes.stop()
    stopped = true
    await report(args, { dir, dbFile: env.HEALTH_DB as string, started, stopAt, samples, loop, fakes: fakesSaw, writes, limits })
  } finally {
    if (!stopped) await fakes.stop()
    if (!args.keep) rmSync(dir, { recursive: true, force: true })
  }
}

interface Run {
  dir: string
  dbFile: string
  started: number
  stopAt: number
  samples: Sample[]
  loop: ReturnType<typeof monitorEventLoopDelay>
  fakes: FakesReport
  /** The gaps between our requests to a host as we write them. */
  writes: WriteGaps
  limits: { perHost: number; delayMs: number }
}

/** Each DOI's scheduled checks by its windows: in each closed window, DOIs checked once, more than once, never. */
/**
 * Each DOI's scheduled checks by its windows (a confirmation is an extra check by design, and an error, ours, is not
 * a check of the window). Window 1 is the one of the DOI's first check: that check is due within an interval of
 * the DOI being watched (`firstCheckAt`), at its slot's offset into its window, so it may fall in the next window
 * when it comes late; from it on, one check in each window. Per window: DOIs checked once, more than once, never
 * (a closed window), or not judged (still open at the end); and the first checks that came later than an interval.
 */
function windowsOf(db: HealthDb, watched: readonly Watched[], args: Args, stopAt: number) {
  const intervalMs = args.interval * SECOND
  const byId = new Map(watched.map((w) => [w.id, w]))
  // Per DOI, the window of each of its scheduled checks, oldest first (checks are read in the order written).
  const windowsBy = new Map<number, number[]>()
  const verdicts: Record<string, number> = {}
  const kinds: Record<string, number> = {}
  const perMinute = new Map<number, number>()
  let total = 0
  let firstLate = 0
  const rows = db.sqlite.prepare('SELECT doi_id, at, kind, verdict FROM checks ORDER BY id').raw().iterate() as Iterable<
    [number, number, number, number]
  >
  for (const [id, at, kindCode, verdictCode] of rows) {
    total++
    const kind = CHECK_KINDS[kindCode] ?? `kind ${kindCode}`
    const verdict = CHECK_VERDICTS[verdictCode] ?? `verdict ${verdictCode}`
    kinds[kind] = (kinds[kind] ?? 0) + 1
    verdicts[verdict] = (verdicts[verdict] ?? 0) + 1
    perMinute.set(Math.floor(at / MINUTE), (perMinute.get(Math.floor(at / MINUTE)) ?? 0) + 1)
    const w = byId.get(id)
    if (w === undefined || kind !== 'scheduled' || verdict === 'error') continue
    let list = windowsBy.get(id)
    if (list === undefined) {
      windowsBy.set(id, (list = []))
      if (at > firstCheckAt(w.addedAt, w.slot, intervalMs) + lateMs(intervalMs)) firstLate++
    }
    list.push(windowOf(at, w.slot, intervalMs))
  }
  let beyond = 0
  const windows = Array.from({ length: args.windows }, () => ({ once: 0, twice: 0, never: 0, open: 0 }))
  for (const w of watched) {
    const list = windowsBy.get(w.id) ?? []
    if (list.length === 0 && firstCheckAt(w.addedAt, w.slot, intervalMs) + lateMs(intervalMs) <= stopAt) firstLate++
    // Window 1: the first check's, or, never checked, the one its first check was due in.
    const first = list[0] ?? w.first
    const counts = new Array<number>(args.windows).fill(0)
    for (const x of list) {
      const k = x - first
      if (k < args.windows) counts[k] = (counts[k] ?? 0) + 1
      else beyond++
    }
    counts.forEach((n, k) => {
      const tally = windows[k] as (typeof windows)[number]
      if (n === 1) tally.once++
      else if (n > 1) tally.twice++
      else if (w.slot + (first + k + 1) * intervalMs <= stopAt) tally.never++
      else tally.open++
    })
  }
  return { windows: windows.map((x, k) => ({ window: k + 1, ...x })), firstLate, verdicts, kinds, total, beyond, perMinute }
}

async function report(args: Args, run: Run): Promise<void> {
  const intervalMs = args.interval * SECOND
  const { delayMs, perHost } = run.limits
  const broken: string[] = []
  const limit = (ok: boolean, what: string): string => {
    if (!ok) broken.push(what)
    return ok ? 'ok' : 'BROKEN'
  }
  const seconds = (run.stopAt - run.started) / 1000

  // The history, as the writer left it (the log copied in first: its size is the file's).
  const writer = openHealthDb({ file: run.dbFile, log, now: () => run.stopAt, intervalMs, checkpointEveryMs: 0 })
  writer.sqlite.pragma('wal_checkpoint(TRUNCATE)')
  const watched = watchedOf(writer, intervalMs)
  const w = windowsOf(writer, watched, args, run.stopAt)
  const overdue = createHealthReader(writer, { watched: [PREFIX], now: () => run.stopAt }).checkerStatus().overdue
  const late = writer.sqlite
    .prepare('SELECT count(*) FROM dois WHERE sources <> 0 AND next_at < ?')
    .pluck()
    .get(run.stopAt - lateMs(intervalMs)) as number
  await writer.close()
  const dbBytes = statSync(run.dbFile).size + (existsSync(`${run.dbFile}-wal`) ? statSync(`${run.dbFile}-wal`).size : 0)

  // Checks per minute, over the whole minutes of the run.
  const firstMinute = Math.ceil(run.started / MINUTE)
  const lastMinute = Math.floor(run.stopAt / MINUTE) - 1
  const minutes: number[] = []
  for (let m = firstMinute; m <= lastMinute; m++) minutes.push(w.perMinute.get(m) ?? 0)
  const perMinuteMax = minutes.length === 0 ? 0 : Math.max(...minutes)
  const perMinuteMean = minutes.length === 0 ? 0 : minutes.reduce((a, b) => a + b, 0) / minutes.length

  // The fakes' own measures.
  const peak = Math.max(0, ...run.fakes.sites.map((s) => s.peak))
  const gaps = run.fakes.sites.map((s) => s.minGapMs).filter((g): g is number => g !== null)
  const minGap = gaps.length === 0 ? null : Math.min(...gaps)
  const underDelay = gaps.filter((g) => g < delayMs).length
  const shortBy = new Array<number>(SHORT_BY.length + 1).fill(0)
  for (const site of run.fakes.sites) site.shortBy.forEach((n, i) => (shortBy[i] = (shortBy[i] ?? 0) + n))
  const gapsUnder = shortBy.reduce((a, b) => a + b, 0)
  const shortText = shortBy.map((n, i) => `${i < SHORT_BY.length ? `≤ ${SHORT_BY[i]}` : `> ${SHORT_BY.at(-1)}`} ms ${int(n)}`).join(', ')
  const gapCount = run.fakes.sites.reduce((n, s) => n + Math.max(0, s.requests - 1), 0)
  const requests = run.fakes.sites.reduce((n, s) => n + s.requests, 0)
  const robots = run.fakes.sites.reduce((n, s) => n + s.robots, 0)
  const busiest = [...run.fakes.sites].sort((a, b) => b.requests - a.requests)[0]
  // A fake times an arrival on its own event loop: one that ran L ms late may time a request L ms late and the next on
  // time, so a gap short by up to its worst delay is the fakes' jitter (the gaps as we write them are judged exactly).
  const jitter = Math.max(args.gapTolerance, run.fakes.loopMs.max)
  const jitterWhy = jitter > args.gapTolerance ? "the fakes' worst loop delay" : '--gap-tolerance'

  // Memory: the heap after a full GC, its slope over the second half.
  const half = run.samples.filter((s) => s.t >= (run.stopAt - run.started) / 2)
  const heapSlope = slope(half.map((s) => ({ t: s.t / 1000, y: s.heap }))) // bytes a second
  const halfSeconds = half.length < 2 ? 0 : ((half.at(-1) as Sample).t - (half[0] as Sample).t) / 1000
  const halfMean = half.length === 0 ? Number.NaN : half.reduce((a, s) => a + s.heap, 0) / half.length
  const growth = heapSlope * halfSeconds
  const rssMax = Math.max(...run.samples.map((s) => s.rss))
  const lp = (q: number): number => run.loop.percentile(q) / 1e6

  const out = (line: string): void => {
    process.stdout.write(line + '\n')
  }
  out('')
  out(
    `run: ${(seconds / 60).toFixed(1)} min; ${int(w.total)} checks recorded (${Object.entries(w.kinds)
      .map(([k, n]) => `${k} ${int(n)}`)
      .join(', ')})`
  )
  out(
    `verdicts: ${Object.entries(w.verdicts)
      .map(([k, n]) => `${k} ${int(n)}`)
      .join(', ')}`
  )
  out("each DOI's scheduled checks by its windows (schedule.ts windowOf of its slotOf; window 1: its first check's):")
  for (const x of w.windows) {
    const full = args.oneBigHost ? 'behind, as it must be' : limit(x.never === 0, `window ${x.window}: ${x.never} DOIs not checked`)
    out(
      `  window ${x.window}: once ${int(x.once)} of ${int(watched.length)}, twice or more ${int(x.twice)} [${limit(x.twice === 0, `window ${x.window}: ${x.twice} DOIs checked twice`)}], never ${int(x.never)} [${full}]${x.open > 0 ? `, still open at the end (not judged) ${int(x.open)}` : ''}`
    )
  }
  out(
    `  first checks more than ${lateMs(intervalMs) / 1000} s after they were due (firstCheckAt: within an interval of the DOI being watched): ${int(w.firstLate)} [${args.oneBigHost ? 'behind, as it must be' : limit(w.firstLate === 0, `${w.firstLate} first checks late`)}]; checks past the judged windows: ${int(w.beyond)}`
  )
  out(
    `at the fakes: ${int(requests)} requests (robots.txt ${int(robots)}); per host the most in flight ${peak} (≤ ${perHost}: ${limit(peak <= perHost, `a host had ${peak} requests in flight`)}), the shortest gap between starts ${minGap === null ? '—' : minGap.toFixed(1)} ms (≥ ${delayMs} − ${jitter.toFixed(0)} ms, ${jitterWhy}: ${limit(minGap === null || minGap >= delayMs - jitter, `a host's starts ${minGap?.toFixed(1)} ms apart`)})`
  )
  out(
    `  gaps under ${delayMs} ms: ${int(gapsUnder)} of ${int(gapCount)}, on ${underDelay} of ${run.fakes.sites.length} hosts; short by ${shortText} (a start is timed when it arrives: the fakes' event loop ran up to ${run.fakes.loopMs.max.toFixed(0)} ms late, p99 ${run.fakes.loopMs.p99.toFixed(0)} ms; ours up to ${(run.loop.max / 1e6).toFixed(0)} ms)`
  )
  const written = run.writes.report()
  out(
    `  as we write them (undici's sendHeaders): ${int(written.writes)} requests, the shortest gap between two to a host ${written.minGapMs === null ? '—' : written.minGapMs.toFixed(1)} ms, ${int(written.under)} of ${int(written.gaps)} under ${delayMs} ms (${limit(written.under === 0, `${written.under} requests written under ${delayMs} ms after the one before at their host`)})`
  )
  if (busiest !== undefined) {
    out(`  busiest host ${busiest.name}: ${int(busiest.requests)} requests, mean answer ${busiest.meanMs?.toFixed(1) ?? '—'} ms`)
  }
  if (args.oneBigHost && busiest !== undefined) {
    const need = (args.dois * delayMs) / 1000
    out(
      `  ${busiest.name} has ${int(args.dois)} DOIs: at one start every ${delayMs} ms they need ${int(need)} s (${(need / 3600).toFixed(1)} h), ${(need / args.interval).toFixed(1)}× the interval; it took ${int(busiest.requests)} requests in ${seconds.toFixed(0)} s`
    )
  }
  out(
    `checks per minute: max ${perMinuteMax}, mean ${perMinuteMean.toFixed(0)} (${int(args.dois)} DOIs ÷ ${args.interval} s = ${((args.dois / args.interval) * 60).toFixed(0)}/min)`
  )
  const behind = overdue > 0 || late > 0
  out(
    `at the end: overdue (the pages' count, due over an hour ago) ${int(overdue)}, due over ${lateMs(intervalMs) / 1000} s ago ${int(late)} [${args.oneBigHost ? (behind ? 'behind, as it must be' : 'not behind yet') : limit(!behind, `${overdue} overdue, ${late} late at the end`)}]`
  )
  const flat = !(growth > 0.1 * halfMean)
  out(
    `heap after GC: ${mb(run.samples[0]?.heap ?? 0)} → ${mb(run.samples.at(-1)?.heap ?? 0)} MiB; second half: ${((heapSlope * 3600) / 2 ** 20).toFixed(2)} MiB/h, ${mb(growth)} MiB over ${(halfSeconds / 60).toFixed(1)} min (≤ 10 % of ${mb(halfMean)}: ${limit(flat, `the heap grew ${mb(growth)} MiB in the second half`)}); RSS max ${mb(rssMax)} MiB`
  )
  out(
    `event loop delay: p50 ${lp(50).toFixed(1)} ms, p99 ${lp(99).toFixed(1)} ms, max ${(run.loop.max / 1e6).toFixed(1)} ms (a full GC every ${args.sample} s included)`
  )
  out(
    `history: ${(dbBytes / 1e6).toFixed(1)} MB for ${int(w.total)} checks = ${(dbBytes / Math.max(1, w.total)).toFixed(0)} B/check (${int(watched.length)} DOIs' rows included; bench:health-db measures 10 M checks)`
  )
  out(
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}`
  )
  out(broken.length === 0 ? 'every limit held' : `LIMITS BROKEN: ${broken.join('; ')}`)
  out(
    JSON.stringify({
      bench: 'health',
      scenario: args.oneBigHost ? 'one-big-host' : 'spread',
      dois: args.dois,
      hosts: args.hosts,
      intervalSeconds: args.interval,
      minutes: round(seconds / 60),
      checks: w.total,
      kinds: w.kinds,
      verdicts: w.verdicts,
      windows: w.windows,
      firstLate: w.firstLate,
      fakes: {
        requests,
        robots,
        peakInFlight: peak,
        minStartGapMs: minGap === null ? null : round(minGap),
        hostsUnderDelay: underDelay,
        gapsUnderDelay: gapsUnder,
        shortByMs: Object.fromEntries(shortBy.map((n, i) => [i < SHORT_BY.length ? `<=${SHORT_BY[i]}` : `>${SHORT_BY.at(-1)}`, n])),
        gaps: gapCount,
        loopMs: { p99: round(run.fakes.loopMs.p99), max: round(run.fakes.loopMs.max) }
      },
      written: { ...written, minGapMs: written.minGapMs === null ? null : round(written.minGapMs) },
      checksPerMinute: { max: perMinuteMax, mean: round(perMinuteMean) },
      overdue,
      late,
      heapMiB: {
        first: round((run.samples[0]?.heap ?? 0) / 2 ** 20),
        last: round((run.samples.at(-1)?.heap ?? 0) / 2 ** 20),
        secondHalfMiBPerHour: round((heapSlope * 3600) / 2 ** 20, 2)
      },
      rssMaxMiB: round(rssMax / 2 ** 20),
      eventLoopMs: { p50: round(lp(50)), p99: round(lp(99)), max: round(run.loop.max / 1e6) },
      dbBytes,
      bytesPerCheck: round(dbBytes / Math.max(1, w.total)),
      broken
    })
  )
  if (broken.length > 0) process.exitCode = 1
}

runBench(main)
