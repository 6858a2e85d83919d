/** A cache entry (one record's answer as kept, with its freshness) and how one is made from an upstream answer. */
import { entryFor } from '../../handle/freshness.js'
import type { FreshnessPolicy } from '../../handle/freshness.js'
import type { HandleValue } from '../../handle/types.js'
import type { EntryWork } from './entry-work.js'
import type { UpstreamAnswer } from '../upstream/client.js'

/**
 * One cached answer. `freshUntil` is epoch ms by the injected clock. `work` is what was worked
 * out once for it (src/resolve/cache/entry-work.ts), added as requests first need it. `textLength`: the length of
 * the JSON the values were read from, when known (an upstream answer), so that sizing the entry does not
 * write the values out again. The registry copy's records are never kept here (src/resolve/lookup/resolver.ts copyAnswer).
 */
export type CachedAnswer =
  | {
      kind: 'found'
      values: HandleValue[]
      storedAt: number
      freshUntil: number
      work?: EntryWork
      textLength?: number
    }
  | { kind: 'not-found'; storedAt: number; freshUntil: number; work?: EntryWork }

/**
 * The entry to keep for an upstream answer stored at `at` by the freshness rule (src/handle/freshness.ts),
 * with `values` for a found record (the answer's own by default); undefined when it is not kept at all.
 */
export function entryOf(
  answer: UpstreamAnswer,
  at: number,
  policy: FreshnessPolicy,
  values = answer.kind === 'found' ? answer.record.values : []
): CachedAnswer | undefined {
  const life = entryFor(answer, at, policy)
  if (life === undefined) return undefined
  return answer.kind === 'found'
    ? {
        kind: 'found',
        values,
        storedAt: at,
        freshUntil: life.freshUntil,
        textLength: values === answer.record.values ? answer.textLength : undefined
      }
    : { kind: 'not-found', storedAt: at, freshUntil: life.freshUntil }
}
