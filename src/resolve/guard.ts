import CircuitBreaker from 'opossum'
import { upstreamErrors, UpstreamError } from './errors.js'
import type { FetchOptions, UpstreamAnswer, UpstreamClient } from './upstream.js'

export interface GuardOptions {
  /** Most upstream requests in flight at once. */
  maxConcurrent: number
  /** Most lookups waiting for a slot; one more is refused at once (503). */
  queueSize: number
  /** A waiting lookup gives up after this long (503). */
  queueTimeoutMs: number
  /** Retries after a 429/502/503/504 or a dropped connection. */
  retries: number
  retryBaseMs: number
  retryMaxMs: number
  /** The whole resolution's budget, retries included (the timeout users see as 504). */
  budgetMs: number
  breaker: { errorThresholdPercent: number, volumeThreshold: number, resetMs: number, windowMs: number }
  onRetry?: (handle: string, attempt: number, err: UpstreamError) => void
  onBreaker?: (state: BreakerState) => void
  onQueue?: (waiting: number, active: number) => void
}

export type BreakerState = 'closed' | 'open' | 'half-open'

// Statuses worth asking again: rate limited or a gateway in trouble (issue 5; undici's retry defaults).
const RETRY_STATUSES = new Set([429, 502, 503, 504])

/**
 * Politeness and robustness around the upstream client, outermost first: a concurrency cap with a
 * bounded, timed queue; a circuit breaker that opens on repeated failures (not-found is an answer,
 * not a failure) and fails fast while open; retries with backoff that honour Retry-After, all
 * within one time budget.
 */
export function guardUpstream (client: UpstreamClient, opts: GuardOptions): UpstreamClient & { breakerState (): BreakerState } {
  const limiter = createLimiter(opts.maxConcurrent, opts.queueSize, opts.queueTimeoutMs, opts.onQueue)

  async function withRetries (handle: string, flags: FetchOptions): Promise<UpstreamAnswer> {
    const deadline = Date.now() + opts.budgetMs
    for (let attempt = 0; ; attempt++) {
      const remaining = deadline - Date.now()
      if (remaining <= 0) throw upstreamErrors.timeout(opts.budgetMs)
      try {
        return await client.fetchRecord(handle, { ...flags, timeoutMs: remaining })
      } catch (err) {
        if (!(err instanceof UpstreamError) || attempt >= opts.retries || !isRetryable(err)) throw asBudgetTimeout(err, opts.budgetMs)
        const delay = err.retryAfterMs ?? Math.min(opts.retryMaxMs, opts.retryBaseMs * 2 ** attempt)
        // Waiting past the budget helps nobody: answer now (a stale record may stand in).
        if (Date.now() + delay >= deadline) throw err
        opts.onRetry?.(handle, attempt + 1, err)
        await new Promise((resolve) => setTimeout(resolve, delay))
      }
    }
  }

  const breaker = new CircuitBreaker(withRetries, {
    timeout: false, // the budget above is the timeout
    errorThresholdPercentage: opts.breaker.errorThresholdPercent,
    volumeThreshold: opts.breaker.volumeThreshold,
    resetTimeout: opts.breaker.resetMs,
    rollingCountTimeout: opts.breaker.windowMs,
    rollingCountBuckets: 10,
    // Only upstream trouble counts against the upstream; our own refusals do not.
    errorFilter: (err: unknown) => err instanceof UpstreamError && err.code === 'DP_UPSTREAM_OVERLOADED'
  })
  let state: BreakerState = 'closed'
  breaker.on('open', () => { state = 'open'; opts.onBreaker?.(state) })
  breaker.on('halfOpen', () => { state = 'half-open'; opts.onBreaker?.(state) })
  breaker.on('close', () => { state = 'closed'; opts.onBreaker?.(state) })

  return {
    async fetchRecord (handle, flags = {}) {
      if (breaker.opened) throw upstreamErrors.circuitOpen()
      const release = await limiter.acquire()
      try {
        return await breaker.fire(handle, flags)
      } catch (err) {
        if ((err as { code?: string }).code === 'EOPENBREAKER') throw upstreamErrors.circuitOpen()
        throw err
      } finally {
        release()
      }
    },
    async close () {
      breaker.shutdown()
      await client.close()
    },
    breakerState: () => state
  }
}

function isRetryable (err: UpstreamError): boolean {
  if (err.code === 'DP_UPSTREAM_UNREACHABLE') return true
  return err.upstreamStatus !== undefined && RETRY_STATUSES.has(err.upstreamStatus)
}

/** An attempt that ran out of the remaining budget is the whole resolution timing out. */
function asBudgetTimeout (err: unknown, budgetMs: number): unknown {
  return err instanceof UpstreamError && err.code === 'DP_UPSTREAM_TIMEOUT' ? upstreamErrors.timeout(budgetMs, err) : err
}

/** A counting semaphore with a bounded FIFO queue and a wait timeout. */
function createLimiter (max: number, queueSize: number, timeoutMs: number, onQueue?: (waiting: number, active: number) => void) {
  let active = 0
  const waiting: Array<{ grant: () => void, timer: NodeJS.Timeout }> = []
  const report = (): void => onQueue?.(waiting.length, active)

  function release (): void {
    const next = waiting.shift()
    if (next === undefined) active--
    else {
      clearTimeout(next.timer)
      next.grant()
    }
    report()
  }

  return {
    async acquire (): Promise<() => void> {
      if (active < max) {
        active++
        report()
        return once(release)
      }
      if (waiting.length >= queueSize) throw upstreamErrors.overloaded()
      return await new Promise((resolve, reject) => {
        const entry = {
          grant: () => resolve(once(release)),
          timer: setTimeout(() => {
            waiting.splice(waiting.indexOf(entry), 1)
            report()
            reject(upstreamErrors.overloaded())
          }, timeoutMs)
        }
        waiting.push(entry)
        report()
      })
    }
  }
}

function once (fn: () => void): () => void {
  let done = false
  return () => {
    if (!done) {
      done = true
      fn()
    }
  }
}
