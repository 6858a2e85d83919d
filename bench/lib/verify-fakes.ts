/**
 * The fakes `npm run bench:verify` verifies against (bench/verify.ts), real HTTP servers on loopback
 * addresses, each answering after the same configurable latency and counting what it was asked:
 *
 * - a Handle REST API (UPSTREAM_URL): `10.50xx/bench.i` → its landing URL; the prefix's HS_NAMESPACE names
 *   10.SERV/BENCH, whose 10320/loc sends content negotiation to the agency;
 * - a registration agency: `GET /{doi}` → work i's CSL-JSON (max-age a day);
 * - Crossref's REST API: `GET /works/{doi}` → its `updated-by` (a retraction for one work in a hundred);
 * - landing sites, one per host on its own address (127.0.1.x, 127.0.2.x, …: all of 127.0.0.0/8 is the
 *   loopback), each serving `/robots.txt` and `/article/{i}` (a page of `pageBytes` naming the DOI in
 *   `citation_doi`), recording when each request came and how many were in flight at once.
 */
import { createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { cslOf, indexOf, PREFIXES, workOf } from './verify-works.js'

export const SERVICE_HANDLE = '10.SERV/BENCH'

/** What one fake was asked: requests, the most in flight at once, and the start times (performance.now()). */
export class Counter {
  requests = 0
  inFlight = 0
  peak = 0
  starts: number[] = []
  /** The time from each request's arrival to its answer's end, summed (ms). */
  busyMs = 0
  /** On a kept-alive connection, the time from an answer's end to the next request's arrival: the asker's turnaround. */
  turnarounds: number[] = []
  private readonly lastEnd = new WeakMap<Socket, number>()

  /** A request came on `socket`; the returned function marks its answer sent. */
  begin(socket: Socket): () => void {
    const at = performance.now()
    const last = this.lastEnd.get(socket)
    if (last !== undefined) this.turnarounds.push(at - last)
    this.requests++
    this.inFlight++
    this.peak = Math.max(this.peak, this.inFlight)
    this.starts.push(at)
    return () => {
      const end = performance.now()
      this.inFlight--
      this.busyMs += end - at
      this.lastEnd.set(socket, end)
    }
  }

  /** The median turnaround (ms), NaN without one. */
  medianTurnaroundMs(): number {
    const sorted = [...this.turnarounds].sort((a, b) => a - b)
    return sorted.length === 0 ? NaN : sorted[Math.floor(sorted.length / 2)]!
  }

  /** The mean time a request took here, arrival to the answer's end (ms). */
  meanMs(): number {
    return this.requests === 0 ? NaN : this.busyMs / this.requests
  }

  /** The shortest time between two starts, in ms (Infinity under two requests). */
  minGapMs(): number {
    let min = Infinity
    for (let k = 1; k < this.starts.length; k++) min = Math.min(min, this.starts[k]! - this.starts[k - 1]!)
    return min
  }

  reset(): void {
    this.requests = 0
    this.peak = this.inFlight
    this.starts = []
    this.busyMs = 0
    this.turnarounds = []
  }
}

export interface Listening {
  server: Server
  sockets: Set<Socket>
  origin: string
  host: string
}

export async function listen(address: string, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Listening> {
  const server = createServer(handler)
  server.keepAliveTimeout = 60_000
  const sockets = new Set<Socket>()
  server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, address, resolve)
  })
  const host = `${address}:${(server.address() as AddressInfo).port}`
  return { server, sockets, host, origin: `http://${host}` }
}

export async function close(l: Listening): Promise<void> {
  for (const socket of l.sockets) socket.destroy()
  await new Promise<void>((resolve) => l.server.close(() => resolve()))
}

export function send(res: ServerResponse, status: number, type: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), ...headers })
  res.end(body)
}

/** The address of landing host h: 127.0.1.10 upwards, 200 a /24. */
export function landingAddress(h: number): string {
  return `127.0.${1 + Math.floor(h / 200)}.${10 + (h % 200)}`
}

export interface VerifyFakesOptions {
  latencyMs: number
  /** Landing host of each work (verify-works.ts landingHosts); works past its end are unknown. */
  hostOf: Uint16Array
  hosts: number
  /** The size of a landing page (its HTML; the DOI is named in the head). */
  pageBytes: number
}

export interface VerifyFakes {
  upstreamUrl: string
  agencyHost: string
  crossrefUrl: string
  handles: Counter
  agency: Counter
  crossref: Counter
  /** One counter per landing host. */
  landing: Counter[]
  reset(): void
  /** Every fake's latency from now on. */
  setLatency(ms: number): void
  close(): Promise<void>
}

const vals = (values: Array<[number, string, string]>): object[] =>
  values.map(([index, type, value]) => ({ index, type, data: { format: 'string', value }, ttl: 86_400, timestamp: '2020-01-01T00:00:00Z' }))
const ADMIN: [number, string, string] = [100, 'HS_ADMIN', '0.NA/10.5000']

