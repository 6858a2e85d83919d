/**
 * Prepared answers: the one door for answers worked out once and kept with a record's cache entry
 * (src/resolve/cache/entry-work.ts). A plain request (GET or HEAD, no query, no fragment) for `/{doi}` or
 * `/api/handles/{doi}` whose record is cached gets what the first such request got, written on the raw
 * listener before Fastify routes it. Which request gets which answer is decided here only, by
 * `variantOf`; the routes `keep` what they rendered, the listener `serve`s it. Both go through the same
 * variant, so a rule changed here changes both.
 *
 * A registry copy's work is never cached (src/resolve/lookup/resolver.ts copyAnswer): what is kept for it is
 * the redirect the route gave one work of its prefix for a negotiation (CopyReuse), and a plain `/{doi}` of
 * any work of that prefix and negotiation gets the same redirect to its own URL, read from the copy.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { LRUCache } from 'lru-cache'
import { apiHandleOf } from '../handle/api.js'
import { cacheKey, handleFromPath, prefixOf } from '../handle/name.js'
import { negotiate, negotiationHeadersOf } from '../handle/negotiate.js'
import type { NegotiationHeaders } from '../handle/negotiate.js'
import type { ExpiryRule } from '../handle/record.js'
import { expiresFrom } from '../handle/record.js'
import { locationFor } from '../handle/redirect.js'
import type { EntryWork, PreparedAnswer } from '../resolve/cache/entry-work.js'
import type { CopyReuse, Reuse } from '../resolve/lookup/proxy-service.js'
import { addAnswer, preparedBytes } from '../resolve/cache/entry-work.js'
import type { CacheStatus, Resolver } from '../resolve/lookup/resolver.js'
import { redirectParts } from './redirect-parts.js'
import type { AnswerParts } from './redirect-parts.js'
import type { Tally } from '../observe/metrics.js'
import { baseUrlOf, configuredBaseUrl } from './base-url.js'

// Headers a browser-based tool may read from our answers (behaviour.md §7).
export const EXPOSED_HEADERS = ['Location', 'Vary', 'Link', 'X-Cache', 'Expires']
/** The CORS headers of every simple request's answer: the same everywhere, so written once here. */
export const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': EXPOSED_HEADERS.join(', ')
} as const

const CORS_LIST = Object.entries(CORS_HEADERS).flat()

/** The REST API's path prefix; `/api/handles/{handle}` is its record. */
export const API_HANDLES = '/api/handles'
const API_RECORDS = `${API_HANDLES}/`

/** A path of the REST API's records, `/api/handles/…`: the door reads it as such, and so does a path the router cannot decode. */
export function isApiRecordPath(url: string): boolean {
  return url.startsWith(API_RECORDS)
}

export type { AnswerParts } from './redirect-parts.js'

/** What a route's answer was: which page, and for a redirect whether it answers content negotiation. */
export type AnswerKind = 'redirect' | 'negotiated-redirect' | 'values' | 'not-found' | 'api'

/** Which prepared answers a plain request may get: its route, its handle as written and its cache key. */
interface PlainTarget {
  api: boolean
  handle: string
  key: string
}

/**
 * The answer a target last got, and what it was chosen by: the next request of the same target with the
 * same entry's work, negotiation and (for a page) Host is given it without looking it up by name again.
 */
interface LastServed {
  work: EntryWork
  negotiation: string
  /** The headers the negotiation was worked out from: the same three again give the same negotiation. */
  asked: NegotiationHeaders
  /** The Host header a page's base URL came from; undefined when the answer does not depend on it. */
  host: string | undefined
  answer: PreparedAnswer
  outcome: Tally | undefined
}

/**
 * A plain request's variant: the target, the negotiation (behaviour.md §5, src/handle/negotiate.ts) and our
 * base URL for pages' links, or undefined when it cannot be told from the raw request (a trusted proxy's
 * X-Forwarded-Host may count, and only Fastify reads it).
 */
export interface Variant extends PlainTarget {
  negotiation: string
  baseUrl: string | undefined
}

