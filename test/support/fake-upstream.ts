import { createServer } from 'node:http'
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { HandleValue } from '../../src/handle/types.js'

/** How the fake upstream behaves right now. */
export type UpstreamMode =
  | { kind: 'ok' }
  | { kind: 'slow'; delayMs: number }
  | { kind: 'hang' }
  | { kind: 'status'; status: number; body?: string; headers?: Record<string, string> }
  | { kind: 'broken-json' }
  /** An error page in HTML, as a CDN or WAF in front of the registry sends (400, 403, 414, 431…). */
  | { kind: 'html'; status: number }
  /** The connection is cut before any answer. */
  | { kind: 'reset' }
  /** A 200 whose Content-Length promises more than comes: the connection is cut halfway through the body. */
  | { kind: 'cut-body' }
  /** The usual answers, compressed with this Content-Encoding whatever the request asked for. */
  | { kind: 'encoded'; encoding: Encoding }
  /** A 200 JSON answer of `bytes` bytes (after decoding), sent in chunks; compressed when `encoding` says. */
  | { kind: 'huge'; bytes: number; encoding?: Encoding }

export type Encoding = 'gzip' | 'deflate' | 'br'

export interface SeenRequest {
  handle: string
  path: string
  headers: IncomingMessage['headers']
}

/** Longest request target the CDN in front of the fake passes on; longer is an HTML 414, as CDNs answer. */
export const CDN_MAX_TARGET = 8192

/**
 * A real Handle REST API server on 127.0.0.1 with records in memory. Handles are matched with
 * ASCII case folding, as handle servers do. Switch `mode` to make it slow, hang, fail or lie.
 * In front of it, a CDN's own rules, whatever the mode: an HTML 400 for a raw '.' or '..' path
 * segment and an HTML 414 for a request target over CDN_MAX_TARGET.
 */
export class FakeUpstream {
  readonly records = new Map<string, HandleValue[]>()
  readonly seen: SeenRequest[] = []
  mode: UpstreamMode = { kind: 'ok' }
  /** One-shot modes used by the next requests, in order, before `mode` applies again. */
  script: UpstreamMode[] = []
  /** Requests being answered right now (for concurrency bounds). */
  inFlight = 0
  /** The most requests it has answered at once. */
  peakInFlight = 0
  private server: Server | undefined
  private readonly sockets = new Set<Socket>()
  private port = 0

  static async start(records: Record<string, HandleValue[]> = {}): Promise<FakeUpstream> {
    const fake = new FakeUpstream()
    for (const [handle, values] of Object.entries(records)) fake.set(handle, values)
    await fake.listen()
    return fake
  }

  /** Base URL to use as UPSTREAM_URL. */
  get url(): string {
    return `http://127.0.0.1:${this.port}/api/handles`
  }

  set(handle: string, values: HandleValue[]): void {
    this.records.set(fold(handle), values)
  }

  delete(handle: string): void {
    this.records.delete(fold(handle))
  }

  /** How many requests asked for this handle (ASCII case folded). */
  count(handle: string): number {
    return this.seen.filter((r) => fold(r.handle) === fold(handle)).length
  }

  /** The requests that asked for this handle (ASCII case folded), oldest first. */
  requestsFor(handle: string): SeenRequest[] {
    return this.seen.filter((r) => fold(r.handle) === fold(handle))
  }

