import type { FastifyReply, FastifyRequest } from 'fastify'
import { UpstreamError } from '../resolve/errors.js'
import { createLogThrottle } from '../log-throttle.js'
import { renderErrorPage } from './views/pages.js'
import type { PageContext } from './views/pages.js'

/** A client mistake we can name: rendered with its own status and message. */
export class RequestError extends Error {
  override name = 'RequestError'
  constructor (readonly statusCode: 400 | 404 | 414 | 431, message: string, readonly handle?: string) {
    super(message)
  }
}

const HTML = 'text/html; charset=utf-8'

/** The status and message a user sees for an error; never a stack trace. */
export function describeError (err: unknown): { status: number, code: string, message: string } {
  if (err instanceof UpstreamError) return { status: err.statusCode, code: err.code, message: err.message }
  if (err instanceof RequestError) return { status: err.statusCode, code: 'DP_BAD_REQUEST', message: err.message }
  const e = err as { statusCode?: unknown, code?: unknown, message?: unknown }
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return { status: e.statusCode, code: typeof e.code === 'string' ? e.code : 'DP_BAD_REQUEST', message: String(e.message ?? 'Bad request') }
  }
  if (typeof e?.statusCode === 'number' && e.statusCode === 503) {
    return { status: 503, code: typeof e.code === 'string' ? e.code : 'DP_UNAVAILABLE', message: 'The service is busy or shutting down; try again shortly.' }
  }
  return { status: 500, code: 'DP_INTERNAL', message: 'Something went wrong on our side. The error was logged.' }
}

/** Send an HTML error page. */
export function sendHtmlError (reply: FastifyReply, ctx: PageContext, err: unknown, handle?: string): FastifyReply {
  const { status, message } = describeError(err)
  const shownHandle = handle ?? (err instanceof RequestError ? err.handle : undefined)
  if (err instanceof UpstreamError && err.statusCode === 503) reply.header('retry-after', '5')
  return reply.code(status).type(HTML).send(renderErrorPage(ctx, { status, message, handle: shownHandle }))
}

/** Log server-side faults with request context; client mistakes are not worth an error line. */
export function logError (request: FastifyRequest, err: unknown): void {
  const { status, code } = describeError(err)
  if (status < 500) request.log.info({ code, status }, 'request refused')
  // An upstream failure repeats on every request while it lasts: one line a second per code.
  else if (err instanceof UpstreamError) throttleUpstream(code, (suppressed) => request.log.error({ err, code, suppressed }, 'request failed'))
  // Anything else is a fault of ours: always logged.
  else request.log.error({ err, code }, 'request failed')
}

const throttleUpstream = createLogThrottle(1000)
