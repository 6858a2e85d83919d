/**
 * The open-access source as the link-out chain sees it (docs/institutional.md "Open access first"):
 * a provider behind the same tiers as records (memory, then Redis shared by replicas), with its own
 * TTL and a negative cache, one call per DOI however many readers ask at once, a daily limit on calls,
 * and a latency budget: a reader waits at most `budgetMs`, the answer is cached whenever it comes.
 * Nothing here ever throws at a reader: a provider that fails is "unavailable".
 */
import type { RedisClient } from '../fleet/redis.js'
import { LRUCache } from 'lru-cache'
import { openAccessLocation } from '../../handle/linkout.js'
import type { OpenAccessAnswer } from '../../handle/linkout.js'
import { cacheKey } from '../../handle/name.js'
import type { Metrics } from '../../observe/metrics.js'
import type { OpenAccessProviderClient, ProviderAnswer } from './providers.js'

export interface OpenAccessOptions {
  provider: OpenAccessProviderClient
  metrics: Metrics
  now: () => number
  budgetMs: number
  ttlSeconds: number
  negativeTtlSeconds: number
  maxEntries: number
  /** Most calls per UTC day: counted in Redis over every process when there is one, else by this one. */
  dailyLimit: number
  /**
   * This process's own limit while Redis does not answer (it can then count only its own calls): its
   * share of dailyLimit when several processes count together (WORKERS); default dailyLimit.
   */
  localDailyLimit?: number
  /** The shared tier; undefined without REDIS_URL. */
  redis?: RedisClient | undefined
  /** REDIS_KEY_PREFIX; our keys are `<prefix>oa:1:…` (1: the format of what is stored). */
  redisPrefix?: string
  /** How long a replica's lock on a DOI's lookup holds (the provider's timeout), and how often the others look for its answer. */
  lockMs?: number
  pollMs?: number
  /** A provider failure, for the log (the caller throttles it). */
  onError?: (doi: string, err: unknown) => void
  /** The answers kept in memory (made apart so the cache snapshot can load them before this exists); default a new one. */
  cache?: OpenAccessCache
}

export type OpenAccess = ReturnType<typeof createOpenAccess>

/** What the cache holds: the open copy or null ("none known"), and until when (epoch ms by the app's clock). */
export interface Kept {
  url: ProviderAnswer
  until: number
}

/**
 * The open-access answers held in memory, by cache key, for `provider` (a provider's name: an answer of
 * another is not this one's). The cache snapshot (src/resolve/cache/cache-file.ts) writes and restores them with
 * the records, so a restart does not spend the day's provider calls again.
 */
export function createOpenAccessCache(opts: { maxEntries: number; provider: string; maxKeepMs?: number }) {
  const kept = new LRUCache<string, Kept>({ max: opts.maxEntries })
  return {
    provider: opts.provider,
    get: (key: string): Kept | undefined => kept.get(key),
    set: (key: string, entry: Kept): void => {
      kept.set(key, entry)
    },
    delete: (key: string): void => {
      kept.delete(key)
    },
    /** Every answer, least recently used first (for the snapshot). */
    entries(): Array<[string, Kept]> {
      const out: Array<[string, Kept]> = []
      for (const pair of kept.rentries()) out.push(pair as [string, Kept])
      return out
    },
    /** An answer written earlier (a snapshot's line), checked as one from Redis is; false when it is not kept. */
    restore(key: string, url: unknown, until: number, at: number): boolean {
      const checked = url === null ? null : openAccessLocation(url)
      if (checked === undefined || !(until > at) || until - at > (opts.maxKeepMs ?? Infinity)) return false
      kept.set(key, { url: checked, until })
      return true
    }
  }
}

export type OpenAccessCache = ReturnType<typeof createOpenAccessCache>

// Never more than this many lookups in flight at once, whatever readers ask: the rest are "unavailable".
const MAX_IN_FLIGHT = 1024

