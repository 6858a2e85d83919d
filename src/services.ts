import type { FastifyBaseLogger } from 'fastify'
import { LRUCache } from 'lru-cache'
import type { Dispatcher } from 'undici'
import { setUpCacheTiers } from './services/cache-tiers.js'
import type { Config } from './config/schema.js'
import { upstreamUserAgent } from './config/schema.js'
import { freshnessPolicy } from './handle/freshness.js'
import { cacheKey } from './handle/name.js'
import { createAdmission } from './http/admission.js'
import type { AdmissionControl } from './http/admission.js'
import { createLocalServices } from './http/local-service.js'
import { createMetadataAnswers } from './http/metadata.js'
import { createPreparedAnswers } from './http/prepared-answers.js'
import type { PurgeResult, RouteServices } from './http/route-context.js'
import type { Lifecycle } from './http/routes/ops.js'
import { createLogThrottle } from './observe/log-throttle.js'
import { openAccessCacheOf, setUpOpenAccess } from './services/open-access.js'
import { openRecorder, recordingFetcher, recordingLocal } from './resolve/recording/recorder.js'
import { createMetrics } from './observe/metrics.js'
import type { Metrics } from './observe/metrics.js'
import { createRecordCache } from './resolve/cache/record-cache.js'
import { cacheSourceOf, sourceId } from './resolve/cache/source.js'
import { createFairQueue } from './resolve/upstream/fair-queue.js'
import { createFleet } from './resolve/fleet/messages.js'
import type { FleetMessage } from './resolve/fleet/messages.js'
import { openCountryLookup } from './resolve/lookup/geoip.js'
import { guardUpstream } from './resolve/upstream/breakers.js'
import { openLocalStore } from './resolve/local-store/store.js'
import { createProxyService } from './resolve/lookup/proxy-service.js'
import { createReachability, PROBE_HANDLE, REASON_WORDS } from './resolve/upstream/reachability.js'
import type { Reachability, UpstreamState } from './resolve/upstream/reachability.js'
import { createResolver } from './resolve/lookup/resolver.js'
import { createUpstreamClient } from './resolve/upstream/client.js'
import { createStatusCollector } from './status/collector.js'

/** What createServices may be given instead of building it itself; tests pass real objects here, never mocks. */
export interface ServiceDeps {
  /** An undici dispatcher for the upstream; default: a bounded Pool to UPSTREAM_URL's origin. */
  upstreamDispatcher?: Dispatcher
  /** Clock in epoch ms; default Date.now. */
  now?: () => number
  /** Random source in [0,1) for 10320/loc weighted choice; default Math.random. */
  random?: () => number
  /** A node:cluster worker (main.ts, WORKERS > 1), by its number: /metrics then answers for the whole host. */
  clusterWorker?: { index: number } | undefined
}

/** What the routes and the hot path share: built once per app by createServices (each field: src/http/route-context.ts). */
export interface Services extends RouteServices {
  /** The gate, and the plugins it asks, which src/plugins/admission.ts registers. */
  admission: AdmissionControl
}

/** What createServices needs of the app being built: its logger, and whether it is serving (ready and not draining). */
export interface ServiceHost {
  log: FastifyBaseLogger
  lifecycle: Lifecycle
}

/** What must run as the server listens and closes; app.ts adds each as a hook. */
export interface ServiceHooks {
  /** onReady: the status page's collector starts reading the counters. */
  onReady (): Promise<void>
  /** onListen: one request says whether the upstream answers (logged by the tracker); nothing offline. */
  onListen (): Promise<void>
  /** preClose: the cache snapshot written as closing begins. */
  preClose (): Promise<void>
  /** onClose: what holds a connection, a file or a timer closed, the last opened first. */
  onClose (): Promise<void>
}

/** What buildApp gives its plugins. */
export interface AppContext {
  config: Config
  services: Services
}

const BREAKER_LEVEL = { closed: 0, 'half-open': 1, open: 2 } as const

