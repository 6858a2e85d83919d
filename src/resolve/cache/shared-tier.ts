import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { isFresh, staleUntil } from '../../handle/freshness.js'
import type { FreshnessPolicy } from '../../handle/freshness.js'
import { cacheKey } from '../../handle/name.js'
import { PLAIN_LOOKUP } from '../../handle/lookup-params.js'
import type { LookupParams } from '../../handle/lookup-params.js'
import type { Metrics } from '../../observe/metrics.js'
import { entryOf } from './entry.js'
import type { RecordCache } from './record-cache.js'
import type { CachedAnswer } from './entry.js'
import { decodeEntry, encodeEntry, plausibleEntry } from './entry-codec.js'
import { watchSharedHealth } from './shared-health.js'
import type { RedisClient } from '../fleet/redis.js'
import type { RecordFetcher } from '../upstream/fetcher.js'
import type { UpstreamAnswer } from '../upstream/client.js'

/**
 * The shared cache tier (behaviour.md §11): a second cache in Redis or Valkey behind each process's own
 * LRU, shared by every replica and worker. Read on a local miss, written on every upstream answer
 * (found and not found) with a Redis TTL of freshness + maximum staleness, under a versioned prefix.
 * Replicas that miss the same key at once make one upstream request: the first takes a short lock
 * (SET NX PX, in a script) and fetches, the others poll for the record until it arrives, the lock goes (then
 * one of them takes it) or their wait ends (lock TTL or the request's deadline; then they fetch themselves).
 *
 * Redis down, stuck or full: every call here gives up and the lookup goes on as if there were no Redis
 * (when, and what it costs: shared-health.ts). Nothing here throws to the caller.
 */
export const SHARED_KEY_VERSION = 'v2'

// Delete the lock only if it is still ours (it may have expired and been taken by another replica).
const UNLOCK_SCRIPT = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
// Take the lock, or say it is ours already: a lock command that timed out may have taken it, and the
// lookup asking again must not then wait for itself until the lock expires.
const LOCK_SCRIPT =
  "if redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end if redis.call('get', KEYS[1]) == ARGV[1] then return 1 end return 0"

export interface SharedTierOptions {
  /** One server, a Sentinel-watched master or a Cluster: every command here names one key, so any of them serves. */
  redis: RedisClient
  /**
   * Keys are `${prefix}v2:<source>:r:<cache key>` (records) and `${prefix}v2:<source>:l:<cache key>` (locks):
   * the source (cache-source.ts: a hash of the upstream URL and offline flag) is part of every key whatever the
   * prefix, so deployments with different upstreams on one Redis never read each other's records.
   */
  prefix: string
  source: string
  lockTtlMs: number
  pollMs: number
  /** How long entries stay fresh and are kept (src/handle/freshness.ts): an entry in Redis promising more freshness is not believed. */
  freshness: FreshnessPolicy
  /** The largest value read from Redis (an entry is one record, so an upstream answer's size bounds it). */
  maxValueBytes: number
  now: () => number
  metrics: Metrics
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void }
}

/** An answer the shared tier gave: the entry as another replica stored it, with its own times. */
export type SharedAnswer = UpstreamAnswer & { stored?: CachedAnswer }

/** The tier's commands (records and locks), each asked only while Redis is usable (shared-health.ts). */
export function createSharedTier(opts: SharedTierOptions) {
  const { redis, now } = opts
  const namespace = `${opts.prefix}${SHARED_KEY_VERSION}:${opts.source}:`
  const recordKey = (key: string): string => `${namespace}r:${key}`
  const lockKey = (key: string): string => `${namespace}l:${key}`
  const token = randomUUID()
  let owners = 0

  const { lookups, errors } = opts.metrics.sharedCache
  const health = watchSharedHealth(redis, errors, opts.log)
  const { usable, answered, fail, reasonOf } = health
  opts.metrics.observeSharedTier(health.healthy)
  const count = {
    hit: lookups.labels('hit'),
    miss: lookups.labels('miss'),
    waited: lookups.labels('waited'),
    write: lookups.labels('write')
  }

  /** The entry stored for key, or undefined (absent, unreadable, Redis in trouble). */
  async function get(key: string): Promise<CachedAnswer | undefined> {
    if (!usable()) return undefined
    let text: string
    try {
      // At most maxValueBytes + 1 bytes: a larger value is refused without being parsed.
      text = await redis.getrange(recordKey(key), 0, opts.maxValueBytes)
      answered()
    } catch (err) {
      fail(reasonOf(err), err)
      return undefined
    }
    if (text === '') return undefined // GETRANGE of a missing key
    const entry = Buffer.byteLength(text) > opts.maxValueBytes ? undefined : decodeEntry(text)
    if (entry === undefined || !plausibleEntry(entry, now(), opts.freshness)) {
      fail('bad_value')
      return undefined
    }
    return entry
  }

  /** Store an entry for its remaining freshness + staleness; fire and forget. */
  function put(key: string, entry: CachedAnswer): void {
    const ttl = staleUntil(entry, opts.freshness) - now()
    if (ttl <= 0 || !usable()) return
    count.write.inc()
    redis.set(recordKey(key), encodeEntry(entry), 'PX', Math.ceil(ttl)).then(answered, (err: unknown) => fail(reasonOf(err), err))
  }

  /** A name for one lookup's locks, unique among every replica's lookups. */
  const owner = (): string => `${token}:${++owners}`

  /**
   * 'mine': `owner` holds the lock (taken now, or by an earlier call whose answer timed out); 'theirs':
   * another lookup does; 'timeout': Redis did not answer in time (the lock may or may not be ours: ask
   * again); 'none': Redis could not say and will not soon (set aside, unreachable, full, an error).
   */
  async function lock(key: string, by: string): Promise<'mine' | 'theirs' | 'timeout' | 'none'> {
    if (!usable()) return 'none'
    try {
      const took = await redis.eval(LOCK_SCRIPT, 1, lockKey(key), by, opts.lockTtlMs)
      answered()
      return took === 1 ? 'mine' : 'theirs'
    } catch (err) {
      const reason = reasonOf(err)
      fail(reason, err)
      return reason === 'timeout' ? 'timeout' : 'none'
    }
  }

  function unlock(key: string, by: string): void {
    if (redis.status !== 'ready') return // it expires by itself
    redis.eval(UNLOCK_SCRIPT, 1, lockKey(key), by).then(answered, (err: unknown) => fail(reasonOf(err), err))
  }

  const { healthy, flushLog, close } = health
  return { get, put, lock, unlock, owner, usable: healthy, count, recordKey, lockKey, flushLog, close }
}

