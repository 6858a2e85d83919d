import type { HandleValue } from '../handle/types.js'
import { cacheKey } from '../handle/name.js'
import { aliasTarget, recordCacheSeconds } from '../handle/record.js'
import { boundedMemo } from '../handle/memo.js'
import type { Metrics } from '../metrics.js'
import type { RecordCache, CachedAnswer } from './cache.js'
import { UpstreamError } from './errors.js'
import type { UpstreamAnswer, UpstreamClient } from './upstream.js'

export type CacheStatus = 'HIT' | 'MISS' | 'STALE' | 'BYPASS'

export type Lookup =
  | { kind: 'found', values: HandleValue[], cache: CacheStatus }
  | { kind: 'not-found', cache: CacheStatus }

/** The end of an alias chain: the record of the last handle, and how many HS_ALIAS hops led there. */
export type ChainResult =
  | { kind: 'found', handle: string, values: HandleValue[], hops: number, aliasValues: HandleValue[], cache: CacheStatus }
  | { kind: 'not-found', handle: string, hops: number, cache: CacheStatus }
  | { kind: 'alias-chain-too-long', handle: string, cache: CacheStatus }

export interface LookupOptions {
  /** Bypass the cache, ask the upstream authoritatively, refresh the cache (DECISIONS §3). */
  auth?: boolean
  /** Passed through upstream; like auth it cannot be answered from the cache. */
  cert?: boolean
}

/** Records held locally (src/resolve/local-store.ts), consulted before the cache and the upstream. */
export interface LocalRecords {
  get (handle: string): HandleValue[] | undefined
  isAuthoritative (handle: string): boolean
}

export interface ResolverOptions {
  /** Undefined in offline mode: only local records answer. */
  upstream: UpstreamClient | undefined
  local?: LocalRecords | undefined
  cache: RecordCache
  metrics: Metrics
  now: () => number
  maxTtlSeconds: number
  minTtlSeconds: number
  negativeTtlSeconds: number
  maxStaleMs: number
  /** Refresh a record in the background when it is asked for in the last tenth of its lifetime. */
  refreshAhead?: boolean
  onStale?: (handle: string, err: UpstreamError) => void
  onRefreshError?: (handle: string, err: unknown) => void
}

// DECISIONS §3 / reference §2: more than 20 hops is "Alias chain too long"; a loop is a chain that is too long.
export const MAX_ALIAS_HOPS = 20

/**
 * Gets handle records: cache → upstream, one upstream request for concurrent misses of a key,
 * stale answers when the upstream fails. Knows nothing about HTTP requests from clients.
 */
