import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { expect, onTestFinished } from 'vitest'

/** src/main.ts as a real process: its output so far, and the port it said it listens on. */
export interface Started {
  child: ChildProcess
  port: number
  output: () => string
}

/**
 * The environment a server under test starts with: a free loopback port, no local store, no cache file
 * (each would read or write files under the repository), and a contact address (else a warning at start).
 */
export const QUIET_SERVER_ENV: Readonly<Record<string, string>> = {
  HOST: '127.0.0.1',
  PORT: '0',
  LOCAL_STORE_DIR: '',
  CACHE_FILE: '',
  CONTACT_EMAIL: 'ops@example.org'
}

/**
 * Start `src/main.ts` on a free loopback port with `env` over a quiet base (no local store, no cache
 * file, a contact address, and no load shedding: a process just started on a busy machine can see an
 * event-loop delay over the default second), and resolve once it says it listens; killed when the test ends.
 */
export async function startServer(
  env: Record<string, string>,
  opts: { ownProcessGroup?: boolean; wrap?: readonly string[] } = {}
): Promise<Started> {
  // `wrap`: a command that runs the server as its last arguments (e.g. joins a cgroup, then execs them).
  const [command = process.execPath, ...args] = [...(opts.wrap ?? []), process.execPath, '--import', 'tsx', 'src/main.ts']
  const child = spawn(command, args, {
    env: { ...process.env, ...QUIET_SERVER_ENV, MAX_EVENT_LOOP_DELAY_MS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so a test can signal every process of it at once, as systemd and a terminal do.
    detached: opts.ownProcessGroup === true
  })
  let out = ''
  child.stdout?.on('data', (c: Buffer) => {
    out += c.toString()
  })
  child.stderr?.on('data', (c: Buffer) => {
    out += c.toString()
  })
  onTestFinished(() => {
    child.kill('SIGKILL')
  })
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setInterval(() => {
      const m = /listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(out)
      if (m !== null) {
        clearInterval(timer)
        resolve(Number(m[1]))
      }
      if (child.exitCode !== null) {
        clearInterval(timer)
        reject(new Error(`exited ${child.exitCode}: ${out}`))
      }
    }, 20)
  })
  return { child, port, output: () => out }
}

/** The process's exit code, once it has exited. */
export async function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode
  return await new Promise((resolve) => child.on('exit', (code) => resolve(code)))
}

/**
 * Wait until `count` processes (WORKERS' workers) say they listen, each by its pid: up to 30 s, as a
 * loaded machine starts them slowly; then fail, naming how many did, rather than go on with fewer.
 */
export async function workersListening({ output }: Pick<Started, 'output'>, count: number): Promise<void> {
  const listening = (): number =>
    new Set(
      output()
        .split('\n')
        .filter((l) => l.includes('listening at'))
        .map((l) => (JSON.parse(l) as { pid: number }).pid)
    ).size
  for (let i = 0; i < 600 && listening() < count; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  expect(listening(), 'processes listening').toBe(count)
}

/** A user without root's rights (nobody), for a test of permissions run by root, as CI runs them. */
export interface AnotherUser {
  uid: number
  gid: number
}
export const NOBODY: AnotherUser = { uid: 65534, gid: 65534 }

/** How a start of `src/main.ts` ended: its exit code and everything it wrote, or `listened` when it started after all. */
export interface StartOutcome {
  code: number | null
  output: string
  listened: boolean
}

/**
 * Run `src/main.ts` with `env` over the quiet base of startServer until it exits, or until it says it
 * listens (then it is killed: a start that should have been refused went on): for start-up errors.
 */
export async function startOutcome(env: Record<string, string>, opts: { user?: AnotherUser } = {}): Promise<StartOutcome> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, ...QUIET_SERVER_ENV, MAX_EVENT_LOOP_DELAY_MS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...opts.user
  })
  onTestFinished(() => {
    child.kill('SIGKILL')
  })
  let output = ''
  child.stdout.on('data', (c: Buffer) => {
    output += c.toString()
  })
  child.stderr.on('data', (c: Buffer) => {
    output += c.toString()
  })
  const listened = await new Promise<boolean>((resolve) => {
    const timer = setInterval(() => {
      if (/listening at http:/.test(output)) {
        clearInterval(timer)
        resolve(true)
      }
    }, 20)
    // 'close', not 'exit': all it wrote has been read by then.
    child.once('close', () => {
      clearInterval(timer)
      resolve(false)
    })
  })
  if (listened) child.kill('SIGKILL')
  const code = await exitOf(child)
  return { code: listened ? null : code, output, listened }
}

/** /proc/<pid>/stat after the command name: the state first, then the parent (undefined once it is gone). */
export function procStat(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')
  } catch {
    return undefined
  }
}

/** The process exists and is not a zombie. */
export function isRunning(pid: number): boolean {
  const state = procStat(pid)?.[0]
  return state !== undefined && state !== 'Z'
}

export async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms))
}

/** What a command printed and how it ended. */
export interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** Everything a spawned command prints, once it has ended (its stdout and stderr must be pipes). */
export async function ranToEnd(child: ChildProcess): Promise<Run> {
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString()
  })
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString()
  })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  return { code, stdout, stderr }
}

const REPO = new URL('../..', import.meta.url).pathname
// tsx as the repository has it: the command runs in another folder, where `--import tsx` would not resolve.
const TSX = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href

/** Run the real `doi-proxy` command in `cwd` as a user would (through tsx, so no build is needed), to its end. */
export async function doiProxy(args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  return await ranToEnd(startDoiProxy(args, cwd, env))
}

/** The same command started, for a test that signals it while it runs (then `ranToEnd`). */
export function startDoiProxy(args: string[], cwd: string, env: Record<string, string> = {}): ChildProcess {
  // Killed after a minute: a run that hangs (on a hostile file, a silent server) fails its test instead of the suite.
  return spawn(process.execPath, ['--import', TSX, join(REPO, 'src/command/cli.ts'), ...args], {
    cwd,
    env: { ...process.env, ...env },
    timeout: 60_000
  })
}

/** A loopback port nothing listens on (one just closed). */
export async function closedPort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}