/**
 * The object graph behind the routes: metrics, the upstream client with its fair queue and breakers,
 * the record cache and its other tiers, the local store, the resolver, the proxy service, and the
 * admission gate (its plugins, @fastify/under-pressure and @fastify/rate-limit, are registered by
 * app.ts). It registers nothing on the app: what must run when the server listens and closes comes
 * back as `hooks`, for app.ts to add.
 */
export async function createServices (config: Config, deps: ServiceDeps, host: ServiceHost): Promise<{ services: Services, hooks: ServiceHooks }> {
  const { log, lifecycle } = host
  const now = deps.now ?? Date.now
  // What holds a connection, a file or a timer, in the order opened: closed the other way round.
  const closers: Array<() => Promise<void>> = []
  const metrics = createMetrics({ clusterWorker: deps.clusterWorker })
  const recording = config.recordTo !== undefined && !config.offline
  const reachability = createReachability({
    onChange: (state) => {
      logReachability(log, config.upstreamUrl, state)
      if (recording && state.state === 'unreachable') log.warn({ dir: config.recordTo, upstream: config.upstreamUrl }, 'RECORD_TO: the upstream cannot be reached, so nothing new is being recorded')
    }
  })
  // OFFLINE: no client to the upstream is built at all, so nothing here can open a connection to it (nor
  // probe it at start); only the local records answer. The same holds for open access and metadata below.
  // Told to the other workers of the host (once the fleet is made, below, when Redis is connected).
  let tellHost = (_message: FleetMessage): void => {}
  const upstream = config.offline
    ? undefined
    : createGuardedUpstream(config, deps, { metrics, log, reachability, onWait: (until) => { tellHost({ kind: 'upstream-wait', until }) } })
  if (upstream !== undefined) closers.push(async () => { await upstream.close() })
  // At start, one request says whether the upstream answers (logged by the tracker); a server that never
  // listens (tests, tools) asks nothing.
  const onListen = async (): Promise<void> => { upstream?.probe() }
  const queue = createFairQueue({
    maxActive: config.upstreamMaxConcurrent,
    perClient: config.upstreamPerClient,
    perClientQueue: config.upstreamClientQueue,
    maxWaiting: config.upstreamQueueSize,
    waitTimeoutMs: config.upstreamQueueTimeoutMs,
    retryAfterMs: 5000,
    onChange: (waiting, active) => {
      metrics.upstreamWaiting.set(waiting)
      metrics.upstreamActive.set(active)
    },
    onRefuse: (reason) => metrics.refusals.inc({ reason })
  })
  // How long answers stay fresh and are kept, in every tier (src/handle/freshness.ts).
  const freshness = freshnessPolicy(config)
  const cache = createRecordCache({ maxEntries: config.cacheMaxEntries, maxBytes: config.cacheMaxBytes, freshness })
  // The snapshot file and the shared tier in Redis (behaviour.md §11).
  // The open-access answers' memory, kept in the snapshot with the records.
  const openAccessCache = openAccessCacheOf(config)
  const tiers = await setUpCacheTiers(log, config, { cache, freshness, metrics, now, openAccess: openAccessCache })
  closers.push(tiers.close)
  const fleet = createFleet({ redis: tiers.redis, channel: `${config.redisKeyPrefix}v1:fleet:${sourceId(cacheSourceOf(config))}` })
  closers.push(fleet.close)
  tellHost = fleet.tellHost
  // A purge (DELETE /api/cache/{doi}, src/http/routes/cache.ts): the key leaves this process's memory (its
  // record, with the answers kept with it for the door, its open-access answer and its fetched metadata,
  // an agency's 404 or 406 included), then the snapshot. The metadata answers are built below.
  let forgetMetadata = (_key: string): boolean => false
  const dropHere = (key: string): boolean => {
    const held = cache.peek(key) !== undefined
    cache.delete(key)
    openAccessCache?.delete(key)
    return forgetMetadata(key) || held
  }
  fleet.onMessage((message) => {
    if (message.kind === 'upstream-wait') upstream?.guarded.holdUntil(message.until)
    if (message.kind === 'purge') {
      dropHere(message.key)
      tiers.forget(message.key, false).catch(() => {})
    }
  })
  const purge = async (key: string): Promise<PurgeResult> => {
    const held = dropHere(key)
    const redis = await tiers.forget(key, true)
    const told = await fleet.tellAll({ kind: 'purge', key })
    return { held, redis, told }
  }
  const local = config.localStoreDir === undefined
    ? undefined
    : await openLocalStore({
      dir: config.localStoreDir,
      authoritativePrefixes: config.localAuthoritativePrefixes,
      watch: config.localStoreWatch,
      ...(config.localStorePollMs > 0 ? { poll: true, pollIntervalMs: config.localStorePollMs } : {}),
      log
    })
  if (local !== undefined) {
    closers.push(async () => { await local.close() })
    metrics.observeLocalStore(() => local.stats().records)
  }
  const throttleStale = createLogThrottle(1000, now)
  // RECORD_TO: what is fetched, and what the local store answers, is written for an offline replay
  // (docs/testing-with-doi-proxy.md); flushed at close.
  const recorder = recording && upstream !== undefined ? await openRecorder({ dir: config.recordTo!, log }) : undefined
  if (recorder !== undefined) closers.push(async () => { await recorder.close() })
  const fetcher = upstream === undefined ? undefined : tiers.wrap(upstream.guarded)
  const resolver = createResolver({
    upstream: fetcher === undefined || recorder === undefined ? fetcher : recordingFetcher(fetcher, recorder),
    queue,
    local: recorder === undefined || local === undefined ? local : recordingLocal(local, recorder),
    cache,
    metrics,
    now,
    freshness,
    refreshAhead: config.refreshAhead,
    onStale: (handle, err) => {
      metrics.staleServed.inc()
      throttleStale(err.code, (suppressed) => log.warn({ handle, code: err.code, suppressed }, 'upstream failed; serving a stale record'))
    },
    onRefreshError: (handle, err) => log.warn({ handle, err }, 'background refresh failed')
  })
  metrics.observeCache(() => ({ entries: cache.size, bytes: cache.bytes }))
  const reportedProblems = new LRUCache<string, true>({ max: 10_000 })
  const proxyService = createProxyService({
    resolver,
    allowedSchemes: config.allowedSchemes,
    now,
    random: deps.random ?? Math.random,
    onLocationProblems: (handle, problems) => {
      // Once per record and set of problems, not once per request (issue 3: "log it once per record").
      const key = `${cacheKey(handle)}\u0000${problems.join('\u0000')}`
      if (reportedProblems.has(key)) return
      reportedProblems.set(key, true)
      log.warn({ handle, problems }, 'skipped broken 10320/loc data')
    }
  })

  const admission = createAdmission(config, metrics, tiers.redis)
  const countryLookup = config.geoipDatabase === undefined ? undefined : await openCountryLookup(config.geoipDatabase)
  // behaviour.md §10: only when a service is configured does a redirect ask about one.
  const openAccess = await setUpOpenAccess(log, config, { metrics, now, redis: tiers.redis, cache: openAccessCache })
  if (openAccess !== undefined) closers.push(async () => { await openAccess.close() })
  const localServices = config.localServices.length === 0 ? undefined : createLocalServices({ services: config.localServices, metrics, now, openAccess })
  const metadata = createMetadataAnswers({ config, admission, stored: local === undefined ? undefined : (h: string) => local.metadata(h), userAgent: upstreamUserAgent(config), now, recorder })
  closers.push(async () => { await metadata.close() })
  forgetMetadata = metadata.forget
  // Our own address, for a page's links when the request's Host cannot be used.
  const fallbackHost = `${config.host}:${config.port}`
  // The bounds beside the figures they bound, for /metrics too (dashboards and alerts divide by them).
  metrics.showBounds(config)
  const status = createStatusCollector({ metrics, settings: config, now, upstreamState: reachability.state, worker: deps.clusterWorker?.index })
  closers.push(async () => { status.stop() })
  const services: Services = {
    now,
    metrics,
    resolver,
    proxyService,
    admission,
    countryLookup,
    localServices,
    metadata,
    fallbackHost,
    prepared: createPreparedAnswers({
      resolver,
      // Off when each answer must be logged, or may depend on who asks (a local service).
      enabled: !config.logRequests && config.localServices.length === 0,
      negotiatedVaries: metadata.fetching,
      maxHandleLength: config.maxHandleLength,
      publicBaseUrl: config.publicBaseUrl,
      behindProxy: config.trustProxy !== false,
      fallbackHost,
      served: metrics.preparedAnswers.tally(),
      outcomes: { redirect: metrics.answer('redirect', 'hit'), values: metrics.answer('values', 'hit'), notFound: metrics.answer('not_found'), api: { found: metrics.otherAnswers.hit, notFound: metrics.otherAnswers.not_found } },
      serving: () => lifecycle.ready,
      now
    }),
    upstreamState: reachability.state,
    status,
    purge
  }
  return { services, hooks: { onReady: async () => { status.start() }, onListen, preClose: tiers.preClose, onClose: async () => { await closeAll(closers) } } }
}

