/**
 * The fault matrix's upstream (bench/faults.ts): a Handle REST API on 127.0.0.1, in this process, that
 * answers every `10.5555/…` handle with a one-URL record, until told to misbehave in one of the ways
 * a real upstream, a CDN or a captive portal does. Counts the requests for each handle.
 */
import { createServer } from 'node:http'
import type { Server, ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { gzipSync } from 'node:zlib'

export type FaultMode =
  | 'ok'
  | 'drip'
  | 'hang'
  | 'huge'
  | 'html-200'
  | 'invalid-json'
  | 'gzip'
  | 'rate-limited'
  | 'status-500'
  | 'status-503'
  | 'reset'
  | 'refused'

const HUGE_BYTES = 50 * 1024 * 1024

export class FaultUpstream {
  mode: FaultMode = 'ok'
  private readonly counts = new Map<string, number>()
  private readonly sockets = new Set<Socket>()
  private server: Server | undefined
  private port = 0

  static async start(): Promise<FaultUpstream> {
    const upstream = new FaultUpstream()
    await upstream.listen()
    return upstream
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.port}/api/handles`
  }

  /** Requests that asked for `handle` so far. */
  requestsFor(handle: string): number {
    return this.counts.get(handle) ?? 0
  }

  /** 'refused': nothing listens on the port (and open connections are cut); any other mode listens again. */
  async setMode(mode: FaultMode): Promise<void> {
    this.mode = mode
    if (mode === 'refused') await this.close()
    else if (this.server === undefined) await this.listen(this.port)
  }

  async close(): Promise<void> {
    const server = this.server
    this.server = undefined
    for (const socket of this.sockets) socket.destroy()
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  private async listen(port = 0): Promise<void> {
    const server = createServer((req, res) => {
      const handle = decodeURIComponent((req.url ?? '').split('?')[0]?.replace(/^\/api\/handles\//, '') ?? '')
      this.counts.set(handle, (this.counts.get(handle) ?? 0) + 1)
      this.answer(handle, res)
    })
    server.on('connection', (socket) => {
      this.sockets.add(socket)
      socket.on('close', () => this.sockets.delete(socket))
    })
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
    this.server = server
    this.port = (server.address() as AddressInfo).port
  }

  private answer(handle: string, res: ServerResponse): void {
    const record = JSON.stringify({
      responseCode: 1,
      handle,
      values: [
        {
          index: 1,
          type: 'URL',
          data: { format: 'string', value: `https://example.org/${encodeURIComponent(handle)}` },
          ttl: 86400,
          timestamp: '2026-01-01T00:00:00Z'
        }
      ]
    })
    switch (this.mode) {
      case 'ok':
      case 'refused':
        res.writeHead(200, { 'content-type': 'application/json' }).end(record)
        return
      case 'drip': {
        // Headers at once, then the record a byte every 200 ms: never done before any sane timeout.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(record)) })
        let i = 0
        const timer = setInterval(() => {
          if (res.destroyed || i >= record.length) {
            clearInterval(timer)
            res.end()
            return
          }
          res.write(record[i++])
        }, 200)
        res.on('close', () => clearInterval(timer))
        return
      }
      case 'hang':
        return
      case 'huge': {
        // 50 MB of a JSON string, 1 MB at a time, as fast as the reader takes it.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(HUGE_BYTES) })
        const chunk = Buffer.alloc(1024 * 1024, 0x61)
        let sent = 0
        const more = (): void => {
          while (sent < HUGE_BYTES && !res.destroyed) {
            sent += chunk.length
            if (!res.write(chunk)) {
              res.once('drain', more)
              return
            }
          }
          res.end()
        }
        more()
        return
      }
      case 'html-200':
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body><h1>Sign in to the hotel Wi-Fi</h1></body></html>')
        return
      case 'invalid-json':
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"responseCode":1,"handle":')
        return
      case 'gzip':
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync(record))
        return
      case 'rate-limited':
        res.writeHead(429, { 'content-type': 'text/html', 'retry-after': '30' }).end('<html><body>Too Many Requests</body></html>')
        return
      case 'status-500':
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"responseCode":2,"message":"Internal error"}')
        return
      case 'status-503':
        res.writeHead(503, { 'content-type': 'text/html' }).end('<html><body>Service Unavailable</body></html>')
        return
      case 'reset':
        res.socket?.destroy()
    }
  }
}
