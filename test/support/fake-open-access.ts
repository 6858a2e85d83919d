import type { IncomingMessage, ServerResponse } from 'node:http'
import { sendEndless } from './endless-body.js'
import { startLocalServer } from './local-server.js'
import type { LocalServer } from './local-server.js'

/**
 * A fake Unpaywall and a fake OpenAlex on 127.0.0.1: real HTTP servers answering as the real APIs do
 * (Unpaywall: GET /v2/{doi}?email=…, 404 for a DOI it does not know; OpenAlex: GET /works/doi:{doi}),
 * or as a broken or hostile one would: slow, failing, huge, malformed, dropping the connection.
 */
export type FakeOaMode =
  | 'normal'
  | { slowMs: number }
  | 'fail' // HTTP 500 with an HTML page, as a CDN in trouble answers
  | 'huge' // an answer without end, larger than any limit
  | 'malformed' // 200 with a body that is not JSON
  | 'reset' // the connection dropped without an answer
  | 'stall' // headers, then a body that never ends (a trickle)

export interface SeenOaRequest {
  path: string
  query: URLSearchParams
  userAgent: string | undefined
}

export class FakeOpenAccess {
  readonly seen: SeenOaRequest[] = []
  mode: FakeOaMode = 'normal'

  private constructor(
    private readonly server: LocalServer,
    readonly kind: 'unpaywall' | 'openalex',
    private readonly copies: Map<string, string | null>
  ) {}

  /** `copies`: DOI (lower case) → its open copy's URL, or null (known, not open); other DOIs are unknown (404). */
  static async start(kind: 'unpaywall' | 'openalex', copies: Record<string, string | null>): Promise<FakeOpenAccess> {
    const known = new Map(Object.entries(copies).map(([k, v]) => [k.toLowerCase(), v]))
    // A request comes only once the port is known, after `fake` is set.
    const fake: FakeOpenAccess = new FakeOpenAccess(await startLocalServer((req, res) => fake.answer(req, res)), kind, known)
    return fake
  }

  /** The base URL to configure: UNPAYWALL_URL (with its /v2) or OPENALEX_URL. */
  get url(): string {
    return `${this.server.url}${this.kind === 'unpaywall' ? '/v2' : ''}`
  }

  /** Requests for DOIs (the path), in order. */
  get paths(): string[] {
    return this.seen.map((s) => s.path)
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake')
    this.seen.push({ path: url.pathname, query: url.searchParams, userAgent: req.headers['user-agent'] })
    const mode = this.mode
    if (mode === 'reset') {
      req.socket.destroy()
      return
    }
    if (mode === 'fail') {
      res.writeHead(500, { 'content-type': 'text/html' }).end('<html><body>500 Internal Server Error</body></html>')
      return
    }
    if (mode === 'malformed') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"is_oa": true, "best_oa_location": {"url": "https://x.example/')
      return
    }
    if (mode === 'huge') {
      sendEndless(res, 'application/json', '{"is_oa": true, "pad": "')
      return
    }
    if (mode === 'stall') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{"is_oa": true,')
      return // never ends; the server closes it at close()
    }
    const send = (): void => this.answerNormally(url, res)
    if (typeof mode === 'object') setTimeout(send, mode.slowMs)
    else send()
  }

  private answerNormally(url: URL, res: ServerResponse): void {
    const prefix = this.kind === 'unpaywall' ? '/v2/' : '/works/doi:'
    if (!url.pathname.startsWith(prefix)) {
      res.writeHead(404).end()
      return
    }
    const doi = decodeURIComponent(url.pathname.slice(prefix.length)).toLowerCase()
    if (!this.copies.has(doi)) {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: true, message: `'${doi}' is not a valid doi` }))
      return
    }
    const copy = this.copies.get(doi) ?? null
    const body =
      this.kind === 'unpaywall'
        ? { doi, is_oa: copy !== null, best_oa_location: copy === null ? null : { url: copy, host_type: 'repository' }, oa_locations: [] }
        : {
            id: 'https://openalex.org/W1',
            doi: `https://doi.org/${doi}`,
            open_access: { is_oa: copy !== null, oa_status: copy === null ? 'closed' : 'green', oa_url: copy }
          }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body))
  }

  async close(): Promise<void> {
    await this.server.close()
  }
}
