/**
 * The registry copy at scale (issue 43 §4, plan-43 §6): N works in the agencies' formats
 * (bench/registry-copy/generate.ts, cached) imported with `doi-proxy import`, then served.
 *
 *   npm run bench:copy -- --works 10000000     the issue's run (≈ 25 GB free, about an hour here)
 *   npm run bench:copy -- --quick              200,000 works: a smoke run, marked provisional
 *
 * 1. `node dist/command/cli.js import --json` on the Crossref tar, the DataCite tar and its state CSV,
 *    timed: wall, CPU (user + system, getrusage at exit, every thread), peak RSS; records/s, compressed
 *    and uncompressed MB/s, and the hours 150 M works would take at that rate.
 * 2. The copy on disk: data.mdb's size and blocks, per record.
 * 3. `node dist/main.js` with REGISTRY_COPY: spawn → `/readyz` 200, beside a start without it.
 * 4. In ONE run of that server (online, a fake upstream for the DOIs not in the copy, the copy's
 *    records young enough to answer: REGISTRY_COPY_MAX_AGE_SECONDS at its maximum):
 *    (a) 1,000 copy DOIs asked again and again (the door reads each from the copy at every request:
 *        nothing of them is cached; `X-Cache: COPY`) against 1,000 upstream DOIs asked again (cache hits,
 *        the door's prepared answers) and the same-bytes floor of the copy answers, in alternating rounds
 *        (bench/README.md);
 *    (b) first reads of distinct copy DOIs (each asked once: the door, but for the first DOI of a prefix,
 *        which the route answers and whose redirect the door then keeps for the prefix);
 *    (c) first reads after `echo 3 > /proc/sys/vm/drop_caches` (root only; else said), the pages of the
 *        copy not in memory, beside the same count with them in memory;
 *    (d) requests drawn with Zipf (s = 1) over every Crossref work: first reads and repeats mixed;
 *    RssAnon / RssFile / RSS of the server (/proc/PID/status) at start and after the lookups.
 *    The load generator's own ceiling (wrk against node:http's empty 204) is measured in the same run.
 * Writes the "Registry copy" section of bench/RESULTS.md.
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { forEachOption } from '../lib/args.js'
import { codeVersion } from '../lib/children.js'
import { answerBytes, captureAnswer, describeAnswer, writeAnswersFile } from '../lib/floor-answer.js'
import type { CapturedAnswer } from '../lib/floor-answer.js'
import { mergeLoads, Samples, warm } from '../lib/load.js'
import { seededRandom } from '../lib/random.js'
import type { LoadResult } from '../lib/load.js'
import { describePinning, pinCores } from '../lib/pinning.js'
import type { Pinning } from '../lib/pinning.js'
import { cpuMs, ensureBuilt, nginxAvailable, ROOT, startFloor, startNginx, startOurs, startUpstream, TMP, track } from '../lib/processes.js'
import type { Target, UpstreamProcess } from '../lib/processes.js'
import { machine, runBench, writeSection, RESULTS_PATH } from '../lib/results.js'
import { runWrk } from '../lib/wrk.js'
import { crossrefDoiOf, generate } from './generate.js'
import type { GenerateReport } from './generate.js'

const HELP = `Usage: npm run bench:copy -- [options]
  --works N          works generated and imported (default 10000000, the issue's run)
  --quick            200,000 works, shorter rounds: a smoke run (marked provisional)
  --seed N           the generator's seed (default 43)
  --datacite F       the share of DataCite records (default 0.15)
  --reuse-copy       keep the copy imported by the last run with the same files (its import figures
                     are read back from import.json) and measure the server only
  --connections N    wrk connections (default 64)
  --jobs N           the import's reading threads (default: the import's own, the cores but one)`

const FULL_WORKS = 10_000_000
const QUICK_WORKS = 200_000
const HOT = 1_000
const TARGET_READY_S = 2
const TARGET_RATIO = 0.8
const TARGET_HOURS = 3
const TARGET_ANON_MIB = 400
/** The issue's memory figure, as a limit: the server is also run in a memory cgroup of this size. */
const CGROUP_MIB = 400
/** The record cache of the server in that cgroup: the default's 256 MiB of estimated bytes takes more than 400 MiB of heap with copy records. */
const SMALL_CACHE_MIB = 64
const CROSSREF_WORKS_2024 = 150_000_000
const MB = 1e6
const MIB = 2 ** 20

function log(line: string): void {
  process.stdout.write(`${line}\n`)
}

interface Options {
  works: number
  quick: boolean
  seed: number
  datacite: number
  reuse: boolean
  connections: number
  jobs: number
}

function parseOptions(argv: string[]): Options {
  const o: Options = {
    works: FULL_WORKS,
    quick: false,
    seed: 43,
    datacite: 0.15,
    reuse: false,
    connections: 64,
    jobs: Math.max(1, availableParallelism() - 1)
  }
  let works: number | undefined
  forEachOption(argv, HELP, (arg, value) => {
    if (arg === '--works') works = Number(value())
    else if (arg === '--quick') o.quick = true
    else if (arg === '--seed') o.seed = Number(value())
    else if (arg === '--datacite') o.datacite = Number(value())
    else if (arg === '--reuse-copy') o.reuse = true
    else if (arg === '--connections') o.connections = Number(value())
    else if (arg === '--jobs') o.jobs = Number(value())
    else return false
    return true
  })
  o.works = works ?? (o.quick ? QUICK_WORKS : FULL_WORKS)
  if (!Number.isInteger(o.works) || o.works < 10_000) throw new Error(`--works wants a whole number ≥ 10000, got ${o.works}`)
  if (!Number.isInteger(o.seed) || o.seed < 0) throw new Error(`--seed wants a whole number ≥ 0, got ${o.seed}`)
  if (!(o.datacite >= 0 && o.datacite < 1)) throw new Error(`--datacite wants a share from 0 to under 1, got ${o.datacite}`)
  if (!Number.isInteger(o.connections) || o.connections < 1) throw new Error(`--connections wants a whole number ≥ 1`)
  if (!Number.isInteger(o.jobs) || o.jobs < 1 || o.jobs > 64) throw new Error(`--jobs wants a whole number from 1 to 64, got ${o.jobs}`)
  return o
}

