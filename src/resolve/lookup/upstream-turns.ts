import type { HandleValue } from '../../handle/types.js'
import { isFresh } from '../../handle/freshness.js'
import type { FreshnessPolicy } from '../../handle/freshness.js'
import { PLAIN_LOOKUP } from '../../handle/lookup-params.js'
import type { LookupParams } from '../../handle/lookup-params.js'
import type { Metrics, Tally } from '../../observe/metrics.js'
import { entryOf } from '../cache/entry.js'
import type { CachedAnswer } from '../cache/entry.js'
import type { RecordCache } from '../cache/record-cache.js'
import { UpstreamError } from '../upstream/errors.js'
import type { FairQueue } from '../upstream/fair-queue.js'
import type { Passed, RecordFetcher } from '../upstream/fetcher.js'
import type { UpstreamAnswer } from '../upstream/client.js'

export interface UpstreamTurnsOptions {
  /** Undefined in offline mode: nothing is fetched. */
  upstream: RecordFetcher | undefined
  /** Upstream-bound work waits here, per client, for its turn (behaviour.md §9). None: no bound (tools, tests). */
  queue?: FairQueue | undefined
  /** Where every answer is stored, and what arrived meanwhile is found. */
  cache: RecordCache
  metrics: Pick<Metrics, 'upstreamDuration' | 'upstreamErrors'>
  now: () => number
  freshness: FreshnessPolicy
  /** The resolver's tallies, bound once: lookups that joined another, asked on their own, or bypassed the cache. */
  count: { shared: Tally; miss: Tally; bypass: Tally }
  onRefreshError?: ((handle: string, err: unknown) => void) | undefined
  /**
   * Told of each record the upstream itself found and that was stored (a miss, or a refresh; never a hit, nor
   * the shared tier's copy): resolution health's "seen" DOIs (issue 42). `key` is the handle's cacheKey. Must
   * be cheap and never throw: it runs on the lookup's way back.
   */
  onFound?: ((handle: string, key: string) => void) | undefined
}

/**
 * A lookup's way upstream, once nothing at hand answered it (behaviour.md §3, §9): concurrent misses of a
 * key share one upstream request. A miss joins the upstream request running for its key at once (whoever
 * started it: no reader waits in another's queue for a record on its way), or its own client's lookup of
 * the key; otherwise it asks the shared tier, then waits its client's turn in the fair queue, and on its
 * turn takes what arrived meanwhile (a request another client started, a fresh record) before asking the
 * upstream itself. Every answer fetched is stored in the cache.
 */
export function createUpstreamTurns(opts: UpstreamTurnsOptions) {
  const { cache, now, count } = opts
  const { fromUpstream, store } = fetchAndStore(opts)
  // The upstream request running for a key, whoever started it; and each client's lookup of a key,
  // queued or running, so one client's concurrent misses of a key take one turn.
  const fetching = new Map<string, Promise<UpstreamAnswer>>()
  const waiting = new Map<string, Promise<UpstreamAnswer>>()
  const entryForTaker = takerEntries(cache)

  /** The upstream's answer for a lookup: joined, queued, or, when it bypasses the cache, a turn that joins nothing. */
  function ask(handle: string, key: string, params: LookupParams, passed: Passed | undefined): Promise<UpstreamAnswer> {
    if (!params.bypassCache) return joinOrQueue(handle, key, params, passed)
    count.bypass.inc()
    return takeTurn(handle, key, params, passed, NO_JOIN)
  }

  /** Join the upstream request running for the key, or this client's own lookup of it, or queue a new one. */
  function joinOrQueue(
    handle: string,
    key: string,
    params: LookupParams,
    passed: Passed | undefined,
    join = JOIN
  ): Promise<UpstreamAnswer> {
    const running = fetching.get(key)
    if (running !== undefined) {
      count.shared.inc()
      return running
    }
    const mine = `${key}\u0000${passed?.client.key ?? ''}`
    let pending = waiting.get(mine)
    if (pending !== undefined) {
      count.shared.inc()
      return pending
    }
    count.miss.inc()
    pending = takeTurn(handle, key, params, passed, join).finally(() => waiting.delete(mine))
    // Everyone may have stopped waiting (deadlines): the outcome is still stored, never an unhandled rejection.
    pending.catch(() => {})
    waiting.set(mine, pending)
    return pending
  }

  /**
   * Wait for this client's turn, then fetch; first take what arrived meanwhile, as `join` allows: an
   * upstream request another client started for the key, or the fresh record it already stored.
   */
  async function takeTurn(
    handle: string,
    key: string,
    params: LookupParams,
    passed: Passed | undefined,
    join: Join
  ): Promise<UpstreamAnswer> {
    // Without a shared tier, no await at all: each one is a turn of the microtask queue on every miss.
    const shared = join.running && opts.upstream?.fromShared !== undefined ? await opts.upstream.fromShared(handle) : undefined
    if (shared !== undefined) {
      store(key, shared)
      return shared
    }
    opts.upstream?.assertOpen?.(handle)
    const release =
      opts.queue === undefined || opts.upstream === undefined ? noop : await opts.queue.acquire(passed?.client, passed?.deadline)
    const running = join.running ? fetching.get(key) : undefined
    const entry = join.fresh && running === undefined ? cache.peek(key) : undefined
    if (running !== undefined || (entry !== undefined && isFresh(entry, now()))) {
      release()
      return running ?? answerOf(handle, entry!)
    }
    const fetch = fromUpstream(handle, key, params, passed?.deadline).finally(() => {
      if (fetching.get(key) === fetch) fetching.delete(key)
      release()
    })
    fetch.catch(() => {})
    if (join.running) fetching.set(key, fetch)
    return await fetch
  }

  /** Stale-while-revalidate: one background refresh per key; a failure keeps the current entry. */
  function refreshInBackground(handle: string, key: string): void {
    if (fetching.has(key)) return
    // The entry is still fresh (that is why it is being refreshed): do not take it for the answer.
    joinOrQueue(handle, key, PLAIN_LOOKUP, undefined, REFRESH).catch((err: unknown) => opts.onRefreshError?.(handle, err))
  }

  return { ask, refreshInBackground, entryForTaker }
}