export type SharedTier = ReturnType<typeof createSharedTier>

export interface SharedFetcherOptions {
  tier: SharedTier
  /** The process's own cache: what it holds tells a refresh from a miss. */
  cache: RecordCache
  now: () => number
  pollMs: number
  lockTtlMs: number
  /** The resolver's own rule for how long an answer is fresh (src/handle/freshness.ts), so Redis keeps what the LRU would. */
  freshness: FreshnessPolicy
}

type Fetcher = RecordFetcher & { assertOpen?: (handle: string) => void }

/**
 * The upstream as the resolver sees it when a shared tier is configured: the shared tier first, the
 * upstream (guarded: queue, breaker, retries) when Redis has no fresh record, one replica at a time.
 */
export function sharedFetcher(upstream: Fetcher, opts: SharedFetcherOptions): Fetcher {
  const { tier, cache, now } = opts

  async function fetchAndShare(handle: string, key: string, params: LookupParams, deadline: number | undefined): Promise<UpstreamAnswer> {
    const answer = await upstream.fetchRecord(handle, params, deadline)
    const entry = entryOf(answer, now(), opts.freshness)
    if (entry !== undefined) tier.put(key, entry)
    return answer
  }

  async function fetchRecord(handle: string, params = PLAIN_LOOKUP, deadline?: number): Promise<SharedAnswer> {
    const key = cacheKey(handle)
    if (params.bypassCache || !tier.usable()) return await fetchAndShare(handle, key, params, deadline)
    // A record we hold (a refresh, or a stale copy) is replaced only by a newer one.
    const held = cache.peek(key)
    const heldSince = held?.storedAt ?? -Infinity
    const waitUntil = Math.min(deadline ?? Infinity, performance.now() + opts.lockTtlMs)
    const owner = tier.owner()
    let waited = false
    for (;;) {
      const entry = await tier.get(key)
      const at = now()
      if (entry !== undefined && isFresh(entry, at) && entry.storedAt > heldSince) {
        tier.count.hit.inc()
        if (waited) tier.count.waited.inc()
        return answerFrom(handle, entry)
      }
      // An expired record another replica had: it may stand in if the upstream fails (behaviour.md §3).
      if (entry?.kind === 'found' && held === undefined) cache.restore(key, entry, at)
      const lock = await tier.lock(key, owner)
      // A lock command that timed out while Redis is still in use is asked again (below), as 'theirs' is:
      // fetching at once would make one slow command a second upstream request for the DOI.
      if (lock === 'mine' || lock === 'none' || (lock === 'timeout' && !tier.usable())) {
        try {
          // The record may have arrived between our look and our lock (its fetcher just let go): look once more.
          const late = lock === 'mine' ? await tier.get(key) : undefined
          if (late !== undefined && isFresh(late, now()) && late.storedAt > heldSince) {
            tier.count.hit.inc()
            if (waited) tier.count.waited.inc()
            return answerFrom(handle, late)
          }
          if (!waited) tier.count.miss.inc()
          return await fetchAndShare(handle, key, params, deadline)
        } finally {
          if (lock === 'mine') tier.unlock(key, owner)
        }
      }
      waited = true
      // Waited as long as a lock can be held, or as the request may: ask the upstream ourselves.
      if (performance.now() + opts.pollMs >= waitUntil) return await fetchAndShare(handle, key, params, deadline)
      await sleep(opts.pollMs)
    }
  }

  /** One look in Redis, before any queue: a fresh record newer than the one we hold, or undefined. */
  async function fromShared(handle: string): Promise<SharedAnswer | undefined> {
    if (!tier.usable()) return undefined
    const key = cacheKey(handle)
    const entry = await tier.get(key)
    if (entry === undefined || !isFresh(entry, now()) || entry.storedAt <= (cache.peek(key)?.storedAt ?? -Infinity)) return undefined
    tier.count.hit.inc()
    return answerFrom(handle, entry)
  }

  function answerFrom(handle: string, entry: CachedAnswer): SharedAnswer {
    return entry.kind === 'found'
      ? { kind: 'found', record: { handle, values: entry.values }, stored: entry }
      : { kind: 'not-found', stored: entry }
  }

  const fetcher: Fetcher = { fetchRecord, fromShared }
  const assertOpen = upstream.assertOpen
  // While Redis answers, a lookup may be answered from it even when the upstream's breaker is open.
  if (assertOpen !== undefined) {
    fetcher.assertOpen = (handle) => {
      if (!tier.usable()) assertOpen(handle)
    }
  }
  return fetcher
}
