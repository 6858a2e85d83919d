/**
 * Negotiated requests answered with metadata instead of a redirect (docs/metadata.md). The proxy route
 * hands every redirect whose chosen location answers content negotiation here first:
 * 1. metadata stored in the local record answers, in any mode (offline included); so does the registry
 *    copy's (CSL-JSON, and what its formatter renders from it) when the copy answered the record (X-Cache: COPY);
 * 2. with METADATA_MODE=fetch (and not offline), the metadata is fetched from the chosen location when it
 *    is on the allow-list, through the cache, the admission gate, the agency's fair queue and the deadline;
 *    the reader's Accept is passed on whole (style=, locale= included), and when the agency has nothing for
 *    it, its other acceptable types are asked one by one, in q order (datacite/datacite#2448);
 * 3. otherwise nothing is answered here, and the route sends the redirect, as doi.org does.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { cacheKey, encodeHandlePath } from '../handle/name.js'
import { allowedMetadataUrl } from '../handle/metadata-hosts.js'
import { acceptCacheKey, chooseStoredType, fallbackTypes, recordedType } from '../handle/metadata-types.js'
import type { Recorder } from '../resolve/recording/recorder.js'
import type { StoredMetadata } from '../resolve/local-store/metadata.js'
import type { MetadataAnswer, MetadataCacheStatus, MetadataService } from '../resolve/metadata/agencies.js'
import type { Admit } from '../resolve/upstream/fetcher.js'
import type { Admission } from './admission.js'
import type { CopyMetadata, CopyMetadataBody } from '../resolve/copy/metadata.js'
import { CitationBusy, CitationError } from '../resolve/copy/citations.js'
import { RefusedError } from './errors.js'

/** The redirect the proxy decided: only what a metadata answer needs. */
export interface NegotiatedRedirect {
  handle: string
  location: string
  negotiated: boolean
  /** The location carries the reader's urlappend. */
  appended: boolean
  expires: number
  /** Where the record came from (the proxy's X-Cache): COPY lets the registry copy's metadata answer. */
  cache?: string | undefined
}

/** What the request already passed, when the record had to be fetched (one gate and one deadline per request). */
/** The request's admission gate (Admission.gate): a record fetched for this request already passed it. */
export interface Admitted {
  admit?: Admit | undefined
}

export interface MetadataAnswers {
  /** The answer, now or later; undefined (now or later) when the route should send its redirect. */
  answer(
    request: FastifyRequest,
    reply: FastifyReply,
    outcome: NegotiatedRedirect,
    admitted: Admitted
  ): FastifyReply | Promise<FastifyReply | undefined> | undefined
  /**
   * METADATA_MODE=fetch (and not offline): whether a negotiated request gets metadata or the redirect then
   * depends on its Accept header as a whole (its length, its parameters), which no variant key holds, so the
   * proxy route keeps no prepared redirect for a negotiated request.
   */
  fetching: boolean
  /** A purge: drop every metadata answer held for this handle (folded, `cacheKey`); true when one was held. */
  forget(handleKey: string): boolean
}

export interface MetadataAnswersOptions {
  /** The agencies' cache and queues in front of the fetcher (src/services/metadata.ts); undefined: nothing is fetched. */
  service: Pick<MetadataService, 'peek' | 'get' | 'forget'> | undefined
  /** METADATA_HOSTS' entries (src/handle/metadata-hosts.ts): only a location on them is fetched. */
  hosts: readonly string[]
  admission: Pick<Admission, 'gate'>
  /** The local store's stored metadata, when there is a store. */
  stored?: ((handle: string) => StoredMetadata | undefined) | undefined
  /** The registry copy's metadata (REGISTRY_COPY, issue 43); `offline`: a type it does not offer is a 406, not a redirect. */
  copy?: { metadata: CopyMetadata; offline: boolean } | undefined
  now: () => number
  /** RECORD_TO: every metadata answer fetched is recorded (src/resolve/recording/recorder.ts). */
  recorder?: Pick<Recorder, 'recordMetadata'> | undefined
}

// The Accept header we pass on: visible ASCII, bounded (a longer one is answered with the redirect).
const SAFE_ACCEPT = /^[\x20-\x7e]{1,1024}$/
const SAFE_HEADER_VALUE = /^[\x20-\x7e]*$/
// Third-party content under our origin: never run as a page, never sniffed into one.
const CONTENT_SECURITY_POLICY = "default-src 'none'; sandbox"

