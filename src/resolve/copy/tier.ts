import { copyKeyOf, isHashedKey, sameDoi } from '../../handle/copy/key.js'
import { prefixRecordOf, serviceRecordOf } from '../../handle/copy/agencies.js'
import { effectiveAsOf, freshForSeconds } from '../../handle/copy/freshness.js'
import { decodeCsl } from '../../handle/copy/record-codec.js'
import type { CopyHead, Coverage, Csl } from '../../handle/copy/types.js'
import type { HandleValue } from '../../handle/types.js'
import type { Tally } from '../../observe/metrics.js'
import type { CopyStore } from './store.js'

/**
 * The resolver's view of the registry copy (issue 43, plan-43 §1.7–§1.9): whether the copy answers for a
 * handle now, with the record as doi.org holds it (its URL at index 1, HS_ALIAS for an alias, ttl 86400,
 * the agency's stamp as timestamp), and the URL of a work for the door; a record of any age to stand in when the
 * upstream fails; and, offline, what an absence means in words. Offline only, it also makes up the prefix
 * records and the agencies' service records (handle/copy/agencies.ts), so Which RA? and negotiation work
 * unplugged; online those come from the upstream. Reads are synchronous (LMDB, memory-mapped): a copy
 * hit is at hand, as a cache hit is.
 */

/** What the copy says of a handle now. */
export type CopyFind =
  /** It answers, with these values. */
  | { kind: 'found'; values: HandleValue[] }
  /** It holds the record, too old to answer online (the upstream is asked; it may still stand in). */
  | { kind: 'too-old' }
  /** It does not hold the handle (or holds it without a public URL): `words` say what that means. */
  | { kind: 'absent' }

export interface CopyTierOptions {
  copy: CopyStore
  /** REGISTRY_COPY_MAX_AGE_SECONDS: online, a record whose data is older does not answer first. */
  maxAgeS: number
  /** OFFLINE: the copy always answers, and makes up prefix and service records. */
  offline: boolean
  /** Epoch ms. */
  now: () => number
  /** doi_proxy_copy_lookups_total by result, bound once. */
  count?: { hit: Tally; tooOld: Tally; absent: Tally; standIn: Tally } | undefined
}

export interface CopyTier {
  readonly offline: boolean
  /** Whether the copy answers for the handle now (`key` is its cache key). Counted unless `counted` is false. */
  peek(handle: string, key: string, counted?: boolean): CopyFind
  /** The copy's record of any age, when the upstream failed (X-Cache: STALE); undefined when it holds none with a URL. Counted. */
  standIn(handle: string, key: string): HandleValue[] | undefined
  /** Offline: why a handle the copy does not answer may still exist, in words for the page and the batch. */
  absence(handle: string, key: string): string
  /** The record's CSL-JSON, when the copy holds one (negotiated answers, src/resolve/copy/metadata.ts). */
  csl(handle: string, key: string): Csl | undefined
  /**
   * The URL of a work the copy answers for now (the door's copy redirects, src/http/prepared-answers.ts), or
   * undefined (not held, an alias, too old, a made-up record): what `peek` finds, without building the values. Not counted.
   */
  workUrl(handle: string, key: string): string | undefined
  /** Count a lookup the copy answered (the door's, which reads with workUrl). */
  countHit(): void
}

// doi.org's relative TTL of a DOI's values (behaviour.md R11).
const TTL = 86400
// Coverage is read from the copy's meta at most this often: an update (another process) moves it forward.
const COVERAGE_MS = 60_000
const DAY_S = 86400