// ---- the import ----

interface ImportFigures {
  records: number
  imported: number
  malformed: number
  wallS: number
  userS: number
  systemS: number
  maxRssMiB: number
  compressedBytes: number
  uncompressedBytes: number
  exitCode: number
  /** --jobs of the import: its reading threads. */
  jobs?: number
}

const INPUTS = ['crossref-annual.tar', 'datacite.tar', 'datacite-states.csv']

// Preloaded into the importer: its getrusage at exit (every thread's CPU, peak RSS), on stderr.
const RUSAGE_HOOK =
  'data:text/javascript,process.on("exit",()=>{const u=process.resourceUsage();process.stderr.write("\\n@@rusage "+JSON.stringify(u)+"\\n")})'

async function runImport(
  dir: string,
  store: string,
  made: GenerateReport,
  jobs: number,
  pinning: Pinning | string
): Promise<ImportFigures> {
  rmSync(store, { recursive: true, force: true })
  const files = INPUTS.map((f) => join(dir, f))
  const args = [
    '--import',
    RUSAGE_HOOK,
    join(ROOT, 'dist', 'command', 'cli.js'),
    'import',
    '--json',
    '--progress-seconds',
    '15',
    '--jobs',
    String(jobs),
    '--to',
    store,
    ...files
  ]
  const started = performance.now()
  // The runner is pinned to its cores (pinCores) and a child inherits that: the import gets every core back,
  // as on a machine doing nothing else (its threads are the point of --jobs).
  // (availableParallelism() counts the runner's own cores once pinned: cpus() counts the machine's.)
  const everyCore = `0-${cpus().length - 1}`
  const command = typeof pinning === 'string' ? [process.execPath, ...args] : ['taskset', '-a', '-c', everyCore, process.execPath, ...args]
  const child = track(
    spawn(command[0]!, command.slice(1), { cwd: ROOT, env: { ...process.env, REGISTRY_COPY_MIN_FREE_BYTES: String(256 * MIB) } })
  )
  let out = ''
  let err = ''
  child.stdout?.on('data', (c: Buffer) => {
    out += c.toString()
  })
  child.stderr?.on('data', (c: Buffer) => {
    const text = c.toString()
    err = (err + text).slice(-20_000)
    for (const line of text.split('\n')) if (line.trim() !== '' && !line.startsWith('@@rusage')) log(`  import: ${line.trim()}`)
  })
  const code = await new Promise<number>((resolve) => child.once('exit', (c) => resolve(c ?? 1)))
  const wallS = (performance.now() - started) / 1000
  const rusage = /@@rusage (\{.*\})/.exec(err)?.[1]
  if (rusage === undefined) throw new Error(`the import gave no resource usage (exit ${code}): ${err.slice(-1000)}`)
  const u = JSON.parse(rusage) as { userCPUTime: number; systemCPUTime: number; maxRSS: number }
  const summary = JSON.parse(out.trim().split('\n').pop() ?? '{}') as { records?: number; imported?: number; malformed?: number }
  if (code !== 0 || summary.records === undefined) throw new Error(`the import exited ${code}: ${err.slice(-1000)}`)
  const compressedBytes = files.reduce((n, f) => n + statSync(f).size, 0)
  // The JSON of every record (the generator counts it as it writes), and the CSV as it is.
  const uncompressedBytes = made.crossref.jsonBytes + made.dataciteRecords.jsonBytes + statSync(join(dir, 'datacite-states.csv')).size
  return {
    records: summary.records,
    imported: summary.imported ?? 0,
    malformed: summary.malformed ?? 0,
    wallS,
    userS: u.userCPUTime / 1e6,
    systemS: u.systemCPUTime / 1e6,
    maxRssMiB: u.maxRSS / 1024,
    compressedBytes,
    uncompressedBytes,
    exitCode: code,
    jobs
  }
}

// ---- the server ----

interface Memory {
  rssMiB: number
  anonMiB: number
  fileMiB: number
}

/** RSS, RssAnon and RssFile of a process (/proc/PID/status, kB): a mapped file's pages count in RSS but not in RssAnon. */
function memoryOf(pid: number | undefined): Memory | undefined {
  if (pid === undefined) return undefined
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) / 1024
    return { rssMiB: kb('VmRSS'), anonMiB: kb('RssAnon'), fileMiB: kb('RssFile') }
  } catch {
    return undefined
  }
}

function memoryText(m: Memory | undefined): string {
  return m === undefined ? '— | — | —' : `${m.anonMiB.toFixed(0)} | ${m.fileMiB.toFixed(0)} | ${m.rssMiB.toFixed(0)}`
}

async function timedStart(upstream: UpstreamProcess, env: Record<string, string>): Promise<{ server: Target; readyS: number }> {
  const started = performance.now()
  const server = await startOurs({ upstream, env, readyTimeoutMs: 120_000 })
  return { server, readyS: (performance.now() - started) / 1000 }
}

/** A DOI as a path: each segment percent-encoded (SICI DOIs hold `<>;()`), the slashes kept. */
function pathOf(doi: string): string {
  return '/' + doi.split('/').map(encodeURIComponent).join('/')
}

/** Try to drop the page cache (root only): the reason when it could not. */
function dropCaches(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root: the page cache could not be dropped'
  try {
    spawnSync('sync')
    writeFileSync('/proc/sys/vm/drop_caches', '3')
    return undefined
  } catch (err) {
    return `writing /proc/sys/vm/drop_caches failed (${(err as Error).message})`
  }
}

