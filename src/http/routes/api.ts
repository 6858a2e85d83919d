import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  apiEmptyHandle, apiError, apiHandleFromPath, apiHttpStatus, apiNotFound, apiParamsError, apiSuccess, apiUnknownEndpoint,
  apiValuesNotFound, parseApiQuery, serializeApi
} from '../../handle/api.js'
import type { ApiBody, ApiParams } from '../../handle/api.js'
import { hasControlChar } from '../../handle/name.js'
import { filterValues } from '../../handle/record.js'
import type { Resolver } from '../../resolve/resolver.js'
import { describeError, logError } from '../errors.js'
import { OPENAPI_DOCUMENT } from '../openapi.js'

const API_HANDLES = '/api/handles'
const OPENAPI_JSON = JSON.stringify(OPENAPI_DOCUMENT, null, 2)

export interface ApiRouteOptions {
  resolver: Resolver
  maxHandleLength: number
}

/**
 * The Handle REST API exactly as the reference serves it (reference-proxy.md §7, DECISIONS §7),
 * answered from the same cache as the redirects. Aliases are not followed here.
 */
export function registerApiRoutes (app: FastifyInstance, opts: ApiRouteOptions): void {
  app.get('/api/openapi.json', async (_request, reply) => reply.type('application/json; charset=utf-8').send(OPENAPI_JSON))
  app.get(API_HANDLES, apiHandler(opts))
  app.get(`${API_HANDLES}/*`, apiHandler(opts))
  app.get('/api/*', async (request, reply) => {
    const { path } = splitTarget(request.raw.url ?? '')
    return sendApi(reply, 404, apiUnknownEndpoint(request.method, path), { pretty: false })
  })
}

/** Exported for app.ts, which sends paths the router cannot decode here too. */
export function apiHandler (opts: ApiRouteOptions) {
  return async function handleApiRequest (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const { path, query } = splitTarget(request.raw.url ?? '')
    const params = parseApiQuery(query)
    const format = { pretty: params.pretty, callback: params.callback }
    const paramsError = apiParamsError(params)
    if (paramsError !== undefined) return sendApi(reply, apiHttpStatus(4), paramsError, format)
    const handle = apiHandleFromPath(path.slice(API_HANDLES.length))
    if (handle === undefined) return sendApi(reply, 400, apiError(102, 'The handle is not valid UTF-8 once percent-decoded'), format)
    if (handle === '') return sendApi(reply, 400, apiEmptyHandle(), format)
    if (hasControlChar(handle)) return sendApi(reply, 400, apiError(102, 'The handle contains a control character', handle), format)
    if ([...handle].length > opts.maxHandleLength) return sendApi(reply, 414, apiError(102, `The handle is longer than ${opts.maxHandleLength} characters`), format)
    try {
      const flags = { auth: params.auth, cert: params.cert }
      // A cached record is answered without waiting on a promise.
      const result = opts.resolver.peek(handle, flags) ?? await opts.resolver.lookup(handle, flags)
      reply.header('x-cache', result.cache)
      if (result.kind === 'not-found') return sendApi(reply, 404, apiNotFound(handle), format)
      return sendApi(reply, 200, answerBody(handle, result.values, params), format)
    } catch (err) {
      logError(request, err)
      const { status, message } = describeError(err)
      return sendApi(reply, status, apiError(2, message, handle), format)
    }
  }
}

function answerBody (handle: string, values: Parameters<typeof filterValues>[0], params: ApiParams): ApiBody {
  const filtered = params.types.length > 0 || params.indexes.length > 0
    ? filterValues(values, { types: params.types, indexes: params.indexes })
    : values
  if (filtered.length === 0 && values.length > 0) return apiValuesNotFound(handle)
  return apiSuccess(handle, filtered)
}

function sendApi (reply: FastifyReply, status: number, body: ApiBody, format: { pretty: boolean, callback?: string | undefined }): FastifyReply {
  const { contentType, body: text } = serializeApi(body, format)
  return reply.code(status).type(contentType).header('x-content-type-options', 'nosniff').send(text)
}

function splitTarget (url: string): { path: string, query: string } {
  const q = url.indexOf('?')
  return q < 0 ? { path: url, query: '' } : { path: url.slice(0, q), query: url.slice(q + 1) }
}
