import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { exitOf, isRunning, procStat, QUIET_SERVER_ENV, sleep, startServer } from './support/server-process.js'
import { findOnPath } from './support/test-tools.js'

// src/main.ts started on a terminal (util-linux's `script` gives it one) that then goes away, as when
// the ssh session or the terminal window of the person who ran `npm start` closes.

const GRACE_MS = 2000
// Beyond SHUTDOWN_GRACE_MS: time for a busy machine to run the exit.
const EXIT_BOUND_MS = GRACE_MS + 4000

interface OnTerminal {
  serverPid: number
  port: number
  closeTerminal: () => void
  stallTerminal: () => void
}

/**
 * The server on a terminal of its own, once it listens; `shell` starts it and says "server pid N".
 * Killed by its pid when the test ends: it does not die with `script`.
 */
async function onTerminal(shell: string, env: Record<string, string>): Promise<OnTerminal> {
  const script = spawn('script', ['-qfc', shell, '/dev/null'], {
    env: {
      ...process.env,
      ...QUIET_SERVER_ENV,
      OFFLINE: 'true',
      SHUTDOWN_GRACE_MS: String(GRACE_MS),
      ...env
    },
    stdio: ['pipe', 'pipe', 'pipe']
  })
  let output = ''
  script.stdout.on('data', (c: Buffer) => {
    output += c.toString()
  })
  onTestFinished(() => {
    const pid = /server pid (\d+)/.exec(output)?.[1]
    if (pid !== undefined) {
      try {
        process.kill(Number(pid), 'SIGKILL')
      } catch {}
    }
    script.kill('SIGKILL')
  })
  const plain = (): string => output.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '')
  for (let i = 0; i < 600 && !/listening at http:\/\/127\.0\.0\.1:\d+/.test(plain()); i++) await sleep(50)
  const port = /listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(plain())?.[1]
  const serverPid = /server pid (\d+)/.exec(output)?.[1]
  if (port === undefined || serverPid === undefined) throw new Error(`the server did not start: ${output}`)
  // Killing `script` closes the terminal's master side: the terminal is gone.
  // Not reading `script` makes it stop reading the terminal, which fills: the server's writes wait.
  return {
    serverPid: Number(serverPid),
    port: Number(port),
    closeTerminal: () => script.kill('SIGKILL'),
    stallTerminal: () => script.stdout.pause()
  }
}

/** util-linux's `script` and `setsid`, as on any Linux with util-linux. */
const haveTools = findOnPath(['script']) !== undefined && findOnPath(['setsid']) !== undefined

describe.runIf(haveTools)('a server whose terminal goes away', () => {
  // The usual case: the server is the terminal's controlling process, the kernel hangs up on it (SIGHUP).
  it('stops within the shutdown grace, without spinning on the CPU meanwhile', async () => {
    const server = await onTerminal(`echo "server pid $$"; exec ${process.execPath} --import tsx src/main.ts`, {})
    server.closeTerminal()
    await expectStopped(server.serverPid)
  }, 30_000)

  // In a session of its own (setsid) nobody hangs up on it: it keeps serving, its log lines lost.
  for (const format of ['json', 'pretty']) {
    it(`not hung up on, keeps answering though its log lines (LOG_FORMAT=${format}) are lost, says so once, and stops on SIGTERM`, async () => {
      // Its stderr in a file, to read what it says about the lost terminal.
      const stderr = join(mkdtempSync(join(tmpdir(), 'doi-proxy-terminal-')), 'stderr')
      onTestFinished(() => {
        rmSync(dirname(stderr), { recursive: true, force: true })
      })
      const server = await onTerminal(`setsid ${process.execPath} --import tsx src/main.ts 2>${stderr} & echo "server pid $!"; wait`, {
        LOG_REQUESTS: 'true',
        LOG_FORMAT: format
      })
      server.closeTerminal()
      await sleep(300)
      // Each answer writes an access log line to the lost terminal.
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`http://127.0.0.1:${server.port}/healthz`)
        expect(res.status).toBe(200)
      }
      await expectStopped(server.serverPid)
      expect(readFileSync(stderr, 'utf8')).toBe('doi-proxy: writing the log failed (EIO); no more log lines\n')
    }, 30_000)
  }
})

