import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createTlsServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import { selfSignedCert as selfSigned } from './tls.js'

/**
 * Fake landing pages (issue 41): a real HTTP (or HTTPS, with a self-signed certificate) server on a
 * loopback address, a page per verdict, recording what a crawler sends (path, User-Agent, Cookie), when
 * each request started, and how many were in flight at once (the peak, for the per-host limits).
 */
export type Page = (req: IncomingMessage, res: ServerResponse, site: FakeLandingSite) => void

export interface SeenLandingRequest {
  path: string
  userAgent: string | undefined
  cookie: string | undefined
  /** performance.now() when the request came. */
  at: number
}

export interface FakeLandingOptions {
  /** The address to listen on: 127.0.0.2 by default (a test's LANDING_ALLOW_PRIVATE lets 127.0.0.2/32 through). */
  host?: string
  /** A self-signed certificate (from selfSignedCert): the site speaks HTTPS. */
  tls?: { key: string; cert: string }
  /** Path → page; other paths are 404. */
  pages: Record<string, Page>
  /** robots.txt's text, or a status to answer it with; none: 404 (allow all). */
  robots?: string | number
}

export class FakeLandingSite {
  readonly seen: SeenLandingRequest[] = []
  inFlight = 0
  peak = 0
  /** Bytes written by the `huge` page. */
  bytesWritten = 0
  private readonly sockets = new Set<Socket>()

  private constructor(
    private readonly server: Server,
    private readonly opts: FakeLandingOptions
  ) {}

  static async start(opts: FakeLandingOptions): Promise<FakeLandingSite> {
    const server = opts.tls === undefined ? createServer() : createTlsServer({ key: opts.tls.key, cert: opts.tls.cert })
    const site = new FakeLandingSite(server, opts)
    server.on('request', (req: IncomingMessage, res: ServerResponse) => site.answer(req, res))
    server.on(opts.tls === undefined ? 'connection' : 'secureConnection', (socket: Socket) => {
      site.sockets.add(socket)
      socket.on('close', () => site.sockets.delete(socket))
    })
    server.on('tlsClientError', () => {})
    await new Promise<void>((resolve) => server.listen(0, opts.host ?? '127.0.0.2', resolve))
    return site
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port
  }

  /** The site's origin under a name (resolved by the test's fakeLookup) or its address. */
  origin(name = this.opts.host ?? '127.0.0.2'): string {
    return `${this.opts.tls === undefined ? 'http' : 'https'}://${name}:${this.port}`
  }

  /** The pages asked for (robots.txt included), in order. */
  get paths(): string[] {
    return this.seen.map((s) => s.path)
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    const path = req.url ?? '/'
    this.seen.push({ path, userAgent: req.headers['user-agent'], cookie: req.headers.cookie, at: performance.now() })
    this.inFlight++
    this.peak = Math.max(this.peak, this.inFlight)
    let done = false
    const end = (): void => {
      if (done) return
      done = true
      this.inFlight--
    }
    res.on('close', end)
    res.on('finish', end)
    if (path === '/robots.txt') {
      const { robots } = this.opts
      if (typeof robots === 'string') res.writeHead(200, { 'content-type': 'text/plain' }).end(robots)
      else res.writeHead(robots ?? 404).end()
      return
    }
    const page = this.opts.pages[path.split('?')[0] ?? '']
    if (page === undefined) res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not found</h1>')
    else page(req, res, this)
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

const html = (status: number, body: string, headers: Record<string, string> = {}): Page => {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers }).end(`<!doctype html><html>${body}</html>`)
  }
}