export interface PreparedAnswersOptions {
  resolver: Pick<Resolver, 'atTheDoor' | 'attach' | 'countHit' | 'countCopyHit'>
  /** ALLOWED_SCHEMES: a copy's work whose URL has another scheme is not redirected (the route shows its values). */
  allowedSchemes: readonly string[]
  /** Off when an answer may depend on who asks (a local service) or each answer must be logged. */
  enabled: boolean
  /** Metadata is fetched for negotiated requests (docs/metadata.md): such a redirect hangs on the whole Accept. */
  negotiatedVaries: boolean
  maxHandleLength: number
  publicBaseUrl: string | undefined
  /** A trusted proxy's X-Forwarded-Host and -Proto may count: the raw Host header is not our base URL. */
  behindProxy: boolean
  fallbackHost: string
  /** Counted for every prepared answer served, and by outcome (the proxy route counts the same tallies). */
  served: Tally
  outcomes: { redirect: Tally; values: Tally; notFound: Tally; api: { found: Tally; notFound: Tally } }
  /** False while draining: Fastify answers, with Connection: close. */
  serving: () => boolean
  now: () => number
}

export interface PreparedAnswers {
  /** The variant of a request, when it is plain and names a handle; undefined otherwise. */
  variantOf(req: IncomingMessage): Variant | undefined
  /** Keep what a route rendered for its request, for every later request of the same variant. */
  keep(request: FastifyRequest, kind: AnswerKind, reuse: Reuse | undefined, parts: AnswerParts, renderedBase?: string): void
  /** Write the prepared answer of a request on the raw response: true when it did, false to let Fastify answer. */
  serve(req: IncomingMessage, res: ServerResponse): boolean
}

// How many request targets' parses are remembered; the parse is a pure function of the target.
const MAX_REMEMBERED_TARGETS = 4096
// How many copy redirects are kept, one per prefix and negotiation, least recently used first out: Crossref
// has some 30,000 prefixes, and each redirect is a hundred bytes.
const MAX_COPY_REDIRECTS = 16_384
// And at most these bytes of keys and redirects: a reader's headers make the negotiation part of the key.
const MAX_COPY_REDIRECT_BYTES = 4 * 1024 * 1024
// A negotiation longer than this (a long Accept-Language, say) is answered by the route, never kept.
const MAX_KEPT_NEGOTIATION = 1024

/** The redirect every registry copy's work of a prefix gets for a negotiation, but for its URL (CopyReuse). */
interface CopyRedirect {
  status: number
  vary: boolean
  validUntil: number
  expires: ExpiryRule
}