export function createCopyTier(opts: CopyTierOptions): CopyTier {
  const { copy, now, offline } = opts
  let coverage: Coverage = {}
  let coverageRead = -Infinity

  function coverageNow(at: number): Coverage {
    if (at - coverageRead >= COVERAGE_MS) {
      coverage = copy.coverage()
      coverageRead = at
    }
    return coverage
  }

  /** The head of the handle's record, read in place; undefined when not held (or unreadable, or another DOI under a hashed key). */
  function headOf(handle: string, key: string): CopyHead | undefined {
    const storeKey = copyKeyOf(key)
    const head = copy.head(storeKey)
    if (head === undefined || typeof head === 'string') return undefined
    if (isHashedKey(storeKey) && !sameDoi(head.doi, handle)) return undefined
    return head
  }

  /** Offline: a prefix's record or an agency's service record, made up from what the copy holds. */
  function madeUp(handle: string): HandleValue[] | undefined {
    if (!offline) return undefined
    const service = serviceRecordOf(handle, stampOfCopy())
    if (service !== undefined) return service
    if (handle.includes('/')) return undefined
    const mark = copy.prefix(handle)
    return mark === undefined ? undefined : prefixRecordOf(mark.agency, mark.asOf > 0 ? mark.asOf : stampOfCopy())
  }

  /** The copy's last write (seconds), the made-up records' timestamp. */
  function stampOfCopy(): number {
    const stats = copy.meta('stats') as { updatedAt?: unknown } | undefined
    return typeof stats?.updatedAt === 'number' ? stats.updatedAt : 0
  }

  /** Seconds the head's record still answers online (Infinity offline); 0 or less: too old. */
  function freshFor(head: CopyHead): number {
    if (offline) return Infinity
    const at = now()
    return freshForSeconds(effectiveAsOf(head, coverageNow(at)), Math.floor(at / 1000), opts.maxAgeS)
  }

  return {
    offline,
    peek(handle, key, counted = true) {
      const count = counted ? opts.count : undefined
      const head = headOf(handle, key)
      if (head === undefined || head.kind === 'registered') {
        const values = madeUp(handle)
        if (values !== undefined) {
          count?.hit.inc()
          return { kind: 'found', values }
        }
        count?.absent.inc()
        return { kind: 'absent' }
      }
      if (freshFor(head) <= 0) {
        count?.tooOld.inc()
        return { kind: 'too-old' }
      }
      count?.hit.inc()
      return { kind: 'found', values: valuesOf(head) }
    },
    standIn(handle, key) {
      const head = headOf(handle, key)
      if (head === undefined || head.kind === 'registered') return undefined
      opts.count?.standIn.inc()
      return valuesOf(head)
    },
    absence(handle, key) {
      const head = headOf(handle, key)
      if (head?.kind === 'registered') {
        return `it is registered${head.agency === 'datacite' ? ' at DataCite' : ''}, but its URL is not public, so this resolver's copy of the registry cannot redirect to it`
      }
      const prefix = prefixPart(handle)
      const mark = prefix === undefined ? undefined : copy.prefix(prefix)
      if (mark?.whole === true && mark.asOf > 0) {
        return `this resolver's copy of the registry holds every DOI of ${prefix} registered by ${dateOf(mark.asOf)}, and not this one; it may have been registered since`
      }
      return "it is not in this resolver's copy of the registry"
    },
    csl(handle, key) {
      // The head first: a hashed key may hold another DOI (compared there), and most records are read no further.
      const head = headOf(handle, key)
      if (head === undefined || !head.hasCsl) return undefined
      const bytes = copy.get(copyKeyOf(key))
      const csl = bytes === undefined ? undefined : decodeCsl(bytes)
      return typeof csl === 'object' ? csl : undefined
    },
    workUrl(handle, key) {
      const head = headOf(handle, key)
      return head?.kind === 'work' && freshFor(head) > 0 ? head.target : undefined
    },
    countHit: () => opts.count?.hit.inc()
  }
}

/** The DOI's values as doi.org holds them: its URL at index 1 (HS_ALIAS for an alias), ttl 86400, the agency's stamp. */
export function valuesOf(head: Pick<CopyHead, 'kind' | 'target' | 'stamp'>): HandleValue[] {
  return [
    {
      index: 1,
      type: head.kind === 'alias' ? 'HS_ALIAS' : 'URL',
      data: { format: 'string', value: head.target },
      ttl: TTL,
      timestamp: new Date(head.stamp * 1000).toISOString()
    }
  ]
}

function prefixPart(handle: string): string | undefined {
  const slash = handle.indexOf('/')
  return slash <= 0 ? undefined : handle.slice(0, slash)
}

/** A day as YYYY-MM-DD (UTC): coverage is by the day. */
function dateOf(seconds: number): string {
  return new Date(Math.floor(seconds / DAY_S) * DAY_S * 1000).toISOString().slice(0, 10)
}
