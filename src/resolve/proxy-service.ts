import type { HandleValue } from '../handle/types.js'
import type { ProxyParams } from '../handle/query.js'
import { hasTypeOrIndexFilter } from '../handle/query.js'
import { expiresAt, filterValues } from '../handle/record.js'
import { locationFor } from '../handle/redirect.js'
import { boundedMemo } from '../handle/memo.js'
import { chooseLocation, renderShowUrls } from '../handle/locations.js'
import type { LocationRequest } from '../handle/locations.js'
import { automaticLocatt } from '../handle/negotiate.js'
import { createLocationLoader } from './locations-loader.js'
import type { LocationContext } from './locations-loader.js'
import type { CacheStatus, ChainResult, Lookup, Resolver } from './resolver.js'

/** What the HTML proxy answers for one handle request; http/ renders it. */
export type ProxyOutcome =
  | {
    kind: 'redirect',
    handle: string,
    location: string,
    status: 301 | 302 | 303 | 307 | 308,
    expires: number,
    vary: boolean,
    linkHeaders: string[],
    extraHeaders: Array<[string, string]>,
    headLines: string[],
    cache: CacheStatus
  }
  | { kind: 'alias', handle: string, target: string, expires: number, cache: CacheStatus }
  | { kind: 'values', handle: string, values: HandleValue[], vary: boolean, cache: CacheStatus }
  | { kind: 'no-values', handle: string, cache: CacheStatus }
  | { kind: 'showurls', handle: string, xml: string, vary: boolean, cache: CacheStatus }
  | { kind: 'not-found', handle: string, message?: string, cache: CacheStatus }

export interface ProxyRequest {
  handle: string
  params: ProxyParams
  /** What content negotiation and the 10320/loc choosers read from the request. */
  client: {
    accept?: string | readonly string[] | undefined
    acceptLanguage?: string | readonly string[] | undefined
    userAgent?: string | undefined
    address?: string | undefined
    country?: string | undefined
  }
}

export interface ProxyServiceOptions {
  resolver: Resolver
  allowedSchemes: readonly string[]
  now: () => number
  random: () => number
  /** One log line per record whose 10320/loc data had something broken in it. */
  onLocationProblems?: (handle: string, problems: readonly string[]) => void
}

// reference §11: cached namespace-location information lives at most one hour, and Expires with it.
const NAMESPACE_EXPIRES_CAP_MS = 3_600_000

/**
 * The HTML proxy's resolution flow (reference §2, DECISIONS §3–§4): follow aliases (301 in redirect
 * mode), apply the type/index filters, then let the 10320/loc engine choose the redirect (it also
 * covers records with plain URL values only) or show the values.
 */