export async function startVerifyFakes(opts: VerifyFakesOptions): Promise<VerifyFakes> {
  let latencyMs = opts.latencyMs
  const later = (fn: () => void): void => {
    if (latencyMs > 0) setTimeout(fn, latencyMs)
    else setImmediate(fn)
  }
  /** Count the request, answer it after the latency. */
  const answering =
    (counter: Counter, answer: (path: string, res: ServerResponse) => void) =>
    (req: IncomingMessage, res: ServerResponse): void => {
      res.once('close', counter.begin(req.socket))
      const path = (req.url ?? '/').split('?')[0]!
      later(() => answer(path, res))
    }
  const decoded = (s: string): string | undefined => {
    try {
      return decodeURIComponent(s)
    } catch {
      return undefined
    }
  }

  const handles = new Counter()
  const agencyCounter = new Counter()
  const crossrefCounter = new Counter()
  const landing = Array.from({ length: opts.hosts }, () => new Counter())

  // Landing sites first: the handle records name their origins.
  const page = (doi: string, title: string): string => {
    const head = `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title><meta name="citation_doi" content="${doi}"><meta name="citation_title" content="${title}"></head><body><h1>${title}</h1>`
    const filler = '<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.</p>\n'
    const body = filler.repeat(Math.max(0, Math.ceil((opts.pageBytes - head.length) / filler.length)))
    return `${head}${body}</body></html>`
  }
  const sites: Listening[] = []
  for (let h = 0; h < opts.hosts; h++) {
    sites.push(
      await listen(
        landingAddress(h),
        answering(landing[h]!, (path, res) => {
          if (path === '/robots.txt') return send(res, 200, 'text/plain', 'User-agent: *\nAllow: /\n')
          const m = /^\/article\/(\d+)$/.exec(path)
          const i = m === null ? NaN : Number(m[1])
          if (!(i < opts.hostOf.length) || opts.hostOf[i] !== h) return send(res, 404, 'text/html', '<h1>Not found</h1>')
          const w = workOf(i)
          send(res, 200, 'text/html; charset=utf-8', page(w.doi, w.title))
        })
      )
    )
  }

  const agency = await listen(
    '127.0.0.1',
    answering(agencyCounter, (path, res) => {
      const i = indexOf(decoded(path.slice(1)) ?? '')
      if (i === undefined || !(i < opts.hostOf.length)) return send(res, 404, 'text/plain', 'Resource not found.')
      send(res, 200, 'application/vnd.citationstyles.csl+json', cslOf(i), { 'cache-control': 'max-age=86400' })
    })
  )

  const crossref = await listen(
    '127.0.0.1',
    answering(crossrefCounter, (path, res) => {
      const doi = path.startsWith('/works/') ? decoded(path.slice('/works/'.length)) : undefined
      const i = indexOf(doi ?? '')
      if (i === undefined || !(i < opts.hostOf.length)) return send(res, 404, 'text/plain', 'Resource not found.')
      const w = workOf(i)
      const notices = w.retracted
        ? [
            {
              updated: { 'date-parts': [[2022, 3, 4]], 'date-time': '2022-03-04T00:00:00Z', timestamp: Date.UTC(2022, 2, 4) },
              DOI: `10.5000/retraction.${i}`,
              type: 'retraction',
              source: 'publisher',
              label: 'Retraction'
            }
          ]
        : []
      const message = { DOI: w.doi, title: [w.title], type: 'journal-article', ...(notices.length > 0 ? { 'updated-by': notices } : {}) }
      send(res, 200, 'application/json', JSON.stringify({ status: 'ok', 'message-type': 'work', 'message-version': '1.0.0', message }))
    })
  )

  const loc = `<locations><location weight="0" http_role="conneg" href_template="${agency.origin}/{hdl}"/></locations>`
  const upstream = await listen(
    '127.0.0.1',
    answering(handles, (path, res) => {
      const handle = path.startsWith('/api/handles/') ? decoded(path.slice('/api/handles/'.length)) : undefined
      const json = (status: number, body: object): void => send(res, status, 'application/json', JSON.stringify(body))
      const notFound = (): void => json(404, { responseCode: 100, handle })
      if (handle === undefined) return notFound()
      if (handle.toUpperCase() === SERVICE_HANDLE) {
        return json(200, { responseCode: 1, handle, values: vals([[1, '10320/loc', loc], ADMIN]) })
      }
      const prefix = /^10\.(\d+)$/.exec(handle)
      if (prefix !== null) {
        const n = Number(prefix[1]) - 5000
        if (n < 0 || n >= PREFIXES) return notFound()
        const ns = `<HS_NAMESPACE><locs>${SERVICE_HANDLE}</locs></HS_NAMESPACE>`
        return json(200, { responseCode: 1, handle, values: vals([[2, 'HS_NAMESPACE', ns], ADMIN]) })
      }
      const i = indexOf(handle)
      if (i === undefined || !(i < opts.hostOf.length)) return notFound()
      const url = `${sites[opts.hostOf[i]!]!.origin}/article/${i}`
      json(200, { responseCode: 1, handle, values: vals([[1, 'URL', url], ADMIN]) })
    })
  )

  const all = [handles, agencyCounter, crossrefCounter, ...landing]
  return {
    upstreamUrl: `${upstream.origin}/api/handles`,
    agencyHost: agency.host,
    crossrefUrl: crossref.origin,
    handles,
    agency: agencyCounter,
    crossref: crossrefCounter,
    landing,
    reset: () => {
      for (const c of all) c.reset()
    },
    setLatency: (ms) => {
      latencyMs = ms
    },
    close: async () => {
      for (const l of [upstream, agency, crossref, ...sites]) await close(l)
    }
  }
}
