import { connect, createServer } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'

/**
 * A TCP relay on 127.0.0.1 in front of a real server, which can turn into a blackhole: once `silence()`
 * is called it accepts connections and never answers, and what arrives on connections already open goes
 * nowhere (a partition that drops packets, or a server hung after accept). Nothing is ever refused or cut.
 */
export class Blackhole {
  silent = false
  /** The target's URL at the relay's address, its path kept. */
  url = ''
  private readonly sockets = new Set<Socket>()
  private readonly server = createServer((client) => {
    this.relay(client)
  })

  private constructor(private readonly target: URL) {}

  static async start(target: string): Promise<Blackhole> {
    const hole = new Blackhole(new URL(target))
    await new Promise<void>((resolve) => hole.server.listen(0, '127.0.0.1', resolve))
    const { pathname } = hole.target
    hole.url = `http://127.0.0.1:${(hole.server.address() as AddressInfo).port}${pathname === '/' ? '' : pathname}`
    return hole
  }

  /** From now on nothing is answered, on new connections or open ones. */
  silence(): void {
    this.silent = true
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private relay(client: Socket): void {
    this.track(client)
    if (this.silent) return // accepted, never read, never answered
    const upstream = connect(Number(this.target.port), this.target.hostname)
    this.track(upstream)
    client.on('data', (chunk) => {
      if (!this.silent) upstream.write(chunk)
    })
    upstream.on('data', (chunk) => {
      if (!this.silent) client.write(chunk)
    })
    client.on('close', () => {
      if (!this.silent) upstream.destroy()
    })
    upstream.on('close', () => {
      if (!this.silent) client.destroy()
    })
  }

  private track(socket: Socket): void {
    socket.on('error', () => {})
    this.sockets.add(socket)
    socket.on('close', () => this.sockets.delete(socket))
  }
}