export function createMetadataAnswers(opts: MetadataAnswersOptions): MetadataAnswers {
  const { service, hosts, admission, now } = opts

  function answer(
    request: FastifyRequest,
    reply: FastifyReply,
    outcome: NegotiatedRedirect,
    admitted: Admitted
  ): FastifyReply | Promise<FastifyReply | undefined> | undefined {
    // A location the reader extended with urlappend is redirected to, never fetched: otherwise a reader
    // could make us fetch any path and query on an allow-listed agency host ('/../../anything?x').
    if (!outcome.negotiated || outcome.appended) return undefined
    const accept = request.headers.accept
    const stored = opts.stored?.(outcome.handle)
    if (stored !== undefined) {
      const type = chooseStoredType(accept, [...stored.keys()])
      if (type !== undefined) {
        const entry = stored.get(type)!
        return send(reply, outcome, 'HIT', { status: 200, contentType: entry.contentType, body: entry.body, expires: outcome.expires }, now)
      }
      // Nothing stored fits and nothing will be fetched: what an agency answers for a type it lacks.
      if (service === undefined) return sendNotAcceptable(reply, outcome, [...stored.keys()], now)
    }
    if (opts.copy !== undefined && outcome.cache === 'COPY') {
      const held = opts.copy.metadata.answer(outcome.handle, accept)
      if (held.kind === 'answer') {
        return sendCopy(reply, outcome, held.answer, { offline: opts.copy.offline, held: opts.copy.metadata.held }, now)
      }
      // Offline nothing else can answer (plan-43 §1.10); online the agency does, as without a copy.
      if (held.kind === 'not-acceptable' && opts.copy.offline) return sendNotAcceptable(reply, outcome, held.offered, now, 'COPY')
    }
    if (service === undefined || accept === undefined || !SAFE_ACCEPT.test(accept)) return undefined
    const url = allowedMetadataUrl(outcome.location, hosts)
    if (typeof url === 'string') return undefined
    const acceptKey = acceptCacheKey(accept)
    if (acceptKey === undefined) return undefined
    // DOI names are case-insensitive (ASCII, behaviour.md §2.8) and the location carries the handle as the
    // reader typed it ({hdl}): the location is folded as the handle is, so 10.1/AB and 10.1/ab share one entry.
    // Both come from the one record, so nothing else about the location can differ by case but the handle.
    const keyOf = (k: string): string => `${cacheKey(outcome.handle)}\u0000${cacheKey(url.href)}\u0000${k}`
    // The whole Accept first, then its other types one by one if the agency has nothing for it (fallbackTypes).
    const tries = [{ key: keyOf(acceptKey), url, accept }, ...fallbackTypes(accept).map((t) => ({ key: keyOf(t), url, accept: t }))]
    // What is held answers at once (the hot path; only-if-cached too): the first useful answer, or the first.
    for (let i = 0; i < tries.length; i++) {
      const fresh = service.peek(tries[i]!.key)
      if (fresh === undefined) return fetchAndSend(request, reply, outcome, admitted, tries)
      if (answered(fresh) || i === tries.length - 1) {
        return sendAnswer(reply, outcome, answered(fresh) ? fresh : (service.peek(tries[0]!.key) ?? fresh), 'HIT', now)
      }
    }
    return undefined
  }

  async function fetchAndSend(
    request: FastifyRequest,
    reply: FastifyReply,
    outcome: NegotiatedRedirect,
    admitted: Admitted,
    tries: ReadonlyArray<{ key: string; url: URL; accept: string }>
  ): Promise<FastifyReply> {
    // Upstream-bound work passes the one gate (behaviour.md §9), once per request.
    const { client: ticket, deadline } = await (admitted.admit ?? admission.gate(request, reply, false))()
    let first: Awaited<ReturnType<MetadataService['get']>> | undefined
    for (const q of tries) {
      const got = await service!.get({ ...q, ticket, deadline })
      if (got.cache === 'MISS' && got.answer.status === 200 && answered(got.answer)) record(outcome.handle, q.accept, got.answer)
      if (answered(got.answer)) return sendAnswer(reply, outcome, got.answer, got.cache, now)
      first ??= got
    }
    return sendAnswer(reply, outcome, first!.answer, first!.cache, now)
  }

  function record(handle: string, accept: string, a: MetadataAnswer): void {
    const type = opts.recorder === undefined ? undefined : recordedType(accept, a.contentType)
    if (type !== undefined && a.contentType !== undefined) {
      opts.recorder!.recordMetadata(handle, type, { contentType: a.contentType, body: a.body.toString('utf8') })
    }
  }

  return {
    answer,
    // The copy's answer too depends on the Accept header as a whole (its parameters: a style).
    fetching: service !== undefined || opts.copy !== undefined,
    forget: (handleKey) => service?.forget(handleKey) ?? false
  }
}