// A log reader that stalls, then goes away: an ssh session that freezes before it drops, a `| tee` or log
// shipper that hangs, then dies. Lines wait to be written meanwhile; none of them may hold up the shutdown.
describe('a server whose log reader stalls, then goes away', () => {
  /** The server, its output's reader stalled; `goAway` closes that reader. */
  async function stalled(reader: 'pipe' | 'terminal', format: string): Promise<{ pid: number; port: number; goAway: () => void }> {
    const env = { LOG_FORMAT: format, LOG_REQUESTS: 'true', OFFLINE: 'true', SHUTDOWN_GRACE_MS: String(GRACE_MS) }
    if (reader === 'terminal') {
      // A session of its own (setsid): not hung up on, so SIGTERM is what must stop it.
      const server = await onTerminal(`setsid ${process.execPath} --import tsx src/main.ts & echo "server pid $!"; wait`, env)
      server.stallTerminal()
      return { pid: server.serverPid, port: server.port, goAway: server.closeTerminal }
    }
    const { child, port } = await startServer(env)
    // The pipe fills: 64 KiB in the kernel, a little more in our stream.
    child.stdout?.pause()
    return { pid: child.pid ?? 0, port, goAway: () => child.stdout?.destroy() }
  }

  for (const reader of ['pipe', 'terminal'] as const) {
    for (const format of ['json', 'pretty']) {
      it.runIf(reader === 'pipe' || haveTools)(
        `stops on SIGTERM within the shutdown grace (a ${reader}, LOG_FORMAT=${format})`,
        async () => {
          const { pid, port, goAway } = await stalled(reader, format)
          // Each answer logs a line of about 4 KiB (the URL), so sixty of them are more than the reader's buffers hold.
          const long = `/10.5555/${'x'.repeat(4000)}`
          for (let i = 0; i < 60; i++) {
            fetch(`http://127.0.0.1:${port}${long}-${i}`, { signal: AbortSignal.timeout(EXIT_BOUND_MS) }).catch(() => {})
          }
          await sleep(1500)
          process.kill(pid, 'SIGTERM')
          await sleep(300)
          // The reader goes away, its unread lines with it.
          goAway()
          const started = Date.now()
          while (isRunning(pid) && Date.now() - started < EXIT_BOUND_MS) await sleep(100)
          expect(isRunning(pid), `pid ${pid} still runs ${Date.now() - started} ms after SIGTERM and its log reader went away`).toBe(false)
        },
        30_000
      )
    }
  }
})

