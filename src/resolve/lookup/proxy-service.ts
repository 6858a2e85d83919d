import type { HandleValue } from '../../handle/types.js'
import type { ProxyParams } from '../../handle/query.js'
import { hasTypeOrIndexFilter } from '../../handle/query.js'
import { expiresAt, expiresFrom, expiryRule, filterValues } from '../../handle/record.js'
import type { ExpiryRule } from '../../handle/record.js'
import { locationFor, sameTarget } from '../../handle/redirect.js'
import { chooseLocation, planLocations, renderShowUrls } from '../../handle/locations.js'
import type { LocationDecision, LocationRequest } from '../../handle/locations.js'
import { addPlan } from '../cache/entry-work.js'
import type { Negotiation } from '../../handle/negotiate.js'
import type { CachedAnswer } from '../cache/entry.js'
import { createLocationLoader } from './locations-loader.js'
import type { LocationContext } from './locations-loader.js'
import { reusableEntry } from './resolver.js'
import type { CacheStatus, ChainResult, Lookup, Resolver } from './resolver.js'
import { createWorkSlots } from './work-slots.js'
import type { WorkSlot, WorkSlots } from './work-slots.js'
import type { LookupRequest } from '../upstream/fetcher.js'
import type { AnsweredFrom } from '../../observe/metrics.js'

/** What the HTML proxy answers for one handle request, and where its record came from; http/ renders it. */
export type ProxyOutcome = Decided & { from: AnsweredFrom }

type Decided =
  | {
      kind: 'redirect'
      handle: string
      location: string
      status: 301 | 302 | 303 | 307 | 308
      expires: number
      vary: boolean
      /** The chosen location answers content negotiation (behaviour.md §10: never diverted to a local service). */
      negotiated: boolean
      /** The reader's urlappend is part of the location: it is theirs to follow, never ours to fetch (docs/metadata.md). */
      appended: boolean
      linkHeaders: string[]
      extraHeaders: Array<[string, string]>
      headLines: string[]
      cache: CacheStatus
      reuse?: Reuse | undefined
    }
  | { kind: 'alias'; handle: string; target: string; expires: number; cache: CacheStatus }
  | { kind: 'values'; handle: string; values: HandleValue[]; vary: boolean; cache: CacheStatus; reuse?: Reuse | undefined }
  | { kind: 'no-values'; handle: string; cache: CacheStatus }
  | { kind: 'showurls'; handle: string; xml: string; vary: boolean; cache: CacheStatus }
  | {
      kind: 'not-found'
      handle: string
      message?: string
      cache: CacheStatus
      reuse?: Reuse | undefined
      /** Offline: why the absence says nothing about the DOI, in words naming the registry copy (src/resolve/copy/tier.ts). */
      absence?: string | undefined
    }
  | { kind: 'refused'; handle: string; message: string; cache: CacheStatus } // a 400 about the request itself

/**
 * Present when every request of the same variant (handle as written, negotiation, no query) gets this
 * very answer, so it may be prepared once: kept with the record's cache entry (src/resolve/cache/entry-work.ts),
 * or, for a registry copy's work, as the redirect every work of its prefix gets for that negotiation.
 */
export type Reuse = EntryReuse | CopyReuse

export interface EntryReuse {
  entry: CachedAnswer
  /** Until when it holds (epoch ms): the kept namespace locations may change after. */
  validUntil: number
  expires?: ExpiryRule | undefined
}

/**
 * A registry copy's work (one URL value, no alias followed) redirected to its own URL with nothing of the
 * record's in the answer but that URL: any other work of the same prefix gets the same redirect to its own
 * URL, for the same negotiation, while the prefix's namespace locations hold (src/http/prepared-answers.ts).
 */
export interface CopyReuse {
  copy: true
  validUntil: number
  expires: ExpiryRule
}

/**
 * One request to the HTML proxy. It is the lookup's request too (LookupRequest): its parsed query carries
 * the lookup's own parameters (LookupParams), its gate beside them, so it is passed whole to the resolver.
 */
