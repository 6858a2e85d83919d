import { LRUCache } from 'lru-cache'
import type { HandleValue } from '../../handle/types.js'
import { cacheKey, prefixOf } from '../../handle/name.js'
import { namespaceLocHandles, referencedHandles } from '../../handle/locations.js'
import type { ReferencedHandles } from '../../handle/locations.js'
import { namespaceLocationsSeconds } from '../../handle/freshness.js'
import type { Resolver } from './resolver.js'
import type { LookupRequest } from '../upstream/fetcher.js'

/** The other records the 10320/loc engine needs for one handle, fetched through the cache. */
export interface LocationContext {
  includes: Map<string, HandleValue[]>
  namespaceValues: HandleValue[]
  /** What could not be fetched; never an exception (a broken namespace must not stop a redirect). */
  problems: string[]
  /**
   * When the kept namespace locations expire (epoch ms), if they were used: the reference's Expires
   * is then no later than that (behaviour.md R11: the 18–41 minutes seen on doi.org).
   */
  namespaceUntil?: number
  /**
   * Until when this context stays as it is (epoch ms): the kept namespace locations' life. Undefined for
   * a context fetched for one request only (includes, overrides), which nothing may be prepared from.
   */
  validUntil?: number
}

// The reference's recursion limit for include (behaviour.md R3 root attributes).
const MAX_INCLUDE_DEPTH = 20
// Bound the fan-out a single record can cause: a hostile record must not make us fetch thousands.
const MAX_FETCHES = 40

// behaviour.md R11: namespace locations are cached apart, in an LRU of 4096 prefixes, each for as long as
// src/handle/freshness.ts namespaceLocationsSeconds says, and skipped when a request bypasses the cache (auth, cert).
const NAMESPACE_CACHE_ENTRIES = 4096
const NO_VALUES: HandleValue[] = []
const NO_INCLUDES = new Map<string, HandleValue[]>()

/** Fetches what the 10320/loc engine needs, keeping namespace locations per prefix as the reference does. */
export function createLocationLoader(resolver: Resolver, now: () => number) {
  const namespaces = new LRUCache<string, { values: HandleValue[]; until: number }>({ max: NAMESPACE_CACHE_ENTRIES })

  /** True when only the prefix's namespace locations are needed (no includes or overrides), so they may be kept. */
  function isSimple(refs: ReferencedHandles, asked: LookupRequest): boolean {
    return (
      refs.includes.length === 0 &&
      refs.includeNamespaces.length === 0 &&
      !refs.noNamespaceLocs &&
      refs.overridePrefix === undefined &&
      refs.nshdl.length === 0 &&
      !asked.params.bypassCache
    )
  }

  /** What is at hand without fetching: the kept namespace locations of the prefix; undefined otherwise. */
  function peek(handle: string, refs: ReferencedHandles, asked: LookupRequest): LocationContext | undefined {
    if (!isSimple(refs, asked)) return undefined
    const prefix = prefixOf(handle)
    if (prefix === handle) return { includes: NO_INCLUDES, namespaceValues: NO_VALUES, problems: [], validUntil: Infinity }
    const known = namespaces.get(cacheKey(prefix))
    return known !== undefined && known.until > now() ? kept(known.values, known.until) : undefined
  }

  /** The context for a record; `refs` are its references, when the caller kept them (referencedHandles otherwise). */
  async function load(
    handle: string,
    values: readonly HandleValue[],
    asked: LookupRequest,
    refs = referencedHandles(values)
  ): Promise<LocationContext> {
    const known = peek(handle, refs, asked)
    if (known !== undefined) return known
    const loaded = await loadLocationContext(resolver, handle, values, asked, refs)
    if (isSimple(refs, asked) && loaded.problems.length === 0 && loaded.includes.size === 0) {
      const at = now()
      const namespaceValues = loaded.namespaceValues.length === 0 ? NO_VALUES : loaded.namespaceValues
      const seconds = namespaceLocationsSeconds(namespaceValues, at)
      if (seconds <= 0) return { includes: NO_INCLUDES, namespaceValues, problems: [] }
      const until = at + seconds * 1000
      namespaces.set(cacheKey(prefixOf(handle)), { values: namespaceValues, until })
      return kept(namespaceValues, until)
    }
    return loaded
  }

  return { load }
}

function kept(namespaceValues: HandleValue[], until: number): LocationContext {
  return namespaceValues.length === 0
    ? { includes: NO_INCLUDES, namespaceValues, problems: [], validUntil: until }
    : { includes: NO_INCLUDES, namespaceValues, problems: [], namespaceUntil: until, validUntil: until }
}

export type LocationLoader = ReturnType<typeof createLocationLoader>

/**
 * Step one of the engine's two-step API (see src/handle/locations.ts): fetch the include targets,
 * the prefix record's HS_NAMESPACE <locs> handles (or nshdl) and their includes.
 */
export async function loadLocationContext(
  resolver: Pick<Resolver, 'lookup'>,
  handle: string,
  values: readonly HandleValue[],
  asked: LookupRequest,
  refs = referencedHandles(values)
): Promise<LocationContext> {
  const ctx: LocationContext = { includes: new Map(), namespaceValues: [], problems: [] }
  let budget = MAX_FETCHES

  async function valuesOf(name: string): Promise<HandleValue[] | undefined> {
    if (budget-- <= 0) {
      ctx.problems.push(`too many referenced handles; ${name} skipped`)
      return undefined
    }
    try {
      const result = await resolver.lookup(name, asked)
      if (result.kind === 'found') return result.values
      ctx.problems.push(`referenced handle ${name} not found`)
    } catch (err) {
      ctx.problems.push(`referenced handle ${name} could not be fetched: ${(err as Error).message}`)
    }
    return undefined
  }

  async function namespaceValuesFor(prefix: string, nshdl: readonly string[]): Promise<HandleValue[]> {
    const prefixValues = await valuesOf(prefix)
    const named = prefixValues === undefined ? [] : namespaceLocHandles(prefixValues)
    const handles = named.length > 0 ? named : nshdl
    const fetched = await Promise.all(handles.map(valuesOf))
    return fetched.flatMap((v) => v ?? [])
  }

  async function fetchIncludes(names: readonly string[], depth: number): Promise<void> {
    const fresh = names.filter((n) => !ctx.includes.has(n))
    if (fresh.length === 0) return
    if (depth > MAX_INCLUDE_DEPTH) {
      ctx.problems.push('include nesting deeper than 20')
      return
    }
    const fetched = await Promise.all(fresh.map(async (n) => [n, await valuesOf(n)] as const))
    const next: string[] = []
    for (const [name, v] of fetched) {
      if (v === undefined) continue
      ctx.includes.set(name, v)
      next.push(...referencedHandles(v).includes)
    }
    await fetchIncludes(next, depth + 1)
  }

  await fetchIncludes(refs.includes, 1)
  for (const prefix of refs.includeNamespaces) {
    if (!ctx.includes.has(prefix)) ctx.includes.set(prefix, await namespaceValuesFor(prefix, []))
  }
  if (!refs.noNamespaceLocs) {
    const prefix = refs.overridePrefix ?? prefixOf(handle)
    // A prefix record is its own namespace: it has no namespace locations of its own.
    if (prefix !== handle) ctx.namespaceValues = await namespaceValuesFor(prefix, refs.nshdl)
    await fetchIncludes(referencedHandles(ctx.namespaceValues).includes, 1)
  }
  return ctx
}
