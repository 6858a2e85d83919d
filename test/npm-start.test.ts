import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it, onTestFinished } from 'vitest'
import { isRunning, procStat, QUIET_SERVER_ENV, sleep } from './support/server-process.js'

// What the README tells people to run, `npm start` and `npm run start:offline`, stops with everything it
// started: on SIGTERM to npm (a supervisor, `kill`), and on Ctrl-C (SIGINT to the terminal's whole
// process group). npm runs a script through `sh -c`; a shell that stays in between takes the signal and
// leaves node running under pid 1, so the scripts `exec` node.

const GRACE_MS = 2000

describe('npm start and npm run start:offline stop with their children', () => {
  // WORKERS=2 too: the primary and its workers.
  for (const { script, workers } of [
    { script: 'start', workers: '1' },
    { script: 'start:offline', workers: '1' },
    { script: 'start', workers: '2' }
  ]) {
    for (const how of ['SIGTERM to npm', 'Ctrl-C'] as const) {
      it(`WORKERS=${workers} npm run ${script}, then ${how}: npm and everything it started exit`, async () => {
        const npm = spawn('npm', ['run', '--silent', script], {
          env: {
            ...process.env,
            ...QUIET_SERVER_ENV,
            LOG_FORMAT: 'json',
            SHUTDOWN_GRACE_MS: String(GRACE_MS),
            WORKERS: workers
          },
          stdio: ['ignore', 'pipe', 'pipe'],
          // A process group of its own, as a terminal gives a command: Ctrl-C signals the whole group.
          detached: true
        })
        let output = ''
        npm.stdout.on('data', (c: Buffer) => {
          output += c.toString()
        })
        npm.stderr.on('data', (c: Buffer) => {
          output += c.toString()
        })
        const started = new Set<number>()
        onTestFinished(() => {
          for (const pid of [npm.pid ?? 0, ...started]) {
            try {
              process.kill(pid, 'SIGKILL')
            } catch {}
          }
        })
        // npm start builds dist/ first when src/ changed since the last build: minutes on a busy machine.
        const ready = (): number => output.split('doi-proxy is ready').length - 1
        for (let i = 0; i < 2400 && ready() < Number(workers) && npm.exitCode === null; i++) await sleep(100)
        expect(ready(), output).toBe(Number(workers))
        for (const pid of descendants(npm.pid ?? 0)) started.add(pid)
        expect(
          [...started].some((pid) => /dist\/main\.js/.test(commandOf(pid))),
          `a node dist/main.js under npm: ${[...started].map(commandOf).join('; ')}`
        ).toBe(true)

        // 'close', not 'exit': by then all that npm and the server wrote (to the same pipes) has been read.
        const exited = new Promise<string>((resolve) => npm.once('close', (code, signal) => resolve(signal ?? `exit ${code}`)))
        const signal = how === 'SIGTERM to npm' ? 'SIGTERM' : 'SIGINT'
        if (how === 'SIGTERM to npm') process.kill(npm.pid ?? 0, signal)
        else process.kill(-(npm.pid ?? 0), signal)
        // npm passes the signal on, waits for the script, then exits 0 or ends itself with that signal (a shell sees 130 or 143).
        const ended = await Promise.race([exited, sleep(GRACE_MS + 8000).then(() => 'still running')])
        expect(['exit 0', signal], output).toContain(ended)
        for (let i = 0; i < 50 && [...started].some(isRunning); i++) await sleep(100)
        expect(
          [...started].filter(isRunning).map((pid) => `${pid} ${commandOf(pid)}`),
          'left running'
        ).toEqual([])
        expect(output).toContain('shutting down: finishing in-flight requests')
      }, 300_000)
    }
  }
})

/** Every process under `pid`, from /proc. */
function descendants(pid: number): number[] {
  const parents = new Map<number, number[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const ppid = Number(procStat(Number(entry))?.[1])
    parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)])
  }
  const children = parents.get(pid) ?? []
  return [...children, ...children.flatMap(descendants)]
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim()
  } catch {
    return ''
  }
}