export function createOpenAccess(opts: OpenAccessOptions) {
  const { provider, metrics, now } = opts
  const kept = opts.cache ?? createOpenAccessCache({ maxEntries: opts.maxEntries, provider: provider.name })
  const inFlight = new Map<string, Promise<OpenAccessAnswer>>()
  const lookups = lookupCounters(metrics, provider.name)
  const day = dailyCalls(opts)
  const shared = sharedAnswers(opts, kept, () => {
    lookups.shared.inc()
  })

  function fromMemory(key: string): OpenAccessAnswer | undefined {
    const entry = kept.get(key)
    if (entry === undefined) return undefined
    if (entry.until <= now()) {
      kept.delete(key)
      return undefined
    }
    return answerOf(entry.url)
  }

  function keep(key: string, url: ProviderAnswer, share: boolean): void {
    const ttlMs = (url === null ? opts.negativeTtlSeconds : opts.ttlSeconds) * 1000
    if (ttlMs <= 0) return
    kept.set(key, { url, until: now() + ttlMs })
    if (share) shared.write(key, url, ttlMs)
  }

  async function fetchAndKeep(key: string, doi: string): Promise<OpenAccessAnswer> {
    const other = await shared.read(key)
    if (other !== undefined) return other
    if (!(await shared.takeLock(key))) return await shared.awaitOther(key)
    if (!(await day.spend())) {
      lookups.limit.inc()
      return { kind: 'unavailable' }
    }
    try {
      const url = await provider.find(doi)
      ;(url === null ? lookups.none : lookups.found).inc()
      keep(key, url, provider.remote)
      return answerOf(url)
    } catch (err) {
      lookups.error.inc()
      opts.onError?.(doi, err)
      return { kind: 'unavailable' }
    }
  }

  return {
    provider: provider.name,

    /**
     * The open copy of a DOI: from memory at once, else from Redis or the provider, waiting at most
     * budgetMs (then "late"; the lookup goes on and its answer is kept). One lookup per DOI at a time.
     */
    async find(doi: string, budgetMs = opts.budgetMs): Promise<OpenAccessAnswer> {
      const key = cacheKey(doi)
      const cached = fromMemory(key)
      if (cached !== undefined) return cached
      let lookup = inFlight.get(key)
      if (lookup === undefined) {
        if (inFlight.size >= MAX_IN_FLIGHT) return { kind: 'unavailable' }
        lookup = fetchAndKeep(key, doi).finally(() => {
          inFlight.delete(key)
        })
        inFlight.set(key, lookup)
      }
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<OpenAccessAnswer>((resolve) => {
        timer = setTimeout(resolve, budgetMs, { kind: 'late' })
      })
      try {
        return await Promise.race([lookup, late])
      } finally {
        clearTimeout(timer)
      }
    },

    /** For /status: calls today and the limit. */
    usage(): { provider: string; callsToday: number; dailyLimit: number | null } {
      return { provider: provider.name, callsToday: day.callsToday(), dailyLimit: provider.remote ? opts.dailyLimit : null }
    },

    /** Every lookup still running has ended (tests; a clean close). */
    async settled(): Promise<void> {
      await Promise.all([...inFlight.values()])
    },

    /** Lookups still running are cut short (they answer "unavailable"), so closing never waits on a provider. */
    async close(): Promise<void> {
      await provider.close()
      await Promise.all([...inFlight.values()])
    }
  }
}

/** The lookups of a provider, by outcome (doi_proxy_open_access_lookups_total). */
function lookupCounters(metrics: Metrics, provider: string) {
  const count = (outcome: string) => metrics.openAccessLookups.labels(provider, outcome)
  return { found: count('found'), none: count('none'), error: count('error'), limit: count('daily_limit'), shared: count('shared') }
}

/**
 * The provider's calls of the day (UTC), against OA_DAILY_LIMIT: counted in Redis over every process when
 * there is one, else (or while it does not answer) this process's own against its share of the day.
 */