// A log reader that stalls and stays stalled: docker's blocking log mode behind a slow driver, a `| tee`
// that hangs, a pipe nobody reads. The server goes on answering; what its reader cannot take is dropped.
describe('a server whose log reader stalls and stays stalled', () => {
  // Each answer logs a line of about 4 KiB (the URL): 400 of them are more than the pipe (64 KiB) and
  // the log's buffer (MAX_BUFFERED_LOG_BYTES, 1 MiB) hold together.
  const long = `/10.5555/${'x'.repeat(4000)}`

  /** The server on a pipe that is never read, its reader stalled from the start. */
  async function onStalledPipe(): Promise<{ child: ChildProcess; port: number }> {
    const { child, port } = await startServer({
      LOG_REQUESTS: 'true',
      LOG_FORMAT: 'json',
      OFFLINE: 'true',
      SHUTDOWN_GRACE_MS: String(GRACE_MS)
    })
    child.stdout?.pause()
    return { child, port }
  }

  /** `count` requests, ten at a time; the slowest one's time. */
  async function answerAll(port: number, count: number): Promise<number> {
    let slowest = 0
    for (let i = 0; i < count; i += 10) {
      await Promise.all(
        Array.from({ length: 10 }, async (_, j) => {
          const started = performance.now()
          const res = await fetch(`http://127.0.0.1:${port}${long}-${i + j}`, { signal: AbortSignal.timeout(10_000) })
          await res.arrayBuffer()
          slowest = Math.max(slowest, performance.now() - started)
        })
      )
    }
    return slowest
  }

  it('answers every request while its log reader takes nothing, and stops on SIGTERM within the shutdown grace', async () => {
    const { child, port } = await onStalledPipe()
    const slowest = await answerAll(port, 400)
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5000) })
    expect(res.status).toBe(200)
    console.log(`stalled log reader: 400 requests of ~4 KiB log lines answered, the slowest in ${Math.round(slowest)} ms`)
    process.kill(child.pid ?? 0, 'SIGTERM')
    const started = Date.now()
    while (isRunning(child.pid ?? 0) && Date.now() - started < EXIT_BOUND_MS) await sleep(100)
    expect(isRunning(child.pid ?? 0), `still runs ${Date.now() - started} ms after SIGTERM, its log reader stalled`).toBe(false)
    console.log(`stalled log reader: stopped ${Date.now() - started} ms after SIGTERM`)
  }, 60_000)

  it('says in a later log line how many lines it dropped while its reader stalled', async () => {
    const { child, port } = await onStalledPipe()
    await answerAll(port, 400)
    let out = ''
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString()
    })
    child.stdout?.resume()
    // Said once the reader has caught up, without another line to carry it.
    for (let i = 0; i < 100 && !/log lines were dropped/.test(out); i++) await sleep(100)
    const notice = out.split('\n').find((l) => l.includes('log lines were dropped'))
    expect(notice, 'a line saying lines were dropped').toBeDefined()
    const count = Number(/"msg":"(\d+) log lines were dropped/.exec(notice ?? '')?.[1])
    expect(count).toBeGreaterThan(0)
    // What was written and what was dropped are every request's line.
    const written = out.split('\n').filter((l) => l.includes('x'.repeat(4000))).length
    console.log(`stalled log reader: ${count} lines dropped, ${written} written after it resumed`)
    expect(written + count).toBe(400)
  }, 60_000)
})

// A reader that keeps up: every line arrives, the last ones of the shutdown too.
describe('a server whose log reader keeps up', () => {
  it('writes every line, from the first request to the shutdown', async () => {
    const { child, port, output } = await startServer({
      LOG_REQUESTS: 'true',
      LOG_FORMAT: 'json',
      OFFLINE: 'true',
      SHUTDOWN_GRACE_MS: String(GRACE_MS)
    })
    const count = 2000
    for (let i = 0; i < count; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, j) => {
          const res = await fetch(`http://127.0.0.1:${port}/10.5555/line-${i + j}`)
          await res.arrayBuffer()
        })
      )
    }
    process.kill(child.pid ?? 0, 'SIGTERM')
    await exitOf(child)
    const lines = output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
    const seen = new Set(lines.map((l) => /10\.5555\/line-(\d+)/.exec(l)?.[1]).filter((n) => n !== undefined))
    expect(seen.size, 'requests with a log line').toBe(count)
    expect(
      lines.some((l) => l.includes('shutting down')),
      "the shutdown's line"
    ).toBe(true)
    expect(output()).not.toContain('dropped')
  }, 60_000)
})

/** The process stops, on SIGTERM if not by itself, within the bound; while it runs it idles. */
async function expectStopped(pid: number): Promise<void> {
  const started = Date.now()
  let termSent = false
  while (isRunning(pid) && Date.now() - started < EXIT_BOUND_MS + 1000) {
    const before = cpuTicks(pid)
    await sleep(1000)
    const after = cpuTicks(pid)
    // USER_HZ is 100 on Linux: 30 ticks in a second is 30% of a core, for a server with nothing to do.
    if (before !== undefined && after !== undefined) expect(after - before, 'CPU ticks in one idle second').toBeLessThan(30)
    if (!termSent && isRunning(pid)) {
      process.kill(pid, 'SIGTERM')
      termSent = true
    }
  }
  expect(isRunning(pid), `pid ${pid} still runs ${Date.now() - started} ms after its terminal went away`).toBe(false)
}

/** utime + stime of the process, in clock ticks. */
function cpuTicks(pid: number): number | undefined {
  const fields = procStat(pid)
  return fields === undefined ? undefined : Number(fields[11]) + Number(fields[12])
}
