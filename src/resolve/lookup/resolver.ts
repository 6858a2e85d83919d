import type { HandleValue } from '../../handle/types.js'
import { isType } from '../../handle/types.js'
import { cacheKey } from '../../handle/name.js'
import { isFresh, staleUntil } from '../../handle/freshness.js'
import type { FreshnessPolicy } from '../../handle/freshness.js'
import { aliasTarget } from '../../handle/record.js'
import type { Metrics } from '../../observe/metrics.js'
import { entryOf } from '../cache/entry.js'
import type { RecordCache } from '../cache/record-cache.js'
import type { CachedAnswer } from '../cache/entry.js'
import type { EntryWork } from '../cache/entry-work.js'
import { upstreamErrors, UpstreamError } from '../upstream/errors.js'
import type { FairQueue } from '../upstream/fair-queue.js'
import type { LookupOptions, RecordFetcher } from '../upstream/fetcher.js'
import type { LocalRecords } from '../local-store/store.js'
import type { UpstreamAnswer } from '../upstream/client.js'
import { within } from '../upstream/deadline.js'

export type CacheStatus = 'HIT' | 'MISS' | 'STALE' | 'BYPASS'

/**
 * A record or its absence; `entry` is the cache entry it came from, for keeping work with it: given with
 * every hit, and with a miss that shared its upstream answer with another lookup.
 */
export type Lookup =
  | { kind: 'found', values: HandleValue[], cache: CacheStatus, entry?: CachedAnswer | undefined }
  | { kind: 'not-found', cache: CacheStatus, entry?: CachedAnswer | undefined }

/** The end of an alias chain: the record of the last handle, and how many HS_ALIAS hops led there. */
export type ChainResult =
  | { kind: 'found', handle: string, values: HandleValue[], hops: number, aliasValues: HandleValue[], cache: CacheStatus, entry?: CachedAnswer | undefined }
  | { kind: 'not-found', handle: string, hops: number, cache: CacheStatus, entry?: CachedAnswer | undefined }
  | { kind: 'alias-chain-too-long', handle: string, cache: CacheStatus }

export interface ResolverOptions {
  /** Undefined in offline mode: only local records answer. */
  upstream: RecordFetcher | undefined
  /** Upstream-bound work waits here, per client, for its turn (behaviour.md §9). None: no bound (tools, tests). */
  queue?: FairQueue | undefined
  local?: LocalRecords | undefined
  cache: RecordCache
  metrics: Metrics
  now: () => number
  /** How long an answer is fresh, and kept to stand in (src/handle/freshness.ts). */
  freshness: FreshnessPolicy
  /** Refresh a record in the background when it is asked for in the last tenth of its lifetime. */
  refreshAhead?: boolean
  onStale?: (handle: string, err: UpstreamError) => void
  onRefreshError?: (handle: string, err: unknown) => void
}

// behaviour.md §3 / behaviour.md R2: more than 20 hops is "Alias chain too long"; a loop is a chain that is too long.
export const MAX_ALIAS_HOPS = 20

/**
 * Gets handle records: cache → upstream, one upstream request for concurrent misses of a key,
 * stale answers when the upstream fails. Knows nothing about HTTP requests from clients, only
 * the ticket of who asks. A miss joins an upstream request already running for its key at once
 * (whoever started it: no reader waits in another's queue for a record on its way), or its own
 * client's lookup of the key; otherwise it asks the shared tier, then waits its client's turn in
 * the fair queue, and on its turn takes what arrived meanwhile (a request another client started,
 * a fresh record) before asking the upstream itself.
 */