function sendAnswer(
  reply: FastifyReply,
  outcome: NegotiatedRedirect,
  a: MetadataAnswer,
  cache: MetadataCacheStatus,
  now: () => number
): FastifyReply {
  if (a.status >= 200 && a.status < 300) {
    return send(reply, outcome, cache, { status: a.status, contentType: a.contentType, body: a.body, expires: a.freshUntil }, now)
  }
  // A 4xx about this DOI or type (404, 406…): the agency's status, in our own words (its page is not ours to serve).
  const message =
    a.status === 406
      ? 'The registration agency has no metadata of the type asked for (Accept) for this DOI.\n'
      : a.status === 404
        ? 'The registration agency has no metadata for this DOI.\n'
        : `The registration agency refused this metadata request (HTTP ${a.status}).\n`
  const page = { status: a.status, contentType: 'text/plain; charset=utf-8', body: message, expires: a.freshUntil }
  return send(reply, outcome, cache, page, now)
}

function sendNotAcceptable(
  reply: FastifyReply,
  outcome: NegotiatedRedirect,
  types: readonly string[],
  now: () => number,
  cache: AnswerCacheStatus = 'HIT'
): FastifyReply {
  const body = `No metadata of the type asked for (Accept) is held for this DOI. Held: ${types.join(', ')}\n`
  return send(reply, outcome, cache, { status: 406, contentType: 'text/plain; charset=utf-8', body, expires: outcome.expires }, now)
}

/**
 * The registry copy's metadata: CSL-JSON at once, a formatted citation when its formatter is done. When
 * the formatter cannot: its queue full, 503 with Retry-After; too slow or closing, 503; a style or locale
 * it does not hold, offline 406 naming what it holds, online the redirect (the agency formats it).
 */
function sendCopy(
  reply: FastifyReply,
  outcome: NegotiatedRedirect,
  answer: CopyMetadataBody | Promise<CopyMetadataBody>,
  copy: { offline: boolean; held: readonly string[] },
  now: () => number
): FastifyReply | Promise<FastifyReply | undefined> {
  const sendBody = (a: CopyMetadataBody): FastifyReply =>
    send(reply, outcome, 'COPY', { status: 200, contentType: a.contentType, body: a.body, expires: outcome.expires }, now)
  if (!(answer instanceof Promise)) return sendBody(answer)
  return answer.then(sendBody, (err: unknown) => {
    if (!(err instanceof CitationError)) throw err
    if (err.kind === 'unknown') return copy.offline ? sendNotAcceptable(reply, outcome, copy.held, now, 'COPY') : undefined
    if (err instanceof CitationBusy) {
      throw new RefusedError(503, 'DP_CITATIONS_BUSY', err.message, err.retryAfterSeconds * 1000)
    }
    if (err.kind === 'timeout' || err.kind === 'closed') throw new RefusedError(503, 'DP_CITATIONS_UNAVAILABLE', err.message)
    throw err
  })
}

/** The X-Cache of a metadata answer: the agencies' cache's, or COPY for the registry copy's. */
type AnswerCacheStatus = MetadataCacheStatus | 'COPY'

/** The answer's status, headers (Expires never in the past, by `now`) and body. */
function send(
  reply: FastifyReply,
  outcome: NegotiatedRedirect,
  cache: AnswerCacheStatus,
  a: { status: number; contentType: string | undefined; body: string | Buffer; expires: number },
  now: () => number
): FastifyReply {
  reply
    .code(a.status)
    .header('vary', 'Accept')
    .header('x-cache', cache)
    .header('expires', new Date(Math.max(a.expires, now())).toUTCString())
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
  const link = citeAs(outcome.handle)
  if (link !== undefined) reply.header('link', link)
  if (a.contentType !== undefined && SAFE_HEADER_VALUE.test(a.contentType)) reply.header('content-type', a.contentType)
  else reply.header('content-type', 'application/octet-stream')
  return a.status === 204 ? reply.send() : reply.send(a.body)
}

/** An answer with the metadata in it; 406, 204 and an empty body are nothing (datacite/datacite#2448), so the next type is asked. */
function answered(a: MetadataAnswer): boolean {
  return !(a.status === 406 || a.status === 204 || (a.status >= 200 && a.status < 300 && a.body.length === 0))
}

/**
 * `Link: <https://doi.org/DOI>; rel="cite-as"` (RFC 8574): the DOI's persistent, canonical URL, not ours,
 * which is one resolver among many (docs/metadata.md). A handle that is not a DOI cites hdl.handle.net.
 */
export function citeAs(handle: string): string | undefined {
  const base = /^10\./.test(handle) ? 'https://doi.org/' : 'https://hdl.handle.net/'
  const link = `<${base}${encodeHandlePath(handle)}>; rel="cite-as"`
  return SAFE_HEADER_VALUE.test(link) && !/[<>]/.test(link.slice(1, -16)) ? link : undefined
}