export function createPreparedAnswers(opts: PreparedAnswersOptions): PreparedAnswers {
  const { resolver } = opts
  const base: RawBase = {
    configured: configuredBaseUrl(opts.publicBaseUrl),
    behindProxy: opts.behindProxy,
    fallbackHost: opts.fallbackHost
  }
  const targets = new Map<string, PlainTarget | null>()
  // By prefix and negotiation (copyRedirectKey): what a copy's work of the prefix is redirected with.
  const copyRedirects = new LRUCache<string, CopyRedirect>({
    max: MAX_COPY_REDIRECTS,
    maxSize: MAX_COPY_REDIRECT_BYTES,
    sizeCalculation: (_redirect, key) => 2 * key.length + 128
  })
  // By target: the last answer served, and what chose it (the targets' own memo, bounded with them).
  const lastServed = new WeakMap<PlainTarget, LastServed>()

  /** The target of a request line: parsed once per distinct target (a DOI is asked for again and again). */
  function targetOf(url: string): PlainTarget | undefined {
    let target = targets.get(url)
    if (target === undefined) {
      target = parseTarget(url, opts.maxHandleLength)
      if (targets.size >= MAX_REMEMBERED_TARGETS) targets.clear()
      targets.set(url, target)
    }
    return target ?? undefined
  }

  /** The negotiation class of a request (the REST API does not negotiate). */
  function negotiationOf(target: PlainTarget, asked: NegotiationHeaders): string {
    return target.api ? '' : negotiate(asked).key
  }

  function variantOf(req: IncomingMessage): Variant | undefined {
    const { method, url } = req
    if ((method !== 'GET' && method !== 'HEAD') || url === undefined) return undefined
    const target = targetOf(url)
    return target === undefined
      ? undefined
      : { ...target, negotiation: negotiationOf(target, negotiationHeadersOf(req.headers)), baseUrl: baseOf(base, req) }
  }

  return {
    variantOf,
    keep(request, kind, reuse, parts, renderedBase) {
      if (!opts.enabled || reuse === undefined || (kind === 'negotiated-redirect' && opts.negotiatedVaries)) return
      const variant = variantOf(request.raw)
      if (variant === undefined) return
      // A page's links use the base URL it was rendered with: kept only when the listener would key it the same.
      if (renderedBase !== undefined && renderedBase !== variant.baseUrl) return
      if ('copy' in reuse) {
        if (kind === 'redirect') keepCopyRedirect(variant, reuse, parts)
        return
      }
      const name = answerName(variant, kind)
      if (name === undefined) return
      const kept = reuse.entry.work?.answers.get(name)
      if (kept !== undefined && kept.validUntil >= reuse.validUntil) return
      const answer = prepareAnswer(parts, reuse.validUntil, reuse.expires)
      resolver.attach(variant.handle, reuse.entry, (work) => addAnswer(work, name, answer))
    },
    serve(req, res) {
      try {
        return serveIfPrepared(req, res)
      } catch {
        // Never a crash on the raw listener: an answer that cannot be written goes to Fastify, which
        // renders its own error, unless part of it has gone out already.
        if (!res.headersSent) return false
        res.destroy()
        return true
      }
    }
  }

  /**
   * Keep the redirect a copy's work got as its prefix's, for its negotiation, when the door would write the
   * same bytes for it (redirectParts of its status, Location and Vary alone): otherwise none is kept.
   */
  function keepCopyRedirect(variant: Variant, reuse: CopyReuse, parts: AnswerParts): void {
    const location = parts.headers.location
    if (typeof location !== 'string' || variant.negotiation.length > MAX_KEPT_NEGOTIATION) return
    const redirect: CopyRedirect = {
      status: parts.status,
      vary: parts.headers.vary !== undefined,
      validUntil: reuse.validUntil,
      expires: reuse.expires
    }
    if (!sameParts(copyRedirectParts(redirect, location), parts)) return
    copyRedirects.set(copyRedirectKey(variant.handle, variant.negotiation), redirect)
  }

  /** A plain `/{doi}` of a copy's work, when its prefix's redirect for the request's negotiation is kept and holds. */
  function serveCopyRedirect(req: IncomingMessage, res: ServerResponse, target: PlainTarget, url: string): boolean {
    if (target.api) return false
    const redirect = copyRedirects.get(copyRedirectKey(target.handle, negotiationOf(target, negotiationHeadersOf(req.headers))))
    const now = opts.now()
    if (redirect === undefined || redirect.validUntil <= now) return false
    // Another scheme or a control character: the route shows the values page (behaviour.md §4).
    const location = locationFor(url, undefined, opts.allowedSchemes)
    if (location === undefined) return false
    const parts = copyRedirectParts(redirect, location)
    const headers = headerList(parts.headers, 'COPY', Buffer.byteLength(parts.body))
    headers.push('expires', httpDate(expiresFrom(redirect.expires, now)))
    resolver.countCopyHit()
    opts.served.inc()
    opts.outcomes.redirect.inc()
    res.writeHead(parts.status, headers)
    if (req.method === 'HEAD') res.end()
    else res.end(parts.body)
    return true
  }

  function serveIfPrepared(req: IncomingMessage, res: ServerResponse): boolean {
    const { method, url } = req
    if (!opts.enabled || (method !== 'GET' && method !== 'HEAD') || url === undefined || !opts.serving()) return false
    const target = targetOf(url)
    if (target === undefined) return false
    const found = resolver.atTheDoor(target.handle, target.key)
    if (found?.kind === 'copy') return serveCopyRedirect(req, res, target, found.url)
    const work = found?.work
    if (work === undefined) return false
    const asked = negotiationHeadersOf(req.headers)
    let last = lastServed.get(target)
    // The same headers as the last request of the target have the same negotiation: not worked out again.
    const negotiation = last !== undefined && sameHeaders(last.asked, asked) ? last.negotiation : negotiationOf(target, asked)
    const now = opts.now()
    // Chosen again when anything that chose it differs, or it has run out (a newer one may be kept by now).
    if (
      last === undefined ||
      last.work !== work ||
      last.negotiation !== negotiation ||
      (last.host !== undefined && last.host !== req.headers.host) ||
      last.answer.validUntil <= now
    ) {
      last = chooseAnswer(target, work, negotiation, asked, req, base, opts.outcomes)
      if (last === undefined || last.answer.validUntil <= now) return false
      lastServed.set(target, last)
    }
    resolver.countHit()
    opts.served.inc()
    last.outcome?.inc()
    writePrepared(res, last.answer, method === 'HEAD', now)
    return true
  }
}

