import type { HandleValue } from '../handle/types.js'
import { valueString } from '../handle/types.js'
import type { ProxyParams } from '../handle/query.js'
import { hasTypeOrIndexFilter } from '../handle/query.js'
import { expiresAt, filterValues, firstUrlValue } from '../handle/record.js'
import { locationFor } from '../handle/redirect.js'
import type { CacheStatus, Resolver } from './resolver.js'

/** What the HTML proxy answers for one handle request; http/ renders it. */
export type ProxyOutcome =
  | { kind: 'redirect', handle: string, location: string, status: 301 | 302 | 303 | 307 | 308, expires: number, vary: boolean,
      linkHeaders: string[], extraHeaders: Array<[string, string]>, headLines: string[], cache: CacheStatus }
  | { kind: 'alias', handle: string, target: string, expires: number, cache: CacheStatus }
  | { kind: 'values', handle: string, values: HandleValue[], vary: boolean, cache: CacheStatus }
  | { kind: 'no-values', handle: string, cache: CacheStatus }
  | { kind: 'showurls', handle: string, xml: string, vary: boolean, cache: CacheStatus }
  | { kind: 'not-found', handle: string, message?: string, cache: CacheStatus }

export interface ProxyRequest {
  handle: string
  params: ProxyParams
}

export interface ProxyServiceOptions {
  resolver: Resolver
  allowedSchemes: readonly string[]
  now: () => number
}

/**
 * The HTML proxy's resolution flow (reference §2, DECISIONS §3–§4): follow aliases (301 in redirect
 * mode), apply the type/index filters, then redirect to the chosen URL or show the values.
 * The 10320/loc engine plugs in at chooseRedirect.
 */
export function createProxyService (opts: ProxyServiceOptions) {
  const { resolver, now } = opts

  async function answer (req: ProxyRequest): Promise<ProxyOutcome> {
    const { params } = req
    const flags = { auth: params.auth, cert: params.cert }
    if (params.ignoreAliases) {
      const result = await resolver.lookup(req.handle, flags)
      if (result.kind === 'not-found') return { kind: 'not-found', handle: req.handle, cache: result.cache }
      return decide(req.handle, result.values, params, result.cache)
    }
    const chain = await resolver.followAliases(req.handle, flags)
    if (chain.kind === 'alias-chain-too-long') {
      return { kind: 'not-found', handle: req.handle, message: 'Alias chain too long', cache: chain.cache }
    }
    if (chain.kind === 'not-found') return { kind: 'not-found', handle: req.handle, cache: chain.cache }
    // Redirect mode after at least one alias: a 301 to our own URL of the target (reference §2 HS_ALIAS).
    if (chain.hops > 0 && params.action === 'redirect') {
      return { kind: 'alias', handle: req.handle, target: chain.handle, expires: expiresAt(chain.aliasValues, now()), cache: chain.cache }
    }
    return decide(chain.handle, chain.values, params, chain.cache)
  }

  function decide (handle: string, all: HandleValue[], params: ProxyParams, cache: CacheStatus): ProxyOutcome {
    const values = filterValues(all, { indexes: params.indexes, types: params.types })
    if (values.length === 0 && hasTypeOrIndexFilter(params)) return { kind: 'no-values', handle, cache }
    if (params.action === 'showvalues' || params.action === 'api') {
      return { kind: 'values', handle, values, vary: false, cache }
    }
    if (params.action === 'showurls') {
      // Without the 10320/loc engine the candidates are the legacy URL values (reference §3 "action=showurls").
      const xml = legacyShowUrls(values)
      return xml === undefined ? { kind: 'values', handle, values, vary: false, cache } : { kind: 'showurls', handle, xml, vary: false, cache }
    }
    const chosen = chooseRedirect(values, params)
    if (chosen === undefined) return { kind: 'values', handle, values, vary: false, cache }
    return {
      kind: 'redirect',
      handle,
      location: chosen.location,
      status: 302,
      expires: expiresAt([chosen.value], now()),
      vary: false,
      linkHeaders: [],
      extraHeaders: [],
      headLines: [],
      cache
    }
  }

  /** Legacy choice: the first URL value (DECISIONS §4), if its URL may be redirected to. */
  function chooseRedirect (values: HandleValue[], params: ProxyParams): { location: string, value: HandleValue } | undefined {
    const value = firstUrlValue(values)
    const url = value === undefined ? undefined : valueString(value)
    if (value === undefined || url === undefined) return undefined
    const location = locationFor(url, params.urlappend, opts.allowedSchemes)
    return location === undefined ? undefined : { location, value }
  }

  return { answer }
}

export type ProxyService = ReturnType<typeof createProxyService>

function legacyShowUrls (values: HandleValue[]): string | undefined {
  const urls = values.filter((v) => /^(0\.TYPE\/)?URL$/i.test(v.type)).map(valueString).filter((s): s is string => s !== undefined)
  if (urls.length === 0) return undefined
  const rows = urls.map((u, i) => `<location mode="legacy" weight="${i === 0 ? '1.0' : '0.0'}" href="${xmlEscape(u.trim())}"/>\n`)
  return `<locations>\n${rows.join('')}</locations>\n`
}

function xmlEscape (s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}
