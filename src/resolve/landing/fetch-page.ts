import type { Dispatcher } from 'undici'
import type { FailureReason } from '../../handle/landing/verdict.js'
import { REFUSED_ADDRESS } from './address-guard.js'

/**
 * One hop of a landing check: a GET with the crawler's User-Agent, never a cookie (none is kept, none
 * sent), no redirect followed (the prober follows them, each through the guard), one time limit for the
 * whole answer (connect, headers and body: a page that drips a byte a second ends at it), and at most
 * `maxBytes` read into `onText` before the body is destroyed. The page is asked uncompressed, so the
 * bytes read are the bytes received.
 */
export interface HopContext {
  dispatcher: Dispatcher
  userAgent: string
  timeoutMs: number
  maxBytes: number
  /** The caller leaving: its reason is thrown (not a verdict). */
  signal?: AbortSignal | undefined
  /** Called once the request is written on its socket (the host's slot counts its gap from then). */
  onSent?: (() => void) | undefined
}

export type HopAnswer =
  | {
      kind: 'answer'
      status: number
      headers: Record<string, string | string[] | undefined>
      /** The body's first characters (a challenge page's markers are there). */
      head: string
      /** Bytes of the body read. */
      bytes: number
    }
  | { kind: 'failed'; reason: FailureReason; detail: string; retryable: boolean }

/** The body's characters kept for challengeOf. */
const HEAD_CHARS = 16 * 1024
/** Of an answer that is not a page (an error, a challenge), only this much is read. */
const NOT_A_PAGE_BYTES = 64 * 1024
const REDIRECTS = new Set([301, 302, 303, 307, 308])

export async function fetchPage(url: URL, ctx: HopContext, onText: (text: string) => void): Promise<HopAnswer> {
  const timeout = AbortSignal.timeout(ctx.timeoutMs)
  const signal = ctx.signal === undefined ? timeout : AbortSignal.any([ctx.signal, timeout])
  try {
    const dispatcher = ctx.onSent === undefined ? ctx.dispatcher : ctx.dispatcher.compose(whenSent(ctx.onSent))
    const res = await dispatcher.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: 'GET',
      headers: {
        'user-agent': ctx.userAgent,
        accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.5',
        'accept-encoding': 'identity'
      },
      signal
    })
    const status = res.statusCode
    const headers = res.headers as Record<string, string | string[] | undefined>
    let head = ''
    let bytes = 0
    try {
      if (!REDIRECTS.has(status)) {
        const limit = status >= 200 && status < 300 ? ctx.maxBytes : Math.min(ctx.maxBytes, NOT_A_PAGE_BYTES)
        const decoder = new TextDecoder('utf-8')
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          const taken = chunk.subarray(0, limit - bytes)
          bytes += taken.length
          const text = decoder.decode(taken, { stream: true })
          if (head.length < HEAD_CHARS) head += text.slice(0, HEAD_CHARS - head.length)
          onText(text)
          if (bytes >= limit) break
        }
      }
    } finally {
      // The rest is never fetched; destroying a body not read to its end emits an abort nobody needs.
      res.body.on('error', () => {})
      res.body.destroy()
    }
    return { kind: 'answer', status, headers, head, bytes }
  } catch (err) {
    if (ctx.signal?.aborted === true) throw ctx.signal.reason
    if (timeout.aborted) return { kind: 'failed', reason: 'timeout', detail: `no whole answer in ${ctx.timeoutMs} ms`, retryable: true }
    return failureOf(err, url)
  }
}

/**
 * An interceptor telling `onSent` once the request is written: undici starts a request's handler
 * (onRequestStart) on its socket, after any lookup and connection, and then writes the headers in the same
 * turn; `onSent` runs when that turn ends (process.nextTick), so after the write even when a pause (a GC)
 * comes between the two: the next start is never counted from a moment before this one's.
 */
function whenSent(onSent: () => void): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (options, handler) =>
    dispatch(options, {
      onRequestStart: (controller, context) => {
        process.nextTick(onSent)
        handler.onRequestStart?.(controller, context)
      },
      onRequestUpgrade: (controller, status, headers, socket) => handler.onRequestUpgrade?.(controller, status, headers, socket),
      onResponseStart: (controller, status, headers, message) => handler.onResponseStart?.(controller, status, headers, message),
      onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
      onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
      onResponseError: (controller, error) => handler.onResponseError?.(controller, error)
    })
}

const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/

/** Why a hop got no answer, as the verdict's evidence says it; whether another try may help. */
export function failureOf(err: unknown, url: URL): Extract<HopAnswer, { kind: 'failed' }> {
  const e = err as { code?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } } | null
  const code = String(e?.code ?? e?.cause?.code ?? '')
  const message = String(e?.message ?? e?.cause?.message ?? err).slice(0, 300)
  const host = url.hostname
  if (code === REFUSED_ADDRESS) return { kind: 'failed', reason: 'refused-address', detail: message, retryable: false }
  if (code === 'ENOTFOUND' || code === 'ENODATA') {
    return { kind: 'failed', reason: 'dns', detail: `${host} does not resolve (${code})`, retryable: false }
  }
  // SERVFAIL and the like: the name's servers may answer next time.
  if (code === 'EAI_AGAIN' || code === 'ESERVFAIL' || code === 'ETIMEOUT') {
    return { kind: 'failed', reason: 'dns', detail: `${host} could not be resolved now (${code})`, retryable: true }
  }
  if (TLS_CODES.test(code) || /certificate|SSL routines|TLS/i.test(message)) {
    return { kind: 'failed', reason: 'tls', detail: message, retryable: false }
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return { kind: 'failed', reason: 'timeout', detail: `no answer in time (${code})`, retryable: true }
  }
  if (code === 'ECONNREFUSED') {
    return { kind: 'failed', reason: 'connection', detail: `${url.host} refused the connection (ECONNREFUSED)`, retryable: false }
  }
  const reset = code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED'
  return { kind: 'failed', reason: 'connection', detail: `${message}${code === '' ? '' : ` (${code})`}`, retryable: reset }
}
