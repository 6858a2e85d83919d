import CircuitBreaker from 'opossum'
import { upstreamErrors, UpstreamError } from './errors.js'
import { createFairQueue } from './fair-queue.js'
import type { ClientTicket, FairQueueOptions } from './fair-queue.js'
import type { FetchOptions, UpstreamAnswer, UpstreamClient } from './upstream.js'

export interface GuardOptions {
  queue: FairQueueOptions
  breaker: { errorThresholdPercent: number, volumeThreshold: number, resetMs: number, windowMs: number }
  onBreaker?: (state: BreakerState) => void
}

export type BreakerState = 'closed' | 'open' | 'half-open'

/** A lookup's flags plus who asks: the fair queue serves clients in turn. */
export interface GuardedFetchOptions extends FetchOptions {
  client?: ClientTicket | undefined
}

/**
 * Politeness and robustness around the upstream client (retries live in the client, on undici's
 * retry interceptor): a fair queue per client in front, then a circuit breaker that opens on
 * upstream faults only and fails fast while open (behaviour.md §9).
 */
export function guardUpstream (client: UpstreamClient, opts: GuardOptions) {
  const queue = createFairQueue(opts.queue)

  const breaker = new CircuitBreaker(async (handle: string, flags: FetchOptions) => await client.fetchRecord(handle, flags), {
    timeout: false, // the client's own deadline is the timeout
    errorThresholdPercentage: opts.breaker.errorThresholdPercent,
    volumeThreshold: opts.breaker.volumeThreshold,
    resetTimeout: opts.breaker.resetMs,
    rollingCountTimeout: opts.breaker.windowMs,
    rollingCountBuckets: 10,
    // Truthy means "not a failure": only connect errors, timeouts, 5xx and 429 count against the upstream.
    errorFilter: (err: unknown) => !(err instanceof UpstreamError && err.fault)
  })
  let state: BreakerState = 'closed'
  breaker.on('open', () => { state = 'open'; opts.onBreaker?.(state) })
  breaker.on('halfOpen', () => { state = 'half-open'; opts.onBreaker?.(state) })
  breaker.on('close', () => { state = 'closed'; opts.onBreaker?.(state) })

  return {
    async fetchRecord (handle: string, flags: GuardedFetchOptions = {}): Promise<UpstreamAnswer> {
      if (breaker.opened) throw upstreamErrors.circuitOpen()
      const release = await queue.acquire(flags.client, flags.deadline)
      try {
        return await breaker.fire(handle, { auth: flags.auth, cert: flags.cert, deadline: flags.deadline })
      } catch (err) {
        if ((err as { code?: string }).code === 'EOPENBREAKER') throw upstreamErrors.circuitOpen()
        throw err
      } finally {
        release()
      }
    },
    async close (): Promise<void> {
      breaker.shutdown()
      await client.close()
    },
    breakerState: () => state,
    queueStats: queue.stats
  }
}

export type GuardedUpstream = ReturnType<typeof guardUpstream>