/**
 * The upstream client (a bounded Pool to UPSTREAM_URL's origin, or the dispatcher a test gives) behind its
 * circuit breakers: what the resolver fetches through, the probe at start, and its close. Never built offline.
 */
function createGuardedUpstream (config: Config, deps: ServiceDeps, ctx: { metrics: Metrics, log: FastifyBaseLogger, reachability: Reachability, onWait: (until: number) => void }) {
  const { metrics, log, reachability } = ctx
  const raw = createUpstreamClient({
    baseUrl: config.upstreamUrl,
    userAgent: upstreamUserAgent(config),
    timeoutMs: config.upstreamTimeoutMs,
    connectTimeoutMs: config.upstreamConnectTimeoutMs,
    connections: config.upstreamConnections,
    maxBodyBytes: config.upstreamMaxBodyBytes,
    retry: {
      retries: config.upstreamRetries,
      baseMs: config.upstreamRetryBaseMs,
      maxMs: config.upstreamRetryMaxMs,
      onRetry: (handle, attempt, reason) => {
        metrics.upstreamRetries.inc()
        log.info({ handle, attempt, reason }, 'retrying the upstream')
      }
    },
    ...(deps.upstreamDispatcher === undefined ? {} : { dispatcher: deps.upstreamDispatcher }),
    reachability
  })
  const guarded = guardUpstream(raw, {
    maxPrefixBreakers: 1024,
    reachability,
    // The registry's 429 speaks to the host's address: every worker of the host waits it out.
    onWait: ctx.onWait,
    breaker: {
      errorThresholdPercent: config.breakerErrorThresholdPercent,
      volumeThreshold: config.breakerVolumeThreshold,
      resetMs: config.breakerResetMs,
      windowMs: config.breakerWindowMs
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
    probe: (): void => { raw.fetchRecord(PROBE_HANDLE).catch(() => {}) },
    close: async (): Promise<void> => { await guarded.close() }
  }
}

/** Closes each, the last opened first, every one even when one fails; then the first failure, if any. */
async function closeAll (closers: ReadonlyArray<() => Promise<void>>): Promise<void> {
  let failure: unknown
  for (const close of [...closers].reverse()) {
    try {
      await close()
    } catch (err) {
      failure ??= err
    }
  }
  if (failure !== undefined) throw failure
}

/** One line each time the upstream starts or stops answering, naming the cause and what an operator can do. */
function logReachability (log: FastifyBaseLogger, upstream: string, state: UpstreamState): void {
  if (state.state === 'answers') log.info({ upstream }, 'the upstream answers')
  if (state.state === 'unreachable') {
    log.warn({ upstream, reason: state.reason, detail: state.detail, why: REASON_WORDS[state.reason] },
      'the upstream cannot be reached: cached and local records are still answered; check the network and UPSTREAM_URL, or run offline (OFFLINE=true, npm run start:offline)')
  }
}
