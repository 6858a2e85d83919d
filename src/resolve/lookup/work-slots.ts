import type { HandleValue } from '../../handle/types.js'
import { referencedHandles } from '../../handle/locations.js'
import type { LocationPlan, ReferencedHandles } from '../../handle/locations.js'
import { emptyWork, referencesBytes } from '../cache/entry-work.js'
import type { EntryWork } from '../cache/entry-work.js'
import type { CachedAnswer } from '../cache/entry.js'
import type { LocationContext } from './locations-loader.js'
import type { Resolver } from './resolver.js'

/** A record's work as kept where it lives, and how to add to it. */
export interface WorkSlot {
  work: EntryWork | undefined
  add: (change: (work: EntryWork) => number | undefined) => void
}

/**
 * Where the work of a record (its 10320/loc references and location plans, docs/architecture.md "Work once
 * per record") is kept: with its cache entry, counted in the cache's bytes; or, for a local record (never
 * cached), with its values array while the store holds them, gone with it when the store reloads.
 */
export function createWorkSlots(resolver: Pick<Resolver, 'attach'>) {
  const localWork = new WeakMap<readonly HandleValue[], EntryWork>()

  /** The slot of a record reached with its cache entry, or local; none for anything else (stale, bypassed, filtered). */
  function slotOf(handle: string, values: HandleValue[], entry: CachedAnswer | undefined, local: boolean): WorkSlot | undefined {
    if (entry !== undefined) {
      if (entry.kind !== 'found' || entry.values !== values) return undefined
      return {
        work: entry.work,
        add: (change) => {
          resolver.attach(handle, entry, change)
        }
      }
    }
    if (!local) return undefined
    return {
      work: localWork.get(values),
      add: (change) => {
        let work = localWork.get(values)
        if (work === undefined) localWork.set(values, (work = emptyWork()))
        work.bytes += change(work) ?? 0
      }
    }
  }

  /** What the record's 10320/loc refers to: worked out once per record. */
  function referencesOf(values: readonly HandleValue[], slot: WorkSlot | undefined): ReferencedHandles {
    const kept = slot?.work?.references
    if (kept !== undefined) return kept
    const refs = referencedHandles(values)
    slot?.add((work) => {
      if (work.references !== undefined) return undefined
      work.references = refs
      return referencesBytes(refs)
    })
    return refs
  }

  /** The candidate set kept with a record for this spelling and these namespace locations, if any. */
  function keptPlan(handle: string, located: LocationContext, slot: WorkSlot | undefined): LocationPlan | undefined {
    const kept = slot?.work?.plans.get(handle)
    return kept !== undefined && kept.namespaceValues === located.namespaceValues ? kept.plan : undefined
  }

  return { slotOf, referencesOf, keptPlan }
}

export type WorkSlots = ReturnType<typeof createWorkSlots>
