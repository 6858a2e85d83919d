import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

/**
 * A fake of the agencies' update feeds on 127.0.0.1, a real HTTP server answering as Crossref's and
 * DataCite's REST APIs do:
 * - `GET /works?filter=from-update-date:YYYY-MM-DD[,prefix:10.x…]&rows=N&cursor=*|<c>&mailto=…`: `{"status":
 *   "ok", "message-type": "work-list", "message": {"total-results", "items", "next-cursor"}}`, the works whose
 *   `indexed` is on or after the day (and whose DOI is of one of the prefixes, ORed, when given), in order; a cursor left idle longer than `cursorTtlMs` is refused
 *   (HTTP 400, as Crossref's expired cursors are); past the last work, an empty page.
 * - `GET /dois?query=updated:[T TO *][&prefix=10.a,10.b]&sort=updated&page[size]=N&page[cursor]=1|<c>`: `{"data": [{id, type:
 *   "dois", attributes}], "meta": {"total"}, "links": {"self", "next"}}`, `next` absent on the last page.
 * Or busy or broken: 429/503 with Retry-After, 500, slow, a body cut short. It records each request's path,
 * query, mailto and User-Agent, when it came, and the most requests it had in flight at once (polite: 1).
 */
export type FakeFeedMode =
  | 'normal'
  | { busy: 429 | 503; retryAfter?: string; times: number } // the next `times` requests are told to wait
  | { fail: number } // the next `fail` requests: HTTP 500 (Infinity: down)
  | { slowMs: number } // every answer waits this long first
  | { truncated: number } // the next `truncated` answers say a length and stop short of it
  | { status: number; times: number } // the next `times` requests answered this status (a 400, a 404)

export interface SeenFeedRequest {
  path: string
  query: URLSearchParams
  mailto: string | null
  userAgent: string | undefined
  at: number
}

export interface FakeDataciteDoi {
  doi: string
  url?: string
  /** ISO time of the last change. */
  updated: string
  title?: string
  state?: string
}

interface Cursor {
  items: readonly unknown[]
  offset: number
  lastUsed: number
}

export class FakeAgencyFeeds {
  readonly seen: SeenFeedRequest[] = []
  mode: FakeFeedMode = 'normal'
  inFlight = 0
  peak = 0
  /** A cursor idle longer than this is refused (400). */
  cursorTtlMs = 5 * 60_000
  /** Ignore the prefix filters (an agency that does not apply them): every matching work or DOI is listed. */
  ignorePrefixes = false
  /** Called with each request before it is answered (tests change the mode mid-run). */
  onRequest: ((req: SeenFeedRequest) => void) | undefined
  private readonly cursors = new Map<string, Cursor>()
  private readonly sockets = new Set<Socket>()

  private constructor(
    private readonly server: Server,
    /** Crossref works (each with `DOI`, `indexed.timestamp` ms). */
    public works: Record<string, unknown>[],
    public dois: FakeDataciteDoi[]
  ) {}

  static async start(opts: { works?: Record<string, unknown>[]; dois?: FakeDataciteDoi[] } = {}): Promise<FakeAgencyFeeds> {
    const server = createServer()
    const fake = new FakeAgencyFeeds(server, opts.works ?? [], opts.dois ?? [])
    server.on('request', (req: IncomingMessage, res: ServerResponse) => fake.answer(req, res))
    server.on('connection', (socket: Socket) => {
      fake.sockets.add(socket)
      socket.on('close', () => fake.sockets.delete(socket))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return fake
  }

  /** CROSSREF_API_URL and DATACITE_API_URL (one server answers both). */
  get url(): string {
    const { port } = this.server.address() as AddressInfo
    return `http://127.0.0.1:${port}`
  }

  /** Requests to one path (`/works`, `/dois`). */
  requestsTo(path: string): SeenFeedRequest[] {
    return this.seen.filter((s) => s.path === path)
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake')
    const seen: SeenFeedRequest = {
      path: url.pathname,
      query: url.searchParams,
      mailto: url.searchParams.get('mailto'),
      userAgent: req.headers['user-agent'],
      at: performance.now()
    }
    this.seen.push(seen)
    this.inFlight++
    this.peak = Math.max(this.peak, this.inFlight)
    res.on('close', () => {
      this.inFlight--
    })
    this.onRequest?.(seen)
    const mode = this.mode
    const send = (): void => this.send(url, res)
    if (typeof mode === 'object') {
      if ('busy' in mode && mode.times > 0) {
        mode.times--
        res.writeHead(mode.busy, {
          'content-type': 'text/plain',
          ...(mode.retryAfter === undefined ? {} : { 'retry-after': mode.retryAfter })
        })
        res.end('Too many requests')
        return
      }
      if ('fail' in mode && mode.fail > 0) {
        mode.fail--
        res.writeHead(500, { 'content-type': 'text/html' }).end('<html><body>500 Internal Server Error</body></html>')
        return
      }
      if ('status' in mode && mode.times > 0) {
        mode.times--
        res.writeHead(mode.status, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'error', message: 'refused' }))
        return
      }
      if ('truncated' in mode && mode.truncated > 0) {
        mode.truncated--
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100000' })
        res.write('{"status":"ok","message":{"items":[')
        setTimeout(() => res.destroy(), 20)
        return
      }
      if ('slowMs' in mode) {
        const timer = setTimeout(send, mode.slowMs)
        res.on('close', () => clearTimeout(timer))
        return
      }
    }
    send()
  }

