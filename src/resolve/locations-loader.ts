import type { HandleValue } from '../handle/types.js'
import { prefixOf } from '../handle/name.js'
import { namespaceLocHandles, referencedHandles } from '../handle/locations.js'
import type { LookupOptions, Resolver } from './resolver.js'

/** The other records the 10320/loc engine needs for one handle, fetched through the cache. */
export interface LocationContext {
  includes: Map<string, HandleValue[]>
  namespaceValues: HandleValue[]
  /** What could not be fetched; never an exception (a broken namespace must not stop a redirect). */
  problems: string[]
}

// The reference's recursion limit for include (reference §3 root attributes).
const MAX_INCLUDE_DEPTH = 20
// Bound the fan-out a single record can cause: a hostile record must not make us fetch thousands.
const MAX_FETCHES = 40

/**
 * Step one of the engine's two-step API (see src/handle/locations.ts): fetch the include targets,
 * the prefix record's HS_NAMESPACE <locs> handles (or nshdl) and their includes.
 */
export async function loadLocationContext (resolver: Resolver, handle: string, values: readonly HandleValue[], flags: LookupOptions): Promise<LocationContext> {
  const ctx: LocationContext = { includes: new Map(), namespaceValues: [], problems: [] }
  let budget = MAX_FETCHES

  async function valuesOf (name: string): Promise<HandleValue[] | undefined> {
    if (budget-- <= 0) {
      ctx.problems.push(`too many referenced handles; ${name} skipped`)
      return undefined
    }
    try {
      const result = await resolver.lookup(name, flags)
      if (result.kind === 'found') return result.values
      ctx.problems.push(`referenced handle ${name} not found`)
    } catch (err) {
      ctx.problems.push(`referenced handle ${name} could not be fetched: ${(err as Error).message}`)
    }
    return undefined
  }

  async function namespaceValuesFor (prefix: string, nshdl: readonly string[]): Promise<HandleValue[]> {
    const prefixValues = await valuesOf(prefix)
    const named = prefixValues === undefined ? [] : namespaceLocHandles(prefixValues)
    const handles = named.length > 0 ? named : nshdl
    const fetched = await Promise.all(handles.map(valuesOf))
    return fetched.flatMap((v) => v ?? [])
  }

  async function fetchIncludes (names: readonly string[], depth: number): Promise<void> {
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

  const refs = referencedHandles(values)
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
