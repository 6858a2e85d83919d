import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  apiHandleOf,
  apiHttpStatus,
  apiNotFound,
  apiNotHeldOffline,
  apiParamsError,
  apiSuccess,
  apiUnknownEndpoint,
  apiValuesNotFound,
  parseApiQuery,
  serializeApi
} from '../../handle/api.js'
import type { ApiBody, ApiParams } from '../../handle/api.js'
import { missStatus } from '../../handle/lookup-params.js'
import { splitRequestTarget } from '../../handle/name.js'
import { filterValues } from '../../handle/record.js'
import type { HandleValue } from '../../handle/types.js'
import type { Metrics } from '../../observe/metrics.js'
import { answeredFrom } from '../../resolve/lookup/proxy-service.js'
import { reusableEntry } from '../../resolve/lookup/resolver.js'
import type { Resolver } from '../../resolve/lookup/resolver.js'
import type { Admission } from '../admission.js'
import { describeError, errorsAbout } from '../errors.js'
import { OPENAPI_JSON } from '../openapi.js'
import { API_HANDLES, sendParts } from '../prepared-answers.js'
import type { PreparedAnswers } from '../prepared-answers.js'
import type { RouteContext } from '../route-context.js'

export interface ApiRouteOptions {
  resolver: Resolver
  admission: Admission
  maxHandleLength: number
  /** Where the answer of a plain request (no query) is kept with the record (src/http/prepared-answers.ts). */
  prepared: PreparedAnswers
  /** OFFLINE=true: a handle not found is one not in the local records (apiNotHeldOffline). */
  offline?: boolean
  /** Each answer counts once, as /status shows it (doi_proxy_answers_total). */
  metrics: Pick<Metrics, 'otherAnswers'>
}

/**
 * The Handle REST API exactly as the reference serves it (behaviour.md R7, §7), answered from the
 * same cache as the redirects. Aliases are not followed here.
 */
/** The settings the REST API reads. */
export type ApiSettings = 'maxHandleLength' | 'offline'

export default async function apiRoutes(app: FastifyInstance, context: RouteContext<ApiSettings>): Promise<void> {
  const opts = apiOptions(context)
  app.get('/api/openapi.json', async (_request, reply) => reply.type('application/json; charset=utf-8').send(OPENAPI_JSON))
  // Errors are rendered by the one error handler, as the REST API's JSON.
  const config = { errorFormat: 'handle-api' } as const
  app.get(API_HANDLES, { config }, apiHandler(opts))
  app.get(`${API_HANDLES}/*`, { config }, apiHandler(opts))
  app.get('/api/*', async (request, reply) => {
    const { path } = splitRequestTarget(request.raw.url ?? '')
    return sendApi(reply, 404, apiUnknownEndpoint(request.method, path), { pretty: false })
  })
}

/** The REST API's options, read from the app's context: for its routes, and app.ts' handler of paths the router cannot decode. */
export function apiOptions({ config, services }: RouteContext<ApiSettings>): ApiRouteOptions {
  const { resolver, admission, prepared, metrics } = services
  return { resolver, admission, maxHandleLength: config.maxHandleLength, prepared, offline: config.offline, metrics }
}

/** Exported for app.ts, which sends paths the router cannot decode here too. */
export function apiHandler(opts: ApiRouteOptions) {
  return async function handleApiRequest(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const { path, query } = splitRequestTarget(request.raw.url ?? '')
    const params = parseApiQuery(query)
    const format = formatOf(params)
    const paramsError = apiParamsError(params)
    if (paramsError !== undefined) {
      opts.metrics.otherAnswers.bad_request.inc()
      return sendApi(reply, apiHttpStatus(4), paramsError, format)
    }
    const parsed = apiHandleOf(path.slice(API_HANDLES.length), { maxLength: opts.maxHandleLength })
    if (!parsed.ok) {
      opts.metrics.otherAnswers[parsed.status >= 500 ? 'error' : 'bad_request'].inc()
      return sendApi(reply, parsed.status, parsed.body, format)
    }
    return await answerApi(request, reply, parsed.handle, params, opts)
  }
}

/**
 * The REST answer for one handle; also what the proxy answers for `?action=api` (behaviour.md R4).
 * A cached record is answered at once; a lookup that must go upstream passes the admission gate first.
 */
export async function answerApi(
  request: FastifyRequest,
  reply: FastifyReply,
  handle: string,
  params: ApiParams,
  opts: ApiRouteOptions
): Promise<FastifyReply> {
  const format = formatOf(params)
  const bypass = params.bypassCache
  try {
    // The parsed query is the lookup's request (its LookupParams), passed whole with the request's gate.
    const result = await opts.resolver.lookup(handle, { params, admit: opts.admission.gate(request, reply, bypass) })
    opts.metrics.otherAnswers[result.kind === 'not-found' ? 'not_found' : answeredFrom(result)].inc()
    const { contentType, body } = serializeApi(
      result.kind === 'not-found'
        ? opts.offline === true
          ? apiNotHeldOffline(handle, result.absence)
          : apiNotFound(handle)
        : answerBody(handle, result.values, params),
      format
    )
    const parts = {
      status: result.kind === 'not-found' ? 404 : 200,
      headers: { 'content-type': contentType, 'x-content-type-options': 'nosniff' },
      body
    }
    // Every plain request gets this very answer while the record is cached: kept with it from its first repeat.
    const entry = reusableEntry(result)
    opts.prepared.keep(request, 'api', entry !== undefined ? { entry, validUntil: Infinity } : undefined, parts)
    return sendParts(reply, parts, result.cache, undefined)
  } catch (err) {
    opts.metrics.otherAnswers[describeError(err).status >= 500 ? 'error' : 'bad_request'].inc()
    reply.header('x-cache', missStatus(params))
    errorsAbout(request, { handle })
    throw err
  }
}

/** The record's values, filtered; none left (or none at all, as the upstream's responseCode 200 says) is "Values Not Found". */
function answerBody(handle: string, values: readonly HandleValue[], params: ApiParams): ApiBody {
  const filtered =
    params.types.length > 0 || params.indexes.length > 0 ? filterValues(values, { types: params.types, indexes: params.indexes }) : values
  if (filtered.length === 0) return apiValuesNotFound(handle)
  return apiSuccess(handle, filtered)
}

function formatOf(params: ApiParams): { pretty: boolean; callback?: string | undefined } {
  return { pretty: params.pretty, callback: params.callback }
}

function sendApi(
  reply: FastifyReply,
  status: number,
  body: ApiBody,
  format: { pretty: boolean; callback?: string | undefined }
): FastifyReply {
  const { contentType, body: text } = serializeApi(body, format)
  return reply.code(status).type(contentType).header('x-content-type-options', 'nosniff').send(text)
}
