import type { FastifyBaseLogger } from 'fastify'
import type { Dispatcher } from 'undici'
import type { Config } from '../config/schema.js'
import { upstreamUserAgent } from '../config/schema.js'
import type { Metrics } from '../observe/metrics.js'
import { guardUpstream } from '../resolve/upstream/breakers.js'
import { createUpstreamClient } from '../resolve/upstream/client.js'
import { createFairQueue } from '../resolve/upstream/fair-queue.js'
import type { FairQueue } from '../resolve/upstream/fair-queue.js'
import { createReachability, PROBE_HANDLE, REASON_WORDS } from '../resolve/upstream/reachability.js'
import type { Reachability, UpstreamState } from '../resolve/upstream/reachability.js'

/** The settings of the upstream client, its breakers and its fair queue. */
export type UpstreamSettings = Pick<
  Config,
  | 'offline'
  | 'recordTo'
  | 'upstreamUrl'
  | 'userAgent'
  | 'contactEmail'
  | 'upstreamTimeoutMs'
  | 'upstreamConnectTimeoutMs'
  | 'upstreamConnections'
  | 'upstreamMaxBodyBytes'
  | 'upstreamRetries'
  | 'upstreamRetryBaseMs'
  | 'upstreamRetryMaxMs'
  | 'breakerErrorThresholdPercent'
  | 'breakerVolumeThreshold'
  | 'breakerResetMs'
  | 'breakerWindowMs'
  | 'upstreamMaxConcurrent'
  | 'upstreamPerClient'
  | 'upstreamClientQueue'
  | 'upstreamQueueSize'
  | 'upstreamQueueTimeoutMs'
>

export interface UpstreamParts {
  /** Whether the upstream answers, as the last lookups found it (logged as it changes). */
  reachability: Reachability
  /** The client behind its breakers; undefined offline. */
  upstream: GuardedUpstream | undefined
  /** Every lookup that must go upstream takes its client's turn here. */
  queue: FairQueue
}

export type GuardedUpstream = ReturnType<typeof createGuardedUpstream>

const BREAKER_LEVEL = { closed: 0, 'half-open': 1, open: 2 } as const

/**
 * The way to the upstream: whether it answers, its client behind the breakers, and the fair queue in front.
 * OFFLINE: no client to the upstream is built at all, so nothing can open a connection to it (nor probe it
 * at start); only the local records answer. `onWait`: the registry asked us to wait (its 429), until then.
 */
export function setUpUpstream(
  settings: UpstreamSettings,
  ctx: {
    metrics: Metrics
    log: FastifyBaseLogger
    dispatcher?: Dispatcher | undefined
    onWait: (until: number) => void
  }
): UpstreamParts {
  const { metrics, log } = ctx
  const recording = settings.recordTo !== undefined && !settings.offline
  const reachability = createReachability({
    onChange: (state) => {
      logReachability(log, settings.upstreamUrl, state)
      if (recording && state.state === 'unreachable') {
        log.warn(
          { dir: settings.recordTo, upstream: settings.upstreamUrl },
          'RECORD_TO: the upstream cannot be reached, so nothing new is being recorded'
        )
      }
    }
  })
  const upstream = settings.offline ? undefined : createGuardedUpstream(settings, { ...ctx, reachability })
  const queue = createFairQueue({
    maxActive: settings.upstreamMaxConcurrent,
    perClient: settings.upstreamPerClient,
    perClientQueue: settings.upstreamClientQueue,
    maxWaiting: settings.upstreamQueueSize,
    waitTimeoutMs: settings.upstreamQueueTimeoutMs,
    retryAfterMs: 5000,
    onChange: (waiting, active) => {
      metrics.upstreamWaiting.set(waiting)
      metrics.upstreamActive.set(active)
    },
    onRefuse: (reason) => metrics.refusals.inc({ reason })
  })
  return { reachability, upstream, queue }
}

/**
 * The upstream client (a bounded Pool to UPSTREAM_URL's origin, or the dispatcher a test gives) behind its
 * circuit breakers: what the resolver fetches through, the probe at start, and its close. Never built offline.
 */
function createGuardedUpstream(
  settings: UpstreamSettings,
  ctx: {
    metrics: Metrics
    log: FastifyBaseLogger
    reachability: Reachability
    dispatcher?: Dispatcher | undefined
    onWait: (until: number) => void
  }
) {
  const { metrics, log, reachability } = ctx
  const raw = createUpstreamClient({
    baseUrl: settings.upstreamUrl,
    userAgent: upstreamUserAgent(settings),
    timeoutMs: settings.upstreamTimeoutMs,
    connectTimeoutMs: settings.upstreamConnectTimeoutMs,
    connections: settings.upstreamConnections,
    maxBodyBytes: settings.upstreamMaxBodyBytes,
    retry: {
      retries: settings.upstreamRetries,
      baseMs: settings.upstreamRetryBaseMs,
      maxMs: settings.upstreamRetryMaxMs,
      onRetry: (handle, attempt, reason) => {
        metrics.upstreamRetries.inc()
        log.info({ handle, attempt, reason }, 'retrying the upstream')
      }
    },
    ...(ctx.dispatcher === undefined ? {} : { dispatcher: ctx.dispatcher }),
    reachability
  })
  const guarded = guardUpstream(raw, {
    maxPrefixBreakers: 1024,
    reachability,
    // The registry's 429 speaks to the host's address: every worker of the host waits it out.
    onWait: ctx.onWait,
    breaker: {
      errorThresholdPercent: settings.breakerErrorThresholdPercent,
      volumeThreshold: settings.breakerVolumeThreshold,
      resetMs: settings.breakerResetMs,
      windowMs: settings.breakerWindowMs
    },
    onBreaker: (state) => {
      metrics.breakerOpen.set(BREAKER_LEVEL[state])
      log.warn({ state }, 'upstream circuit breaker changed state')
    },
    onPrefixBreaker: (prefix, state) => {
      if (state === 'open') metrics.prefixBreakerOpenings.inc()
      log.warn({ prefix, state }, 'circuit breaker of one prefix changed state')
    }
  })
  metrics.observeUpstream({ unreachable: () => reachability.state().state === 'unreachable', openPrefixes: guarded.openPrefixes })
  return {
    guarded,
    /** One request whose outcome the reachability tracker logs. */
    probe: (): void => {
      raw.fetchRecord(PROBE_HANDLE).catch(() => {})
    },
    close: async (): Promise<void> => {
      await guarded.close()
    }
  }
}

/** One line each time the upstream starts or stops answering, naming the cause and what an operator can do. */
function logReachability(log: FastifyBaseLogger, upstream: string, state: UpstreamState): void {
  if (state.state === 'answers') log.info({ upstream }, 'the upstream answers')
  if (state.state === 'unreachable') {
    log.warn(
      { upstream, reason: state.reason, detail: state.detail, why: REASON_WORDS[state.reason] },
      'the upstream cannot be reached: cached and local records are still answered; check the network and UPSTREAM_URL, or run offline (OFFLINE=true, npm run start:offline)'
    )
  }
}
