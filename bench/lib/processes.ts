/**
 * Every server under test runs as its own process: our server, the floor, nginx and the fake
 * upstream. This module starts them, waits until they answer, and makes sure none outlives the run.
 */
import { spawn, spawnSync } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildIfStale } from '../../scripts/build-if-stale.js'
import { OPTIONS } from '../../src/config/schema.js'
import { workerCount } from '../../src/main/workers.js'
import { nginxConfig, nginxTrivialConfig } from './nginx.js'
import { serverPrefix } from './pinning.js'

export const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)))
export const TMP = join(ROOT, 'bench', '.tmp')
export const PROFILE_DIR = join(TMP, 'profiles')

/** A server the load generator can aim at. */
export interface Target {
  name: string
  baseUrl: string
  port: number
  /** The server's process; its CPU time and its children's (workers) is read by cpuMs. */
  pid?: number
  /** Said in the notes of its rows in RESULTS.md (the same-bytes floor: what it writes, and that it was checked). */
  note?: string
  stop(): Promise<void>
}

/**
 * CPU time (user + system, ms) used so far by a process and every process under it (cluster workers,
 * nginx workers), from /proc; undefined where there is no /proc. Sampled around a measured run, it
 * gives CPU per answer, which moves far less than req/s when something else takes the cores.
 */
export function cpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined || !existsSync('/proc/self/stat')) return undefined
  const parentOf = new Map<number, number>()
  const ticks = new Map<number, number>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      // Fields after the command's closing parenthesis: state, ppid, …, utime (14th field), stime (15th).
      const f = readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
      parentOf.set(Number(name), Number(f[1]))
      ticks.set(Number(name), Number(f[11]) + Number(f[12]))
    } catch {} // gone meanwhile
  }
  let sum = 0
  for (const [p, t] of ticks) {
    for (let q: number | undefined = p, depth = 0; q !== undefined && q > 1 && depth < 8; q = parentOf.get(q), depth++) {
      if (q === pid) {
        sum += t
        break
      }
    }
  }
  // USER_HZ is 100 on Linux.
  return sum * 10
}

const running = new Set<ChildProcess>()

// Nothing we started may outlive us, whatever way we end: every bench script's children are tracked here.
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const child of running) child.kill('SIGKILL')
    process.exit(130)
  })
}

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      srv.close(() => resolve(port))
    })
  })
}

/** Kill `child` when this process ends, however it ends; forget it once it has exited by itself. */
export function track(child: ChildProcess): ChildProcess {
  running.add(child)
  child.once('exit', () => running.delete(child))
  return child
}

/** `cmd args` run by `wrap` (its first word the command: valgrind, taskset), or as they are. */
function wrapped(wrap: readonly string[] | undefined, cmd: string, args: string[]): [string, string[]] {
  const [first, ...rest] = wrap ?? []
  return first === undefined ? [cmd, args] : [first, [...rest, cmd, ...args]]
}

/** Start a helper process; a server under test (`underTest`) runs on the servers' core when the run is pinned (bench/lib/pinning.ts). */
function start(name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd = ROOT, underTest = true): ChildProcess {
  mkdirSync(TMP, { recursive: true })
  const [command, commandArgs] = wrapped(underTest ? serverPrefix() : undefined, cmd, args)
  // stdin is a pipe our helpers watch: if this process dies without cleaning up (e.g. out of memory), they exit too.
  const child = track(spawn(command, commandArgs, { cwd, env, stdio: ['pipe', 'ignore', 'pipe'] }))
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000)
  })
  child.once('exit', (code, signal) => {
    if (code !== 0 && code !== null && signal === null) process.stderr.write(`[bench] ${name} exited with ${code}\n${stderr}`)
  })
  return child
}

/** SIGTERM, then SIGKILL if it has not exited within graceMs. */
export async function stop(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(timer)
}

