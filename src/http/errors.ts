import type { FastifyReply, FastifyRequest } from 'fastify'
import { UpstreamError, isNotHeld } from '../resolve/upstream/errors.js'
import { createLogThrottle } from '../observe/log-throttle.js'
import { renderErrorPage } from './views/pages.js'
import type { PageContext } from './views/pages.js'

/** A client mistake we can name, or a request we do not take from this client (403): rendered with its own status and message. */
export class RequestError extends Error {
  override name = 'RequestError'
  constructor(
    readonly statusCode: 400 | 403 | 404 | 405 | 414 | 431,
    message: string,
    readonly handle?: string
  ) {
    super(message)
  }
}

/** A request we refuse to protect the service or other readers (rate limits, load shedding). */
export class RefusedError extends Error {
  override name = 'RefusedError'
  constructor(
    readonly statusCode: 429 | 503,
    readonly code: string,
    message: string,
    readonly retryAfterMs?: number
  ) {
    super(message)
  }
}

const HTML = 'text/html; charset=utf-8'

/**
 * How a route's errors are shown (the one error handler, src/plugins/error-pages.ts, renders them all):
 * an HTML page, the Handle REST API's JSON (behaviour.md R7), or `{"message"}` JSON (Which RA?, the batch API).
 * A route names its own in its options' `config`; without one, /api/ paths get the REST API's and the rest HTML.
 */
export type ErrorFormat = 'html' | 'handle-api' | 'message'

declare module 'fastify' {
  interface FastifyContextConfig {
    errorFormat?: ErrorFormat
    /** What a body over the route's bodyLimit is told instead of Fastify's bare "Request body is too large": the setting and what to do. */
    bodyTooLarge?: { message: string; limit: string }
  }
}

/** The error as the route names it: Fastify's body over the limit becomes the route's LimitError, when it gives one. */
export function namedByRoute(request: FastifyRequest, err: unknown): unknown {
  const named = request.routeOptions.config.bodyTooLarge
  if (named === undefined || (err as { code?: unknown } | undefined)?.code !== 'FST_ERR_CTP_BODY_TOO_LARGE') return err
  return new LimitError(413, named.message, named.limit)
}

/** What a request's errors are about: the handle (shown on its page and in its REST API error), and a format of its own. */
interface ErrorSubject {
  handle?: string
  format?: ErrorFormat
}
const subjects = new WeakMap<FastifyRequest, ErrorSubject>()

/** Say what a request's errors are about, once known; `format` overrides the route's (`?action=api` on a page route). */
export function errorsAbout(request: FastifyRequest, subject: ErrorSubject): void {
  subjects.set(request, { ...subjects.get(request), ...subject })
}

/** The handle set by errorsAbout, or the one a RequestError names. */
export function handleOfError(request: FastifyRequest, err: unknown): string | undefined {
  return subjects.get(request)?.handle ?? (err instanceof RequestError ? err.handle : undefined)
}

/** The format set by errorsAbout for this request, if any. */
export function errorFormatOf(request: FastifyRequest): ErrorFormat | undefined {
  return subjects.get(request)?.format
}

/** A limit a request went over: a 413 (or 400) that names its setting (the batch API). */
export class LimitError extends Error {
  override name = 'LimitError'
  constructor(
    readonly statusCode: 400 | 413,
    message: string,
    readonly limit?: string
  ) {
    super(message)
  }
}

/** The status and message a user sees for an error; never a stack trace. */
export function describeError(err: unknown): { status: number; code: string; message: string } {
  if (err instanceof UpstreamError || err instanceof RefusedError) return { status: err.statusCode, code: err.code, message: err.message }
  if (err instanceof RequestError || err instanceof LimitError) {
    return { status: err.statusCode, code: err.statusCode === 403 ? 'DP_FORBIDDEN' : 'DP_BAD_REQUEST', message: err.message }
  }
  const e = err as { statusCode?: unknown; code?: unknown; message?: unknown }
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return {
      status: e.statusCode,
      code: typeof e.code === 'string' ? e.code : 'DP_BAD_REQUEST',
      message: String(e.message ?? 'Bad request')
    }
  }
  if (typeof e?.statusCode === 'number' && e.statusCode === 503) {
    return {
      status: 503,
      code: typeof e.code === 'string' ? e.code : 'DP_UNAVAILABLE',
      message: 'The service is busy or shutting down; try again shortly.'
    }
  }
  return { status: 500, code: 'DP_INTERNAL', message: 'Something went wrong on our side. The error was logged.' }
}

/** Seconds to wait before asking again, for an error that tells the client when to come back. */
export function retryAfterSeconds(err: unknown): number | undefined {
  const ms = err instanceof UpstreamError || err instanceof RefusedError ? err.retryAfterMs : undefined
  return ms !== undefined && (err as { statusCode: number }).statusCode !== 502 ? Math.max(1, Math.ceil(ms / 1000)) : undefined
}

/** Retry-After for an error that tells the client when to come back. */
export function setRetryAfter(reply: FastifyReply, err: unknown): void {
  const seconds = retryAfterSeconds(err)
  if (seconds !== undefined) reply.header('retry-after', String(seconds))
}

/** Send an HTML error page. */
export function sendHtmlError(reply: FastifyReply, ctx: PageContext, err: unknown, handle?: string): FastifyReply {
  const { status, message } = describeError(err)
  const shownHandle = handle ?? (err instanceof RequestError ? err.handle : undefined)
  setRetryAfter(reply, err)
  return reply
    .code(status)
    .type(HTML)
    .send(renderErrorPage(ctx, { status, message, handle: shownHandle }))
}

/**
 * Log with request context. Client mistakes and refusals are not worth more than an info line; an
 * upstream failure is expected while it lasts, so it is a warning without a stack, one line a second
 * per code; anything else is a fault of ours and always logged with its stack.
 */
export function logError(request: FastifyRequest, err: unknown): void {
  const { status, code } = describeError(err)
  if (err instanceof UpstreamError) {
    // only-if-cached asked us not to look up: a 504 then is the answer asked for, not a failure.
    if (status >= 500 && !isNotHeld(err)) {
      throttleOf(request)(code, (suppressed) =>
        request.log.warn({ code, upstreamStatus: err.upstreamStatus, reason: err.reason, suppressed }, 'upstream lookup failed')
      )
    } else {
      request.log.info({ code, status, upstreamStatus: err.upstreamStatus }, 'request refused')
    }
  } else if (status < 500 || err instanceof RefusedError) {
    request.log.info({ code, status }, 'request refused')
  } else {
    request.log.error({ err, code }, 'request failed')
  }
}

// One throttle per app (not per module), so two instances in one process do not silence each other.
const throttles = new WeakMap<object, ReturnType<typeof createLogThrottle>>()
function throttleOf(request: FastifyRequest): ReturnType<typeof createLogThrottle> {
  let throttle = throttles.get(request.server)
  if (throttle === undefined) throttles.set(request.server, (throttle = createLogThrottle(1000)))
  return throttle
}