export interface ProxyRequest extends LookupRequest {
  handle: string
  params: ProxyParams
  /** A POSTed form (behaviour.md R2): an alias is followed to its target's URL, not answered with a 301. */
  post?: boolean
  /** What the 10320/loc choosers know of the client: http/ reads it from the request's headers and address. */
  client: {
    /** The automatic locatt values from Accept, Accept-Language and User-Agent (negotiate.ts). */
    negotiation: Negotiation
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

/**
 * The HTML proxy's resolution flow (behaviour.md R2, behaviour.md §3–§4): follow aliases (301 in redirect
 * mode), apply the type/index filters, then let the 10320/loc engine choose the redirect (it also
 * covers records with plain URL values only) or show the values.
 */
export function createProxyService(opts: ProxyServiceOptions) {
  const { resolver, now } = opts
  const locations = createLocationLoader(resolver, now)
  const slots = createWorkSlots(resolver)
  const choose = chooser(opts, slots)

  /**
   * The answer for one request. Records at hand (local, cached) answer at once; anything that must be
   * fetched waits for the request's admission first (req.admit, behaviour.md §9).
   */
  async function answer(req: ProxyRequest): Promise<ProxyOutcome> {
    if (req.params.ignoreAliases) {
      const found = await resolver.lookup(req.handle, req)
      return Object.assign(await fromRecord(req, req.handle, found), { from: answeredFrom(found) })
    }
    const chain = await resolver.followAliases(req.handle, req)
    return Object.assign(await fromChain(req, chain), { from: answeredFrom(chain) })
  }

  async function fromRecord(req: ProxyRequest, handle: string, result: Lookup): Promise<Decided> {
    if (result.kind === 'not-found') return { kind: 'not-found', handle, cache: result.cache, absence: result.absence }
    return await decide(req, handle, result.values, result.cache, undefined)
  }

  async function fromChain(req: ProxyRequest, chain: ChainResult): Promise<Decided> {
    const { params } = req
    if (chain.kind === 'alias-chain-too-long') {
      return { kind: 'not-found', handle: req.handle, message: 'Alias chain too long', cache: chain.cache }
    }
    const entry = reusableEntry(chain)
    if (chain.kind === 'not-found') {
      return {
        kind: 'not-found',
        handle: req.handle,
        cache: chain.cache,
        reuse: entry !== undefined ? { entry, validUntil: Infinity } : undefined,
        absence: chain.absence
      }
    }
    // Redirect mode after at least one alias: a 301 to our own URL of the target (behaviour.md R2 HS_ALIAS); not for POST.
    if (chain.hops > 0 && params.action === 'redirect' && req.post !== true) {
      return { kind: 'alias', handle: req.handle, target: chain.handle, expires: expiresAt(chain.aliasValues, now()), cache: chain.cache }
    }
    const keepWith = entry ?? (chain.cache === 'COPY' && chain.hops === 0 ? 'copy' : undefined)
    return await decide(req, chain.handle, chain.values, chain.cache, keepWith, answeredFrom(chain) === 'local')
  }

  /** `keepWith`: the cache entry the answer's work may be kept with, or 'copy' for a registry copy's work reached without an alias. */
  async function decide(
    req: ProxyRequest,
    handle: string,
    all: HandleValue[],
    cache: CacheStatus,
    keepWith: CachedAnswer | 'copy' | undefined,
    local = false
  ): Promise<Decided> {
    const entry = keepWith === 'copy' ? undefined : keepWith
    const { params } = req
    const values = filterValues(all, { indexes: params.indexes, types: params.types })
    if (values.length === 0 && hasTypeOrIndexFilter(params)) return { kind: 'no-values', handle, cache }
    if (params.action === 'showvalues' || params.action === 'api') {
      return { kind: 'values', handle, values, vary: false, cache }
    }
    const slot = values === all ? slots.slotOf(handle, values, entry, local) : undefined
    const located = await locations.load(handle, values, req, slots.referencesOf(values, slot))
    return choose(req, handle, values, located, cache, keepWith, slot)
  }

  return { answer }
}

/**
 * The 10320/loc engine's choice for a record and its namespace locations (behaviour.md §4–§5): the
 * redirect, the showurls XML or the values page, and whether every plain request of its variant gets it.
 */
function chooser(opts: ProxyServiceOptions, slots: WorkSlots) {
  const { now } = opts

  function choose(
    req: ProxyRequest,
    handle: string,
    values: HandleValue[],
    located: LocationContext,
    cache: CacheStatus,
    keepWith: CachedAnswer | 'copy' | undefined,
    slot: WorkSlot | undefined
  ): Decided {
    const { params } = req
    const entry = keepWith === 'copy' ? undefined : keepWith
    const kept = slots.keptPlan(handle, located, slot)
    const plan =
      kept ??
      (slot !== undefined && located.includes.size === 0
        ? planLocations({ handle, values, includes: located.includes, namespaceValues: located.namespaceValues })
        : undefined)
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
      const xml = renderShowUrls(locRequest, plan)
      const vary = located.namespaceValues.length > 0 || values.some((v) => /^10320\/loc$/i.test(v.type))
      report(handle, located.problems)
      return xml === undefined ? { kind: 'values', handle, values, vary: false, cache } : { kind: 'showurls', handle, xml, vary, cache }
    }
    const decision = chooseLocation(locRequest, plan)
    // A record chosen per request (a draw, a country) keeps its candidate set: every request needs it. A
    // cached one whose answer is the same for everyone is answered from its prepared answer instead, so its
    // plan goes; a local record has no prepared answer, so it keeps its plan too.
    const perRequest = decision.kind === 'redirect' && !decision.sameForEveryone
    if (kept === undefined && plan !== undefined && (perRequest || entry === undefined)) {
      slot?.add((work) => addPlan(work, handle, plan, values, located.namespaceValues))
    }
    if (located.problems.length + decision.problems.length > 0) report(handle, [...located.problems, ...decision.problems])
    // The values page when nothing can be redirected to: the same for every request of its negotiation class.
    const valuesReuse = entry !== undefined && located.validUntil !== undefined ? { entry, validUntil: located.validUntil } : undefined
    if (decision.kind === 'none') return { kind: 'values', handle, values, vary: decision.vary, cache, reuse: valuesReuse }
    const plain = locationFor(decision.href, undefined, opts.allowedSchemes)
    const location = params.urlappend === undefined ? plain : locationFor(decision.href, params.urlappend, opts.allowedSchemes)
    // A scheme outside the allow-list or a control character: show the values instead (behaviour.md §4).
    if (plain === undefined || location === undefined) {
      return { kind: 'values', handle, values, vary: decision.vary, cache, reuse: decision.sameForEveryone ? valuesReuse : undefined }
    }
    if (location !== plain && !sameTarget(plain, location)) {
      return {
        kind: 'refused',
        handle,
        message:
          'The urlappend parameter would send this redirect to another site; it may only add to the address (a path, a query or a #fragment).',
        cache
      }
    }
    // Kept namespace locations bound Expires by their own remaining life (behaviour.md R11).
    const rule = expiryRule(decision.usedValues)
    const expires = { relativeMs: rule.relativeMs, until: Math.min(rule.until, located.namespaceUntil ?? Infinity) }
    const { validUntil } = located
    const reuse: Reuse | undefined =
      !decision.sameForEveryone || validUntil === undefined || location !== plain
        ? undefined
        : entry !== undefined
          ? { entry, validUntil, expires }
          : keepWith === 'copy' && handle.includes('/') && onlyItsUrl(decision, values)
            ? { copy: true, validUntil, expires }
            : undefined
    return {
      kind: 'redirect',
      handle,
      location,
      status: decision.status,
      vary: decision.vary,
      negotiated: decision.negotiated,
      appended: location !== plain,
      linkHeaders: decision.linkHeaders,
      extraHeaders: decision.extraHeaders,
      headLines: decision.headLines,
      cache,
      expires: expiresFrom(expires, now()),
      reuse
    }
  }

  function report(handle: string, problems: readonly string[]): void {
    if (problems.length > 0) opts.onLocationProblems?.(handle, problems)
  }

  return choose
}

export type ProxyService = ReturnType<typeof createProxyService>

/**
 * Whether a record's redirect carries nothing of it but its one URL value's address: that value chosen
 * (not a 10320/loc location, whose href may merely equal it), no Link or other record-supplied header,
 * no 10320/headers line at all (a meta refresh is kept only for the URL it names). Then every record of
 * the prefix with one URL value gets the same redirect to its own URL (CopyReuse).
 */
function onlyItsUrl(decision: Extract<LocationDecision, { kind: 'redirect' }>, values: readonly HandleValue[]): boolean {
  return (
    values.length === 1 &&
    values[0]?.type === 'URL' &&
    decision.urlOnly &&
    decision.linkHeaders.length === 0 &&
    decision.extraHeaders.length === 0 &&
    decision.headLines.length === 0
  )
}

/** The user's locatt values, then the automatic ones from the request's headers (behaviour.md R9). */
function locattFor(req: ProxyRequest): readonly string[] {
  const { client, params } = req
  const automatic = client.negotiation.locatt
  return params.locatt.length === 0 ? automatic : [...params.locatt, ...automatic]
}

/**
 * Where an answer's record came from, as /status counts it. A hit without a cache entry is a local record
 * (the cache's own hits always carry theirs); the registry copy's answers count as hits (they are at hand,
 * as a cache hit is, read from the memory-mapped copy); BYPASS asked the upstream, as a miss does.
 */
export function answeredFrom(found: { cache: CacheStatus; entry?: CachedAnswer | undefined }): AnsweredFrom {
  switch (found.cache) {
    case 'COPY':
      return 'hit'
    case 'HIT':
      return found.entry === undefined ? 'local' : 'hit'
    case 'STALE':
      return 'stale'
    default:
      return 'miss'
  }
}