/** What a page's base URL is on the raw request: fixed at start, but for the Host header. */
interface RawBase {
  configured: string | undefined
  /** A trusted proxy's X-Forwarded-Host may count, and only Fastify reads it: the base URL cannot be told. */
  behindProxy: boolean
  fallbackHost: string
}

function baseOf(base: RawBase, req: IncomingMessage): string | undefined {
  if (base.configured !== undefined) return base.configured
  return base.behindProxy ? undefined : baseUrlOf(req.headers.host, 'http', base.fallbackHost)
}

/** The kept answer of a request's variant, looked up by name: a redirect, else the values page; not found; the REST API's. */
function chooseAnswer(
  target: PlainTarget,
  work: EntryWork,
  negotiation: string,
  asked: NegotiationHeaders,
  req: IncomingMessage,
  base: RawBase,
  outcomes: PreparedAnswersOptions['outcomes']
): LastServed | undefined {
  const found = (kind: AnswerKind, baseUrl?: string): PreparedAnswer | undefined => {
    const name = answerName({ ...target, negotiation, baseUrl }, kind)
    return name === undefined ? undefined : work.answers.get(name)
  }
  const served = (answer: PreparedAnswer | undefined, outcome: Tally | undefined, page: boolean): LastServed | undefined =>
    answer === undefined
      ? undefined
      : { work, negotiation, asked, host: page && base.configured === undefined ? (req.headers.host ?? '') : undefined, answer, outcome }
  if (target.api) {
    const api = found('api')
    return served(api, api?.status === 404 ? outcomes.api.notFound : outcomes.api.found, false)
  }
  const redirect = found('redirect')
  if (redirect !== undefined) return served(redirect, outcomes.redirect, false)
  const pageBase = baseOf(base, req)
  // A values page when the record has nothing to redirect to, the not-found page when there is no record.
  return served(found('values', pageBase), outcomes.values, true) ?? served(found('not-found', pageBase), outcomes.notFound, true)
}

function sameHeaders(a: NegotiationHeaders, b: NegotiationHeaders): boolean {
  return a.accept === b.accept && a.acceptLanguage === b.acceptLanguage && a.userAgent === b.userAgent
}

/** The target of a plain request line, or null: a query or fragment makes an answer of its own. */
function parseTarget(url: string, maxHandleLength: number): PlainTarget | null {
  if (url.includes('?') || url.includes('#')) return null
  let handle: string | undefined
  let api = false
  const first = url.charCodeAt(1)
  // A handle starts with a digit; no route of ours does, so `/{doi}` never shadows one.
  if (url.charCodeAt(0) === 47 && first >= 48 && first <= 57) {
    const parsed = handleFromPath(url, { maxLength: maxHandleLength })
    if (parsed.ok) handle = parsed.handle
  } else if (isApiRecordPath(url)) {
    const parsed = apiHandleOf(url.slice(API_HANDLES.length), { maxLength: maxHandleLength })
    if (parsed.ok) handle = parsed.handle
    api = true
  }
  if (handle === undefined || handle === '') return null
  return { api, handle, key: cacheKey(handle) }
}

/**
 * The name an answer is kept under in its entry's work: the handle as written (pages show it), and
 * whatever else decides the answer. Undefined for a page when our base URL cannot be told.
 */