export function createResolver (opts: ResolverOptions) {
  const { cache, metrics, now } = opts
  // Label children bound once: the hot path only increments.
  const count = {
    hit: metrics.cache.labels('hit'),
    bypass: metrics.cache.labels('bypass'),
    miss: metrics.cache.labels('miss'),
    shared: metrics.cache.labels('shared'),
    stale: metrics.cache.labels('stale')
  }
  const inflight = new Map<string, Promise<{ answer: UpstreamAnswer, stale: boolean }>>()

  function store (key: string, answer: UpstreamAnswer): void {
    const storedAt = now()
    if (answer.kind === 'found') {
      const seconds = recordCacheSeconds(answer.record.values, storedAt, { maxSeconds: opts.maxTtlSeconds, floorSeconds: opts.minTtlSeconds })
      cache.set(key, { kind: 'found', values: compactValues(answer.record.values), storedAt, freshUntil: storedAt + seconds * 1000 })
    } else if (opts.negativeTtlSeconds > 0) {
      cache.set(key, { kind: 'not-found', storedAt, freshUntil: storedAt + opts.negativeTtlSeconds * 1000 })
    } else {
      cache.delete(key)
    }
  }

  async function fromUpstream (handle: string, key: string, flags: LookupOptions, fallback: CachedAnswer | undefined) {
    const upstream = opts.upstream
    if (upstream === undefined) return { answer: { kind: 'not-found' } as UpstreamAnswer, stale: false }
    const started = performance.now()
    try {
      const answer = await upstream.fetchRecord(handle, flags)
      metrics.upstreamDuration.observe({ outcome: answer.kind === 'found' ? 'found' : 'not_found' }, (performance.now() - started) / 1000)
      store(key, answer)
      return { answer, stale: false }
    } catch (err) {
      metrics.upstreamDuration.observe({ outcome: 'error' }, (performance.now() - started) / 1000)
      if (!(err instanceof UpstreamError)) throw err
      metrics.upstreamErrors.inc({ code: err.code })
      if (err.staleable && fallback?.kind === 'found' && now() - fallback.freshUntil <= opts.maxStaleMs) {
        opts.onStale?.(handle, err)
        return { answer: { kind: 'found', record: { handle, values: fallback.values } } as UpstreamAnswer, stale: true }
      }
      throw err
    }
  }

  /**
   * The answer when it is at hand without waiting: a local record, or a fresh cache entry (the hot
   * path, kept synchronous); `cached` says it came from the cache. Undefined when the upstream must be asked.
   */
  function peekEntry (handle: string, flags: LookupOptions): { lookup: Lookup, cached: boolean } | undefined {
    // Local records are neither cached nor fetched: a reload shows at once (DECISIONS §3).
    if (opts.local !== undefined) {
      const values = opts.local.get(handle)
      if (values !== undefined) return { lookup: { kind: 'found', values, cache: 'HIT' }, cached: false }
      if (opts.local.isAuthoritative(handle)) return { lookup: { kind: 'not-found', cache: 'HIT' }, cached: false }
    }
    if (opts.upstream === undefined) return { lookup: { kind: 'not-found', cache: 'HIT' }, cached: false }
    if (flags.auth === true || flags.cert === true) return undefined
    const key = cacheKey(handle)
    const entry = cache.peek(key)
    const at = now()
    if (entry === undefined || entry.freshUntil <= at) return undefined
    if (opts.refreshAhead === true && entry.kind === 'found' && at > entry.freshUntil - (entry.freshUntil - entry.storedAt) / 10) {
      refreshInBackground(handle, key, entry)
    }
    const lookup: Lookup = entry.kind === 'found' ? { kind: 'found', values: entry.values, cache: 'HIT' } : { kind: 'not-found', cache: 'HIT' }
    return { lookup, cached: true }
  }

  function peek (handle: string, flags: LookupOptions = {}): Lookup | undefined {
    const known = peekEntry(handle, flags)
    if (known?.cached === true) count.hit.inc()
    return known?.lookup
  }

  async function lookup (handle: string, flags: LookupOptions = {}): Promise<Lookup> {
    const known = peek(handle, flags)
    if (known !== undefined) return known
    const key = cacheKey(handle)
    const cached = cache.peek(key)
    const bypass = flags.auth === true || flags.cert === true
    if (bypass) {
      count.bypass.inc()
      const { answer, stale } = await fromUpstream(handle, key, flags, cached)
      return toLookup(answer, stale ? 'STALE' : 'BYPASS')
    }
    let pending = inflight.get(key)
    if (pending === undefined) {
      count.miss.inc()
      pending = fromUpstream(handle, key, {}, cached).finally(() => inflight.delete(key))
      inflight.set(key, pending)
    } else {
      count.shared.inc()
    }
    const { answer, stale } = await pending
    if (stale) count.stale.inc()
    return toLookup(answer, stale ? 'STALE' : 'MISS')
  }

  /** Stale-while-revalidate: one background refresh per key; a failure keeps the current entry. */
  function refreshInBackground (handle: string, key: string, cached: CachedAnswer): void {
    if (inflight.has(key)) return
    const pending = fromUpstream(handle, key, {}, cached).finally(() => inflight.delete(key))
    inflight.set(key, pending)
    pending.catch((err: unknown) => opts.onRefreshError?.(handle, err))
  }

  /** Follow HS_ALIAS values from `handle` (DECISIONS §3), at most MAX_ALIAS_HOPS hops. */
  async function followAliases (handle: string, flags: LookupOptions = {}): Promise<ChainResult> {
    return await walkAliases(handle, async (h) => await lookup(h, flags))
  }

  /** The same walk when every record on it is at hand; undefined as soon as one must be fetched. */
  function peekAliases (handle: string, flags: LookupOptions = {}): ChainResult | undefined {
    // Hits are counted only when the whole walk was at hand; otherwise followAliases counts them.
    let hits = 0
    const result = walkAliasesSync(handle, (h) => {
      const known = peekEntry(h, flags)
      if (known?.cached === true) hits++
      return known?.lookup
    })
    if (result !== undefined && hits > 0) count.hit.inc(hits)
    return result
  }

  return { lookup, peek, followAliases, peekAliases }
}

export type Resolver = ReturnType<typeof createResolver>

/**
 * The alias walk (DECISIONS §3) as a generator: it yields each handle it needs and is given that
 * handle's lookup, so one walk serves both the synchronous and the asynchronous driver.
 */
function * aliasWalk (handle: string): Generator<string, ChainResult, Lookup> {
  let current = handle
  let worst: CacheStatus = 'HIT'
  const aliasValues: HandleValue[] = []
  for (let hops = 0; ; hops++) {
    const result = yield current
    worst = worse(worst, result.cache)
    if (result.kind === 'not-found') return { kind: 'not-found', handle: current, hops, cache: worst }
    const target = aliasTarget(result.values)
    if (target === undefined) return { kind: 'found', handle: current, values: result.values, hops, aliasValues, cache: worst }
    if (hops >= MAX_ALIAS_HOPS) return { kind: 'alias-chain-too-long', handle, cache: worst }
    const aliasValue = result.values.find((v) => v.type.toUpperCase() === 'HS_ALIAS')
    if (aliasValue !== undefined) aliasValues.push(aliasValue)
    current = target
  }
}

async function walkAliases (handle: string, find: (h: string) => Promise<Lookup>): Promise<ChainResult> {
  const walk = aliasWalk(handle)
  let step = walk.next()
  while (step.done !== true) step = walk.next(await find(step.value))
  return step.value
}

function walkAliasesSync (handle: string, find: (h: string) => Lookup | undefined): ChainResult | undefined {
  const walk = aliasWalk(handle)
  let step = walk.next()
  while (step.done !== true) {
    const result = find(step.value)
    if (result === undefined) return undefined
    step = walk.next(result)
  }
  return step.value
}

function toLookup (answer: UpstreamAnswer, cache: CacheStatus): Lookup {
  return answer.kind === 'found' ? { kind: 'found', values: answer.record.values, cache } : { kind: 'not-found', cache }
}

// Strings that repeat across records (types, formats, timestamps, admin handles) are kept once: a
// cached record then costs its distinct data only. Bounded; emptied when full.
const intern = boundedMemo(50_000, (s: string) => s)

/** Share repeated strings of freshly parsed values before they are cached (the values are ours to change). */
function compactValues (values: HandleValue[]): HandleValue[] {
  for (const v of values) {
    v.type = intern(v.type)
    if (typeof v.timestamp === 'string') v.timestamp = intern(v.timestamp)
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
