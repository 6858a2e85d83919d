/**
 * The one error handler: every error thrown by a route, a hook or a body parser is rendered here, as
 * the route's `config.errorFormat` says (src/http/errors.ts): an HTML page, the REST API's JSON, or
 * `{"message"}` JSON. And 405 for methods other than GET, HEAD and POST, which no route answers.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { apiError, parseApiQuery, serializeApi } from '../handle/api.js'
import { splitRequestTarget } from '../handle/name.js'
import { baseUrlFor } from '../http/base-url.js'
import {
  LimitError,
  describeError,
  errorFormatOf,
  handleOfError,
  logError,
  namedByRoute,
  sendHtmlError,
  setRetryAfter
} from '../http/errors.js'
import type { ErrorFormat } from '../http/errors.js'
import { ALLOWED_METHODS, methodNotAllowedMessage } from '../http/server-edge.js'
import { renderErrorPage } from '../http/views/pages.js'
import type { AppContext } from '../services.js'

const HTML = 'text/html; charset=utf-8'
const JSON_TYPE = 'application/json; charset=utf-8'

async function errorPages(app: FastifyInstance, { config, services }: AppContext): Promise<void> {
  const { fallbackHost } = services
  const pageContext = (request: FastifyRequest): { baseUrl: string } => ({
    baseUrl: baseUrlFor(request, config.publicBaseUrl, fallbackHost)
  })

  app.setNotFoundHandler(async (request, reply) => {
    // Every GET, HEAD and POST path is a handle; only other methods end up here.
    reply.header('allow', ALLOWED_METHODS)
    const message = methodNotAllowedMessage(request.method)
    if (formatOf(request) === 'handle-api') return sendHandleApiError(reply, 405, message, undefined, request)
    return reply
      .code(405)
      .type(HTML)
      .send(renderErrorPage(pageContext(request), { status: 405, message }))
  })

  app.setErrorHandler(async (thrown, request, reply) => {
    const err = namedByRoute(request, thrown)
    logError(request, err)
    const handle = handleOfError(request, err)
    switch (formatOf(request)) {
      case 'html':
        return sendHtmlError(reply, pageContext(request), err, handle)
      case 'handle-api': {
        const { status, message } = describeError(err)
        setRetryAfter(reply, err)
        return sendHandleApiError(reply, status, message, handle, request)
      }
      case 'message': {
        const { status, message } = describeError(err)
        setRetryAfter(reply, err)
        const limit = err instanceof LimitError ? err.limit : undefined
        return reply
          .code(status)
          .type(JSON_TYPE)
          .header('x-content-type-options', 'nosniff')
          .send(JSON.stringify(limit === undefined ? { message } : { message, limit }))
      }
    }
  })
}

/** The route's error format; a path no route took (a method we do not serve, an undecodable path): by its prefix. */
function formatOf(request: FastifyRequest): ErrorFormat {
  return (
    errorFormatOf(request) ??
    request.routeOptions.config.errorFormat ??
    (/^(?:[a-z][a-z0-9+.-]*:\/\/[^/]*)?\/api\//i.test(request.raw.url ?? '') ? 'handle-api' : 'html')
  )
}

/** The REST API's error JSON (responseCode 2); in the request's own format (pretty, JSONP callback) when a REST API route took it. */
function sendHandleApiError(
  reply: FastifyReply,
  status: number,
  message: string,
  handle: string | undefined,
  request: FastifyRequest
): FastifyReply {
  const routed = errorFormatOf(request) === 'handle-api' || request.routeOptions.config.errorFormat === 'handle-api'
  const params = routed ? parseApiQuery(splitRequestTarget(request.raw.url ?? '').query) : undefined
  const { contentType, body } = serializeApi(apiError(2, message, handle), { pretty: params?.pretty ?? false, callback: params?.callback })
  return reply.code(status).type(contentType).header('x-content-type-options', 'nosniff').send(body)
}

// Not encapsulated: both handlers are the root's, for every route. A route takes the error handler in
// place when its plugin is registered, so this plugin comes before the routes.
export default fp(errorPages, { name: 'error-pages', fastify: '5.x' })