/**
 * How many lookups took each upstream answer (gone with the answer), and the cache entry that goes with
 * the answer to each taker.
 */
function takerEntries(cache: UpstreamTurnsOptions['cache']) {
  const takersOf = new WeakMap<UpstreamAnswer, number>()
  /**
   * The cache entry that goes with an upstream answer to one of its takers: only from its second taker on
   * (joined lookups, a storm), as work is kept with a record from its first repeat, so one asked for once
   * costs the cache its values alone; and only while the cache still holds that very record.
   */
  function entryForTaker(key: string, answer: UpstreamAnswer): CachedAnswer | undefined {
    const takers = (takersOf.get(answer) ?? 0) + 1
    takersOf.set(answer, takers)
    if (takers === 1) return undefined
    const entry = cache.peek(key)
    if (entry === undefined) return undefined
    return entry.kind === 'found'
      ? answer.kind === 'found' && entry.values === answer.record.values
        ? entry
        : undefined
      : answer.kind === 'not-found'
        ? entry
        : undefined
  }
  return entryForTaker
}

/** The upstream asked, once a lookup's turn came, and its answer stored in the cache (the shared tier's as it was stored there). */
function fetchAndStore(opts: UpstreamTurnsOptions) {
  const { cache, metrics, now } = opts

  async function fromUpstream(handle: string, key: string, params: LookupParams, deadline: number | undefined): Promise<UpstreamAnswer> {
    const upstream = opts.upstream
    if (upstream === undefined) return { kind: 'not-found' }
    const started = performance.now()
    try {
      const answer = await upstream.fetchRecord(handle, params, deadline)
      metrics.upstreamDuration.observe({ outcome: answer.kind === 'found' ? 'found' : 'not_found' }, (performance.now() - started) / 1000)
      store(key, answer)
      if (answer.kind === 'found') opts.onFound?.(handle, key)
      return answer
    } catch (err) {
      metrics.upstreamDuration.observe({ outcome: 'error' }, (performance.now() - started) / 1000)
      if (err instanceof UpstreamError) metrics.upstreamErrors.inc({ code: err.code })
      throw err
    }
  }

  function store(key: string, answer: UpstreamAnswer): void {
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

  return { fromUpstream, store }
}

function noop(): void {}

/** What a lookup may take instead of asking the upstream itself, once its turn comes. */
interface Join {
  running: boolean
  fresh: boolean
}
const JOIN: Join = { running: true, fresh: true }
const REFRESH: Join = { running: true, fresh: false }
const NO_JOIN: Join = { running: false, fresh: false } // bypassCache: the upstream must be asked

function answerOf(handle: string, entry: CachedAnswer): UpstreamAnswer {
  return entry.kind === 'found' ? { kind: 'found', record: { handle, values: entry.values } } : { kind: 'not-found' }
}

// Strings that repeat across records (types, formats, admin handles, permissions) are kept once: a
// cached record then costs its distinct data only. A plain Map of these few distinct strings, emptied if
// a hostile upstream ever makes it large. Timestamps are too many to keep so (nearly one per record,
// each a lookup that misses): they are shared within a record, whose values mostly have the same one.
const INTERNED_MAX = 10_000
const interned = new Map<string, string>()
function intern(s: string): string {
  const known = interned.get(s)
  if (known !== undefined) return known
  if (interned.size >= INTERNED_MAX) interned.clear()
  interned.set(s, s)
  return s
}

/** Share repeated strings of freshly parsed values before they are cached (the values are ours to change). */
function compactValues(values: HandleValue[]): HandleValue[] {
  let timestamp: string | undefined
  for (const v of values) {
    v.type = intern(v.type)
    if (typeof v.timestamp === 'string') {
      if (v.timestamp === timestamp) v.timestamp = timestamp
      else timestamp = v.timestamp
    }
    if (v.data !== null && typeof v.data === 'object') {
      v.data.format = intern(v.data.format)
      const admin = v.data.value as { handle?: unknown; permissions?: unknown } | null
      if (admin !== null && typeof admin === 'object') {
        if (typeof admin.handle === 'string') admin.handle = intern(admin.handle)
        if (typeof admin.permissions === 'string') admin.permissions = intern(admin.permissions)
      }
    }
  }
  return values
}