export function createResolver (opts: ResolverOptions) {
  const { cache, metrics, now } = opts
  // Label children bound once: the hot path only increments.
  const count = {
    hit: metrics.cache.tally({ result: 'hit' }),
    bypass: metrics.cache.tally({ result: 'bypass' }),
    miss: metrics.cache.tally({ result: 'miss' }),
    shared: metrics.cache.tally({ result: 'shared' }),
    stale: metrics.cache.tally({ result: 'stale' })
  }
  // The upstream request running for a key, whoever started it; and each client's lookup of a key,
  // queued or running, so one client's concurrent misses of a key take one turn.
  const fetching = new Map<string, Promise<UpstreamAnswer>>()
  const waiting = new Map<string, Promise<UpstreamAnswer>>()
  // How many lookups took each upstream answer (gone with the answer).
  const takersOf = new WeakMap<UpstreamAnswer, number>()

  function store (key: string, answer: UpstreamAnswer): void {
    // An entry another replica stored (the shared tier, behaviour.md §11) keeps its own times.
    const stored = (answer as { stored?: CachedAnswer }).stored
    if (stored !== undefined) {
      cache.restore(key, stored, now())
      return
    }
    const entry = entryOf(answer, now(), opts.freshness)
    if (entry === undefined) {
      cache.delete(key)
      return
    }
    if (entry.kind === 'found') compactValues(entry.values)
    cache.set(key, entry)
  }

  async function fromUpstream (handle: string, key: string, flags: LookupOptions): Promise<UpstreamAnswer> {
    const upstream = opts.upstream
    if (upstream === undefined) return { kind: 'not-found' }
    const started = performance.now()
    try {
      const answer = await upstream.fetchRecord(handle, flags)
      metrics.upstreamDuration.observe({ outcome: answer.kind === 'found' ? 'found' : 'not_found' }, (performance.now() - started) / 1000)
      store(key, answer)
      return answer
    } catch (err) {
      metrics.upstreamDuration.observe({ outcome: 'error' }, (performance.now() - started) / 1000)
      if (err instanceof UpstreamError) metrics.upstreamErrors.inc({ code: err.code })
      throw err
    }
  }

  /** A stale record standing in for a failed or late lookup (behaviour.md §3, §9), or undefined. */
  function staleStandIn (handle: string, err: unknown, fallback: CachedAnswer | undefined): Lookup | undefined {
    if (!(err instanceof UpstreamError) || !err.staleable || fallback?.kind !== 'found') return undefined
    if (now() > staleUntil(fallback, opts.freshness)) return undefined
    count.stale.inc()
    opts.onStale?.(handle, err)
    return { kind: 'found', values: fallback.values, cache: 'STALE' }
  }

  /**
   * The answer when it is at hand without waiting: a local record, or a fresh cache entry (the hot
   * path, kept synchronous); `cached` says it came from the cache. Undefined when the upstream must be asked.
   */
  function peekEntry (handle: string, flags: LookupOptions, key = cacheKey(handle)): { lookup: Lookup, cached: boolean } | undefined {
    const local = localAnswer(handle, key)
    if (local !== undefined) return { lookup: local, cached: false }
    if (flags.bypassCache === true) return undefined
    const entry = freshEntry(handle, key)
    if (entry === undefined) return undefined
    const lookup: Lookup = entry.kind === 'found' ? { kind: 'found', values: entry.values, cache: 'HIT', entry } : { kind: 'not-found', cache: 'HIT', entry }
    return { lookup, cached: true }
  }

  /**
   * The answer when the cache (and the upstream behind it) does not answer for a handle: a local record
   * stands in front of it, or its prefix is served only locally (read at every request: a reload shows
   * at once, behaviour.md §3), or there is no upstream at all. Undefined when the cache answers.
   */
  function localAnswer (handle: string, key: string): Lookup | undefined {
    if (opts.local !== undefined) {
      const values = opts.local.get(handle, key)
      if (values !== undefined) return { kind: 'found', values, cache: 'HIT' }
      if (opts.local.isAuthoritative(handle, key)) return { kind: 'not-found', cache: 'HIT' }
    }
    return opts.upstream === undefined ? { kind: 'not-found', cache: 'HIT' } : undefined
  }

  /** The fresh cache entry of a handle, starting a background refresh when it is in its last tenth of life. */
  function freshEntry (handle: string, key = cacheKey(handle)): CachedAnswer | undefined {
    const entry = cache.peek(key)
    const at = now()
    if (entry === undefined || !isFresh(entry, at)) return undefined
    if (opts.refreshAhead === true && entry.kind === 'found' && at > entry.freshUntil - (entry.freshUntil - entry.storedAt) / 10) {
      refreshInBackground(handle, key)
    }
    return entry
  }

  /** Whether a lookup must ask the upstream: no local record answers (nor offline's absence), and no fresh entry. */
  function needsUpstream (handle: string, key = cacheKey(handle)): boolean {
    return localAnswer(handle, key) === undefined && freshEntry(handle, key) === undefined
  }

  /**
   * Whether a "not found" for this handle is known to be true: always with an upstream; offline only for
   * a prefix served only locally (LOCAL_AUTHORITATIVE_PREFIXES). Offline, any other handle not held may
   * well exist: its absence here says nothing about the DOI.
   */
  function knowsAbsence (handle: string, key = cacheKey(handle)): boolean {
    return opts.upstream !== undefined || opts.local?.isAuthoritative(handle, key) === true
  }

  /**
   * The fresh cache entry that answers a handle, for the hot path's prepared answers; undefined when a
   * local record stands in front of the cache or there is no upstream. Not counted: see countHit.
   */
  function cachedAnswer (handle: string, key = cacheKey(handle)): CachedAnswer | undefined {
    // No Lookup built when the cache answers, as peekEntry does: this runs for every prepared answer.
    return localAnswer(handle, key) === undefined ? freshEntry(handle, key) : undefined
  }

  /** A record or its absence: at hand (local, cached), or from the upstream once the request is admitted. */
  async function lookup (handle: string, asked: LookupOptions = {}): Promise<Lookup> {
    const key = cacheKey(handle)
    const known = peekEntry(handle, asked, key)
    if (known !== undefined) {
      if (known.cached) count.hit.inc()
      return known.lookup
    }
    const flags = asked.admit === undefined ? asked : { ...asked, ...(await asked.admit()) }
    const cached = cache.peek(key)
    const bypass = flags.bypassCache === true
    let pending: Promise<UpstreamAnswer>
    if (bypass) {
      count.bypass.inc()
      pending = takeTurn(handle, key, flags, NO_JOIN)
    } else {
      pending = joinOrQueue(handle, key, flags)
    }
    try {
      const answer = await within(pending, flags.deadline, upstreamErrors.deadline)
      // The entry goes with a miss only from the record's second taker on (joined lookups, a storm): work
      // is kept with a record from its first repeat, so one asked for once costs the cache its values alone.
      const takers = (takersOf.get(answer) ?? 0) + 1
      takersOf.set(answer, takers)
      return toLookup(answer, bypass ? 'BYPASS' : 'MISS', takers > 1 ? storedEntry(key, answer) : undefined)
    } catch (err) {
      // The shared tier may have left an expired copy meanwhile (behaviour.md §11).
      const stale = staleStandIn(handle, err, cached ?? cache.peek(key))
      if (stale !== undefined) return stale
      throw err
    }
  }

  /** Join the upstream request running for the key, or this client's own lookup of it, or queue a new one. */
  function joinOrQueue (handle: string, key: string, flags: LookupOptions, join = JOIN): Promise<UpstreamAnswer> {
    const running = fetching.get(key)
    if (running !== undefined) {
      count.shared.inc()
      return running
    }
    const mine = `${key}\u0000${flags.client?.key ?? ''}`
    let pending = waiting.get(mine)
    if (pending !== undefined) {
      count.shared.inc()
      return pending
    }
    count.miss.inc()
    pending = takeTurn(handle, key, flags, join).finally(() => waiting.delete(mine))
    // Everyone may have stopped waiting (deadlines): the outcome is still stored, never an unhandled rejection.
    pending.catch(() => {})
    waiting.set(mine, pending)
    return pending
  }

  /**
   * Wait for this client's turn, then fetch; first take what arrived meanwhile, as `join` allows: an
   * upstream request another client started for the key, or the fresh record it already stored.
   */
  async function takeTurn (handle: string, key: string, flags: LookupOptions, join: Join): Promise<UpstreamAnswer> {
    // Without a shared tier, no await at all: each one is a turn of the microtask queue on every miss.
    const shared = join.running && opts.upstream?.fromShared !== undefined ? await opts.upstream.fromShared(handle) : undefined
    if (shared !== undefined) {
      store(key, shared)
      return shared
    }
    opts.upstream?.assertOpen?.(handle)
    const release = opts.queue === undefined || opts.upstream === undefined ? noop : await opts.queue.acquire(flags.client, flags.deadline)
    const running = join.running ? fetching.get(key) : undefined
    const entry = join.fresh && running === undefined ? cache.peek(key) : undefined
    if (running !== undefined || (entry !== undefined && isFresh(entry, now()))) {
      release()
      return running ?? answerOf(handle, entry!)
    }
    const fetch = fromUpstream(handle, key, flags).finally(() => {
      if (fetching.get(key) === fetch) fetching.delete(key)
      release()
    })
    fetch.catch(() => {})
    if (join.running) fetching.set(key, fetch)
    return await fetch
  }

  /** Stale-while-revalidate: one background refresh per key; a failure keeps the current entry. */
  function refreshInBackground (handle: string, key: string): void {
    if (fetching.has(key)) return
    // The entry is still fresh (that is why it is being refreshed): do not take it for the answer.
    joinOrQueue(handle, key, {}, REFRESH).catch((err: unknown) => opts.onRefreshError?.(handle, err))
  }

  /** Follow HS_ALIAS values from `handle` (behaviour.md §3), at most MAX_ALIAS_HOPS hops. */
  async function followAliases (handle: string, flags: LookupOptions = {}): Promise<ChainResult> {
    let current = handle
    let worst: CacheStatus = 'HIT'
    const aliasValues: HandleValue[] = []
    for (let hops = 0; ; hops++) {
      const result = await lookup(current, flags)
      worst = worse(worst, result.cache)
      if (result.kind === 'not-found') return { kind: 'not-found', handle: current, hops, cache: worst, entry: result.entry }
      const target = aliasTarget(result.values)
      if (target === undefined) return { kind: 'found', handle: current, values: result.values, hops, aliasValues, cache: worst, entry: result.entry }
      if (hops >= MAX_ALIAS_HOPS) return { kind: 'alias-chain-too-long', handle, cache: worst }
      const aliasValue = result.values.find((v) => isType(v, 'HS_ALIAS'))
      if (aliasValue !== undefined) aliasValues.push(aliasValue)
      current = target
    }
  }

  /** The entry just stored for an answer, if the cache still holds that very record. */
  function storedEntry (key: string, answer: UpstreamAnswer): CachedAnswer | undefined {
    const entry = cache.peek(key)
    if (entry === undefined) return undefined
    return entry.kind === 'found' ? (answer.kind === 'found' && entry.values === answer.record.values ? entry : undefined) : (answer.kind === 'not-found' ? entry : undefined)
  }

  return { lookup, followAliases, cachedAnswer, needsUpstream, knowsAbsence, countHit: () => count.hit.inc(), attach: (handle: string, entry: CachedAnswer, add: (work: EntryWork) => number | undefined) => cache.attach(cacheKey(handle), entry, add) }
}

