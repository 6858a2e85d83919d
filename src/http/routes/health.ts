import { Readable } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { brokenJson, csvHeader, csvRow, isoTime, reportJson } from '../../handle/health/report.js'
import type { DoiState } from '../../handle/health/types.js'
import { cacheKey, handleFromInput } from '../../handle/name.js'
import { healthReport } from '../../resolve/health/health-service.js'
import type { HealthPages } from '../../resolve/health/health-service.js'
import type { DoiHistory } from '../../handle/health/types.js'
import type { HealthReader } from '../../resolve/health/reader.js'
import { baseUrlFor } from '../base-url.js'
import { RefusedError, RequestError } from '../errors.js'
import { operatorOnly } from '../operator-only.js'
import type { RouteContext } from '../route-context.js'
import { renderDoiHealthPage, renderHealthPage } from '../views/health.js'

const HTML = 'text/html; charset=utf-8'
// Nothing from elsewhere and no script at all: the pages are complete without one (the chart is drawn on the server).
const HEALTH_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
/** Broken DOIs on one page of `/health`; the files read the list by pages of PAGE_ROWS. */
const PAGE_SIZE = 200
const PAGE_ROWS = 1000
/** Longest `?prefix=`, `?doi=` and `?after=` read (a prefix is short; a handle at most MAX_HANDLE_LENGTH). */
const MAX_PARAM = 4096
const WEEK_MS = 7 * 86_400_000
/** The checks `?doi=` lists. */
const DOI_CHECKS = 100

interface HealthQuery {
  prefix?: string | undefined
  after?: string | undefined
  doi?: string | undefined
}

/**
 * `/health`, `/health.json`, `/health.csv` (issue 42): the resolution health of the watched DOIs, for the people
 * who run this resolver (STATUS_ALLOW, as `/status`: no CORS, no cache, no script) and, through the CSV, for the
 * publishers they send it to. The history is read by keyset (`?after=` on the page; the files page through it
 * themselves, a thousand rows at a time), never in one long read. Health off: 404.
 */
export default async function healthRoutes(
  app: FastifyInstance,
  { config, services }: RouteContext<'statusAllow' | 'publicBaseUrl'>
): Promise<void> {
  const { healthPages: pages, fallbackHost, now } = services
  const guard = operatorOnly(config.statusAllow)
  const forbidden = 'The health pages are only for the people who run this resolver, from the networks they allowed (STATUS_ALLOW).'

  /** The history to read, once the request may see it; a RequestError otherwise (rendered by the one error handler). */
  const readerFor = (request: FastifyRequest, reply: FastifyReply): { pages: HealthPages; reader: HealthReader } => {
    const allowed = guard(request, reply)
    reply.header('content-security-policy', HEALTH_CSP)
    if (pages === undefined) throw new RequestError(404, 'Resolution health is off here (HEALTH_WATCH, HEALTH_LIST_FILE).')
    if (!allowed) throw new RequestError(403, forbidden)
    const reader = pages.reader()
    // A read-only worker before the host's writer made the file.
    if (reader === undefined) {
      throw new RefusedError(
        503,
        'DP_HEALTH_STARTING',
        'The health history is not open yet (this host is starting): try again in a moment.',
        5_000
      )
    }
    return { pages, reader }
  }

  app.get('/health', async (request, reply) => {
    const { pages: here, reader } = readerFor(request, reply)
    const q = queryOf(request)
    const ctx = { baseUrl: baseUrlFor(request, config.publicBaseUrl, fallbackHost) }
    reply.type(HTML)
    if (q.doi !== undefined) return reply.send(renderDoiHealthPage(ctx, historyOf(reader, q.doi)))
    const { report, next } = brokenPage(here, reader, q, now())
    const all = reader.summary()
    const brokenTotal = all
      .filter((p) => q.prefix === undefined || p.prefix === q.prefix)
      .reduce((n, p) => n + p.counts.dead + p.counts.takeover + p.counts['not-found'] + p.counts['no-url'], 0)
    return reply.send(
      renderHealthPage(ctx, report, {
        prefix: q.prefix,
        prefixes: all.map((p) => p.prefix),
        after: q.after,
        next,
        brokenTotal,
        newlyBroken: reader.newlyBroken(report.generatedAt - WEEK_MS, PAGE_SIZE, q.prefix)
      })
    )
  })

  app.get('/health.json', { config: { errorFormat: 'message' } }, async (request, reply) => {
    const { pages: here, reader } = readerFor(request, reply)
    const q = queryOf(request)
    reply.type('application/json; charset=utf-8')
    if (q.doi !== undefined) return reply.send(JSON.stringify(doiJson(historyOf(reader, q.doi))))
    const { report } = brokenPage(here, reader, { prefix: q.prefix }, now())
    // Everything but the broken list, then the list a page at a time: `"broken":[]}` is where it goes.
    const whole = JSON.stringify(reportJson({ ...report, broken: [] }))
    const head = whole.slice(0, -2)
    return reply.send(
      Readable.from(
        (function* () {
          yield head
          let first = true
          for (const rows of brokenPages(reader, q.prefix)) {
            const text = rows.map((row) => JSON.stringify(brokenJson(row))).join(',')
            if (text === '') continue
            yield first ? text : `,${text}`
            first = false
          }
          yield ']}'
        })()
      )
    )
  })

  app.get('/health.csv', { config: { errorFormat: 'message' } }, async (request, reply) => {
    const { reader } = readerFor(request, reply)
    const q = queryOf(request)
    if (q.doi !== undefined) {
      throw new RequestError(400, 'The CSV lists the broken DOIs of a prefix or of all (?prefix=); ?doi= is for /health and /health.json.')
    }
    const name = `doi-health-${q.prefix === undefined ? 'all' : q.prefix.replace(/[^A-Za-z0-9._-]/g, '_')}-${isoTime(now()).slice(0, 10)}.csv`
    return reply
      .type('text/csv; charset=utf-8; header=present')
      .header('content-disposition', `attachment; filename="${name}"`)
      .send(
        Readable.from(
          (function* () {
            yield csvHeader()
            for (const rows of brokenPages(reader, q.prefix)) {
              if (rows.length > 0) yield rows.map(csvRow).join('')
            }
          })()
        )
      )
  })
}

