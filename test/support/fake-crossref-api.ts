import type { IncomingMessage, ServerResponse } from 'node:http'
import { sendEndless } from './endless-body.js'
import { startLocalServer } from './local-server.js'
import type { LocalServer } from './local-server.js'

/**
 * A fake of Crossref's REST API on 127.0.0.1, a real HTTP server answering `GET /works/{doi}` as the real
 * one does: `{"status": "ok", "message-type": "work", "message": {…}}` with the work's `updated-by` notices
 * ({updated: {date-parts, date-time}, DOI, type, source: publisher | retraction-watch, label, record-id}),
 * 404 "Resource not found." for a DOI it does not know (another agency's). Or as a busy or broken one:
 * 429/503 with Retry-After, 500, slow, huge. It records each request's mailto and User-Agent, when it came,
 * and the most requests it had in flight at once.
 */
export type FakeCrossrefMode =
  | 'normal'
  | { busy: 429 | 503; retryAfter: string; times: number } // the next `times` requests are told to wait
  | 'fail' // HTTP 500, as Crossref's API answers when it is in trouble
  | { slowMs: number }
  | 'huge' // an answer without end, larger than any limit

export interface SeenCrossrefRequest {
  path: string
  doi: string
  mailto: string | null
  userAgent: string | undefined
  /** performance.now() when it came. */
  at: number
}

/** A notice as Crossref lists it in `updated-by` (or `update-to`). */
export interface CrossrefUpdate {
  DOI: string
  type: string
  /** YYYY-MM-DD. */
  date: string
  source?: 'publisher' | 'retraction-watch'
}

/** Crossref's shape of one update entry. */
export function crossrefUpdate(u: CrossrefUpdate): Record<string, unknown> {
  const [y, m, d] = u.date.split('-').map(Number)
  const source = u.source ?? 'publisher'
  return {
    updated: { 'date-parts': [[y, m, d]], 'date-time': `${u.date}T00:00:00Z`, timestamp: Date.UTC(y!, m! - 1, d) },
    DOI: u.DOI,
    type: u.type,
    source,
    label: u.type.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase()),
    ...(source === 'retraction-watch' ? { 'record-id': '12345' } : {})
  }
}

export interface FakeCrossrefWork {
  'updated-by'?: CrossrefUpdate[]
  'update-to'?: CrossrefUpdate[]
  title?: string
}

export class FakeCrossrefApi {
  readonly seen: SeenCrossrefRequest[] = []
  mode: FakeCrossrefMode = 'normal'
  inFlight = 0
  peak = 0

  private constructor(
    private readonly server: LocalServer,
    private readonly works: Map<string, FakeCrossrefWork>
  ) {}

  /** `works`: DOI → its notices; other DOIs are unknown (404). DOIs are matched without regard to case, as Crossref does. */
  static async start(opts: { works: Record<string, FakeCrossrefWork> }): Promise<FakeCrossrefApi> {
    const works = new Map(Object.entries(opts.works).map(([k, v]) => [k.toLowerCase(), v]))
    // A request comes only once the port is known, after `fake` is set.
    const fake: FakeCrossrefApi = new FakeCrossrefApi(await startLocalServer((req, res) => fake.answer(req, res)), works)
    return fake
  }

  /** CROSSREF_API_URL. */
  get url(): string {
    return this.server.url
  }

  /** The DOIs asked for, in order. */
  get dois(): string[] {
    return this.seen.map((s) => s.doi)
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake')
    const doi = url.pathname.startsWith('/works/') ? decodeURIComponent(url.pathname.slice('/works/'.length)) : ''
    this.seen.push({
      path: url.pathname,
      doi,
      mailto: url.searchParams.get('mailto'),
      userAgent: req.headers['user-agent'],
      at: performance.now()
    })
    this.inFlight++
    this.peak = Math.max(this.peak, this.inFlight)
    res.on('close', () => {
      this.inFlight--
    })
    const mode = this.mode
    if (typeof mode === 'object' && 'busy' in mode && mode.times > 0) {
      mode.times--
      res.writeHead(mode.busy, { 'content-type': 'text/plain', 'retry-after': mode.retryAfter }).end('Too many requests')
      return
    }
    if (mode === 'fail') {
      res.writeHead(500, { 'content-type': 'text/html' }).end('<html><body>500 Internal Server Error</body></html>')
      return
    }
    if (mode === 'huge') {
      sendEndless(res, 'application/json', '{"status": "ok", "message": {"pad": "')
      return
    }
    const send = (): void => this.answerWork(doi, res)
    if (typeof mode === 'object' && 'slowMs' in mode) setTimeout(send, mode.slowMs)
    else send()
  }

  private answerWork(doi: string, res: ServerResponse): void {
    if (res.destroyed) return
    const work = this.works.get(doi.toLowerCase())
    if (work === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Resource not found.')
      return
    }
    const message: Record<string, unknown> = {
      DOI: doi.toLowerCase(),
      type: 'journal-article',
      title: [work.title ?? 'A work'],
      publisher: 'Fake Publisher',
      reference: [{ key: 'ref1', unstructured: 'Padding, as real answers carry references.' }]
    }
    if (work['updated-by'] !== undefined) message['updated-by'] = work['updated-by'].map(crossrefUpdate)
    if (work['update-to'] !== undefined) message['update-to'] = work['update-to'].map(crossrefUpdate)
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ status: 'ok', 'message-type': 'work', 'message-version': '1.0.0', message }))
  }

  async close(): Promise<void> {
    await this.server.close()
  }
}
