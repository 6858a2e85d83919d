import { missStatus } from '../../handle/lookup-params.js'
import type { HandleValue } from '../../handle/types.js'
import { isType } from '../../handle/types.js'
import { cacheKey } from '../../handle/name.js'
import { isFresh, staleUntil } from '../../handle/freshness.js'
import type { FreshnessPolicy } from '../../handle/freshness.js'
import { aliasTarget } from '../../handle/record.js'
import type { Metrics } from '../../observe/metrics.js'
import type { RecordCache } from '../cache/record-cache.js'
import type { CachedAnswer } from '../cache/entry.js'
import type { CopyTier } from '../copy/tier.js'
import type { EntryWork } from '../cache/entry-work.js'
import { upstreamErrors, UpstreamError } from '../upstream/errors.js'
import type { FairQueue } from '../upstream/fair-queue.js'
import type { LookupRequest, RecordFetcher } from '../upstream/fetcher.js'
import type { LocalRecords } from '../local-store/store.js'
import type { UpstreamAnswer } from '../upstream/client.js'
import { within } from '../upstream/deadline.js'
import { createUpstreamTurns } from './upstream-turns.js'

/** COPY: the registry copy answered (issue 43), read from it at this request (its answers are never cached). */
export type CacheStatus = 'HIT' | 'COPY' | 'MISS' | 'STALE' | 'BYPASS'

/** A work the registry copy answers for, as the door reads it: its registered URL (src/resolve/copy/tier.ts workUrl). */
export interface CopyWork {
  kind: 'copy'
  url: string
}

/**
 * A record or its absence; `entry` is the cache entry it came from, for keeping work with it: given with
 * every hit, and with a miss that shared its upstream answer with another lookup. `absence`: offline, words
 * saying why a handle the registry copy does not answer may still exist (src/resolve/copy/tier.ts).
 */
export type Lookup =
  | { kind: 'found'; values: HandleValue[]; cache: CacheStatus; entry?: CachedAnswer | undefined }
  | { kind: 'not-found'; cache: CacheStatus; entry?: CachedAnswer | undefined; absence?: string | undefined }

/** The end of an alias chain: the record of the last handle, and how many HS_ALIAS hops led there. */
export type ChainResult =
  | {
      kind: 'found'
      handle: string
      values: HandleValue[]
      hops: number
      aliasValues: HandleValue[]
      cache: CacheStatus
      entry?: CachedAnswer | undefined
    }
  | {
      kind: 'not-found'
      handle: string
      hops: number
      cache: CacheStatus
      entry?: CachedAnswer | undefined
      absence?: string | undefined
    }
  | { kind: 'alias-chain-too-long'; handle: string; cache: CacheStatus }

export interface ResolverOptions {
  /** Undefined in offline mode: only local records answer. */
  upstream: RecordFetcher | undefined
  /** Upstream-bound work waits here, per client, for its turn (behaviour.md §9). None: no bound (tools, tests). */
  queue?: FairQueue | undefined
  local?: LocalRecords | undefined
  /** The registry copy (REGISTRY_COPY, issue 43): after the cache, before the upstream; offline it answers alone. */
  copy?: CopyTier | undefined
  cache: RecordCache
  metrics: Metrics
  now: () => number
  /** How long an answer is fresh, and kept to stand in (src/handle/freshness.ts). */
  freshness: FreshnessPolicy
  /** Refresh a record in the background when it is asked for in the last tenth of its lifetime. */
  refreshAhead?: boolean
  onStale?: (handle: string, err: UpstreamError) => void
  onRefreshError?: (handle: string, err: unknown) => void
  /** Each record the upstream found for a lookup that missed, once stored (upstream-turns.ts): issue 42's seen DOIs. */
  onFound?: ((handle: string, key: string) => void) | undefined
}

// behaviour.md §3 / behaviour.md R2: more than 20 hops is "Alias chain too long"; a loop is a chain that is too long.
export const MAX_ALIAS_HOPS = 20

