/**
 * A redis-server for benchmarks: the Debian package on a free loopback port, no persistence, stopped
 * with the run. DEBUG is enabled, so a benchmark can pause it (DEBUG SLEEP) as a slow Redis would.
 */
import { spawn, spawnSync } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { freePort, track } from './processes.js'

export interface RedisProcess {
  url: string
  version: string
  /** The server process itself, for a benchmark that stops it with SIGSTOP as a hung Redis would be. */
  child: ChildProcess
  /** Run redis-cli with these arguments against it; resolves with its output. */
  cli(...args: string[]): Promise<string>
  stop(): Promise<void>
}

export function redisInstalled(): boolean {
  const found = spawnSync('redis-server', ['--version'], { stdio: 'ignore' })
  return found.error === undefined && found.status === 0
}

export async function startRedis(): Promise<RedisProcess> {
  const found = spawnSync('redis-server', ['--version'], { encoding: 'utf8' })
  if (found.error !== undefined || found.status !== 0) {
    throw new Error('redis-server is not on PATH: `apt-get install -y redis-server` (Debian/Ubuntu), then run again')
  }
  const port = await freePort()
  const child = track(
    spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--enable-debug-command', 'local'],
      { stdio: 'ignore' }
    )
  )
  const url = `redis://127.0.0.1:${port}`
  const cli = async (...args: string[]): Promise<string> =>
    await new Promise((resolve) => {
      const c = spawn('redis-cli', ['-u', url, ...args], { stdio: ['ignore', 'pipe', 'ignore'] })
      let out = ''
      c.stdout.on('data', (d: Buffer) => {
        out += d.toString()
      })
      c.on('close', () => resolve(out.trim()))
    })
  for (let i = 0; i < 200; i++) {
    if ((await cli('ping')) === 'PONG') break
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return {
    url,
    child,
    version: found.stdout.split(' ')[2] ?? '',
    cli,
    stop: async () => {
      if (child.exitCode !== null) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
  }
}