export type Resolver = ReturnType<typeof createResolver>

function noop (): void {}

/** What a lookup may take instead of asking the upstream itself, once its turn comes. */
interface Join { running: boolean, fresh: boolean }
const JOIN: Join = { running: true, fresh: true }
const REFRESH: Join = { running: true, fresh: false }
const NO_JOIN: Join = { running: false, fresh: false } // bypassCache: the upstream must be asked

function answerOf (handle: string, entry: CachedAnswer): UpstreamAnswer {
  return entry.kind === 'found' ? { kind: 'found', record: { handle, values: entry.values } } : { kind: 'not-found' }
}

function toLookup (answer: UpstreamAnswer, cache: CacheStatus, entry?: CachedAnswer): Lookup {
  return answer.kind === 'found' ? { kind: 'found', values: answer.record.values, cache, entry } : { kind: 'not-found', cache, entry }
}

// Strings that repeat across records (types, formats, admin handles, permissions) are kept once: a
// cached record then costs its distinct data only. A plain Map of these few distinct strings, emptied if
// a hostile upstream ever makes it large. Timestamps are too many to keep so (nearly one per record,
// each a lookup that misses): they are shared within a record, whose values mostly have the same one.
const INTERNED_MAX = 10_000
const interned = new Map<string, string>()
function intern (s: string): string {
  const known = interned.get(s)
  if (known !== undefined) return known
  if (interned.size >= INTERNED_MAX) interned.clear()
  interned.set(s, s)
  return s
}

/** Share repeated strings of freshly parsed values before they are cached (the values are ours to change). */
function compactValues (values: HandleValue[]): HandleValue[] {
  let timestamp: string | undefined
  for (const v of values) {
    v.type = intern(v.type)
    if (typeof v.timestamp === 'string') {
      if (v.timestamp === timestamp) v.timestamp = timestamp
      else timestamp = v.timestamp
    }
    if (v.data !== null && typeof v.data === 'object') {
      v.data.format = intern(v.data.format)
      const admin = v.data.value as { handle?: unknown, permissions?: unknown } | null
      if (admin !== null && typeof admin === 'object') {
        if (typeof admin.handle === 'string') admin.handle = intern(admin.handle)
        if (typeof admin.permissions === 'string') admin.permissions = intern(admin.permissions)
      }
    }
  }
  return values
}

const RANK: Record<CacheStatus, number> = { HIT: 0, MISS: 1, BYPASS: 2, STALE: 3 }
function worse (a: CacheStatus, b: CacheStatus): CacheStatus {
  return RANK[b] > RANK[a] ? b : a
}
