import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { encodeHandlePath, handleFromPath, splitRequestTarget } from '../../handle/name.js'
import { carriedQuery, doiFromOpenUrl } from '../../handle/openurl.js'
import { parseProxyQuery } from '../../handle/query.js'
import { RequestError } from '../errors.js'
import { acceptFormBodies } from '../form-body.js'
import type { RouteContext } from '../route-context.js'
import { renderOpenUrlHelpPage } from '../views/institutional.js'
import { lazyPageContext, proxyAnswer, proxyOptions } from './proxy.js'
import type { ProxySettings } from './proxy.js'

/**
 * Inbound OpenURL (behaviour.md §10): `/openurl?rft_id=info:doi/…` (GET, or POST with a form body)
 * is answered as `/{doi}` with the proxy's own parameters from the query, through the same limits,
 * resolution and local service as `/{doi}`. Other OpenURL keys are ignored.
 */
export default async function openUrlRoutes(app: FastifyInstance, context: RouteContext<ProxySettings>): Promise<void> {
  const opts = proxyOptions(context)
  const answer = proxyAnswer(opts)
  const handler = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const ctx = lazyPageContext(request, opts)
    const { query, fragment } = splitRequestTarget(request.raw.url ?? '/')
    // The query decoded as the proxy decodes it ('+' stays '+'); a posted form as browsers encode it ('+' is a space).
    const fields = new Map<string, string[]>()
    const add = (key: string, value: string): void => {
      const values = fields.get(key)
      if (values === undefined) fields.set(key, [value])
      else values.push(value)
    }
    for (const [key, values] of parseProxyQuery(query).all) for (const v of values) add(key, v)
    if (request.method === 'POST') {
      for (const [key, v] of new URLSearchParams(typeof request.body === 'string' ? request.body : '')) add(key, v)
    }
    const found = doiFromOpenUrl(fields)
    if (found === undefined) {
      answer.count('bad_request')
      return reply.code(400).type('text/html; charset=utf-8').send(renderOpenUrlHelpPage(ctx))
    }
    // Then the path rules (behaviour.md §2): prefixes, control characters, length.
    const parsed = handleFromPath(`/${encodeHandlePath(found.doi)}`, { maxLength: opts.maxHandleLength })
    if (!parsed.ok) {
      answer.count('bad_request')
      throw new RequestError(parsed.status, parsed.message)
    }
    if (parsed.handle === '') {
      answer.count('bad_request')
      return reply.code(400).type('text/html; charset=utf-8').send(renderOpenUrlHelpPage(ctx))
    }
    const carried = carriedQuery(fields)
    return await answer(request, reply, ctx, {
      handle: parsed.handle,
      query: carried,
      params: parseProxyQuery(carried, fragment),
      post: request.method === 'POST'
    })
  }
  app.get('/openurl', handler)
  // A form posted to /openurl is read as the proxy reads its own.
  acceptFormBodies(app)
  app.post('/openurl', handler)
}
