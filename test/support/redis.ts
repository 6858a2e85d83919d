import { spawn, spawnSync } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { Redis } from 'ioredis'

/**
 * A real redis-server on 127.0.0.1 and a free port, with no persistence, for tests of the shared
 * tier. It must be installed (.ci/run installs the Debian package when it is missing): without it the
 * tests fail with that message, they are never skipped silently.
 */
export class TestRedis {
  private child: ChildProcess | undefined
  private constructor (readonly port: number) {}

  get url (): string {
    return `redis://127.0.0.1:${this.port}`
  }

  static async start (): Promise<TestRedis> {
    const found = spawnSync('redis-server', ['--version'], { stdio: 'ignore' })
    if (found.error !== undefined || found.status !== 0) {
      throw new Error('redis-server is not installed: `apt-get install -y redis-server` (Debian/Ubuntu); .ci/run installs it')
    }
    const redis = new TestRedis(await freePort())
    await redis.run()
    return redis
  }

  get running (): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null
  }

  /** (Re)start the server on its port; nothing when it runs. */
  async run (): Promise<void> {
    if (this.running) return
    const child = spawn('redis-server', [
      '--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
      '--enable-debug-command', 'yes', '--loglevel', 'warning'
    ], { stdio: 'ignore' })
    this.child = child
    const client = new Redis(this.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
    client.on('error', () => {})
    try {
      for (let i = 0; i < 200; i++) {
        if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`)
        try {
          await client.connect()
          if (await client.ping() === 'PONG') return
        } catch { /* not listening yet */ }
        client.disconnect()
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      throw new Error(`redis-server did not answer on port ${this.port}`)
    } finally {
      client.disconnect()
    }
  }

  /** Kill the server at once (SIGKILL), as a crash would. */
  async kill (): Promise<void> {
    const child = this.child
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
  }

  /** A client of our own, for looking at or planting keys. */
  client (): Redis {
    const client = new Redis(this.port, '127.0.0.1', { maxRetriesPerRequest: 1 })
    client.on('error', () => {})
    return client
  }

  async close (): Promise<void> {
    await this.kill()
  }
}

async function freePort (): Promise<number> {
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