  private send(url: URL, res: ServerResponse): void {
    if (res.destroyed) return
    if (url.pathname === '/works') this.crossref(url, res)
    else if (url.pathname === '/dois') this.datacite(url, res)
    else res.writeHead(404, { 'content-type': 'text/plain' }).end('Resource not found.')
  }

  private crossref(url: URL, res: ServerResponse): void {
    const [first = '', ...more] = (url.searchParams.get('filter') ?? '').split(',')
    const filter = /^from-update-date:(\d{4}-\d{2}-\d{2})$/.exec(first)
    const prefixes = more.map((f) => /^prefix:(10\.[^/]+)$/.exec(f)?.[1]?.toLowerCase())
    const rows = Number(url.searchParams.get('rows') ?? '20')
    const cursorParam = url.searchParams.get('cursor')
    if (filter === null || prefixes.includes(undefined) || !Number.isInteger(rows) || rows < 1 || rows > 1000 || cursorParam === null) {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'failed', message: 'bad query' }))
      return
    }
    let cursor: Cursor | undefined
    if (cursorParam === '*') {
      const from = Date.parse(`${filter[1]}T00:00:00Z`)
      const items = this.works.filter(
        (w) =>
          ((w.indexed as { timestamp?: number } | undefined)?.timestamp ?? 0) >= from &&
          (prefixes.length === 0 || this.ignorePrefixes || prefixes.includes(prefixOf(String(w.DOI))))
      )
      cursor = { items, offset: 0, lastUsed: Date.now() }
    } else {
      cursor = this.cursors.get(cursorParam)
      if (cursor === undefined || Date.now() - cursor.lastUsed > this.cursorTtlMs) {
        res
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ status: 'failed', message: [{ type: 'cursor', message: 'expired' }] }))
        return
      }
    }
    const items = cursor.items.slice(cursor.offset, cursor.offset + rows)
    const next = randomBytes(12).toString('base64') // '+' and '/' as Crossref's cursors hold
    this.cursors.set(next, { items: cursor.items, offset: cursor.offset + items.length, lastUsed: Date.now() })
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(
      JSON.stringify({
        status: 'ok',
        'message-type': 'work-list',
        message: { 'total-results': cursor.items.length, items, 'items-per-page': rows, 'next-cursor': next }
      })
    )
  }

  private datacite(url: URL, res: ServerResponse): void {
    const range = /^updated:\[(\S+) TO \*\]$/.exec(url.searchParams.get('query') ?? '')
    const size = Number(url.searchParams.get('page[size]') ?? '25')
    const cursorParam = url.searchParams.get('page[cursor]')
    if (
      range === null ||
      Number.isNaN(Date.parse(range[1]!)) ||
      !Number.isInteger(size) ||
      size < 1 ||
      size > 1000 ||
      cursorParam === null
    ) {
      res
        .writeHead(400, { 'content-type': 'application/vnd.api+json' })
        .end(JSON.stringify({ errors: [{ status: '400', title: 'bad query' }] }))
      return
    }
    const from = Date.parse(range[1]!)
    const prefixes = url.searchParams.get('prefix')?.toLowerCase().split(',')
    const all = this.dois
      .filter((d) => prefixes === undefined || this.ignorePrefixes || prefixes.includes(prefixOf(d.doi)))
      .filter((d) => Date.parse(d.updated) >= from)
      .sort((a, b) => Date.parse(a.updated) - Date.parse(b.updated))
    const offset = cursorParam === '1' ? 0 : Number(Buffer.from(cursorParam, 'base64url').toString('utf8'))
    if (!Number.isInteger(offset) || offset < 0) {
      res
        .writeHead(400, { 'content-type': 'application/vnd.api+json' })
        .end(JSON.stringify({ errors: [{ status: '400', title: 'bad cursor' }] }))
      return
    }
    const data = all.slice(offset, offset + size).map((d) => ({
      id: d.doi.toLowerCase(),
      type: 'dois',
      attributes: {
        doi: d.doi.toLowerCase(),
        url: d.url,
        state: d.state ?? 'findable',
        updated: d.updated,
        titles: d.title === undefined ? [] : [{ title: d.title }],
        types: { resourceTypeGeneral: 'Dataset' }
      }
    }))
    const nextUrl = new URL(url.href)
    nextUrl.protocol = 'http:'
    nextUrl.host = new URL(this.url).host
    nextUrl.searchParams.set('page[cursor]', Buffer.from(String(offset + size)).toString('base64url'))
    res.writeHead(200, { 'content-type': 'application/vnd.api+json' })
    res.end(
      JSON.stringify({
        data,
        meta: { total: all.length },
        links: { self: url.href, ...(offset + size < all.length ? { next: nextUrl.href } : {}) }
      })
    )
  }
}

/** A Crossref work as its REST API lists it: DOI, `resource.primary.URL`, `indexed` (the copy's stamp), a title. */
export function crossrefWork(doi: string, url: string, indexed: string, title = 'A title'): Record<string, unknown> {
  const ms = Date.parse(indexed)
  return {
    DOI: doi,
    type: 'journal-article',
    title: [title],
    resource: { primary: { URL: url } },
    indexed: { 'date-parts': [[2026, 1, 1]], 'date-time': indexed, timestamp: ms },
    URL: `https://doi.org/${doi}`
  }
}

/** A DOI's prefix, lower case, as the agencies compare them. */
function prefixOf(doi: string): string {
  return doi.slice(0, Math.max(0, doi.indexOf('/'))).toLowerCase()
}