  async listen(port = 0): Promise<void> {
    this.server = createServer((req, res) => {
      this.handle(req, res)
    })
    this.server.on('connection', (socket) => {
      this.sockets.add(socket)
      socket.on('close', () => this.sockets.delete(socket))
    })
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve))
    this.port = (this.server.address() as AddressInfo).port
  }

  /** Stop listening and cut every connection: the upstream is down (connection refused). */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    await new Promise<void>((resolve) => (this.server === undefined ? resolve() : this.server.close(() => resolve())))
  }

  /** Come back on the same port after close(). */
  async restart(): Promise<void> {
    await this.listen(this.port)
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/'
    const path = url.split('?')[0] ?? ''
    const prefix = '/api/handles/'
    const handle = path.startsWith(prefix) ? decodeURIComponent(path.slice(prefix.length)) : ''
    this.seen.push({ handle, path: url, headers: req.headers })
    this.inFlight++
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight)
    // Done once the answer is handed to the kernel ('finish'), before the client can have it; or cut ('close').
    let done = false
    const finished = (): void => {
      if (!done) {
        done = true
        this.inFlight--
      }
    }
    res.once('finish', finished)
    res.once('close', finished)
    if (url.length > CDN_MAX_TARGET) return htmlError(res, 414)
    if (path.split('/').some((segment) => segment === '.' || segment === '..')) return htmlError(res, 400)
    const mode = this.script.shift() ?? this.mode
    switch (mode.kind) {
      case 'html':
        return htmlError(res, mode.status)
      case 'reset':
        res.socket?.destroy()
        return
      case 'cut-body':
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2000' })
        res.write('{"responseCode":1,"handle":"10.5555/plain","values":[')
        setTimeout(() => res.socket?.destroy(), 20)
        return
      case 'hang':
        return // never answer
      case 'status':
        res.writeHead(mode.status, { 'content-type': 'application/json', ...mode.headers })
        res.end(mode.body ?? JSON.stringify({ responseCode: 2, message: 'Internal error' }))
        return
      case 'broken-json':
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{"responseCode":1,"handle":')
        return
      case 'encoded':
        this.answer(res, handle, mode.encoding)
        return
      case 'huge':
        sendHuge(res, mode.bytes, mode.encoding)
        return
      case 'slow':
        setTimeout(() => this.answer(res, handle), mode.delayMs)
        return
      case 'ok':
        this.answer(res, handle)
    }
  }

  private answer(res: ServerResponse, handle: string, encoding?: Encoding): void {
    if (res.destroyed) return
    const values = this.records.get(fold(handle))
    const [status, body] = values === undefined ? [404, { responseCode: 100, handle }] : [200, { responseCode: 1, handle, values }]
    const json = Buffer.from(JSON.stringify(body))
    res.writeHead(status, {
      'content-type': 'application/json;charset=utf-8',
      ...(encoding === undefined ? {} : { 'content-encoding': encoding })
    })
    res.end(encoding === undefined ? json : COMPRESS[encoding](json))
  }
}

const COMPRESS: Record<Encoding, (data: Buffer) => Buffer> = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync }

/**
 * A valid JSON answer of `bytes` bytes: a record with no values, padded with spaces (so only the size
 * bound can refuse it). Compressed at once when asked: megabytes of spaces are a few kilobytes of
 * gzip, a decompression bomb.
 */
function sendHuge(res: ServerResponse, bytes: number, encoding?: Encoding): void {
  const body = Buffer.alloc(bytes, ' ')
  body.write('{"responseCode":1,"values":[')
  body.write(']}', bytes - 2)
  const sent = encoding === undefined ? body : encoding === 'gzip' ? gzipSync(body, { level: 1 }) : COMPRESS[encoding](body) // gzip at its fastest: 50 MB in a blink
  res.writeHead(200, { 'content-type': 'application/json', ...(encoding === undefined ? {} : { 'content-encoding': encoding }) })
  // In chunks, as a real server streams it: the reader may stop early.
  const chunk = 64 * 1024
  let at = 0
  const write = (): void => {
    while (at < sent.length) {
      const ok = res.write(sent.subarray(at, at + chunk))
      at += chunk
      if (!ok) {
        res.once('drain', write)
        return
      }
    }
    res.end()
  }
  res.on('error', () => {})
  write()
}

function htmlError(res: ServerResponse, status: number): void {
  res.writeHead(status, { 'content-type': 'text/html', server: 'cloudflare' })
  res.end(
    `<html><head><title>${status}</title></head><body><center><h1>${status}</h1></center><hr><center>cloudflare</center></body></html>`
  )
}

function fold(handle: string): string {
  return handle.replace(/[a-z]/g, (c) => c.toUpperCase())
}
