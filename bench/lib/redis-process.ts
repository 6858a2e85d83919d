/** A Debian `redis-server` on a free loopback port, no persistence, killed when the benchmark ends (bench/replicas.ts, bench/faults.ts). */
import { spawn, spawnSync } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { freePort, track } from './processes.js'

export interface RedisProcess { url: string, child: ChildProcess, stop (): Promise<void> }

export function redisInstalled (): boolean {
  const found = spawnSync('redis-server', ['--version'], { stdio: 'ignore' })
  return found.error === undefined && found.status === 0
}

export async function startRedis (): Promise<RedisProcess> {
  if (!redisInstalled()) throw new Error('redis-server is not on PATH: `apt-get install -y redis-server` (Debian/Ubuntu), then run again')
  const port = await freePort()
  const child: ChildProcess = track(spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' }))
  for (let i = 0; i < 200; i++) {
    const ok = spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout?.trim() === 'PONG'
    if (ok) break
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    child,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGCONT') // a paused server must wake to hear SIGTERM
      child.kill('SIGTERM')
      await exited
    }
  }
}