function dailyCalls(
  opts: Pick<OpenAccessOptions, 'provider' | 'metrics' | 'now' | 'dailyLimit' | 'localDailyLimit' | 'redis' | 'redisPrefix'>
) {
  const { provider, metrics, now } = opts
  // The day's calls as last known (over every process when Redis counts them), and this process's own.
  const day = { key: '', calls: 0, own: 0 }
  // This process's limit when it counts only its own calls (no Redis, or Redis not answering).
  const ownLimit = opts.localDailyLimit ?? opts.dailyLimit
  // The limit in force: the shared day's with Redis, else this process's own.
  metrics.openAccessDailyLimit.set(provider.remote ? (opts.redis === undefined ? ownLimit : opts.dailyLimit) : 0)
  return {
    /** Count a call against today's limit (UTC days; over every replica when Redis is there); false when it is spent. */
    async spend(): Promise<boolean> {
      if (!provider.remote) return true
      const today = new Date(now()).toISOString().slice(0, 10)
      if (day.key !== today) {
        day.key = today
        day.calls = 0
        day.own = 0
      }
      day.own++
      // Without Redis, or while it does not answer: this process's own calls against its share of the day
      // (so the processes together stay within it, whatever the others did before Redis went away).
      let calls = day.own
      let limit = ownLimit
      if (opts.redis !== undefined) {
        try {
          const key = openAccessRedisKey(opts.redisPrefix ?? '', `calls:${today}`)
          const [[, shared]] = (await opts.redis
            .multi()
            .incr(key)
            .expire(key, 2 * 86400)
            .exec()) as [[Error | null, number]]
          if (typeof shared === 'number') {
            calls = day.calls = Math.max(day.calls + 1, shared)
            limit = opts.dailyLimit
          }
        } catch {
          // Redis down: the own count stands.
        }
      }
      metrics.openAccessCallsToday.set(calls)
      metrics.openAccessDailyLimit.set(limit)
      return calls <= limit
    },
    /** Today's calls as last known (for /status). */
    callsToday(): number {
      return day.key === new Date(now()).toISOString().slice(0, 10) ? day.calls : 0
    }
  }
}

/**
 * The answers of the other replicas, in Redis (nothing without it): read into memory, written for them, and
 * one call per DOI across them: the replica that takes the lock in Redis calls the provider; the others look
 * for its answer there until the lock's time is up, then give up for now (never a second call: the next
 * reader asks again). Without Redis, or when it fails, this replica calls.
 */
function sharedAnswers(
  opts: Pick<OpenAccessOptions, 'now' | 'redis' | 'redisPrefix' | 'lockMs' | 'pollMs'>,
  kept: OpenAccessCache,
  onShared: () => void
) {
  const { now, redis } = opts
  const redisKey = (suffix: string): string => openAccessRedisKey(opts.redisPrefix ?? '', suffix)

  /** Another replica's answer, if Redis has one (a Redis that fails or is slow is no answer); kept in memory too. */
  async function read(key: string): Promise<OpenAccessAnswer | undefined> {
    if (redis === undefined) return undefined
    let text: string | null
    let ttlMs: number
    try {
      ;[text, ttlMs] = await Promise.all([redis.get(redisKey(key)), redis.pttl(redisKey(key))])
    } catch {
      return undefined
    }
    if (text === null || ttlMs <= 0) return undefined
    const stored = parseStored(text)
    if (stored === undefined) return undefined
    kept.set(key, { url: stored, until: now() + ttlMs })
    onShared()
    return answerOf(stored)
  }

  return {
    read,
    write(key: string, url: ProviderAnswer, ttlMs: number): void {
      if (redis === undefined) return
      redis.set(redisKey(key), JSON.stringify({ url }), 'PX', ttlMs).catch(() => {})
    },
    async takeLock(key: string): Promise<boolean> {
      if (redis === undefined) return true
      try {
        return (await redis.set(redisKey(`lock:${key}`), '1', 'PX', opts.lockMs ?? 5000, 'NX')) === 'OK'
      } catch {
        return true
      }
    },
    async awaitOther(key: string): Promise<OpenAccessAnswer> {
      const until = performance.now() + (opts.lockMs ?? 5000)
      while (performance.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, opts.pollMs ?? 50))
        const shared = await read(key)
        if (shared !== undefined) return shared
      }
      return { kind: 'unavailable' }
    }
  }
}

/** Where Redis keeps an open-access answer (or, with `calls:`/`lock:`, its counters): `<prefix>oa:1:<key>`. */
export function openAccessRedisKey(prefix: string, key: string): string {
  return `${prefix}oa:1:${key}`
}

function answerOf(url: ProviderAnswer): OpenAccessAnswer {
  return url === null ? { kind: 'none' } : { kind: 'found', url }
}

/** What Redis holds, read defensively: a string URL or null; anything else is no answer. */
function parseStored(text: string): ProviderAnswer | undefined {
  try {
    // Checked again as it is read: whatever is in Redis, nobody is sent anywhere a provider URL could not send them.
    const value = (JSON.parse(text) as { url?: unknown }).url
    return value === null ? null : openAccessLocation(value)
  } catch {
    return undefined
  }
}
