/**
 * The bench fake upstream (bench/fake-upstream.ts) behind a CDN's edge rules, as doi.org is: a
 * request the edge will not forward gets the edge's own HTML error page, never the Handle API's JSON.
 *
 * - a `.` or `..` path segment (also as %2E), or a '%' not followed by two hex digits → 400;
 * - a request line longer than `urlLimit` bytes (default 8,192: nginx's default
 *   large_client_header_buffers, where many edges and origins stop) → 414;
 * - request headers longer than `headerLimit` bytes in all (default 32,768) → 431.
 * Error pages are Cloudflare-shaped HTML (`Server: cloudflare`, `Connection: close`), sent after the
 * same latency as API answers. Everything else goes to the fake upstream unchanged.
 *
 * With `hostile`, the records of bench/lib/hostile-records.ts (prefix 10.6666) are served too.
 * `GET /__cdn` → `{ forwarded, rejected: { "400": n, "414": n, "431": n }, hostile }`; `/__reset` zeroes it.
 *
 * This file imports nothing that installs signal handlers: run as a process (bench/lib/children.ts
 * startCdnUpstream) it exits 0 on SIGTERM. The process runs with --max-http-header-size=65536, so
 * long URLs reach these rules instead of Node's own 431. Standalone:
 * `node --max-http-header-size=65536 --import tsx bench/lib/cdn-upstream.ts --port 8100 --latency 30 [--hostile] [--no-cdn]`
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { fileURLToPath } from 'node:url'
import { startFakeUpstream } from '../fake-upstream.js'
import { hostileRecord } from './hostile-records.js'

export interface CdnRules {
  /** Most bytes in the request line (method, target, version). */
  urlLimit: number
  /** Most bytes of request headers (names, values, separators). */
  headerLimit: number
}

export const DEFAULT_RULES: CdnRules = { urlLimit: 8_192, headerLimit: 32_768 }

export interface CdnStats {
  forwarded: number
  rejected: Record<string, number>
  hostile: number
}

const REASONS: Record<number, string> = { 400: 'Bad Request', 414: 'Request-URI Too Large', 431: 'Request Header Fields Too Large' }

function edgePage(status: number): string {
  const title = `${status} ${REASONS[status] ?? ''}`
  return `<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n<center><h1>${title}</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n`
}

const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i
const BAD_PERCENT = /%(?![0-9A-Fa-f]{2})/

/** The edge's verdict on a request: a status to refuse it with, or undefined to forward it. */
export function edgeVerdict(method: string, rawUrl: string, rawHeaders: readonly string[], rules: CdnRules): 400 | 414 | 431 | undefined {
  if (method.length + rawUrl.length + 10 > rules.urlLimit) return 414
  let headerBytes = 0
  for (const part of rawHeaders) headerBytes += part.length + 2
  if (headerBytes > rules.headerLimit) return 431
  const q = rawUrl.indexOf('?')
  const path = q < 0 ? rawUrl : rawUrl.slice(0, q)
  if (BAD_PERCENT.test(rawUrl)) return 400
  for (const segment of path.split('/')) if (DOT_SEGMENT.test(segment)) return 400
  return undefined
}

export interface CdnUpstreamOptions {
  port: number
  host?: string
  latencyMs: number
  /** Apply the edge rules (default true). */
  cdn?: boolean
  rules?: CdnRules
  /** Serve bench/lib/hostile-records.ts as well. */
  hostile?: boolean
}

/** In-process: the fake upstream with the edge in front (and the hostile records, if asked). */
export async function startCdnFakeUpstream(opts: CdnUpstreamOptions) {
  const upstream = await startFakeUpstream({
    port: opts.port,
    ...(opts.host === undefined ? {} : { host: opts.host }),
    latencyMs: opts.latencyMs
  })
  const rules = opts.rules ?? DEFAULT_RULES
  const stats: CdnStats = { forwarded: 0, rejected: {}, hostile: 0 }
  const inner = upstream.server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>
  upstream.server.removeAllListeners('request')
  const later = (fn: () => void): void => {
    if (opts.latencyMs > 0) setTimeout(fn, opts.latencyMs)
    else setImmediate(fn)
  }
  const json = (res: ServerResponse, status: number, body: unknown): void => {
    if (res.destroyed) return
    const text = JSON.stringify(body)
    res.writeHead(status, { 'content-type': 'application/json;charset=utf-8', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  }

  upstream.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/'
    if (url === '/__cdn') return json(res, 200, stats)
    if (url === '/__reset') {
      stats.forwarded = 0
      stats.rejected = {}
      stats.hostile = 0
    }
    if (url.startsWith('/__')) {
      for (const listener of inner) listener(req, res)
      return
    }
    const verdict = opts.cdn === false ? undefined : edgeVerdict(req.method ?? 'GET', url, req.rawHeaders, rules)
    if (verdict !== undefined) {
      stats.rejected[verdict] = (stats.rejected[verdict] ?? 0) + 1
      later(() => {
        if (res.destroyed) return
        const body = edgePage(verdict)
        res.writeHead(verdict, {
          server: 'cloudflare',
          'content-type': 'text/html',
          'content-length': Buffer.byteLength(body),
          connection: 'close'
        })
        res.end(body)
      })
      return
    }
    stats.forwarded++
    if (opts.hostile === true && url.startsWith('/api/handles/')) {
      const q = url.indexOf('?')
      let handle: string | undefined
      try {
        handle = decodeURIComponent(url.slice('/api/handles/'.length, q < 0 ? undefined : q))
      } catch {
        handle = undefined
      }
      const record = handle === undefined ? undefined : hostileRecord(handle)
      if (record !== undefined) {
        stats.hostile++
        later(() => json(res, 200, { responseCode: 1, handle: record.handle, values: record.values }))
        return
      }
    }
    for (const listener of inner) listener(req, res)
  })
  return { ...upstream, stats: () => stats }
}

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  return i === -1 ? undefined : process.argv[i + 1]
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const upstream = await startCdnFakeUpstream({
    port: Number(argValue('--port') ?? 8100),
    latencyMs: Number(argValue('--latency') ?? 30),
    cdn: !process.argv.includes('--no-cdn'),
    hostile: process.argv.includes('--hostile'),
    rules: {
      urlLimit: Number(argValue('--url-limit') ?? DEFAULT_RULES.urlLimit),
      headerLimit: Number(argValue('--header-limit') ?? DEFAULT_RULES.headerLimit)
    }
  })
  process.stdout.write(`listening ${upstream.port}\n`)
  process.on('SIGTERM', () => {
    upstream.close().then(
      () => process.exit(0),
      () => process.exit(1)
    )
  })
  if (!process.stdin.isTTY) process.stdin.on('close', () => process.exit(0)).resume()
}
