/**
 * The hot path: a GET or HEAD that a prepared answer covers (a cached DOI's redirect, values page or not-found page,
 * a cached record in the REST API, each without a query string) is answered before Fastify routes it,
 * with what was rendered for the first such request (src/http/prepared-answers.ts). Everything else,
 * and everything while draining, goes on to Fastify. The answers carry every header the route would
 * send (CORS, X-Cache, Expires) and are counted in the same metrics.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { handleFromPath } from '../handle/name.js'
import { apiHandleFromPath } from '../handle/api.js'
import { negotiate } from '../handle/negotiate.js'
import type { Metrics } from '../observe/metrics.js'
import type { Resolver } from '../resolve/resolver.js'
import { baseUrlOf } from './base-url.js'
import { apiVariant, notFoundVariant, redirectVariant, valuesVariant, writePrepared } from './prepared-answers.js'
import type { PreparedAnswer } from '../resolve/prepared.js'

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
  const values = opts.metrics.resolutions.labels('values')
  /** Our base URL for a page's links: configured, or from the Host header when no proxy's X-Forwarded-Host may count. */
  const baseOf = (req: IncomingMessage): string | undefined => opts.publicBaseUrl !== undefined
    ? `${opts.publicBaseUrl}/`
    : opts.hostFromHeader ? baseUrlOf(req.headers.host, 'http', opts.fallbackHost) : undefined
  const { preparedAnswers } = opts.metrics
  return function answerPrepared (req, res) {
    try {
      return answerIfPrepared(req, res)
    } catch {
      // Never a crash on the raw listener: an answer that cannot be written goes to Fastify, which
      // renders its own error, unless part of it has gone out already.
      if (!res.headersSent) return false
      res.destroy()
      return true
    }
  }

  function answerIfPrepared (req: IncomingMessage, res: ServerResponse): boolean {
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
    let answer: PreparedAnswer | undefined
    let counter: { inc: () => void } | undefined
    if (api) answer = answers.get(apiVariant(handle))
    else if (entry!.kind === 'found') {
      const { headers } = req
      const { key } = negotiate({ accept: headers.accept, acceptLanguage: headers['accept-language'], userAgent: headers['user-agent'] })
      answer = answers.get(redirectVariant(handle, key))
      counter = redirects
      if (answer === undefined) {
        // Nothing to redirect to: the values page, whose links use the base URL.
        const base = baseOf(req)
        answer = base === undefined ? undefined : answers.get(valuesVariant(handle, key, base))
        counter = values
      }
    } else {
      const base = baseOf(req)
      answer = base === undefined ? undefined : answers.get(notFoundVariant(handle, base))
      counter = notFound
    }
    const now = opts.now()
    if (answer === undefined || answer.validUntil <= now) return false
    resolver.countHit()
    preparedAnswers.inc()
    counter?.inc()
    writePrepared(res, answer, method === 'HEAD', now)
    return true
  }
}