/**
 * A memory cgroup (v1, root only) limited to `mib`, and the wrap that starts a process inside it; run `fn`
 * with it, then its peak usage and how often the limit was hit. The reason instead when there is none.
 */
async function inMemoryCgroup<T>(
  mib: number,
  fn: (wrap: readonly string[]) => Promise<T>
): Promise<{ value: T; maxUsageMiB: number; failcnt: number } | string> {
  const base = '/sys/fs/cgroup/memory'
  if (process.getuid?.() !== 0) return 'not root: no memory cgroup could be made'
  if (!existsSync(join(base, 'memory.limit_in_bytes'))) return `no cgroup v1 memory controller at ${base}`
  const dir = join(base, `doi-proxy-bench-${process.pid}`)
  try {
    mkdirSync(dir)
    writeFileSync(join(dir, 'memory.limit_in_bytes'), String(mib * MIB))
  } catch (err) {
    return `the memory cgroup could not be made (${(err as Error).message})`
  }
  try {
    // The server's own process joins the cgroup, then becomes node (exec: the same pid).
    const value = await fn(['sh', '-c', `echo $$ > ${dir}/cgroup.procs && exec "$@"`, 'sh'])
    const read = (name: string): number => Number(readFileSync(join(dir, name), 'utf8').trim())
    return { value, maxUsageMiB: read('memory.max_usage_in_bytes') / MIB, failcnt: read('memory.failcnt') }
  } finally {
    try {
      rmdirSync(dir)
    } catch {} // a process still in it: left for the kernel to reap
  }
}

interface Measured {
  name: string
  result: LoadResult
  cpuPerAnswerUs?: number
  note: string
}

/** Every request of a row answered 302, none failed. */
function allFound(r: LoadResult, count: number): boolean {
  return r.statuses['302'] === count && r.errors === 0 && r.timeouts === 0
}

function statuses(r: LoadResult): string {
  const parts = Object.entries(r.statuses).map(([code, n]) => `${code}×${n}`)
  if (r.errors > 0) parts.push(`errors ${r.errors}`)
  if (r.timeouts > 0) parts.push(`timeouts ${r.timeouts}`)
  return parts.join(' ')
}

/** Every target in turn, each round in a shuffled order (seeded), `rounds` rounds of `roundS` s; merged per target. */
async function alternate(
  targets: ReadonlyArray<{ name: string; t: Target; paths: string[]; note: string }>,
  rounds: number,
  roundS: number,
  connections: number
): Promise<Measured[]> {
  const state = targets.map((x) => ({ ...x, parts: [] as LoadResult[], samples: new Samples(), cpu: 0 as number | undefined }))
  for (const s of state) await runWrk({ baseUrl: s.t.baseUrl, connections, durationS: 1, paths: s.paths })
  for (let r = 0; r < rounds; r++) {
    const order = [...state]
    const random = seededRandom(1000 + r)
    // The first round as listed, each later one shuffled (Fisher–Yates, seeded by the round).
    const shuffled = r === 0 ? 0 : order.length - 1
    for (let i = shuffled; i > 0; i--) {
      const j = Math.floor(random() * (i + 1))
      ;[order[i], order[j]] = [order[j]!, order[i]!]
    }
    const line: string[] = []
    for (const s of order) {
      const before = cpuMs(s.t.pid)
      const part = await runWrk({
        baseUrl: s.t.baseUrl,
        connections,
        durationS: roundS,
        paths: s.paths,
        startAt: r * 997,
        samples: s.samples
      })
      const after = cpuMs(s.t.pid)
      // The copy and the cache hits share one server: its CPU is read around each target's own stretch.
      s.cpu = s.cpu === undefined || before === undefined || after === undefined ? undefined : s.cpu + after - before
      s.parts.push(part)
      line.push(`${s.name} ${part.rps.toFixed(0)}`)
    }
    log(`  round ${r + 1}/${rounds}: ${line.join(', ')} req/s`)
  }
  return state.map((s) => {
    const result = mergeLoads(s.parts, s.samples)
    return {
      name: s.name,
      result,
      ...(s.cpu === undefined ? {} : { cpuPerAnswerUs: (s.cpu * 1000) / Math.max(1, result.requests) }),
      note: `${statuses(result)}; ${s.note}`
    }
  })
}

/** The server's tally of copy lookups that answered (`doi_proxy_copy_lookups_total{result="hit"}`). */
async function copyHits(t: Target): Promise<number> {
  const text = await (await fetch(`${t.baseUrl}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith('doi_proxy_copy_lookups_total{') && l.includes('result="hit"'))
  // Not there before the first lookup of a fresh server: none yet.
  return line === undefined ? 0 : Number(line.split(' ').pop())
}

/** The server's tally of answers the door wrote before Fastify (`doi_proxy_prepared_answers_total`). */
async function doorAnswers(t: Target): Promise<number> {
  const text = await (await fetch(`${t.baseUrl}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith('doi_proxy_prepared_answers_total '))
  return line === undefined ? 0 : Number(line.split(' ').pop())
}

/** Each of `paths` asked once, in order, on `connections` connections: first reads; what the copy and the upstream answered. */
async function once(
  name: string,
  t: Target,
  upstream: UpstreamProcess,
  paths: string[],
  connections: number,
  note: string
): Promise<Measured> {
  const hitsBefore = await copyHits(t)
  const doorBefore = await doorAnswers(t)
  const upstreamBefore = await upstream.requests()
  const before = cpuMs(t.pid)
  const result = await runWrk({ baseUrl: t.baseUrl, connections, amount: paths.length, paths })
  const after = cpuMs(t.pid)
  const hits = (await copyHits(t)) - hitsBefore
  const door = (await doorAnswers(t)) - doorBefore
  const asked = (await upstream.requests()) - upstreamBefore
  return {
    name,
    result,
    ...(before === undefined || after === undefined ? {} : { cpuPerAnswerUs: ((after - before) * 1000) / Math.max(1, result.requests) }),
    note: `${statuses(result)}; ${n0(hits)} answered by the copy (doi_proxy_copy_lookups_total hit), ${n0(door)} of them by the door (doi_proxy_prepared_answers_total; the others by the route, the first of a prefix), ${n0(asked)} upstream requests (prefix and service records); ${note}`
  }
}

/**
 * `count` work numbers (0 … n − 1) drawn with Zipf s = 1 over ranks 1 … n (the continuous approximation:
 * P(rank ≤ k) = ln k / ln n, so rank = ⌊n^u⌋), each rank's work fixed by a permutation (× a prime, mod n)
 * so the popular works are spread over the copy, not its first file.
 */
function zipfSample(count: number, n: number, seed: number): number[] {
  const random = seededRandom(seed)
  let step = 1_000_003
  while (gcd(step, n) !== 1) step += 2
  return Array.from({ length: count }, () => {
    const rank = Math.min(n, Math.max(1, Math.floor(n ** random())))
    return Number((BigInt(rank - 1) * BigInt(step)) % BigInt(n))
  })
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b)
}

