/**
 * Helper processes of the hostile benchmark and the fuzzer (the CDN-like upstream, the attacker):
 * spawned with stdin as a pipe they watch (so they die with us), killed on every way we end
 * (bench/lib/processes.ts `track`), and waited for until an HTTP URL answers. Also
 * `startCdnUpstream`, bench/lib/cdn-upstream.ts as a process, shaped like processes.ts
 * `startUpstream` so `startOurs` takes it.
 */
import { spawn, spawnSync } from 'node:child_process'
import type { ChildProcess, StdioOptions } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { freePort, ROOT, stop, TMP, track } from './processes.js'
import type { UpstreamProcess } from './processes.js'
import { DEFAULT_RULES } from './cdn-upstream.js'
import type { CdnRules, CdnStats } from './cdn-upstream.js'

export interface Tracked {
  child: ChildProcess
  /** The last 4,000 characters of its stderr. */
  stderr: () => string
  /** Everything it wrote on stdout (when stdout is piped). */
  stdout: () => string
}

/** `node [nodeArgs] --import tsx script [args]`, from the repository root. */
export function spawnTracked(
  name: string,
  script: string,
  args: readonly string[],
  opts: { nodeArgs?: readonly string[]; env?: NodeJS.ProcessEnv; ipc?: boolean } = {}
): Tracked {
  mkdirSync(TMP, { recursive: true })
  // With `ipc`, child.send() and the child's process.send() carry messages both ways (bench/lib/health-fakes.ts).
  const stdio: StdioOptions = opts.ipc === true ? ['pipe', 'pipe', 'pipe', 'ipc'] : ['pipe', 'pipe', 'pipe']
  const child = track(
    spawn(process.execPath, [...(opts.nodeArgs ?? []), '--import', 'tsx', script, ...args], {
      cwd: ROOT,
      env: opts.env ?? process.env,
      stdio
    })
  )
  let err = ''
  let out = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    err = (err + chunk.toString()).slice(-4000)
  })
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString()
  })
  child.once('exit', (code, signal) => {
    if (code !== 0 && code !== null && signal === null) process.stderr.write(`[bench] ${name} exited with ${code}\n${err}`)
  })
  return { child, stderr: () => err, stdout: () => out }
}

/** Resolves when the child exits (at once if it has). */
export async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  await new Promise<void>((resolve) => child.once('exit', () => resolve()))
}

/** Poll `url` until it answers 200; fail if the child dies or timeoutMs passes. */
export async function waitOk(child: ChildProcess, name: string, url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited before it was ready`)
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1_000) })
      await res.arrayBuffer()
      if (res.status === 200) return
    } catch {
      /* not listening yet */
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  child.kill('SIGKILL')
  throw new Error(`${name} did not become ready at ${url} within ${timeoutMs} ms`)
}

// ------------------------------------------------------------------ the CDN-like upstream as a process

export interface CdnUpstreamProcess extends UpstreamProcess {
  cdnStats(): Promise<CdnStats>
  /** Handle requests the fake upstream answered (records and 404s), without the edge's refusals. */
  answered(): Promise<number>
}

const CDN_UPSTREAM = join(ROOT, 'bench', 'lib', 'cdn-upstream.ts')

/** Start the edge + fake upstream as its own process (like bench/lib/processes.ts startUpstream). */
export async function startCdnUpstream(opts: {
  latencyMs: number
  cdn?: boolean
  hostile?: boolean
  rules?: CdnRules
}): Promise<CdnUpstreamProcess> {
  const port = await freePort()
  const rules = opts.rules ?? DEFAULT_RULES
  const args = [
    '--port',
    String(port),
    '--latency',
    String(opts.latencyMs),
    '--url-limit',
    String(rules.urlLimit),
    '--header-limit',
    String(rules.headerLimit)
  ]
  if (opts.cdn === false) args.push('--no-cdn')
  if (opts.hostile === true) args.push('--hostile')
  const { child } = spawnTracked('cdn upstream', CDN_UPSTREAM, args, { nodeArgs: ['--max-http-header-size=65536'] })
  const origin = `http://127.0.0.1:${port}`
  await waitOk(child, 'cdn upstream', `${origin}/__stats`)
  const cdnStats = async (): Promise<CdnStats> => (await (await fetch(`${origin}/__cdn`)).json()) as CdnStats
  const answered = async (): Promise<number> => ((await (await fetch(`${origin}/__stats`)).json()) as { requests: number }).requests
  return {
    port,
    origin,
    apiUrl: `${origin}/api/handles`,
    latencyMs: opts.latencyMs,
    cdnStats,
    answered,
    requests: async () => {
      const s = await cdnStats()
      return s.forwarded + Object.values(s.rejected).reduce((a, b) => a + b, 0)
    },
    reset: async () => {
      await (await fetch(`${origin}/__reset`)).arrayBuffer()
    },
    stop: async () => await stop(child)
  }
}

/** The commit under test, and whether src/ has uncommitted changes (they are built and measured too). */
export function codeVersion(): string {
  const git = (...args: string[]): string | undefined => {
    const r = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' })
    return r.status === 0 ? r.stdout.trim() : undefined
  }
  const commit = git('rev-parse', '--short', 'HEAD')
  if (commit === undefined) return 'unknown (not a git checkout)'
  const dirty = (git('status', '--porcelain', '--', 'src') ?? '') !== ''
  return `commit ${commit}${dirty ? ' with uncommitted changes in src/' : ''}`
}