/** The pages of plan-41 §4, one per verdict. */
export const pages = {
  citationDoi: (doi: string): Page =>
    html(200, `<head><meta name="citation_doi" content="${doi}"><title>An article</title></head><body>…</body>`),
  jsonLd: (doi: string): Page =>
    html(
      200,
      `<head><script type="application/ld+json">{"@context":"https://schema.org","@type":"ScholarlyArticle","@id":"https://doi.org/${doi}"}</script></head>`
    ),
  doiInText: (doi: string): Page => html(200, `<body><p>Cite as: https://doi.org/${doi}</p></body>`),
  titleOnly: (title: string): Page => html(200, `<head><title>${title} | Journal of Tests</title></head><body>No identifier here.</body>`),
  casino: (): Page => html(200, '<head><title>Best online casino bonuses</title></head><body>Spin to win!</body>'),
  cfChallenge: (): Page =>
    html(
      403,
      '<head><title>Just a moment...</title></head><body><script src="/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1"></script></body>',
      {
        'cf-mitigated': 'challenge'
      }
    ),
  akamai403: (): Page =>
    html(
      403,
      "<head><title>Access Denied</title></head><body>You don't have permission. Reference&#32;&#35;18&#46;6f2c3e17&#46;1700000000&#46;2d1f</body>"
    ),
  status: (status: number): Page => html(status, `<h1>${status}</h1>`),
  /** 429 with Retry-After (seconds) the first `times` requests, then `then`. */
  retryAfter: (seconds: number, times: number, then: Page): Page => {
    let count = 0
    return (req, res, site) => {
      if (count++ < times) res.writeHead(429, { 'retry-after': String(seconds) }).end('slow down')
      else then(req, res, site)
    }
  },
  redirect: (location: string | ((site: FakeLandingSite) => string), status = 302): Page => {
    return (_req, res, site) => {
      res.writeHead(status, { location: typeof location === 'string' ? location : location(site) }).end()
    }
  },
  /** `mb` megabytes of HTML written as fast as the reader takes them (stops when it leaves); the DOI in the head. */
  huge: (doi: string, mb: number): Page => {
    return (_req, res, site) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      const chunk = Buffer.from(`<p>${'filler '.repeat(9000)}</p>\n`)
      let left = mb * 1024 * 1024
      const write = (): void => {
        while (left > 0 && !res.destroyed) {
          left -= chunk.length
          site.bytesWritten += chunk.length
          if (!res.write(chunk)) {
            res.once('drain', write)
            return
          }
        }
        if (!res.destroyed) res.end()
      }
      site.bytesWritten += Buffer.byteLength(`<head><meta name="citation_doi" content="${doi}"></head>`)
      res.write(`<head><meta name="citation_doi" content="${doi}"></head>`)
      write()
    }
  },
  /** Headers, then one byte every `everyMs`, never ending on its own. */
  drip: (everyMs = 1000): Page => {
    return (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      const timer = setInterval(() => res.write(' '), everyMs)
      res.on('close', () => clearInterval(timer))
    }
  },
  /** `then`, answered after `ms`. */
  slow: (ms: number, then: Page): Page => {
    return (req, res, site) => {
      const timer = setTimeout(() => then(req, res, site), ms)
      res.on('close', () => clearTimeout(timer))
    }
  },
  /** Sets a cookie and redirects to `to`: a crawler that kept cookies would send it there. */
  setCookie: (to: string): Page => {
    return (_req, res) => {
      res.writeHead(302, { 'set-cookie': 'session=abc123; Path=/', location: to }).end()
    }
  }
}

/** A server on 127.0.0.1 no landing check may reach: it counts every connection (a refused address is never dialled). */
export class Sentinel {
  connections = 0
  private constructor(private readonly server: Server) {}
  static async start(): Promise<Sentinel> {
    const server = createServer((_req, res) => res.end('the sentinel was reached'))
    const sentinel = new Sentinel(server)
    server.on('connection', () => sentinel.connections++)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return sentinel
  }
  get port(): number {
    return (this.server.address() as AddressInfo).port
  }
  async close(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

/** A throw-away self-signed certificate for 127.0.0.2 and journal.test, as a crawler must refuse. */
export async function selfSignedCert(): Promise<{ key: string; cert: string }> {
  return await selfSigned({ commonName: 'journal.test', altNames: 'DNS:journal.test,IP:127.0.0.2', days: 2 })
}