/**
 * Gets handle records: what is at hand (a local record, a fresh cache entry, the registry copy) at once, anything else from
 * the upstream once the request is admitted (src/resolve/lookup/upstream-turns.ts: one upstream request for
 * concurrent misses of a key), a stale record when the upstream fails. Knows nothing about HTTP requests
 * from clients, only the ticket of who asks.
 */
export function createResolver(opts: ResolverOptions) {
  const { cache, metrics, now } = opts
  // Label children bound once: the hot path only increments.
  const count = {
    hit: metrics.cache.tally({ result: 'hit' }),
    bypass: metrics.cache.tally({ result: 'bypass' }),
    miss: metrics.cache.tally({ result: 'miss' }),
    shared: metrics.cache.tally({ result: 'shared' }),
    stale: metrics.cache.tally({ result: 'stale' })
  }
  const turns = createUpstreamTurns({ ...opts, count })
  const atHand = recordsAtHand(opts, turns.refreshInBackground)
  const { peekEntry } = atHand

  /** A record or its absence: at hand (local, cached), or from the upstream once the request is admitted. */
  async function lookup(handle: string, asked: LookupRequest): Promise<Lookup> {
    const key = cacheKey(handle)
    const { params } = asked
    const known = peekEntry(handle, params.bypassCache, key)
    if (known !== undefined) {
      if (known.cached) count.hit.inc()
      return known.lookup
    }
    const passed = asked.admit === undefined ? undefined : await asked.admit()
    const cached = cache.peek(key)
    const pending = turns.ask(handle, key, params, passed)
    try {
      const answer = await within(pending, passed?.deadline, upstreamErrors.deadline)
      return toLookup(answer, missStatus(params), turns.entryForTaker(key, answer))
    } catch (err) {
      // The shared tier may have left an expired copy meanwhile (behaviour.md §11).
      const stale = staleStandIn(handle, err, cached ?? cache.peek(key)) ?? copyStandIn(handle, key, err)
      if (stale !== undefined) return stale
      throw err
    }
  }

  /** A stale record standing in for a failed or late lookup (behaviour.md §3, §9), or undefined. */
  function staleStandIn(handle: string, err: unknown, fallback: CachedAnswer | undefined): Lookup | undefined {
    if (!(err instanceof UpstreamError) || !err.staleable || fallback?.kind !== 'found') return undefined
    if (now() > staleUntil(fallback, opts.freshness)) return undefined
    count.stale.inc()
    opts.onStale?.(handle, err)
    return { kind: 'found', values: fallback.values, cache: 'STALE' }
  }

  /** The registry copy's record, whatever its age, standing in for a failed or late lookup (plan-43 §1.7), or undefined. */
  function copyStandIn(handle: string, key: string, err: unknown): Lookup | undefined {
    if (opts.copy === undefined || !(err instanceof UpstreamError) || !err.staleable) return undefined
    const values = opts.copy.standIn(handle, key)
    if (values === undefined) return undefined
    count.stale.inc()
    opts.onStale?.(handle, err)
    return { kind: 'found', values, cache: 'STALE' }
  }

  return {
    lookup,
    // The chain's own promise, not an async wrapper's: no more work per request than a method of its own.
    followAliases: (handle: string, asked: LookupRequest): Promise<ChainResult> => followAliases(lookup, handle, asked),
    atTheDoor: atHand.atTheDoor,
    needsUpstream: atHand.needsUpstream,
    knowsAbsence: atHand.knowsAbsence,
    countHit: () => count.hit.inc(),
    /** A work the door answered from the registry copy (doi_proxy_copy_lookups_total): see atTheDoor. */
    countCopyHit: () => opts.copy?.countHit(),
    attach: (handle: string, entry: CachedAnswer, add: (work: EntryWork) => number | undefined) =>
      cache.attach(cacheKey(handle), entry, add)
  }
}