export function createProxyService (opts: ProxyServiceOptions) {
  const { resolver, now } = opts
  const locations = createLocationLoader(resolver, now)
  // The Location of a URL without urlappend is the same every time: encoded once per URL.
  const plainLocation = boundedMemo(8192, (href: string) => locationFor(href, undefined, opts.allowedSchemes))

  /**
   * The answer, synchronously when every record it needs is at hand (a cached DOI: the hot path),
   * else a promise of it.
   */
  function answer (req: ProxyRequest): ProxyOutcome | Promise<ProxyOutcome> {
    const { params } = req
    const flags = { auth: params.auth, cert: params.cert }
    if (params.ignoreAliases) {
      const known = resolver.peek(req.handle, flags)
      return known === undefined ? answerFetching(req) : fromRecord(req, req.handle, known)
    }
    const chain = resolver.peekAliases(req.handle, flags)
    return chain === undefined ? answerFetching(req) : fromChain(req, chain)
  }

  async function answerFetching (req: ProxyRequest): Promise<ProxyOutcome> {
    const flags = { auth: req.params.auth, cert: req.params.cert }
    if (req.params.ignoreAliases) return await fromRecord(req, req.handle, await resolver.lookup(req.handle, flags))
    return await fromChain(req, await resolver.followAliases(req.handle, flags))
  }

  function fromRecord (req: ProxyRequest, handle: string, result: Lookup): ProxyOutcome | Promise<ProxyOutcome> {
    if (result.kind === 'not-found') return { kind: 'not-found', handle, cache: result.cache }
    return decide(req, handle, result.values, result.cache)
  }

  function fromChain (req: ProxyRequest, chain: ChainResult): ProxyOutcome | Promise<ProxyOutcome> {
    const { params } = req
    if (chain.kind === 'alias-chain-too-long') {
      return { kind: 'not-found', handle: req.handle, message: 'Alias chain too long', cache: chain.cache }
    }
    if (chain.kind === 'not-found') return { kind: 'not-found', handle: req.handle, cache: chain.cache }
    // Redirect mode after at least one alias: a 301 to our own URL of the target (reference §2 HS_ALIAS).
    if (chain.hops > 0 && params.action === 'redirect') {
      return { kind: 'alias', handle: req.handle, target: chain.handle, expires: expiresAt(chain.aliasValues, now()), cache: chain.cache }
    }
    return decide(req, chain.handle, chain.values, chain.cache)
  }

  function decide (req: ProxyRequest, handle: string, all: HandleValue[], cache: CacheStatus): ProxyOutcome | Promise<ProxyOutcome> {
    const { params } = req
    const values = filterValues(all, { indexes: params.indexes, types: params.types })
    if (values.length === 0 && hasTypeOrIndexFilter(params)) return { kind: 'no-values', handle, cache }
    if (params.action === 'showvalues' || params.action === 'api') {
      return { kind: 'values', handle, values, vary: false, cache }
    }
    const flags = { auth: params.auth, cert: params.cert }
    const located = locations.peek(handle, values, flags)
    if (located !== undefined) return choose(req, handle, values, located, cache)
    return locations.load(handle, values, flags).then((loaded) => choose(req, handle, values, loaded, cache))
  }

  function choose (req: ProxyRequest, handle: string, values: HandleValue[], located: LocationContext, cache: CacheStatus): ProxyOutcome {
    const { params } = req
    const locRequest: LocationRequest = {
      handle,
      values,
      includes: located.includes,
      namespaceValues: located.namespaceValues,
      locatt: locattFor(req),
      country: params.country ?? req.client.country,
      clientAddress: req.client.address,
      random: opts.random
    }
    if (params.action === 'showurls') {
      const xml = renderShowUrls(locRequest)
      const vary = located.namespaceValues.length > 0 || values.some((v) => /^10320\/loc$/i.test(v.type))
      report(handle, located.problems)
      return xml === undefined ? { kind: 'values', handle, values, vary: false, cache } : { kind: 'showurls', handle, xml, vary, cache }
    }
    const decision = chooseLocation(locRequest)
    if (located.problems.length + decision.problems.length > 0) report(handle, [...located.problems, ...decision.problems])
    if (decision.kind === 'none') return { kind: 'values', handle, values, vary: decision.vary, cache }
    const location = params.urlappend === undefined ? plainLocation(decision.href) : locationFor(decision.href, params.urlappend, opts.allowedSchemes)
    // A scheme outside the allow-list or a control character: show the values instead (DECISIONS §4).
    if (location === undefined) return { kind: 'values', handle, values, vary: decision.vary, cache }
    const at = now()
    const expires = located.namespaceValues.length > 0
      ? Math.min(expiresAt(decision.usedValues, at), at + NAMESPACE_EXPIRES_CAP_MS)
      : expiresAt(decision.usedValues, at)
    return {
      kind: 'redirect',
      handle,
      location,
      status: decision.status,
      expires,
      vary: decision.vary,
      linkHeaders: decision.linkHeaders,
      extraHeaders: decision.extraHeaders,
      headLines: decision.headLines,
      cache
    }
  }

  function report (handle: string, problems: readonly string[]): void {
    if (problems.length > 0) opts.onLocationProblems?.(handle, problems)
  }

  return { answer }
}

export type ProxyService = ReturnType<typeof createProxyService>

/** The user's locatt values, then the automatic ones from the request's headers (reference §9). */
function locattFor (req: ProxyRequest): readonly string[] {
  const { client, params } = req
  const automatic = automaticLocatt({
    accept: client.accept,
    acceptLanguage: client.acceptLanguage,
    userAgent: client.userAgent,
    action: params.all.get('action')?.[0]
  })
  return params.locatt.length === 0 ? automatic : [...params.locatt, ...automatic]
}
