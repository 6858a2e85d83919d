/**
 * The load generator of bench/run.ts: wrk (C, one thread, `wrk -t1 -cN`), driven by
 * bench/lib/wrk.lua, which sends a file of paths in order and prints its results as JSON. autocannon
 * in this process tops out near 40–50k req/s here, below what a bare node:http server answers, so
 * every ratio to the floor was squeezed towards 1.0×; wrk reaches about twice that against nginx
 * (bench/README.md, "The load generator"). When wrk is missing the runner installs it with apt-get;
 * when that fails it falls back to autocannon and says so in RESULTS.md.
 */
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { LoadResult, Samples } from './load.js'
import { runLoad } from './load.js'
import { TMP, track } from './processes.js'

export type GeneratorName = 'wrk' | 'autocannon'

const LUA = join(import.meta.dirname, 'wrk.lua')
const PATHS_DIR = join(TMP, 'wrk')

function onPath(cmd: string): boolean {
  const r = spawnSync(cmd, ['--version'], { stdio: 'ignore' })
  return r.error === undefined
}

/**
 * wrk if it is on PATH or apt-get can install it (`apt-get install -y wrk`, after an `apt-get update`
 * if the first try fails); otherwise autocannon, with the reason.
 */
export function chooseGenerator(wanted: GeneratorName | undefined, log: (line: string) => void): { name: GeneratorName; why: string } {
  if (wanted === 'autocannon') return { name: 'autocannon', why: 'autocannon chosen with --generator autocannon' }
  if (onPath('wrk')) return { name: 'wrk', why: 'wrk was installed' }
  log('wrk is not on PATH: installing it with `apt-get install -y wrk` (Debian/Ubuntu package)')
  for (const args of [['install', '-y', 'wrk'], ['update'], ['install', '-y', 'wrk']]) {
    const r = spawnSync('apt-get', args, {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
    })
    if (args[0] === 'install' && r.status === 0 && onPath('wrk')) return { name: 'wrk', why: 'wrk installed by the runner with apt-get' }
  }
  if (wanted === 'wrk') throw new Error('--generator wrk: wrk is not on PATH and `apt-get install -y wrk` failed')
  log(
    'could not install wrk: falling back to autocannon, which is slower than the servers it measures (ratios to the floor are squeezed towards 1.0x)'
  )
  return {
    name: 'autocannon',
    why: "FALLBACK: wrk could not be installed (`apt-get install -y wrk` failed), so autocannon in the runner's process drove the load; it tops out below a bare node:http server here, so every ratio to the floor is squeezed towards 1.0×"
  }
}

export interface DriveOptions {
  baseUrl: string
  connections: number
  /** Run for this long, or… */
  durationS?: number
  /** …until this many answers have come back (wrk: counted in Lua; a few more may arrive in the same loop turn). */
  amount?: number
  /** Paths sent in this order (from `startAt`), cycled; the same array gives every server the same sequence. */
  paths: readonly string[]
  startAt?: number
  headers?: Record<string, string>
  /** Count answers by status and X-Cache (wrk: a Lua call per answer, slower; always on with `amount`). */
  countCache?: boolean
  /** Also record the latencies here, to merge rounds (see mergeLoads). */
  samples?: Samples
}

const pathFiles = new WeakMap<readonly string[], string>()

function pathFile(paths: readonly string[]): string {
  const known = pathFiles.get(paths)
  if (known !== undefined) return known
  mkdirSync(PATHS_DIR, { recursive: true })
  const text = paths.join('\n') + '\n'
  const file = join(PATHS_DIR, `paths-${createHash('sha256').update(text).digest('hex').slice(0, 16)}.txt`)
  if (!existsSync(file)) writeFileSync(file, text)
  pathFiles.set(paths, file)
  return file
}

interface WrkJson {
  requests: number
  durationUs: number
  connectErrors: number
  readErrors: number
  writeErrors: number
  statusErrors: number
  timeouts: number
  hits: number
  cacheAnswers: number
  statuses: Record<string, number>
  max: number
  /** µs at 0.1 %, 0.2 %, … 99.0 % (990), then 99.01 % … 100 % (100). */
  quantiles: number[]
}

/** One wrk run (`wrk -t1 -cN`), results as autocannon's runs give them. */
export async function runWrk(opts: DriveOptions): Promise<LoadResult> {
  const counting = opts.countCache === true || opts.amount !== undefined
  const headers = Object.entries(opts.headers ?? {}).map(([k, v]) => `${k}: ${v}`)
  const duration = opts.amount === undefined ? `${opts.durationS ?? 10}s` : '600s'
  const args = [
    '-t1',
    `-c${opts.connections}`,
    `-d${duration}`,
    '--timeout',
    '10s',
    '-s',
    LUA,
    opts.baseUrl,
    '--',
    pathFile(opts.paths),
    String(opts.startAt ?? 0),
    String(opts.amount ?? 0),
    ...headers
  ]
  const child = track(spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, WRK_COUNT: counting ? '1' : '0' } }))
  let out = ''
  let err = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    const before = out.length
    out += chunk.toString()
    // The script's signal that `amount` answers are in: SIGINT makes wrk stop and report the time so far.
    if (opts.amount !== undefined && out.indexOf('LIMIT\n', Math.max(0, before - 6)) >= 0) child.kill('SIGINT')
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    err = (err + chunk.toString()).slice(-2000)
  })
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
  const line = out.split('\n').find((l) => l.startsWith('{"wrk":true'))
  if (line === undefined) throw new Error(`wrk ${args.join(' ')} gave no result (exit ${String(code)}): ${err.trim()}\n${out.slice(-500)}`)
  const r = JSON.parse(line) as WrkJson
  const ms = (us: number | undefined): number => (us === undefined ? NaN : us / 1000)
  const samples = opts.samples
  if (samples !== undefined) {
    r.quantiles.forEach((us, k) => samples.pushWeighted(us / 1000, r.requests * (k < 990 ? 0.001 : 0.0001)))
  }
  const durationS = r.durationUs / 1e6
  const statuses = counting
    ? r.statuses
    : Object.fromEntries(Object.entries({ '<400': r.requests - r.statusErrors, '≥400': r.statusErrors }).filter(([, n]) => n > 0))
  return {
    requests: r.requests,
    durationS,
    rps: r.requests / durationS,
    p50: ms(r.quantiles[499]),
    p90: ms(r.quantiles[899]),
    p99: ms(r.quantiles[989]),
    max: ms(r.max),
    statuses,
    errors: r.connectErrors + r.readErrors + r.writeErrors,
    timeouts: r.timeouts,
    cacheHits: r.hits,
    cacheAnswers: r.cacheAnswers
  }
}

/** One run with the chosen generator; autocannon sends the same sequence through its per-request path. */
export async function drive(generator: GeneratorName, opts: DriveOptions): Promise<LoadResult> {
  if (generator === 'wrk') return await runWrk(opts)
  let i = opts.startAt ?? 0
  const n = opts.paths.length
  return await runLoad({
    baseUrl: opts.baseUrl,
    connections: opts.connections,
    ...(opts.amount === undefined ? { durationS: opts.durationS ?? 10 } : { amount: opts.amount }),
    nextPath: () => opts.paths[i++ % n] ?? '/',
    ...(opts.headers === undefined ? {} : { headers: opts.headers }),
    ...(opts.countCache === undefined ? {} : { countCache: opts.countCache }),
    ...(opts.samples === undefined ? {} : { samples: opts.samples })
  })
}
