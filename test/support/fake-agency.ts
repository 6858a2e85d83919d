import { createServer } from 'node:http'
import { gzipSync } from 'node:zlib'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

/** How the fake agency answers right now. */
export type AgencyMode =
  | { kind: 'ok' }
  | { kind: 'slow'; delayMs: number }
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: string }
  /** 200 with a body of this many bytes, streamed without Content-Length. */
  | { kind: 'huge'; bytes: number }
  /** 200 with an HTML page, whatever was asked for. */
  | { kind: 'wrong-type' }
  /** Reads only the first type of the Accept: 406 when it does not hold it, as DataCite did (datacite/datacite#2448). */
  | { kind: 'first-type-only' }
  /** A redirect to this URL (absolute or relative), as data.crossref.org sends to api.crossref.org. */
  | { kind: 'redirect'; status: number; location: string }

export interface AgencyRequest {
  doi: string
  path: string
  headers: IncomingMessage['headers']
}

/**
 * A real content-negotiation service on 127.0.0.1, as a registration agency runs one: `GET /{doi}` with
 * an Accept header answers the DOI's metadata in that type (the first type of the Accept it holds), 404 for
 * a DOI it does not know and 406 for a type it lacks. `GET /works/{doi}/transform` answers the same (the
 * target of Crossref's redirect). Switch `mode` (or queue one-shot modes in `script`) to make it slow, fail,
 * rate-limit, lie about types, send huge bodies or redirect.
 */
export class FakeAgency {
  /** DOI (as written) → media type → body. */
  readonly records = new Map<string, Record<string, string>>()
  readonly seen: AgencyRequest[] = []
  mode: AgencyMode = { kind: 'ok' }
  script: AgencyMode[] = []
  /** Cache-Control sent with answers, if any. */
  cacheControl: string | undefined
  /** Answers gzip-encoded, whatever the request asked for (as a CDN may). */
  gzip = false
  inFlight = 0
  maxInFlight = 0
  private server: Server | undefined
  private readonly sockets = new Set<Socket>()
  private port = 0

  static async start(records: Record<string, Record<string, string>> = {}): Promise<FakeAgency> {
    const fake = new FakeAgency()
    for (const [doi, types] of Object.entries(records)) fake.records.set(doi.toLowerCase(), types)
    await new Promise<void>((resolve) => {
      fake.server = createServer((req, res) => {
        fake.handle(req, res)
      })
      fake.server.on('connection', (socket) => {
        fake.sockets.add(socket)
        socket.on('close', () => fake.sockets.delete(socket))
      })
      fake.server.listen(0, '127.0.0.1', resolve)
    })
    fake.port = (fake.server!.address() as AddressInfo).port
    return fake
  }

  /** `127.0.0.1:port`, as METADATA_HOSTS lists it. */
  get host(): string {
    return `127.0.0.1:${this.port}`
  }

  /** The origin, `http://127.0.0.1:port`. */
  get origin(): string {
    return `http://${this.host}`
  }

  count(doi: string): number {
    return this.seen.filter((r) => r.doi.toLowerCase() === doi.toLowerCase()).length
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    await new Promise<void>((resolve) => (this.server === undefined ? resolve() : this.server.close(() => resolve())))
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    const transform = /^\/works\/(.+)\/transform$/.exec(path)
    const doi = decodeURIComponent(transform?.[1] ?? path.slice(1))
    this.seen.push({ doi, path: req.url ?? '/', headers: req.headers })
    this.inFlight++
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight)
    res.on('close', () => {
      this.inFlight--
    })
    const mode = this.script.shift() ?? this.mode
    switch (mode.kind) {
      case 'status':
        res.writeHead(mode.status, { 'content-type': 'text/html', ...mode.headers })
        res.end(mode.body ?? `<html><body>Error ${mode.status}</body></html>`)
        return
      case 'huge': {
        res.writeHead(200, { 'content-type': 'application/x-bibtex' })
        const chunk = Buffer.alloc(64 * 1024, 0x61)
        let left = mode.bytes
        const pump = (): void => {
          while (left > 0 && !res.destroyed) {
            const n = Math.min(left, chunk.length)
            left -= n
            if (!res.write(chunk.subarray(0, n))) {
              res.once('drain', pump)
              return
            }
          }
          if (!res.destroyed) res.end()
        }
        pump()
        return
      }
      case 'wrong-type':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        res.end('<html><body><script>alert(1)</script>A landing page</body></html>')
        return
      case 'redirect':
        res.writeHead(mode.status, { location: mode.location })
        res.end()
        return
      case 'slow':
        setTimeout(() => this.answer(req, res, doi), mode.delayMs)
        return
      case 'first-type-only':
        this.answer(req, res, doi, 1)
        return
      case 'ok':
        this.answer(req, res, doi)
    }
  }

  private answer(req: IncomingMessage, res: ServerResponse, doi: string, read = Infinity): void {
    if (res.destroyed) return
    const types = this.records.get(doi.toLowerCase())
    if (types === undefined) {
      res.writeHead(404, { 'content-type': 'text/html' })
      res.end("<html><body>The resource you are looking for doesn't exist.</body></html>")
      return
    }
    // Each Accept entry as written without q (`text/x-bibliography;style=apa`), then its type alone: a record
    // keyed by a type with parameters answers only requests with those parameters, as a CSL style does.
    const asked = (req.headers.accept ?? '')
      .split(',')
      .slice(0, read)
      .flatMap((t) => {
        const [first = '', ...params] = t.split(';').map((p) => p.trim())
        const kept = params.filter((p) => !p.toLowerCase().startsWith('q=') && p !== '')
        return kept.length > 0 ? [[first.toLowerCase(), ...kept].join(';'), first.toLowerCase()] : [first.toLowerCase()]
      })
    const key = asked.find((t) => types[t] !== undefined)
    const type = key?.split(';')[0]
    if (type === undefined) {
      res.writeHead(406, { 'content-type': 'text/plain' })
      res.end('Not Acceptable')
      return
    }
    res.writeHead(200, {
      'content-type': `${type}; charset=utf-8`,
      ...(this.cacheControl === undefined ? {} : { 'cache-control': this.cacheControl }),
      ...(this.gzip ? { 'content-encoding': 'gzip' } : {})
    })
    const body = types[key!] ?? ''
    res.end(this.gzip ? gzipSync(body) : body)
  }
}
