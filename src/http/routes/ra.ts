import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { prefixOf } from '../../handle/name.js'
import { raEntry, serializeRa, splitDoiList, isDoiName } from '../../handle/ra.js'
import type { RaEntry, DoiListItem } from '../../handle/ra.js'
import type { Resolver } from '../../resolve/resolver.js'

const JSON_TYPE = 'application/json; charset=utf-8'

export interface RaRouteOptions {
  resolver: Resolver
  raNames: Readonly<Record<string, string>>
  maxDois: number
  concurrency: number
}

/** Which RA? (`/doiRA/{dois}`, synonym `/ra/{dois}`): reference-proxy.md §8, DECISIONS §7. */
export function registerRaRoutes (app: FastifyInstance, opts: RaRouteOptions): void {
  app.get('/doiRA/*', raHandler(opts, '/doiRA/'))
  app.get('/ra/*', raHandler(opts, '/ra/'))
}

function raHandler (opts: RaRouteOptions, prefix: string) {
  return async function handleRaRequest (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const url = request.raw.url ?? ''
    const q = url.indexOf('?')
    const raw = (q < 0 ? url : url.slice(0, q)).slice(prefix.length)
    const items = splitDoiList(raw)
    if (items.length > opts.maxDois) {
      return reply.code(400).type(JSON_TYPE).send(JSON.stringify({ message: `At most ${opts.maxDois} DOIs per request; got ${items.length}.` }))
    }
    const entries = await mapBounded(items, opts.concurrency, async (item) => lookupRa(request, opts, item))
    return reply.type(JSON_TYPE).send(serializeRa(entries))
  }
}

/** The RA of one DOI: the DOI must exist (a prefix alone is fine), the prefix record names the RA. */
async function lookupRa (request: FastifyRequest, opts: RaRouteOptions, item: DoiListItem): Promise<RaEntry> {
  if (item.doi === undefined || !isDoiName(item.doi)) return raEntry(item, { doiExists: false }, opts.raNames)
  const doi = item.doi
  const prefix = prefixOf(doi)
  try {
    const [own, prefixRecord] = await Promise.all([
      opts.resolver.lookup(doi),
      prefix === doi ? undefined : opts.resolver.lookup(prefix)
    ])
    const source = prefixRecord ?? own
    const prefixValues = source.kind === 'found' ? source.values : undefined
    return raEntry(item, { doiExists: own.kind === 'found', prefixValues }, opts.raNames)
  } catch (err) {
    // One failing lookup does not sink the whole list: that DOI's RA is unknown for now.
    request.log.warn({ err, doi }, 'Which RA? lookup failed')
    return { DOI: item.given, status: 'Unknown' }
  }
}

/** Map with at most `limit` calls in flight, results in input order. */
async function mapBounded<T, R> (items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length)
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++
      results[i] = await fn(items[i] as T)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return results
}
