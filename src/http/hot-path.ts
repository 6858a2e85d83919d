/**
 * The hot path: a GET or HEAD that a prepared answer covers (a cached DOI's redirect or not-found page,
 * a cached record in the REST API, each without a query string) is answered before Fastify routes it,
 * with what was rendered for the first such request (src/http/prepared-answers.ts). Everything else,
 * and everything while draining, goes on to Fastify. The answers carry every header the route would
 * send (CORS, X-Cache, Expires) and are counted in the same metrics.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { handleFromPath } from '../handle/name.js'
import { apiHandleFromPath } from '../handle/api.js'
import { negotiate } from '../handle/negotiate.js'
import type { Metrics } from '../metrics.js'
import type { Resolver } from '../resolve/resolver.js'
import { baseUrlOf } from './base-url.js'
import { apiVariant, notFoundVariant, redirectVariant, writePrepared } from './prepared-answers.js'

export interface HotPathOptions {
  resolver: Pick<Resolver, 'cachedAnswer' | 'countHit'>
  metrics: Metrics
  maxHandleLength: number
  /** The base URL as configured; when undefined and a proxy's X-Forwarded-Host may count, not-found pages go to Fastify. */
  publicBaseUrl: string | undefined
  /** The Host header is the host (no trusted proxy): a not-found page's base URL is read from it. */
  hostFromHeader: boolean
  fallbackHost: string
  /** Serving (not draining): while draining, Fastify answers, with Connection: close. */
  serving: () => boolean
  now: () => number
}

const API_PREFIX = '/api/handles/'

/** The hot path as a function of the raw request: true when it answered, false to hand the request to Fastify. */
export function createHotPath (opts: HotPathOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { resolver, maxHandleLength } = opts
  const redirects = opts.metrics.resolutions.labels('redirect')
  const notFound = opts.metrics.resolutions.labels('not_found')
  const { preparedAnswers } = opts.metrics
  return function answerPrepared (req, res) {
    const { method, url } = req
    if ((method !== 'GET' && method !== 'HEAD') || url === undefined || !opts.serving()) return false
    // A query or fragment makes an answer of its own; a handle starts with a digit (no route of ours does).
    if (url.includes('?') || url.includes('#')) return false
    const first = url.charCodeAt(1)
    let handle: string | undefined
    let api = false
    if (first >= 48 && first <= 57 && url.charCodeAt(0) === 47) {
      const parsed = handleFromPath(url, { maxLength: maxHandleLength })
      if (parsed.ok) handle = parsed.handle
    } else if (url.startsWith(API_PREFIX)) {
      handle = apiHandleFromPath(url.slice(API_PREFIX.length - 1))
      api = true
    }
    if (handle === undefined || handle === '') return false
    const entry = resolver.cachedAnswer(handle)
    const answers = entry?.work?.answers
    if (answers === undefined) return false
    let variant: string
    if (api) variant = apiVariant(handle)
    else if (entry!.kind === 'found') {
      const { headers } = req
      variant = redirectVariant(handle, negotiate({ accept: headers.accept, acceptLanguage: headers['accept-language'], userAgent: headers['user-agent'] }).key)
    } else {
      const base = opts.publicBaseUrl !== undefined ? `${opts.publicBaseUrl}/` : opts.hostFromHeader ? baseUrlOf(req.headers.host, 'http', opts.fallbackHost) : undefined
      if (base === undefined) return false
      variant = notFoundVariant(handle, base)
    }
    const answer = answers.get(variant)
    const now = opts.now()
    if (answer === undefined || answer.validUntil <= now) return false
    resolver.countHit()
    preparedAnswers.inc()
    if (!api) (entry!.kind === 'found' ? redirects : notFound).inc()
    writePrepared(res, answer, method === 'HEAD', now)
    return true
  }
}