// ---- the report ----

const n0 = (n: number): string => Math.round(n).toLocaleString('en')
const f = (n: number | undefined, d = 2): string => (n === undefined || !Number.isFinite(n) ? '—' : n.toFixed(d))
const ratio = (a: number | undefined, b: number | undefined): string =>
  a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0 ? '—' : `${(a / b).toFixed(2)}×`
const yes = (ok: boolean): string => (ok ? 'yes' : '**no**')

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2))
  const loadAtStart = loadavg()[0] ?? NaN
  ensureBuilt(log)
  const pinning = pinCores()
  const dir = join(TMP, `copy-${o.seed}-${o.works}`)
  const store = join(dir, 'store')
  const rounds = o.quick ? 3 : 5
  const roundS = o.quick ? 2 : 3

  log(`generating ${n0(o.works)} works in ${dir} (reused when made before)`)
  const made = await generate({
    seed: o.seed,
    works: o.works,
    datacite: o.datacite,
    out: dir,
    threads: availableParallelism(),
    progress: (l) => log(`  generate: ${l}`)
  })
  log(`  ${made.cached ? 'made before' : `made in ${made.seconds} s`}: mean work ${n0(made.meanWorkBytes)} B`)

  const importJson = join(dir, 'import.json')
  let imp: ImportFigures
  let reused = false
  if (o.reuse && existsSync(importJson) && existsSync(join(store, 'data.mdb'))) {
    imp = JSON.parse(readFileSync(importJson, 'utf8')) as ImportFigures
    log(`reusing the copy in ${store} (imported before: ${n0(imp.records)} records)`)
    reused = true
  } else {
    log(`importing into ${store}`)
    imp = await runImport(dir, store, made, o.jobs, pinning)
    writeFileSync(importJson, JSON.stringify(imp, null, 2))
  }
  const rate = imp.records / imp.wallS
  const hours150 = CROSSREF_WORKS_2024 / rate / 3600
  const cpuS = imp.userS + imp.systemS
  log(
    `  ${n0(imp.records)} records in ${f(imp.wallS, 1)} s wall, ${f(cpuS, 1)} s CPU: ${n0(rate)} records/s, ${f(imp.compressedBytes / MB / imp.wallS, 1)} MB/s compressed; 150 M works would take ${f(hours150, 1)} h`
  )
  const dataFile = join(store, 'data.mdb')
  const st = statSync(dataFile)
  const allocated = st.blocks * 512
  const perRecord = allocated / imp.records

  const upstream = await startUpstream(1)
  const env = {
    LOG_LEVEL: 'warn',
    WORKERS: '1',
    CONTACT_EMAIL: 'bench@example.org',
    REGISTRY_COPY: store,
    // The generated works were last changed years ago: every copy record answers (the measurement is the tier, not freshness).
    REGISTRY_COPY_MAX_AGE_SECONDS: '315360000'
  }
  const { REGISTRY_COPY: _ignored, ...withoutCopy } = env
  const bare = await timedStart(upstream, withoutCopy)
  await bare.server.stop()
  log(`  a start without the copy: ready in ${f(bare.readyS)} s`)
  const { server, readyS } = await timedStart(upstream, env)
  log(`  a start with the copy: ready in ${f(readyS)} s`)
  const atStart = memoryOf(server.pid)
  const extra: Target[] = []
  const crossrefWorks = made.crossref.works
  try {
    // Disjoint sets of Crossref works: repeats, first reads, first reads with cold pages, the same warm.
    const spread = (count: number, from: number, step: number): string[] =>
      Array.from({ length: count }, (_, k) => pathOf(crossrefDoiOf(o.seed, (from + k * step) % crossrefWorks)))
    const firstCount = Math.min(o.quick ? 40_000 : 200_000, Math.floor(crossrefWorks / 3))
    const coldCount = Math.min(o.quick ? 5_000 : 20_000, Math.floor(crossrefWorks / 10))
    const stride = Math.max(1, Math.floor(crossrefWorks / (HOT + firstCount + 3 * coldCount)))
    const all = spread(HOT + firstCount + 3 * coldCount, 0, stride)
    const hotCopy = all.slice(0, HOT)
    const first = all.slice(HOT, HOT + firstCount)
    const cold = all.slice(HOT + firstCount, HOT + firstCount + coldCount)
    const warmPages = all.slice(HOT + firstCount + coldCount, HOT + firstCount + 2 * coldCount)
    const limitedPaths = all.slice(HOT + firstCount + 2 * coldCount)
    if (new Set(all).size !== all.length) throw new Error('the DOI sets overlap: fewer works than the sets need')
    // Upstream DOIs under prefixes the copy does not hold (Crossref's are 10.1000–10.4999 here).
    const hotCached = Array.from({ length: HOT }, (_, i) => `/10.${9000 + (i % 20)}/bench.cached.${i}`)
    for (let i = 0; i < 3; i++) {
      await warm(server.baseUrl, hotCopy, { concurrency: 8 })
      await warm(server.baseUrl, hotCached, { concurrency: 8 })
    }
    const copyAnswer = await captureAnswer(server.baseUrl, hotCopy[0]!)
    const cachedAnswer = await captureAnswer(server.baseUrl, hotCached[0]!)
    const xCache = (a: CapturedAnswer): string => a.headers.find(([k]) => k.toLowerCase() === 'x-cache')?.[1] ?? '-'
    log(
      `  a copy DOI answers ${copyAnswer.status} X-Cache ${xCache(copyAnswer)}; an upstream DOI ${cachedAnswer.status} X-Cache ${xCache(cachedAnswer)}`
    )
    // A query makes a request not plain: the door passes it to Fastify, whose route finds the cache entry.
    const viaRouter = (p: string): string => `${p}?via=router`
    const routedAnswer = await captureAnswer(server.baseUrl, viaRouter(hotCached[0]!))
    if (xCache(copyAnswer) !== 'COPY' || xCache(cachedAnswer) !== 'HIT' || xCache(routedAnswer) !== 'HIT' || routedAnswer.status !== 302) {
      throw new Error('the copy or the cache does not answer as expected')
    }

    // The same-bytes floor of the copy's answers (bench/README.md): each path's own answer, checked.
    const answers: Array<[string, CapturedAnswer]> = []
    for (const p of hotCopy) answers.push([p, await captureAnswer(server.baseUrl, p)])
    const floor = await startFloor({ answersFile: writeAnswersFile(answers), name: 'floor (node:http, same bytes)' })
    extra.push(floor)
    const checkPaths = [hotCopy[0]!, hotCopy[HOT / 2]!, hotCopy[HOT - 1]!]
    const oursBytes = (await Promise.all(checkPaths.map((p) => answerBytes(server.baseUrl, p)))).join('\n')
    const floorBytes = (await Promise.all(checkPaths.map((p) => answerBytes(floor.baseUrl, p)))).join('\n')
    if (oursBytes !== floorBytes) {
      throw new Error(`the floor does not answer as ours:\n${oursBytes.slice(0, 600)}\n${floorBytes.slice(0, 600)}`)
    }
    const ceiling = await startFloor({ empty: true, name: 'node:http empty 204' })
    extra.push(ceiling)
    const nginx = nginxAvailable() ? await startNginx('return-204') : undefined
    if (nginx !== undefined) extra.push(nginx)

    log(`(a) repeats: ${rounds} rounds of ${roundS} s, ${o.connections} connections`)
    const uniform = (paths: string[], seed: number): string[] => {
      const random = seededRandom(seed)
      return Array.from({ length: 50_000 }, () => paths[Math.floor(random() * paths.length)]!)
    }
    const steady = await alternate(
      [
        {
          name: 'cache hits (upstream DOIs)',
          t: server,
          paths: uniform(hotCached, 1),
          note: `${HOT} DOIs of the fake upstream, each asked before: X-Cache HIT`
        },
        {
          name: 'copy, asked before (the door)',
          t: server,
          paths: uniform(hotCopy, 2),
          note: `${HOT} copy DOIs, each asked before: read from the copy at every request (none is cached), X-Cache COPY`
        },
        {
          name: 'cache hits through the router',
          t: server,
          paths: uniform(hotCached.map(viaRouter), 1),
          note: `the same ${HOT} upstream DOIs with a query (\`?via=router\`): not plain, so the door passes them to Fastify's route, the path of a copy DOI whose prefix the door has not seen: X-Cache HIT`
        },
        {
          name: 'same-bytes floor',
          t: floor,
          paths: uniform(hotCopy, 2),
          note: `writes our answer for each of the ${HOT} copy paths (${describeAnswer(copyAnswer)}); checked identical but for Date`
        },
        {
          name: 'client ceiling: wrk vs node:http empty 204',
          t: ceiling,
          paths: ['/'],
          note: 'the load generator against a server doing nothing'
        },
        ...(nginx === undefined
          ? []
          : [
              {
                name: 'client ceiling: wrk vs nginx return 204',
                t: nginx,
                paths: ['/'],
                note: 'the load generator against one nginx worker doing nothing'
              }
            ])
      ],
      rounds,
      roundS,
      o.connections
    )
    const hit = steady[0]!
    const repeats = steady[1]!
    const routedHit = steady[2]!
    const floorRow = steady[3]!
    const ceilingRows = steady.slice(4)

    // Online, a prefix's own records (HS_NAMESPACE, the service it names) come from the upstream the first
    // time a prefix is seen: asked here first, so the first reads below measure the copy's path, not upstream
    // misses (their rows count what the upstream was still asked).
    const prefixes = [...new Set(all.map((p) => decodeURIComponent(p.slice(1).split('/')[0]!)))]
    const prefixStatuses = await warm(
      server.baseUrl,
      prefixes.map((p) => `/api/handles/${p}`),
      { concurrency: 16 }
    )
    log(`  the ${n0(prefixes.length)} prefixes of those DOIs asked once through the REST API: ${JSON.stringify(prefixStatuses)}`)

    log(`(b) first reads of ${n0(firstCount)} distinct copy DOIs`)
    const firstRow = await once(
      'copy, first reads',
      server,
      upstream,
      first,
      o.connections,
      `${n0(firstCount)} distinct copy DOIs, each asked once`
    )
    log(`  ${n0(firstRow.result.rps)} req/s, p99 ${f(firstRow.result.p99)} ms`)

    log(`(c) first reads with the copy's pages in memory, then after dropping the page cache: ${n0(coldCount)} DOIs each, 4 connections`)
    // Their pages brought into memory first: each read once through the REST API (the route reads the copy; nothing is cached).
    await warm(
      server.baseUrl,
      warmPages.map((p) => `/api/handles${p}`),
      { concurrency: 16 }
    )
    const warmRow = await once(
      'copy, first reads, pages in memory',
      server,
      upstream,
      warmPages,
      4,
      `${n0(coldCount)} distinct copy DOIs, 4 connections, each read once before through the REST API (\`/api/handles/…\`) so that its page is in memory`
    )
    const dropped = dropCaches()
    const coldRow = await once(
      dropped === undefined ? 'copy, first reads, page cache dropped' : 'copy, first reads (page cache NOT dropped)',
      server,
      upstream,
      cold,
      4,
      dropped === undefined
        ? `${n0(coldCount)} distinct copy DOIs, 4 connections, right after \`echo 3 > /proc/sys/vm/drop_caches\``
        : `${n0(coldCount)} distinct copy DOIs, 4 connections; ${dropped}: the copy's pages may all be in memory`
    )
    log(`  pages in memory: p99 ${f(warmRow.result.p99)} ms; ${dropped ?? 'page cache dropped'}: p99 ${f(coldRow.result.p99)} ms`)
    const zipfCount = o.quick ? 100_000 : 500_000
    log(
      `(d) ${n0(zipfCount)} requests, Zipf (s = 1) over all ${n0(crossrefWorks)} Crossref works of the copy, ${o.connections} connections`
    )
    const zipfPaths = zipfSample(zipfCount, crossrefWorks, 3).map((i) => pathOf(crossrefDoiOf(o.seed, i)))
    const zipfDistinct = new Set(zipfPaths).size
    const zipfRow = await once(
      'copy, Zipf over every work',
      server,
      upstream,
      zipfPaths,
      o.connections,
      `${n0(zipfCount)} requests drawn with Zipf s = 1 over the ${n0(crossrefWorks)} Crossref works (a rank's work by a fixed permutation), ${n0(zipfDistinct)} distinct: first reads and repeats mixed as readers' are`
    )
    log(`  ${n0(zipfRow.result.rps)} req/s, p99 ${f(zipfRow.result.p99)} ms, ${n0(zipfDistinct)} distinct DOIs`)
    const after = memoryOf(server.pid)
    const lookups = firstCount + 2 * coldCount + HOT + hit.result.requests + repeats.result.requests + zipfCount

    const limitedZipf = zipfSample(o.quick ? 50_000 : 200_000, crossrefWorks, 5).map((i) => pathOf(crossrefDoiOf(o.seed, i)))
    log(
      `(e) a second server in a ${CGROUP_MIB} MiB memory cgroup, CACHE_MAX_BYTES ${SMALL_CACHE_MIB} MiB: first reads of ${n0(coldCount)} DOIs, 4 connections, then ${n0(limitedZipf.length)} Zipf requests`
    )
    // The first server is stopped first: pages it has mapped stay in memory, charged to it, whatever is dropped.
    await server.stop()
    let limitedDropped: string | undefined
    const limited = await inMemoryCgroup(CGROUP_MIB, async (wrap) => {
      // The default record cache (CACHE_MAX_BYTES 256 MiB of estimated bytes) does not fit in 400 MiB: sized as docs/operations.md says.
      const small = await startOurs({
        upstream,
        env: { ...env, CACHE_MAX_BYTES: String(SMALL_CACHE_MIB * MIB) },
        readyTimeoutMs: 120_000,
        wrap
      })
      try {
        await warm(
          small.baseUrl,
          prefixes.map((p) => `/api/handles/${p}`),
          { concurrency: 16 }
        )
        // Pages already in the page cache stay charged to whoever read them first: dropped, this cgroup brings in (and pays for) its own.
        limitedDropped = dropCaches()
        const row = await once(
          `copy, first reads, server in a ${CGROUP_MIB} MiB memory cgroup`,
          small,
          upstream,
          limitedPaths,
          4,
          `${n0(coldCount)} distinct copy DOIs, 4 connections, a fresh server whose cgroup (v1) holds it and its page cache to ${CGROUP_MIB} MiB, ${limitedDropped === undefined ? 'the page cache dropped first' : `${limitedDropped}: the copy's pages may be charged elsewhere`}`
        )
        const zipf = await once(
          `copy, Zipf, server in a ${CGROUP_MIB} MiB memory cgroup`,
          small,
          upstream,
          limitedZipf,
          o.connections,
          `${n0(limitedZipf.length)} requests drawn with Zipf s = 1 over every Crossref work, ${n0(new Set(limitedZipf).size)} distinct, ${o.connections} connections, the same server after the row above (CACHE_MAX_BYTES ${SMALL_CACHE_MIB} MiB)`
        )
        return { row, zipf, memory: memoryOf(small.pid) }
      } finally {
        await small.stop()
      }
    })
    log(
      typeof limited === 'string'
        ? `  not run: ${limited}`
        : `  ${n0(limited.value.row.result.rps)} req/s, p99 ${f(limited.value.row.result.p99)} ms; cgroup peak ${f(limited.maxUsageMiB, 0)} MiB, limit hit ${limited.failcnt} times`
    )

    const provisional = o.works < FULL_WORKS
    const loadEnd = loadavg()[0] ?? NaN
    const ceilingTop = Math.max(...ceilingRows.map((r) => r.result.rps))
    const fastest = Math.max(hit.result.rps, repeats.result.rps, floorRow.result.rps)
    const rows: Measured[] = [
      ...ceilingRows,
      floorRow,
      hit,
      repeats,
      routedHit,
      firstRow,
      warmRow,
      coldRow,
      zipfRow,
      ...(typeof limited === 'string' ? [] : [limited.value.row, limited.value.zipf])
    ]
    const tableRow = (r: Measured): string => {
      const isCeiling = r.name.startsWith('client')
      // The floor writes the repeated copy DOIs' own answers: only that row is compared with it (other rows answer other bytes).
      const sameBytes = r === repeats || r === floorRow
      return `| ${r.name} | ${n0(r.result.rps)} | ${f(r.result.p50)} | ${f(r.result.p99)} | ${isCeiling ? '—' : ratio(r.result.rps, hit.result.rps)} | ${sameBytes ? ratio(r.result.rps, floorRow.result.rps) : '—'} | ${f(r.cpuPerAnswerUs, 1)} | ${r.note.replace(/\|/g, '/')} |`
    }
    const body = [
      '## Registry copy',
      '',
      ...(provisional
        ? [
            `**Provisional: ${n0(o.works)} works, load average ${f(loadAtStart)} at the start (${f(loadEnd)} at the end), not the issue's 10 M run.** Read the ratios; the absolute figures and the memory at 10 M come from \`npm run bench:copy\` (10,000,000 works) on a quiet machine.`,
            ''
          ]
        : []),
      `Machine: ${machine()}  `,
      `Date: ${new Date().toISOString()}  `,
      `Code: doi-proxy is ${codeVersion()}  `,
      `Load average (1 min): ${f(loadAtStart)} at the start, ${f(loadEnd)} at the end (2 cores: above 1, other work shared them)  `,
      `Cores: ${describePinning(pinning)}  `,
      `Method (\`npm run bench:copy -- --works ${o.works}${o.quick ? ' --quick' : ''}\`, bench/registry-copy/registry-copy.ts; bench/README.md "Registry copy"): bench/registry-copy/generate.ts made ${n0(made.crossref.works)} Crossref works (annual-file tar of ${made.crossref.files} \`.json.gz\`, mean work ${n0(made.meanWorkBytes)} B of JSON) and ${n0(made.dataciteRecords.records)} DataCite records (tar of ${made.dataciteRecords.files} \`.jsonl.gz\`, mean ${n0(made.meanDataciteBytes)} B) with their state CSV (${n0(made.dataciteRecords.stateRows)} rows), seed ${o.seed}. \`doi-proxy import --json\` read the three files into an empty copy, on every core (the runner's pinning lifted with taskset), timed from spawn to exit (CPU and peak RSS: getrusage at exit, every thread). The server (\`node dist/main.js\`, WORKERS=1, online with a fake upstream on 127.0.0.1 for DOIs not in the copy, REGISTRY_COPY_MAX_AGE_SECONDS at its maximum so every copy record answers) was timed from spawn to \`/readyz\` 200. Then, in one run of that server, wrk (\`-t1 -c${o.connections}\`) in ${rounds} alternating rounds of ${roundS} s (order shuffled each round): ${HOT} copy DOIs asked before (the door reads each from the copy at every request, \`X-Cache: COPY\`), ${HOT} upstream DOIs asked before (cache hits), the same ${HOT} with a query so that Fastify's route answers them (cache hits through the router, the path of a copy DOI whose prefix the door has not seen yet), the same-bytes floor of the copy's answers, and the load generator's ceiling; then the prefixes of the copy DOIs below asked once (\`/api/handles/<prefix>\`: online their records come from the upstream), and distinct copy DOIs each asked once (first reads: the door, but for the first DOI of each prefix, which the route answers); then first reads on 4 connections with the copy's pages in memory and after dropping the page cache; then requests drawn with Zipf (s = 1) over every Crossref work of the copy; then a second server started in a ${CGROUP_MIB} MiB memory cgroup (v1, \`memory.limit_in_bytes\`: the process and the page cache it brings in) with CACHE_MAX_BYTES ${SMALL_CACHE_MIB} MiB, answering first reads, then Zipf requests. Memory from /proc/PID/status: RssAnon is the process's own memory; RssFile is the copy's pages mapped in, which the kernel takes back when it needs them (plan-43 §1.3).`,
      '',
      '### Import',
      '',
      ...(reused
        ? ['The import figures are those of an earlier run on the same files (`--reuse-copy`): this run measured the server only.', '']
        : []),
      '| Records | Malformed | Input, compressed MB | Input, uncompressed MB | Wall s | CPU s (user + sys) | Records/s | MB/s compressed | MB/s uncompressed | Peak RSS MiB |',
      '|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
      `| ${n0(imp.records)} | ${n0(imp.malformed)} | ${f(imp.compressedBytes / MB, 0)} | ${f(imp.uncompressedBytes / MB, 0)} | ${f(imp.wallS, 1)} | ${f(cpuS, 1)} (${f(imp.userS, 1)} + ${f(imp.systemS, 1)}) | ${n0(rate)} | ${f(imp.compressedBytes / MB / imp.wallS, 1)} | ${f(imp.uncompressedBytes / MB / imp.wallS, 1)} | ${f(imp.maxRssMiB, 0)} |`,
      '',
      `At ${n0(rate)} records/s, Crossref's whole file (~150 M works) would take **${f(hours150, 1)} h** (target < ${TARGET_HOURS} h: ${hours150 < TARGET_HOURS ? 'met' : '**not met**'} at this rate; the import read with ${imp.jobs === undefined ? 'one thread' : `\`--jobs ${imp.jobs}\` (${imp.jobs} reading thread${imp.jobs === 1 ? '' : 's'} and the writing one)`} on ${cpus().length} cores, and a copy larger than memory writes slower than this one: plan-43 §8).`,
      '',
      '### On disk',
      '',
      `data.mdb: ${f(st.size / MIB, 0)} MiB long, ${f(allocated / MIB, 0)} MiB allocated: **${n0(perRecord)} B per record** (${n0(imp.records)} records, CSL-JSON with abstracts, deflated with a dictionary; plan-43 §1.5) → about ${f((perRecord * 156e6) / 1e9, 0)} GB for Crossref's 156 M works, twice that while a compacting copy is made.`,
      '',
      '### Start',
      '',
      '| Server | Ready after s |',
      '|---|--:|',
      `| without REGISTRY_COPY | ${f(bare.readyS)} |`,
      `| with REGISTRY_COPY (${n0(imp.records)} records) | ${f(readyS)} |`,
      '',
      '### Lookups, one run',
      '',
      '| Requests | req/s | p50 ms | p99 ms | ÷ cache hit | ÷ floor of the same bytes | CPU µs / answer | Notes |',
      '|---|--:|--:|--:|--:|--:|--:|---|',
      ...rows.map(tableRow),
      '',
      '### Memory of the server',
      '',
      '| When | RssAnon MiB | RssFile MiB | RSS MiB |',
      '|---|--:|--:|--:|',
      `| after /readyz | ${memoryText(atStart)} |`,
      `| after ${n0(lookups)} lookups | ${memoryText(after)} |`,
      typeof limited === 'string'
        ? `| a server in a ${CGROUP_MIB} MiB memory cgroup | not run: ${limited} |`
        : `| a second server in a ${CGROUP_MIB} MiB memory cgroup (CACHE_MAX_BYTES ${SMALL_CACHE_MIB} MiB), after ${n0(coldCount)} first reads and ${n0(limitedZipf.length)} Zipf requests (${allFound(limited.value.row.result, coldCount) && allFound(limited.value.zipf.result, limitedZipf.length) ? 'every one 302' : `not all 302: ${statuses(limited.value.row.result)}; ${statuses(limited.value.zipf.result)}`}; the cgroup's peak ${f(limited.maxUsageMiB, 0)} MiB with the page cache, limit hit ${limited.failcnt} times: the kernel took back the copy's pages) | ${memoryText(limited.value.memory)} |`,
      '',
      '### Targets (issue 43 §4)',
      '',
      '| Check | Target | Measured | Met |',
      '|---|---|---|---|',
      `| import rate → Crossref's ~150 M works | < ${TARGET_HOURS} h | ${f(hours150, 1)} h at ${n0(rate)} records/s | ${yes(hours150 < TARGET_HOURS)} |`,
      `| \`/readyz\` after a start with the copy | < ${TARGET_READY_S} s | ${f(readyS)} s (${f(bare.readyS)} s without the copy, same machine, just before) | ${yes(readyS < TARGET_READY_S)} |`,
      `| copy DOIs asked before ÷ cache hits, same run (each read from the copy at every request: the copy's answer, not a cached one) | ≥ ${TARGET_RATIO}× | ${ratio(repeats.result.rps, hit.result.rps)} (p99 ${f(repeats.result.p99)} vs ${f(hit.result.p99)} ms) | ${yes(repeats.result.rps / hit.result.rps >= TARGET_RATIO)} |`,
      `| copy first reads ÷ cache hits, same run (each DOI asked once, ${o.connections} connections both; the first DOI of a prefix through the route) | ≥ ${TARGET_RATIO}× | ${ratio(firstRow.result.rps, hit.result.rps)} (p99 ${f(firstRow.result.p99)} vs ${f(hit.result.p99)} ms) | ${yes(firstRow.result.rps / hit.result.rps >= TARGET_RATIO)} |`,
      `| p99 of a first read whose page is not in memory | — | ${dropped === undefined ? `${f(coldRow.result.p99)} ms (${f(warmRow.result.p99)} ms with the pages in memory)` : `not measured: ${dropped}`} | — |`,
      `| RssAnon of the server after the lookups, the default record cache (CACHE_MAX_BYTES 256 MiB) | < ${TARGET_ANON_MIB} MiB | ${f(after?.anonMiB, 0)} MiB (RSS ${f(after?.rssMiB, 0)}, of which the copy's mapped pages ${f(after?.fileMiB, 0)}) with ${n0(imp.records)} records | ${after === undefined ? '—' : yes(after.anonMiB < TARGET_ANON_MIB)}${provisional ? ' (at this size)' : ''} |`,
      typeof limited === 'string'
        ? `| a server in a ${CGROUP_MIB} MiB memory limit | serves on | not run: ${limited} | — |`
        : `| a server in a ${CGROUP_MIB} MiB memory limit (cgroup), CACHE_MAX_BYTES ${SMALL_CACHE_MIB} MiB | < ${TARGET_ANON_MIB} MiB, serves on | RssAnon ${f(limited.value.memory?.anonMiB, 0)} MiB after ${n0(coldCount + limitedZipf.length)} lookups, ${allFound(limited.value.row.result, coldCount) && allFound(limited.value.zipf.result, limitedZipf.length) ? 'every one answered 302' : 'NOT every one answered 302'} | ${yes(limited.value.memory !== undefined && limited.value.memory.anonMiB < TARGET_ANON_MIB && allFound(limited.value.row.result, coldCount) && allFound(limited.value.zipf.result, limitedZipf.length))} |`,
      `| the client is not the limit: fastest row ÷ the client's ceiling | well under 1× | ${ratio(fastest, ceilingTop)} (${n0(fastest)} of ${n0(ceilingTop)} req/s) | ${yes(fastest / ceilingTop < 0.8)} |`,
      ''
    ].join('\n')
    writeSection('copy', body)
    log(`wrote ${RESULTS_PATH}`)
  } finally {
    await server.stop()
    for (const t of extra) await t.stop()
    await upstream.stop()
  }
}

runBench(main)