/** `?prefix=`, `?after=`, `?doi=`: the first of each, bounded; empty is absent. */
function queryOf(request: FastifyRequest): HealthQuery {
  const query = request.query as Record<string, string | string[] | undefined>
  const one = (name: string): string | undefined => {
    const raw = query[name]
    const value = Array.isArray(raw) ? raw[0] : raw
    if (value === undefined || value.trim() === '') return undefined
    if (value.length > MAX_PARAM) throw new RequestError(400, `?${name}= is too long`)
    return value.trim()
  }
  return { prefix: one('prefix'), after: one('after'), doi: one('doi') }
}

/** The report with one page of the broken list; a cursor that is not one of ours is 400. */
function brokenPage(pages: HealthPages, reader: HealthReader, q: HealthQuery, at: number) {
  try {
    return healthReport(pages, reader, { prefix: q.prefix, after: q.after, limit: PAGE_SIZE, now: at })
  } catch (err) {
    if (err instanceof RangeError) throw new RequestError(400, `${err.message}: start again from the first page`)
    throw err
  }
}

/** Every confirmed-broken DOI (of a prefix, or all), a page of the keyset at a time: each page a short read of its own. */
function* brokenPages(reader: HealthReader, prefix: string | undefined) {
  let after: string | undefined
  for (;;) {
    const page = reader.broken({ prefix, after, limit: PAGE_ROWS })
    yield page.rows
    if (page.next === null) return
    after = page.next
  }
}

/** One DOI's state and last checks; 404 when it was never watched here. */
function historyOf(reader: HealthReader, doi: string): DoiHistory {
  const history = reader.history(cacheKey(handleFromInput(doi)), DOI_CHECKS)
  if (history === null) throw new RequestError(404, 'This DOI is not watched here (or its history was pruned).')
  return history
}

/** `/health.json?doi=`: the DOI, its state and its checks, times in ISO 8601 UTC. */
function doiJson(h: DoiHistory): Record<string, unknown> {
  const iso = (ms: number | null): string | null => (ms === null ? null : isoTime(ms))
  const s: DoiState = h.state
  return {
    doi: h.doi,
    prefix: h.prefix,
    watched: h.watched,
    state: {
      ...s,
      since: iso(s.since),
      confirmedAt: iso(s.confirmedAt),
      streakFirstAt: iso(s.streakFirstAt),
      streakLastAt: iso(s.streakLastAt),
      nextAt: iso(s.nextAt)
    },
    checks: h.checks.map((c) => ({ ...c, at: isoTime(c.at) }))
  }
}
