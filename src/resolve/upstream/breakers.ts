import CircuitBreaker from 'opossum'
import { LRUCache } from 'lru-cache'
import { PLAIN_LOOKUP } from '../../handle/lookup-params.js'
import type { LookupParams } from '../../handle/lookup-params.js'
import { cacheKey, prefixOf } from '../../handle/name.js'
import { MAX_RATE_LIMIT_WAIT_MS, upstreamErrors, UpstreamError } from './errors.js'
import type { FaultScope } from './errors.js'
import type { Reachability, UnreachableReason } from './reachability.js'
import type { UpstreamAnswer, UpstreamClient } from './client.js'

export interface BreakerOptions {
  errorThresholdPercent: number
  volumeThreshold: number
  resetMs: number
  windowMs: number
}

export interface GuardOptions {
  breaker: BreakerOptions
  /** Most prefixes with a breaker of their own at once (the least recently used is dropped). */
  maxPrefixBreakers: number
  onBreaker?: (state: BreakerState) => void
  onPrefixBreaker?: (prefix: string, state: BreakerState) => void
  /** Whether the upstream answers: while the breaker is open, its refusals name the cause. */
  reachability?: Reachability
  /** The registry answered 429: no request before `until` (epoch ms), for the other processes of the host to keep too (`holdUntil`). */
  onWait?: (until: number) => void
}

export type BreakerState = 'closed' | 'open' | 'half-open'

/**
 * Circuit breakers around the upstream client (behaviour.md §9), in two scopes: one for the whole
 * upstream (it cannot be reached, its CDN fails, it rate-limits us) and one per prefix for the faults
 * one handle server causes (a JSON 5xx, a timeout). Only upstream faults count; an answer about a
 * handle or a refusal of a client's junk never does. So no client can pause lookups for everyone by
 * asking for junk or for the DOIs of a broken handle server. Retries live in the client
 * (getWithRetries); the fair queue lives in the resolver.
 */
export function guardUpstream(client: UpstreamClient, opts: GuardOptions) {
  const prefixes = prefixBreakers(client, opts)
  const global = new CircuitBreaker(
    async (handle: string, params: LookupParams, deadline: number | undefined) => {
      try {
        return await prefixes.breakerOf(cacheKey(prefixOf(handle))).fire(handle, params, deadline)
      } catch (err) {
        if ((err as { code?: string }).code === 'EOPENBREAKER') throw upstreamErrors.prefixCircuitOpen()
        throw err
      }
    },
    breakerOptions(opts.breaker, 'upstream')
  )
  let state: BreakerState = 'closed'
  global.on('open', () => {
    state = 'open'
    opts.onBreaker?.(state)
  })
  global.on('halfOpen', () => {
    state = 'half-open'
    opts.onBreaker?.(state)
  })
  global.on('close', () => {
    state = 'closed'
    opts.onBreaker?.(state)
  })

  function knownReason(): UnreachableReason | undefined {
    const known = opts.reachability?.state()
    return known?.state === 'unreachable' ? known.reason : undefined
  }

  // Until when the registry told us to wait (its 429's Retry-After, bounded), on the performance.now() clock.
  let waitUntil = 0

  /**
   * Fail at once, before queueing, while the registry's own wait runs (no request is sent before it
   * ends: we are polite) or the upstream's breaker or the handle's prefix's is open.
   */
  function assertOpen(handle: string): void {
    const wait = waitUntil - performance.now()
    if (wait > 0) throw upstreamErrors.rateLimited(wait, false)
    if (global.opened) throw upstreamErrors.circuitOpen(knownReason())
    if (prefixes.breakers.peek(cacheKey(prefixOf(handle)))?.opened === true) throw upstreamErrors.prefixCircuitOpen()
  }

  return {
    assertOpen,
    async fetchRecord(handle: string, params = PLAIN_LOOKUP, deadline?: number): Promise<UpstreamAnswer> {
      assertOpen(handle)
      try {
        return await global.fire(handle, params, deadline)
      } catch (err) {
        if ((err as { code?: string }).code === 'EOPENBREAKER') throw upstreamErrors.circuitOpen(knownReason())
        if (err instanceof UpstreamError && err.code === 'DP_UPSTREAM_RATE_LIMITED' && err.retryAfterMs !== undefined) {
          waitUntil = Math.max(waitUntil, performance.now() + err.retryAfterMs)
          opts.onWait?.(Date.now() + err.retryAfterMs)
        }
        throw err
      }
    },
    async close(): Promise<void> {
      global.shutdown()
      prefixes.breakers.clear()
      await client.close()
    },
    breakerState: () => state,
    /** Prefixes whose breaker is not closed now (at most maxPrefixBreakers, read at a scrape). */
    openPrefixes(): number {
      let open = 0
      for (const breaker of prefixes.breakers.values()) if (!breaker.closed) open++
      return open
    },
    /** The registry's wait as another process of the host was told it (epoch ms), bounded as our own is. */
    holdUntil(until: number): void {
      const wait = Math.min(MAX_RATE_LIMIT_WAIT_MS, until - Date.now())
      if (wait > 0) waitUntil = Math.max(waitUntil, performance.now() + wait)
    }
  }
}

// The client is asked through both breakers as the resolver asked: the handle, the query's params, the deadline.
type PrefixBreaker = CircuitBreaker<[handle: string, params: LookupParams, deadline: number | undefined], UpstreamAnswer>

/** A breaker per prefix, made at its first lookup: at most maxPrefixBreakers, the least recently used dropped. */
function prefixBreakers(client: UpstreamClient, opts: GuardOptions) {
  const fetch = async (handle: string, params: LookupParams, deadline: number | undefined): Promise<UpstreamAnswer> =>
    await client.fetchRecord(handle, params, deadline)
  const breakers = new LRUCache<string, PrefixBreaker>({
    max: opts.maxPrefixBreakers,
    dispose: (breaker) => breaker.shutdown()
  })
  return {
    breakers,
    breakerOf(prefix: string): PrefixBreaker {
      let breaker = breakers.get(prefix)
      if (breaker === undefined) {
        breaker = new CircuitBreaker(fetch, breakerOptions(opts.breaker, 'prefix'))
        breaker.on('open', () => opts.onPrefixBreaker?.(prefix, 'open'))
        breaker.on('close', () => opts.onPrefixBreaker?.(prefix, 'closed'))
        breakers.set(prefix, breaker)
      }
      return breaker
    }
  }
}

/** opossum's options for a breaker that counts the faults of one scope (the whole upstream, or one prefix). */
function breakerOptions(breaker: BreakerOptions, scope: FaultScope): CircuitBreaker.Options {
  return {
    timeout: false, // the client's own deadline is the timeout
    errorThresholdPercentage: breaker.errorThresholdPercent,
    volumeThreshold: breaker.volumeThreshold,
    resetTimeout: breaker.resetMs,
    rollingCountTimeout: breaker.windowMs,
    rollingCountBuckets: 10,
    // We read neither latency percentiles nor snapshots. With them on (opossum's defaults) every call's
    // latency is kept in a list, and the whole window's lists are joined and sorted on every failure and
    // by a timer each bucket, in every breaker (one per prefix): work on the miss path for nothing.
    rollingPercentilesEnabled: false,
    enableSnapshots: false,
    // Truthy means "not a failure of mine".
    errorFilter: (err: unknown) => !(err instanceof UpstreamError && err.fault && err.scope === scope)
  }
}

export type GuardedUpstream = ReturnType<typeof guardUpstream>