function answerName(variant: PlainTarget & Partial<Pick<Variant, 'negotiation' | 'baseUrl'>>, kind: AnswerKind): string | undefined {
  const { handle, negotiation = '', baseUrl } = variant
  switch (kind) {
    case 'api':
      return `a\u0000${handle}`
    case 'redirect':
    case 'negotiated-redirect':
      return `r\u0000${handle}\u0000${negotiation}`
    case 'values':
      return baseUrl === undefined ? undefined : `v\u0000${handle}\u0000${negotiation}\u0000${baseUrl}`
    case 'not-found':
      return baseUrl === undefined ? undefined : `n\u0000${handle}\u0000${baseUrl}`
  }
}

/** Which copy redirect a handle's prefix and a negotiation share; a prefix's case does not matter. */
function copyRedirectKey(handle: string, negotiation: string): string {
  return `${cacheKey(prefixOf(handle))}\u0000${negotiation}`
}

/** The parts of a copy's work's redirect to `location`: the route's, through the same function (redirect-parts.ts). */
function copyRedirectParts(redirect: CopyRedirect, location: string): AnswerParts {
  return redirectParts({ status: redirect.status, location, vary: redirect.vary, linkHeaders: [], extraHeaders: [], headLines: [] })
}

function sameParts(a: AnswerParts, b: AnswerParts): boolean {
  return a.status === b.status && a.body === b.body && JSON.stringify(a.headers) === JSON.stringify(b.headers)
}

/** The parts, ready for every later request of its variant: X-Cache (HIT), CORS and the length included. */
function prepareAnswer(parts: AnswerParts, validUntil: number, expires: ExpiryRule | undefined): PreparedAnswer {
  // Its own memory, not a slice of Node's shared 8 KiB buffer pool, which one kept slice would pin whole.
  const body = Buffer.allocUnsafeSlow(Buffer.byteLength(parts.body))
  body.write(parts.body)
  const named = { ...parts.headers, ...CORS_HEADERS, 'x-cache': 'HIT', 'content-length': String(body.length) }
  const headers = headerList(parts.headers, 'HIT', body.length)
  if (expires !== undefined) headers.push('expires', '')
  return { status: parts.status, headers, body, validUntil, expires, expiresSecond: -1, bytes: preparedBytes(parts.status, named, body) }
}

/**
 * An answer's headers as writeHead takes them, name and value in turn: its own, then CORS, X-Cache and
 * Content-Length. Built in a loop: spreading them into one object and flattening its entries cost some
 * 12 µs an answer, more than all the rest of a copy redirect at the door.
 */
function headerList(own: Record<string, string | string[]>, cache: CacheStatus, length: number): Array<string | string[]> {
  const list: Array<string | string[]> = []
  for (const name in own) list.push(name, own[name]!)
  list.push(...CORS_LIST, 'x-cache', cache, 'content-length', String(length))
  return list
}

/** Send the parts through Fastify (the first request of a variant, and every request that is not prepared). */
export function sendParts(reply: FastifyReply, parts: AnswerParts, cache: CacheStatus, expires: number | undefined): FastifyReply {
  reply.code(parts.status).headers(parts.headers).header('x-cache', cache)
  if (expires !== undefined) reply.header('expires', httpDate(expires))
  return reply.send(parts.body)
}

/** Write a prepared answer on the raw response. HEAD gets the same headers and no body. */
function writePrepared(res: ServerResponse, answer: PreparedAnswer, head: boolean, now: number): void {
  const { headers } = answer
  if (answer.expires !== undefined) {
    // Formatted once per answer and second (the answers of different records have different dates).
    const second = Math.floor(expiresFrom(answer.expires, now) / 1000)
    if (second !== answer.expiresSecond) {
      answer.expiresSecond = second
      headers[headers.length - 1] = new Date(second * 1000).toUTCString()
    }
  }
  res.writeHead(answer.status, headers)
  if (head) res.end()
  else res.end(answer.body)
}

// Most answers in one second share their Expires: format it once per second and time.
let lastMs = -1
let lastDate = ''
/** An HTTP date; a whole second as the header says, formatted once while it does not change. */
export function httpDate(ms: number): string {
  const second = Math.floor(ms / 1000) * 1000
  if (second !== lastMs) {
    lastMs = second
    lastDate = new Date(second).toUTCString()
  }
  return lastDate
}
