import { connect, createServer } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'

/**
 * A TCP relay on 127.0.0.1 that delays every chunk, each way, by `delayMs` (order kept): a server that
 * answers steadily but slowly, as a Redis across a WAN or an overloaded one does. `delayMs` may change
 * at any time; it applies to chunks that arrive after.
 */
export class DelayProxy {
  private readonly sockets = new Set<Socket>()
  private readonly server = createServer((client) => {
    this.relay(client)
  })
  port = 0

  private constructor(
    private readonly targetPort: number,
    public delayMs: number
  ) {}

  static async start(targetPort: number, delayMs: number): Promise<DelayProxy> {
    const proxy = new DelayProxy(targetPort, delayMs)
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve))
    proxy.port = (proxy.server.address() as AddressInfo).port
    return proxy
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private relay(client: Socket): void {
    const target = connect(this.targetPort, '127.0.0.1')
    for (const s of [client, target]) {
      s.on('error', () => {})
      this.sockets.add(s)
      s.on('close', () => {
        this.sockets.delete(s)
        client.destroy()
        target.destroy()
      })
    }
    this.forward(client, target)
    this.forward(target, client)
  }

  /** Each chunk written `delayMs` after it came, never before the one ahead of it. */
  private forward(from: Socket, to: Socket): void {
    let last = 0
    from.on('data', (chunk) => {
      const at = Math.max(performance.now() + this.delayMs, last)
      last = at
      setTimeout(() => {
        if (!to.destroyed) to.write(chunk)
      }, at - performance.now())
    })
  }
}