export type Resolver = ReturnType<typeof createResolver>

/**
 * What answers without waiting, read synchronously: a local record (which stands in front of the cache),
 * a fresh cache entry, or the registry copy. `atTheDoor` is the hot path's (src/http/prepared-answers.ts): no Lookup built.
 */
function recordsAtHand(opts: ResolverOptions, refreshInBackground: (handle: string, key: string) => void) {
  const { cache, now, copy } = opts

  /**
   * The answer when it is at hand without waiting: a local record, a fresh cache entry (unless the
   * request bypasses the cache), or the registry copy's record (offline, its absence too); `cached` says it
   * came from the cache. Undefined when the upstream must be asked.
   */
  function peekEntry(handle: string, bypassCache: boolean, key = cacheKey(handle)): { lookup: Lookup; cached: boolean } | undefined {
    const local = localAnswer(handle, key)
    if (local !== undefined) return { lookup: local, cached: false }
    if (!bypassCache) {
      const entry = freshEntry(handle, key)
      if (entry !== undefined) {
        const lookup: Lookup =
          entry.kind === 'found' ? { kind: 'found', values: entry.values, cache: 'HIT', entry } : { kind: 'not-found', cache: 'HIT', entry }
        return { lookup, cached: true }
      }
    }
    // Bypassing the cache online asks the upstream; offline the copy is all there is.
    if (copy === undefined || (bypassCache && opts.upstream !== undefined)) return undefined
    return copyAnswer(opts.upstream !== undefined, copy, handle, key)
  }

  /**
   * The answer when the cache (and the upstream behind it) does not answer for a handle: a local record
   * stands in front of it, or its prefix is served only locally (read at every request: a reload shows
   * at once, behaviour.md §3), or there is no upstream at all. Undefined when the cache answers.
   */
  function localAnswer(handle: string, key: string): Lookup | undefined {
    if (opts.local !== undefined) {
      const values = opts.local.get(handle, key)
      if (values !== undefined) return { kind: 'found', values, cache: 'HIT' }
      if (opts.local.isAuthoritative(handle, key)) return { kind: 'not-found', cache: 'HIT' }
    }
    // Offline with a registry copy, the cache (its records) and the copy answer next.
    return opts.upstream === undefined && copy === undefined ? { kind: 'not-found', cache: 'HIT' } : undefined
  }

  /** The fresh cache entry of a handle, starting a background refresh when it is in its last tenth of life. */
  function freshEntry(handle: string, key = cacheKey(handle)): CachedAnswer | undefined {
    const entry = cache.peek(key)
    const at = now()
    if (entry === undefined || !isFresh(entry, at)) return undefined
    if (opts.refreshAhead === true && entry.kind === 'found' && at > entry.freshUntil - (entry.freshUntil - entry.storedAt) / 10) {
      refreshInBackground(handle, key)
    }
    return entry
  }

  /** Whether a lookup must ask the upstream: there is one, no local record answers, no fresh entry, nor the registry copy. */
  function needsUpstream(handle: string, key = cacheKey(handle)): boolean {
    if (opts.upstream === undefined) return false
    return (
      localAnswer(handle, key) === undefined &&
      freshEntry(handle, key) === undefined &&
      (copy === undefined || copy.peek(handle, key, false).kind !== 'found')
    )
  }

  /**
   * Whether a "not found" for this handle is known to be true: always with an upstream; offline only for
   * a prefix served only locally (LOCAL_AUTHORITATIVE_PREFIXES). Offline, any other handle not held may
   * well exist: its absence here says nothing about the DOI.
   */
  function knowsAbsence(handle: string, key = cacheKey(handle)): boolean {
    return opts.upstream !== undefined || opts.local?.isAuthoritative(handle, key) === true
  }

  /**
   * What the door (src/http/prepared-answers.ts) may answer a plain request from, in peekEntry's order: the
   * fresh cache entry, else the URL of a work the registry copy answers for now; undefined when a local
   * record stands in front of the cache, or neither answers. Not counted: see countHit, and the copy's own.
   */
  function atTheDoor(handle: string, key = cacheKey(handle)): CachedAnswer | CopyWork | undefined {
    // No Lookup built, as peekEntry builds: this runs for every prepared answer.
    if (localAnswer(handle, key) !== undefined) return undefined
    const entry = freshEntry(handle, key)
    if (entry !== undefined || copy === undefined) return entry
    const url = copy.workUrl(handle, key)
    return url === undefined ? undefined : { kind: 'copy', url }
  }

  return { peekEntry, needsUpstream, knowsAbsence, atTheDoor }
}