/** Poll url until `ok(status)`; fail if the process dies or timeoutMs passes. */
async function waitFor(child: ChildProcess, name: string, url: string, ok: (status: number) => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited before it was ready`)
    try {
      const res = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(1_000) })
      await res.arrayBuffer()
      if (ok(res.status)) return
    } catch {
      /* not listening yet */
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  await stop(child)
  throw new Error(`${name} did not become ready at ${url} within ${timeoutMs} ms`)
}

/** `npm run build` when dist/ is missing or older than src/ (scripts/build-if-stale.ts, as `npm start` does). */
export function ensureBuilt(log: (line: string) => void): void {
  if (buildIfStale(log)) return
  if (!existsSync(join(ROOT, 'dist', 'main.js'))) throw new Error('npm run build failed and dist/main.js does not exist')
  log('npm run build reported errors; benchmarking the dist/ it emitted anyway')
}

// ------------------------------------------------------------------ the fake upstream

export interface UpstreamProcess {
  port: number
  /** Base for our server's UPSTREAM_URL. */
  apiUrl: string
  origin: string
  latencyMs: number
  requests(): Promise<number>
  reset(): Promise<void>
  stop(): Promise<void>
}

export async function startUpstream(latencyMs: number): Promise<UpstreamProcess> {
  const port = await freePort()
  const child = start(
    'fake-upstream',
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'bench', 'fake-upstream.ts'), '--port', String(port), '--latency', String(latencyMs)],
    process.env,
    ROOT,
    false
  )
  const origin = `http://127.0.0.1:${port}`
  await waitFor(child, 'fake upstream', `${origin}/__stats`, (s) => s === 200)
  return {
    port,
    origin,
    apiUrl: `${origin}/api/handles`,
    latencyMs,
    requests: async () => ((await (await fetch(`${origin}/__stats`)).json()) as { requests: number }).requests,
    reset: async () => {
      await (await fetch(`${origin}/__reset`)).arrayBuffer()
    },
    stop: async () => await stop(child)
  }
}

// ------------------------------------------------------------------ servers under test

export interface OursOptions {
  upstream: UpstreamProcess
  /** Start node with --cpu-prof (the profile is written when the server exits). */
  profile?: boolean
  /** Extra environment for the server (from --server-env KEY=VALUE). */
  env?: Record<string, string>
  /**
   * Another build of this repository to run instead of the work tree's (`--before`: an older commit
   * built in bench/.tmp): `DIR/dist/main.js`, with DIR as its working directory, as ours has ROOT.
   */
  dir?: string
  /** The name in the results (default `doi-proxy`). */
  name?: string
  /** How long the server may take to answer /readyz 200 (default 15 s; a busy machine may need more). */
  readyTimeoutMs?: number
  /** How long stop() waits after SIGTERM before SIGKILL (default 8 s). */
  stopGraceMs?: number
  /** A command that runs node, e.g. valgrind and its options (bench/count.ts). */
  wrap?: readonly string[]
}

/** Our server: `node dist/main.js`, configured only through its environment. */
export async function startOurs(opts: OursOptions): Promise<Target> {
  const port = await freePort()
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    UPSTREAM_URL: opts.upstream.apiUrl,
    SHUTDOWN_GRACE_MS: '3000',
    // No snapshot file: every start is cold, as each scenario needs (issue 14 made one the default).
    CACHE_FILE: '',
    // The load generator is one client on 127.0.0.1 standing for many readers: held to one reader's share
    // of the upstream (8 lookups in flight, 32 waiting), most zipf misses would be 429s, not answers.
    TRUSTED_NETWORKS: '127.0.0.0/8',
    ...opts.env
  }
  const nodeArgs = opts.profile === true ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR] : []
  if (opts.profile === true) mkdirSync(PROFILE_DIR, { recursive: true })
  const dir = opts.dir ?? ROOT
  const name = opts.name ?? 'doi-proxy'
  const child = start(name, ...wrapped(opts.wrap, process.execPath, [...nodeArgs, join(dir, 'dist', 'main.js')]), env, dir)
  const baseUrl = `http://127.0.0.1:${port}`
  await waitFor(child, name, `${baseUrl}/readyz`, (s) => s === 200, opts.readyTimeoutMs)
  return { name, baseUrl, port, pid: child.pid, stop: async () => await stop(child, opts.stopGraceMs ?? 8_000) }
}

/**
 * How many processes our server runs with `env`: WORKERS (default 1), or for 0 what src/main.ts works
 * out (the cores a cgroup allows, else the machine's). The same-bytes floor runs as many.
 */
export function oursWorkers(env: Record<string, string | undefined> = {}): number {
  return workerCount(Number(env.WORKERS ?? OPTIONS.workers.default))
}

