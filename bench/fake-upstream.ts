/**
 * A fake Handle REST API (what doi.org/api/handles answers), for benchmarks only.
 *
 * - `GET /api/handles/10.<n>/<suffix>` → a realistic record of 2–4 values (URL, HS_ADMIN, maybe
 *   700050, EMAIL or DESC; 400–900 bytes of JSON), the same every time for the same handle.
 * - a suffix starting with `missing-` → 404 `{"responseCode":100,"handle":…}`, like doi.org.
 * - `GET /api/handles/10.<n>` (a prefix) → the prefix record, whose HS_NAMESPACE names `10.SERV/TEST`
 *   as its `<locs>` handle; `10.SERV/TEST` holds a conneg-only 10320/loc to https://data.example/{hdl}.
 * - `GET /redirect/<handle>` → a 302 to the record's URL (what doi.org answers users), for nginx.
 * - `GET /__stats` → `{ requests }` (handle requests since start or the last reset), `GET /__reset`.
 * Every handle answer waits `latencyMs` first (a distant doi.org is about 30 ms away).
 *
 * Run standalone: `node --import tsx bench/fake-upstream.ts --port 8100 --latency 30`
 * (prints `listening <port>` when ready).
 */
import { createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { fileURLToPath } from 'node:url'

interface FakeValue {
  index: number
  type: string
  data: { format: string; value: unknown }
  ttl: number
  timestamp: string
}

export type FakeAnswer =
  | { status: 200; body: { responseCode: 1; handle: string; values: FakeValue[] } }
  | { status: 404; body: { responseCode: 100; handle: string } }

export const CONNEG_SERVICE_HANDLE = '10.SERV/TEST'
export const CONNEG_HOST = 'https://data.example/'

const PUBLISHERS = ['pubs.example.org', 'journals.example.com', 'www.example-press.net', 'link.example.edu', 'onlinelibrary.example.org']

/** FNV-1a: a cheap deterministic hash, so a handle always gets the same record. */
function hash(s: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h
}

function timestamp(h: number): string {
  const ms = Date.UTC(2012, 0, 1) + (h % (12 * 365 * 86_400)) * 1000
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

function value(index: number, type: string, format: string, data: unknown, h: number): FakeValue {
  return { index, type, data: { format, value: data }, ttl: 86_400, timestamp: timestamp(h) }
}

function admin(prefix: string, h: number): FakeValue {
  return value(100, 'HS_ADMIN', 'admin', { handle: `0.na/${prefix}`, index: 200, permissions: '111111110010' }, h)
}

/** A DOI record shaped like the ones doi.org returns (test/fixtures/doiorg_api_handles_captured.json). */
function doiRecord(handle: string, prefix: string, suffix: string): FakeValue[] {
  const h = hash(handle)
  const host = PUBLISHERS[h % PUBLISHERS.length] ?? 'example.org'
  const values = [value(1, 'URL', 'string', `https://${host}/doi/full/${prefix}/${encodeURIComponent(suffix)}`, h)]
  const extras = h % 3 // 0, 1 or 2 extra values: 2–4 values in all
  if (extras >= 1) values.push(value(700050, '700050', 'string', `2015${String(h % 1_000_000_000).padStart(15, '0')}`, h >>> 3))
  if (extras >= 2) {
    values.push(
      (h & 8) === 0
        ? value(2, 'EMAIL', 'string', `doi-admin@${host}`, h >>> 5)
        : value(2, 'DESC', 'string', `Article ${suffix} deposited by the ${host} content platform for the benchmark suite`, h >>> 5)
    )
  }
  values.push(admin(prefix, h))
  return values
}

/** A prefix record (the 0.NA/<prefix> record doi.org shows for `/10.1234`), with namespace locations. */
function prefixRecord(prefix: string): FakeValue[] {
  const h = hash(prefix)
  const values = [admin('10', h), value(2, 'EMAIL', 'string', 'hdladmin@example.org', h)]
  if (/^10\.\d+$/.test(prefix)) {
    const ns = `<HS_NAMESPACE><DOI.RA>${CONNEG_SERVICE_HANDLE}</DOI.RA><locs>${CONNEG_SERVICE_HANDLE}</locs></HS_NAMESPACE>`
    values.push(value(3, 'HS_NAMESPACE', 'string', ns, h))
  }
  return values
}

/** The service handle holding the prefix-level 10320/loc: conneg only (weight 0), like 10.SERV/CROSSREF. */
function connegServiceRecord(): FakeValue[] {
  const h = hash(CONNEG_SERVICE_HANDLE)
  const loc = `<locations http_sc="302">\n<location weight="0" http_role="conneg" href_template="${CONNEG_HOST}{hdl}" />\n</locations>`
  return [admin('10.SERV', h), value(1, '10320/loc', 'string', loc, h)]
}

/** What the fake upstream answers for a handle (exported so tests and scripts can predict it). */
export function answerFor(handle: string): FakeAnswer {
  const notFound: FakeAnswer = { status: 404, body: { responseCode: 100, handle } }
  if (handle.toUpperCase() === CONNEG_SERVICE_HANDLE) {
    return { status: 200, body: { responseCode: 1, handle, values: connegServiceRecord() } }
  }
  const slash = handle.indexOf('/')
  const prefix = slash === -1 ? handle : handle.slice(0, slash)
  if (!/^10\.[0-9A-Za-z.]+$/.test(prefix)) return notFound
  if (slash === -1) return { status: 200, body: { responseCode: 1, handle, values: prefixRecord(prefix) } }
  const suffix = handle.slice(slash + 1)
  if (suffix === '' || suffix.toLowerCase().startsWith('missing-')) return notFound
  return { status: 200, body: { responseCode: 1, handle, values: doiRecord(handle, prefix, suffix) } }
}

function firstUrl(answer: FakeAnswer): string | undefined {
  if (answer.status !== 200) return undefined
  const url = answer.body.values.find((v) => v.type === 'URL')
  return typeof url?.data.value === 'string' ? url.data.value : undefined
}

export interface FakeUpstreamOptions {
  port: number
  host?: string
  latencyMs: number
}

export interface FakeUpstream {
  server: Server
  port: number
  close(): Promise<void>
}

/** Start the fake upstream; resolves once it listens. */
export async function startFakeUpstream(opts: FakeUpstreamOptions): Promise<FakeUpstream> {
  let requests = 0
  const delay = (fn: () => void): void => {
    if (opts.latencyMs > 0) setTimeout(fn, opts.latencyMs)
    else setImmediate(fn)
  }

  function handleFrom(rawPath: string, base: string): string | undefined {
    try {
      return decodeURIComponent(rawPath.slice(base.length))
    } catch {
      return undefined
    }
  }

  function onRequest(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/'
    const q = url.indexOf('?')
    const path = q === -1 ? url : url.slice(0, q)
    if (path === '/__stats') return sendJson(res, 200, { requests })
    if (path === '/__reset') {
      requests = 0
      return sendJson(res, 200, { requests })
    }
    if (path.startsWith('/api/handles/')) {
      requests++
      const handle = handleFrom(path, '/api/handles/')
      delay(() => {
        if (handle === undefined) return sendJson(res, 400, { responseCode: 2, message: 'bad handle encoding' })
        const answer = answerFor(handle)
        sendJson(res, answer.status, answer.body)
      })
      return
    }
    if (path.startsWith('/redirect/')) {
      requests++
      const handle = handleFrom(path, '/redirect/')
      delay(() => {
        const target = handle === undefined ? undefined : firstUrl(answerFor(handle))
        if (target === undefined) return sendHtml(res, 404, {}, '<html><body>Handle Not Found</body></html>')
        sendHtml(
          res,
          302,
          { location: target },
          `<html><head><title>Handle Redirect</title></head>\n<body><a href="${target}">${target}</a></body></html>`
        )
      })
      return
    }
    sendJson(res, 404, { responseCode: 2, message: 'not a fake upstream path' })
  }

  const server = createServer(onRequest)
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(opts.port, opts.host ?? '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : opts.port
  return {
    server,
    port,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json;charset=utf-8', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

function sendHtml(res: ServerResponse, status: number, headers: Record<string, string>, body: string): void {
  res.writeHead(status, { ...headers, 'content-type': 'text/html;charset=utf-8', 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  return i === -1 ? undefined : process.argv[i + 1]
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const port = Number(argValue('--port') ?? process.env.PORT ?? 8100)
  const latencyMs = Number(argValue('--latency') ?? process.env.LATENCY_MS ?? 30)
  const upstream = await startFakeUpstream({ port, latencyMs })
  process.stdout.write(`listening ${upstream.port}\n`)
  process.on('SIGTERM', () => {
    upstream.close().then(
      () => process.exit(0),
      () => process.exit(1)
    )
  })
  // Started by the bench runner with stdin as a pipe: when the runner dies, so do we.
  if (!process.stdin.isTTY) process.stdin.on('close', () => process.exit(0)).resume()
}
