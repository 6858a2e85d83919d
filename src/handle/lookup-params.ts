/**
 * What a reader's query asks of the lookup itself (behaviour.md §3, R11): the parameters sent upstream
 * with the handle, and whether a cache may answer. Read once, by both query parsers (the proxy's,
 * query.ts, and the REST API's, api.ts), whose parameters extend these; passed whole to the resolver, the
 * shared tier, the breakers and the upstream client, which writes the query string it sends
 * (resolve/upstream/client.ts `upstreamQuery`). Nothing between them copies a field. Pure: no I/O.
 *
 * A new parameter sent upstream is a field here, read in `lookupParamsOf`, written in `upstreamQuery`, and
 * described in the REST API's OpenAPI text (src/http/openapi.ts). One that changes the upstream's answer
 * must bypass the cache too (`bypassesCache`): a cached or shared answer was not asked with it. One that
 * `/openurl` should carry to the resolution is a fourth file: `CARRIED_PARAMETERS` in handle/openurl.ts.
 */
export interface LookupParams {
  /** Ask the upstream authoritatively (`auth=true` upstream). */
  readonly auth: boolean
  /** Ask the upstream for a certified answer (`cert=true` upstream). */
  readonly cert: boolean
  /** Answered by the upstream, never from a cache, and the cache refreshed with its answer (see bypassesCache). */
  readonly bypassCache: boolean
}

/**
 * The lookup's parameters of a parsed query. `on` says whether a switch is on as its parser reads switches:
 * the proxy's by presence (`?auth`, even `auth=no`, behaviour.md R4), the REST API's by value (`auth=true`).
 */
export function lookupParamsOf(on: (name: string) => boolean): LookupParams {
  const auth = on('auth')
  const cert = on('cert')
  return { auth, cert, bypassCache: bypassesCache(auth, cert) }
}

/** Nothing asked beyond the handle: the batch API's lines, Which RA?, a background refresh, the tools. */
export const PLAIN_LOOKUP: LookupParams = Object.freeze(lookupParamsOf(() => false))

/**
 * Whether a request skips every cache (behaviour.md §3, R11): `auth` asks the upstream authoritatively
 * and refreshes the cache with its answer, `cert` passes a request for a certified answer on, which a
 * cached record cannot give. Worked out here, once, and only read after: the resolver, the shared tier,
 * the namespace-locations cache, the admission gate (the stricter limit) and `X-Cache: BYPASS`.
 */
function bypassesCache(auth: boolean, cert: boolean): boolean {
  return auth || cert
}

/** The `X-Cache` of an answer the upstream gave (or failed to give): BYPASS when the query bypassed every cache. */
export function missStatus(params: Pick<LookupParams, 'bypassCache'>): 'BYPASS' | 'MISS' {
  return params.bypassCache ? 'BYPASS' : 'MISS'
}