export interface FloorOptions {
  /** A captured answer of ours to write for every request (bench/lib/floor-answer.ts); default a fixed 302. */
  answerFile?: string
  /** Each path's captured answer, written for the requests of that path (floor-answer.ts writeAnswersFile). */
  answersFile?: string
  /** A 204 with no body: the client-ceiling check. */
  empty?: boolean
  name?: string
  /** Processes sharing the port (node:cluster), as our server's WORKERS; default 1. */
  workers?: number
  /** A command that runs node, e.g. valgrind and its options (bench/count.ts). */
  wrap?: readonly string[]
}

/** The name of the A/A row (a second floor process): not starting with "floor", so the first floor stays the one every row is divided by. */
export const TWIN_FLOOR = 'same-bytes floor again, a second process (A/A)'

/** The floor: bare node:http answering one fixed answer (bench/baselines/floor.mjs). */
export async function startFloor(opts: FloorOptions = {}): Promise<Target> {
  const port = await freePort()
  // HOST as ours has it: valgrind's gdbserver names its pipe after it, and callgrind_control must find it (bench/count.ts).
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1' }
  if (opts.answerFile !== undefined) env.FLOOR_ANSWER = opts.answerFile
  if (opts.answersFile !== undefined) env.FLOOR_ANSWERS = opts.answersFile
  if (opts.empty === true) env.FLOOR_EMPTY = '1'
  if (opts.workers !== undefined) env.FLOOR_WORKERS = String(opts.workers)
  const child = start('floor', ...wrapped(opts.wrap, process.execPath, [join(ROOT, 'bench', 'baselines', 'floor.mjs')]), env)
  const baseUrl = `http://127.0.0.1:${port}`
  await waitFor(child, 'floor', `${baseUrl}/readyz`, (s) => s > 0)
  return { name: opts.name ?? 'floor (node:http)', baseUrl, port, pid: child.pid, stop: async () => await stop(child) }
}

/**
 * The miss floor (bench/baselines/miss-floor.mjs): bare node:http asking the upstream with undici for
 * every request and writing our redirect's headers and page around the record's URL. `answerFile` is a
 * captured answer of ours with a `url` field: the URL in it to replace.
 */
export async function startMissFloor(upstream: UpstreamProcess, answerFile: string, wrap?: readonly string[]): Promise<Target> {
  const port = await freePort()
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    PORT: String(port),
    HOST: '127.0.0.1',
    UPSTREAM_URL: upstream.apiUrl,
    MISS_FLOOR_ANSWER: answerFile
  }
  const child = start('miss floor', ...wrapped(wrap, process.execPath, [join(ROOT, 'bench', 'baselines', 'miss-floor.mjs')]), env)
  const baseUrl = `http://127.0.0.1:${port}`
  await waitFor(child, 'miss floor', `${baseUrl}/readyz`, (s) => s > 0)
  return { name: 'floor (node:http + undici, no cache)', baseUrl, port, pid: child.pid, stop: async () => await stop(child) }
}

/** Is nginx installed? (We never install it ourselves.) */
export function nginxAvailable(): boolean {
  const result = spawnSync('nginx', ['-v'], { stdio: 'ignore' })
  return result.error === undefined && result.status === 0
}

export const NGINX_MISSING =
  'nginx is not on PATH: the nginx baseline is skipped. To include it: `apt-get install -y nginx` (Debian/Ubuntu), then run again.'

let nginxRuns = 0

/** nginx with proxy_cache + proxy_cache_lock in front of the fake upstream's /redirect/ (a fresh, empty cache each start). */
export async function startNginx(upstream: UpstreamProcess | 'return-204'): Promise<Target> {
  const port = await freePort()
  const dir = join(TMP, `nginx-${process.pid}-${nginxRuns++}`)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const confPath = join(dir, 'nginx.conf')
  const runAsRoot = process.getuid?.() === 0
  writeFileSync(
    confPath,
    upstream === 'return-204'
      ? nginxTrivialConfig({ dir, port, runAsRoot })
      : nginxConfig({ dir, port, upstreamPort: upstream.port, runAsRoot })
  )
  const child = start('nginx', 'nginx', ['-p', `${dir}/`, '-e', join(dir, 'error.log'), '-c', confPath, '-g', 'daemon off;'], process.env)
  const baseUrl = `http://127.0.0.1:${port}`
  await waitFor(child, 'nginx', `${baseUrl}/readyz`, (s) => s === (upstream === 'return-204' ? 204 : 200))
  return {
    name: upstream === 'return-204' ? 'nginx return 204' : 'nginx proxy_cache',
    baseUrl,
    port,
    pid: child.pid,
    stop: async () => {
      await stop(child)
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
