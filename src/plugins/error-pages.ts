/** What no route answers: 405 for methods other than GET, HEAD and POST, and the page (or API JSON) for an error thrown anywhere. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { baseUrlFor } from '../http/base-url.js'
import { describeError, logError, sendHtmlError, setRetryAfter } from '../http/errors.js'
import { sendApiError } from '../http/routes/api.js'
import { ALLOWED_METHODS, methodNotAllowedMessage } from '../http/server-edge.js'
import { renderErrorPage } from '../http/views/pages.js'
import type { AppContext } from '../services.js'

async function errorPages (app: FastifyInstance, { config, services }: AppContext): Promise<void> {
  const { fallbackHost } = services
  app.setNotFoundHandler(async (request, reply) => {
    // Every GET, HEAD and POST path is a handle; only other methods end up here.
    reply.header('allow', ALLOWED_METHODS)
    const message = methodNotAllowedMessage(request.method)
    if (isApiPath(request)) return sendApiError(reply, 405, message)
    const ctx = { baseUrl: baseUrlFor(request, config.publicBaseUrl, fallbackHost) }
    return reply.code(405).type('text/html; charset=utf-8').send(renderErrorPage(ctx, { status: 405, message }))
  })
  app.setErrorHandler(async (err, request, reply) => {
    logError(request, err)
    if (isApiPath(request)) {
      const { status, message } = describeError(err)
      setRetryAfter(reply, err)
      return sendApiError(reply, status, message)
    }
    const ctx = { baseUrl: baseUrlFor(request, config.publicBaseUrl, fallbackHost) }
    return sendHtmlError(reply, ctx, err)
  })
}

function isApiPath (request: FastifyRequest): boolean {
  return /^(?:[a-z][a-z0-9+.-]*:\/\/[^/]*)?\/api\//i.test(request.raw.url ?? '')
}

// Not encapsulated: both handlers are the root's, for every route. A route takes the error handler in
// place when its plugin is registered, so this plugin comes before the routes.
export default fp(errorPages, { name: 'error-pages', fastify: '5.x' })