/**
 * The registry copy's answer (plan-43 §1.7), read at every request and never kept in the record cache: the
 * copy is memory-mapped, so a read costs what a cache lookup does, and the cache's memory does not grow
 * with the DOIs asked of it (docs/architecture.md). Offline, an absence with its words. Undefined online
 * when the copy does not answer (absent, too old): the upstream is asked.
 */
function copyAnswer(online: boolean, copy: CopyTier, handle: string, key: string): { lookup: Lookup; cached: boolean } | undefined {
  const found = copy.peek(handle, key)
  if (found.kind === 'found') return { lookup: { kind: 'found', values: found.values, cache: 'COPY' }, cached: false }
  if (online) return undefined
  return { lookup: { kind: 'not-found', cache: 'HIT', absence: copy.absence(handle, key) }, cached: false }
}

/** Follow HS_ALIAS values from `handle` (behaviour.md §3), at most MAX_ALIAS_HOPS hops, each looked up as `asked`. */
async function followAliases(lookup: Resolver['lookup'], handle: string, asked: LookupRequest): Promise<ChainResult> {
  let current = handle
  let worst: CacheStatus = 'HIT'
  const aliasValues: HandleValue[] = []
  for (let hops = 0; ; hops++) {
    const result = await lookup(current, asked)
    worst = worse(worst, result.cache)
    if (result.kind === 'not-found') {
      return { kind: 'not-found', handle: current, hops, cache: worst, entry: result.entry, absence: result.absence }
    }
    const target = aliasTarget(result.values)
    if (target === undefined) {
      return { kind: 'found', handle: current, values: result.values, hops, aliasValues, cache: worst, entry: result.entry }
    }
    if (hops >= MAX_ALIAS_HOPS) return { kind: 'alias-chain-too-long', handle, cache: worst }
    const aliasValue = result.values.find((v) => isType(v, 'HS_ALIAS'))
    if (aliasValue !== undefined) aliasValues.push(aliasValue)
    current = target
  }
}

/**
 * The cache entry an answer's work may be kept with (its prepared answers, its 10320/loc plans), or
 * undefined: a record from the cache or just fetched (not stale, not bypassed), reached without an alias,
 * that came with its entry (not a local record; a fetched one from its first repeat on, see entryForTaker).
 * The one rule for the proxy (proxy-service.ts) and the REST API (http/routes/api.ts).
 */
export function reusableEntry(answer: { cache: CacheStatus; entry?: CachedAnswer | undefined; hops?: number }): CachedAnswer | undefined {
  return (answer.cache === 'HIT' || answer.cache === 'MISS') && (answer.hops ?? 0) === 0 ? answer.entry : undefined
}

function toLookup(answer: UpstreamAnswer, cache: CacheStatus, entry?: CachedAnswer): Lookup {
  return answer.kind === 'found' ? { kind: 'found', values: answer.record.values, cache, entry } : { kind: 'not-found', cache, entry }
}

const RANK: Record<CacheStatus, number> = { HIT: 0, COPY: 1, MISS: 2, BYPASS: 3, STALE: 4 }
function worse(a: CacheStatus, b: CacheStatus): CacheStatus {
  return RANK[b] > RANK[a] ? b : a
}
