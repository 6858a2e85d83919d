/**
 * HTTP answers worked out once and kept with a record's cache entry (src/resolve/prepared.ts): the
 * variant keys that say which request gets which answer, the rendering both paths share, and the
 * two ways to send one (Fastify's reply on the way in, the raw response on the hot path).
 */
import type { ServerResponse } from 'node:http'
import type { FastifyReply } from 'fastify'
import type { ExpiryRule } from '../handle/record.js'
import { expiresFrom } from '../handle/record.js'
import type { CachedAnswer } from '../resolve/cache.js'
import type { PreparedAnswer } from '../resolve/prepared.js'
import { addAnswer, preparedBytes } from '../resolve/prepared.js'
import type { CacheStatus, Resolver } from '../resolve/resolver.js'

// Headers a browser-based tool may read from our answers (behaviour.md §7).
export const EXPOSED_HEADERS = ['Location', 'Vary', 'Link', 'X-Cache', 'Expires']
/** The CORS headers of every simple request's answer: the same everywhere, so written once here. */
export const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': EXPOSED_HEADERS.join(', ')
} as const

// Which request gets which prepared answer. A request with a query string never does.
/** `/{handle}` answered with a redirect: the handle as written and the negotiation (negotiate.ts) decide it. */
export function redirectVariant (handle: string, negotiationKey: string): string {
  return `r\u0000${handle}\u0000${negotiationKey}`
}
/** `/{handle}` answered with the not-found page, whose links use the base URL. */
export function notFoundVariant (handle: string, baseUrl: string): string {
  return `n\u0000${handle}\u0000${baseUrl}`
}
/** `/{handle}` answered with the values page (nothing to redirect to): negotiation and base URL decide it. */
export function valuesVariant (handle: string, negotiationKey: string, baseUrl: string): string {
  return `v\u0000${handle}\u0000${negotiationKey}\u0000${baseUrl}`
}
/** `/api/handles/{handle}`. */
export function apiVariant (handle: string): string {
  return `a\u0000${handle}`
}

/** An answer's parts as the routes render them; Expires and X-Cache are added when it is sent. */
export interface AnswerParts {
  status: number
  headers: Record<string, string | string[]>
  body: string
}

/** The parts, ready for every later request of its variant: X-Cache HIT, CORS and the length included. */
export function prepareAnswer (parts: AnswerParts, validUntil: number, expires: ExpiryRule | undefined): PreparedAnswer {
  // Its own memory, not a slice of Node's shared 8 KiB buffer pool, which one kept slice would pin whole.
  const body = Buffer.allocUnsafeSlow(Buffer.byteLength(parts.body))
  body.write(parts.body)
  const headers = { ...parts.headers, ...CORS_HEADERS, 'x-cache': 'HIT', 'content-length': String(body.length) }
  return { status: parts.status, headers, body, validUntil, expires, expiresSecond: -1, bytes: preparedBytes(parts.status, headers, body) }
}

/**
 * Keep the answer of a variant with its record's cache entry, unless an answer that holds as long is
 * kept already (several requests on the route at once): rendered into a prepared answer only then.
 */
export function keepAnswer (resolver: Pick<Resolver, 'attach'>, handle: string, reuse: { entry: CachedAnswer, validUntil: number, expires?: ExpiryRule | undefined }, variant: string, parts: AnswerParts): void {
  const kept = reuse.entry.work?.answers.get(variant)
  if (kept !== undefined && kept.validUntil >= reuse.validUntil) return
  const answer = prepareAnswer(parts, reuse.validUntil, reuse.expires)
  resolver.attach(handle, reuse.entry, (work) => addAnswer(work, variant, answer))
}

/** Send the parts through Fastify (the first request of a variant, and every request that is not prepared). */
export function sendParts (reply: FastifyReply, parts: AnswerParts, cache: CacheStatus, expires: number | undefined): FastifyReply {
  reply.code(parts.status).headers(parts.headers).header('x-cache', cache)
  if (expires !== undefined) reply.header('expires', httpDate(expires))
  return reply.send(parts.body)
}

/** Write a prepared answer on the raw response: the hot path. HEAD gets the same headers and no body. */
export function writePrepared (res: ServerResponse, answer: PreparedAnswer, head: boolean, now: number): void {
  const { headers } = answer
  if (answer.expires !== undefined) {
    // Formatted once per answer and second (the answers of different records have different dates).
    const second = Math.floor(expiresFrom(answer.expires, now) / 1000)
    if (second !== answer.expiresSecond) {
      answer.expiresSecond = second
      headers.expires = new Date(second * 1000).toUTCString()
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
export function httpDate (ms: number): string {
  const second = Math.floor(ms / 1000) * 1000
  if (second !== lastMs) {
    lastMs = second
    lastDate = new Date(second).toUTCString()
  }
  return lastDate
}
