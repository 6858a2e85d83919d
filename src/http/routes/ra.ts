import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { prefixOf, splitRequestTarget } from '../../handle/name.js'
import { raEntry, serializeRa, splitDoiList, isDoiName } from '../../handle/ra.js'
import type { RaEntry, DoiListItem } from '../../handle/ra.js'
import { PLAIN_LOOKUP } from '../../handle/lookup-params.js'
import type { Lookup, Resolver } from '../../resolve/lookup/resolver.js'
import type { LookupRequest } from '../../resolve/upstream/fetcher.js'
import type { Admission } from '../admission.js'
import { LimitError, describeError } from '../errors.js'
import type { RouteContext } from '../route-context.js'

const JSON_TYPE = 'application/json; charset=utf-8'

export interface RaRouteOptions {
  resolver: Resolver
  admission: Admission
  raNames: Readonly<Record<string, string>>
  maxDois: number
  concurrency: number
}

/** Which RA? (`/doiRA/{dois}`, synonym `/ra/{dois}`): behaviour.md R8, §7. */
export default async function raRoutes(
  app: FastifyInstance,
  { config, services }: RouteContext<'raNames' | 'raMaxDois' | 'raConcurrency'>
): Promise<void> {
  const opts: RaRouteOptions = {
    resolver: services.resolver,
    admission: services.admission,
    raNames: config.raNames,
    maxDois: config.raMaxDois,
    concurrency: config.raConcurrency
  }
  // Errors are rendered by the one error handler, as {"message"} JSON.
  const routeConfig = { errorFormat: 'message' } as const
  app.get('/doiRA/*', { config: routeConfig }, raHandler(opts, '/doiRA/'))
  app.get('/ra/*', { config: routeConfig }, raHandler(opts, '/ra/'))
}

function raHandler(opts: RaRouteOptions, prefix: string) {
  return async function handleRaRequest(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const raw = splitRequestTarget(request.raw.url ?? '').path.slice(prefix.length)
    const items = splitDoiList(raw)
    if (items.length > opts.maxDois) {
      throw new LimitError(400, `At most ${opts.maxDois} DOIs per request; got ${items.length}.`)
    }
    // Cached records answer at once; the first lookup that needs the upstream passes the admission gate,
    // once for the request, and every DOI it resolves takes its own turn in the fair queue (behaviour.md §9).
    const asked: LookupRequest = { params: PLAIN_LOOKUP, admit: opts.admission.gate(request, reply, false) }
    const find = async (handle: string): Promise<Lookup> => await opts.resolver.lookup(handle, asked)
    // Only a refusal of the whole request throws (one DOI failing makes only that entry Unknown).
    const entries = await mapBounded(items, opts.concurrency, async (item) => lookupRa(request, find, opts.resolver, opts.raNames, item))
    return reply.type(JSON_TYPE).send(serializeRa(entries))
  }
}

/** The RA of one DOI: the DOI must exist (a prefix alone is fine), the prefix record names the RA. */
async function lookupRa(
  request: FastifyRequest,
  find: (handle: string) => Promise<Lookup>,
  resolver: Resolver,
  raNames: RaRouteOptions['raNames'],
  item: DoiListItem
): Promise<RaEntry> {
  if (item.doi === undefined || !isDoiName(item.doi)) return raEntry(item, { doiExists: false }, raNames)
  const doi = item.doi
  const prefix = prefixOf(doi)
  let own: Lookup, prefixRecord: Lookup | undefined
  try {
    ;[own, prefixRecord] = await Promise.all([find(doi), prefix === doi ? undefined : find(prefix)])
  } catch (err) {
    if (isRefusal(err)) throw err
    // One failing lookup does not sink the whole list: that DOI's RA is unknown for now.
    request.log.warn({ code: (err as { code?: string }).code, doi }, 'Which RA? lookup failed')
    return { DOI: item.given, status: 'Unknown' }
  }
  const source = prefixRecord ?? own
  const prefixValues = source.kind === 'found' ? source.values : undefined
  // Offline, a DOI not in the local records may well exist: its RA is unknown here, not "does not exist".
  const doiExists = own.kind === 'found' ? true : resolver.knowsAbsence(doi) ? false : undefined
  return raEntry(item, { doiExists, prefixValues }, raNames)
}

/** The request itself was refused (rate limit, load shedding, only-if-cached with a DOI not held): the whole answer is that refusal. */
function isRefusal(err: unknown): boolean {
  const { status, code } = describeError(err)
  return status === 429 || code === 'DP_OVERLOADED' || code === 'DP_ONLY_IF_CACHED'
}

/** Map with at most `limit` calls in flight, results in input order. */
async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
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
