import type { FastifyBaseLogger } from 'fastify'
import type { Dispatcher } from 'undici'
import type { Config } from './config/schema.js'
import { createAdmission } from './http/admission.js'
import type { AdmissionControl } from './http/admission.js'
import { createBatchAnswers } from './http/batch.js'
import type { BatchAnswers } from './http/batch.js'
import { createLocalServices } from './http/local-service.js'
import { createPreparedAnswers } from './http/prepared-answers.js'
import type { PreparedAnswers, PreparedAnswersOptions } from './http/prepared-answers.js'
import type { RouteServices } from './http/route-context.js'
import type { Lifecycle } from './http/routes/ops.js'
import { createMetrics } from './observe/metrics.js'
import type { Metrics } from './observe/metrics.js'
import type { FleetMessage } from './resolve/fleet/messages.js'
import type { LandingLookup } from './resolve/landing/address-guard.js'
import { openCountryLookup } from './resolve/lookup/geoip.js'
import type { ProxyService } from './resolve/lookup/proxy-service.js'
import type { Resolver } from './resolve/lookup/resolver.js'
import { openRecorder } from './resolve/recording/recorder.js'
import { createStatusCollector } from './status/collector.js'
import type { RegistryCopyStatus } from './status/snapshot.js'
import { setUpCaches } from './services/cache-tiers.js'
import { setUpRegistryCopy } from './services/copy.js'
import type { CopyDeps } from './services/copy.js'
import type { Caches } from './services/cache-tiers.js'
import { joinFleet } from './services/fleet.js'
import { createLookup, openLocalRecords } from './services/lookup.js'
import { setUpMetadata } from './services/metadata.js'
import { setUpOpenAccess } from './services/open-access.js'
import { setUpUpstream } from './services/upstream.js'
import { setUpVerify } from './services/verify.js'
import { setUpLanding } from './services/landing.js'
import { setUpHealth } from './services/health.js'
import type { HealthSetUp } from './services/health.js'
import type { Health } from './resolve/health/health-service.js'
import type { Verifier } from './resolve/verify/verifier.js'

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
  /** Name lookups of landing-page hosts (`?verify=landing`); default node:dns. Tests give test/support/landing-dns.ts. */
  landingLookup?: LandingLookup | undefined
  /** How long a verifying batch's answer stays silent before a newline keeps it open; default 10 s. */
  batchHeartbeatMs?: number | undefined
  /** The health lease's time to live and renewal (tests shorten them); default 30 s and 10 s. */
  healthLeaseMs?: { ttl: number; renew: number } | undefined
  /** The registry copy's update schedule (REGISTRY_COPY_UPDATE_HOURS): how soon it first looks, the feeds' pace, each run's end. */
  copyUpdates?: CopyDeps['updates']
}

/** What the routes and the hot path share: built once per app by createServices (each field: src/http/route-context.ts). */
export interface Services extends RouteServices {
  /** The gate, and the plugins it asks, which src/plugins/admission.ts registers. */
  admission: AdmissionControl
  /** The lines of a batch (POST /api/batch, src/http/routes/batch.ts) looked up, at most BATCH_CONCURRENCY at once. */
  batch: BatchAnswers
  /**
   * Resolution health (issue 42) where this process writes the host's history (the one process, or worker 1):
   * `runOnce` is `doi-proxy health`'s pass; started by onListen. Undefined when health is off, and in the other workers.
   */
  health: Health | undefined
}

/** What createServices needs of the app being built: its logger, and whether it is serving (ready and not draining). */
export interface ServiceHost {
  log: FastifyBaseLogger
  lifecycle: Lifecycle
}

/** What must run as the server listens and closes; app.ts adds each as a hook. */
export interface ServiceHooks {
  /** onReady: the status page's collector starts reading the counters. */
  onReady(): Promise<void>
  /** onListen: one request says whether the upstream answers (logged by the tracker); nothing offline. Health checks start. */
  onListen(): Promise<void>
  /** preClose: the cache snapshot written as closing begins. */
  preClose(): Promise<void>
  /** onClose: what holds a connection, a file or a timer closed, the last opened first. */
  onClose(): Promise<void>
}

/** What buildApp gives its plugins. */
export interface AppContext {
  config: Config
  services: Services
}

/**
 * The object graph behind the routes: metrics, the upstream client with its fair queue and breakers,
 * the record cache and its other tiers, the local store, the resolver, the proxy service, and the
 * admission gate (its plugins, @fastify/under-pressure and @fastify/rate-limit, are registered by
 * app.ts). Each part is built from the settings it reads (src/services/). It registers nothing on the
 * app: what must run when the server listens and closes comes back as `hooks`, for app.ts to add.
 */
export async function createServices(
  config: Config,
  deps: ServiceDeps,
  host: ServiceHost
): Promise<{ services: Services; hooks: ServiceHooks }> {
  const { log, lifecycle } = host
  const now = deps.now ?? Date.now
  // What holds a connection, a file or a timer, in the order opened: closed the other way round.
  const closers: Array<() => Promise<void>> = []
  const base = await setUpBase(config, deps, { log, now, closers })
  const { metrics, upstream, tiers, local, copy, recorder, fleet } = base
  // Health's seen DOIs (built below, on the proxy service): bound late, and only while HEALTH_WATCH names a prefix.
  let onFound = (_handle: string, _key: string): void => {}
  const { resolver, proxyService } = createLookup(config, {
    fetcher: upstream === undefined ? undefined : tiers.wrap(upstream.guarded),
    queue: base.queue,
    local,
    copy: copy?.tier,
    cache: base.cache,
    freshness: base.freshness,
    recorder,
    metrics,
    log,
    now,
    random: deps.random ?? Math.random,
    onFound: config.healthWatch.length > 0 ? (handle, key) => onFound(handle, key) : undefined
  })
  const admission = createAdmission(config, metrics, tiers.redis)
  const extras = await setUpRedirectExtras(config, { log, metrics, now, redis: tiers.redis, cache: base.openAccessCache })
  closeLater(closers, extras.openAccess)
  const stored = local === undefined ? undefined : (h: string) => local.metadata(h)
  const copyMetadata = copy === undefined ? undefined : { metadata: copy.metadata, offline: config.offline }
  const metadata = setUpMetadata(config, { admission, stored, copy: copyMetadata, freshness: base.freshness, now, recorder })
  closers.push(metadata.close)
  base.forgetMetadata(metadata.answers.forget)
  const parts = { proxyService, metadataService: metadata.service, stored, recorder, redis: tiers.redis, metrics, log, now }
  const { landing, verify } = await setUpChecking(config, deps, parts, closers)
  // Resolution health (issue 42): the history, its pages, and (in the writer) the scheduled checks.
  const health = setUpHealth(config, {
    ...parts,
    landing: landing.live,
    store: local,
    cacheEntries: () => base.cache.entries(),
    fleet,
    worker: deps.clusterWorker?.index,
    leaseTtlMs: deps.healthLeaseMs?.ttl,
    leaseRenewMs: deps.healthLeaseMs?.renew
  })
  if (health !== undefined) {
    if (health.onFound !== undefined) onFound = health.onFound
    closers.push(health.close)
  }
  const { fallbackHost, status, prepared, batch } = setUpServing(config, {
    metrics,
    now,
    resolver,
    proxyService,
    negotiatedVaries: metadata.answers.fetching,
    upstreamState: base.reachability.state,
    worker: deps.clusterWorker?.index,
    serving: () => lifecycle.ready,
    verifier: verify.verifier,
    batchHeartbeatMs: deps.batchHeartbeatMs,
    registryCopy: copy?.status
  })
  closers.push(async () => {
    status.stop()
  })
  const services: Services = {
    now,
    metrics,
    resolver,
    proxyService,
    admission,
    countryLookup: extras.countryLookup,
    localServices: extras.localServices,
    metadata: metadata.answers,
    batch,
    fallbackHost,
    prepared,
    upstreamState: base.reachability.state,
    status,
    purge: base.purge,
    health: health?.health,
    healthPages: health?.pages
  }
  return { services, hooks: hooksOf({ status, upstream, tiers, closers, health }) }
}

/**
 * What the rest stands on: the metrics, the upstream client, the cache tiers, the fleet (the purge), the local
 * store, the registry copy (REGISTRY_COPY, issue 43: a tier after the cache, before the upstream; offline it
 * answers alone) and the recorder. `forgetMetadata` binds the metadata answers a purge forgets too (built later).
 */
async function setUpBase(
  config: Config,
  deps: ServiceDeps,
  ctx: { log: FastifyBaseLogger; now: () => number; closers: Array<() => Promise<void>> }
) {
  const { log, now, closers } = ctx
  const metrics = createMetrics({ clusterWorker: deps.clusterWorker })
  // Told to the other workers of the host (once the fleet is made, below, when Redis is connected).
  let tellHost = (_message: FleetMessage): void => {}
  // OFFLINE: no client to the upstream is built; the same holds for open access and metadata below.
  const { reachability, upstream, queue } = setUpUpstream(config, {
    metrics,
    log,
    dispatcher: deps.upstreamDispatcher,
    onWait: (until) => {
      tellHost({ kind: 'upstream-wait', until })
    }
  })
  closeLater(closers, upstream)
  const { freshness, cache, openAccessCache, tiers } = await setUpCaches(config, { log, metrics, now })
  closers.push(tiers.close)
  // A purge forgets the key's fetched metadata too (bound by the caller).
  let forgetMetadata = (_key: string): boolean => false
  const dropHere = (key: string): boolean => dropFromMemory(key, { cache, openAccessCache, forgetMetadata })
  const { fleet, purge } = joinFleet(config, { tiers, upstream, dropHere })
  closers.push(fleet.close)
  tellHost = fleet.tellHost
  const local = await openLocalRecords(config, { log, metrics })
  closeLater(closers, local)
  const copy = await setUpRegistryCopy(config, { metrics, log, now, updates: deps.copyUpdates })
  closeLater(closers, copy)
  // RECORD_TO: what is fetched, and what the local store answers, is written for an offline replay
  // (docs/testing-with-doi-proxy.md); flushed at close.
  const recorder = config.recordTo !== undefined && upstream !== undefined ? await openRecorder({ dir: config.recordTo, log }) : undefined
  closeLater(closers, recorder)
  return {
    metrics,
    reachability,
    upstream,
    queue,
    freshness,
    cache,
    openAccessCache,
    tiers,
    fleet,
    purge,
    local,
    copy,
    recorder,
    forgetMetadata: (forget: (key: string) => boolean): void => {
      forgetMetadata = forget
    }
  }
}

/**
 * One landing stack per process (a prober on the fleet's host slots, its verdicts' cache): `?verify=landing` and
 * health share it; and `?verify=` (issue 41): the registered metadata through the agencies' cache, retractions,
 * landing pages.
 */
async function setUpChecking(
  config: Config,
  deps: ServiceDeps,
  parts: Omit<Parameters<typeof setUpVerify>[1], 'landing'>,
  closers: Array<() => Promise<void>>
) {
  const { stored, recorder, redis, metrics, log } = parts
  const landing = setUpLanding(config, { stored, recorder, redis, metrics, log, landingLookup: deps.landingLookup })
  closers.push(landing.close)
  const verify = await setUpVerify(config, { ...parts, landing: landing.checks })
  closers.push(verify.close)
  return { landing, verify }
}

/** What must run when the server is ready, listens and closes, for app.ts to add as hooks. */
function hooksOf(parts: {
  status: { start: () => void }
  upstream: { probe: () => void } | undefined
  tiers: { preClose: ServiceHooks['preClose'] }
  closers: Array<() => Promise<void>>
  health: Pick<HealthSetUp, 'start'> | undefined
}): ServiceHooks {
  const { status, upstream, tiers, closers, health } = parts
  return {
    onReady: async () => {
      status.start()
    },
    // At start, one request says whether the upstream answers (logged by the tracker); a server that never
    // listens (tests, tools: `doi-proxy health` runs its own pass) asks nothing and checks nothing.
    onListen: async () => {
      upstream?.probe()
      await health?.start()
    },
    preClose: tiers.preClose,
    onClose: async () => {
      await closeAll(closers)
    }
  }
}

/**
 * A purge drops from this process's memory the key's record (with the answers kept with it for the door), its
 * open-access answer and its fetched metadata, an agency's 404 or 406 included: whether any of them was held.
 */
function dropFromMemory(
  key: string,
  held: Pick<Caches, 'cache' | 'openAccessCache'> & { forgetMetadata: (key: string) => boolean }
): boolean {
  const record = held.cache.peek(key) !== undefined
  held.cache.delete(key)
  held.openAccessCache?.delete(key)
  return held.forgetMetadata(key) || record
}

/** What a redirect may ask besides the record: the reader's country (GEOIP_DATABASE), an open-access copy, a local service. */
async function setUpRedirectExtras(config: Config, parts: Parameters<typeof setUpOpenAccess>[2] & { log: FastifyBaseLogger }) {
  const { log, metrics, now } = parts
  const countryLookup = config.geoipDatabase === undefined ? undefined : await openCountryLookup(config.geoipDatabase)
  // behaviour.md §10: only when a service is configured does a redirect ask about one.
  const openAccess = await setUpOpenAccess(log, config, { metrics, now, redis: parts.redis, cache: parts.cache })
  const localServices =
    config.localServices.length === 0 ? undefined : createLocalServices({ services: config.localServices, metrics, now, openAccess })
  return { countryLookup, openAccess, localServices }
}

/** Closed at the app's close, after what was opened after it: `thing`, when there is one. */
function closeLater(closers: Array<() => Promise<void>>, thing: { close: () => Promise<void> } | undefined): void {
  if (thing !== undefined) {
    closers.push(async () => {
      await thing.close()
    })
  }
}

/** What answers readers besides the routes' own lookups: the status page's figures, the door, the batch API. */
function setUpServing(
  config: Config,
  parts: {
    metrics: Metrics
    now: () => number
    resolver: Resolver
    proxyService: ProxyService
    negotiatedVaries: boolean
    upstreamState: Services['upstreamState']
    worker: number | undefined
    serving: () => boolean
    verifier: Verifier | undefined
    batchHeartbeatMs: number | undefined
    registryCopy: (() => RegistryCopyStatus) | undefined
  }
) {
  const { metrics, now, resolver } = parts
  // Our own address, for a page's links when the request's Host cannot be used.
  const fallbackHost = `${config.host}:${config.port}`
  // The bounds beside the figures they bound, for /metrics too (dashboards and alerts divide by them).
  metrics.showBounds(config)
  const status = createStatusCollector({
    metrics,
    settings: config,
    now,
    upstreamState: parts.upstreamState,
    worker: parts.worker,
    registryCopy: parts.registryCopy
  })
  const prepared = preparedAnswersOf(config, {
    resolver,
    metrics,
    negotiatedVaries: parts.negotiatedVaries,
    fallbackHost,
    serving: parts.serving,
    now
  })
  const batch = createBatchAnswers({
    service: parts.proxyService,
    resolver,
    metrics,
    concurrency: batchConcurrency(config),
    deadlineMs: config.requestDeadlineMs,
    verifier: parts.verifier,
    verifyLevels: config.verifyLevels,
    verifyConcurrency: config.verifyConcurrency,
    heartbeatMs: parts.batchHeartbeatMs
  })
  return { fallbackHost, status, prepared, batch }
}

/** The door's settings: what turns it off, and what its pages' links are made of. */
type DoorSettings = Pick<Config, 'logRequests' | 'localServices' | 'maxHandleLength' | 'publicBaseUrl' | 'trustProxy' | 'allowedSchemes'>
type DoorParts = Pick<PreparedAnswersOptions, 'resolver' | 'negotiatedVaries' | 'fallbackHost' | 'serving' | 'now'> & { metrics: Metrics }

/** The answers kept with cached records and written before routing (src/http/prepared-answers.ts), counted as the route counts them. */
function preparedAnswersOf(settings: DoorSettings, parts: DoorParts): PreparedAnswers {
  const { metrics } = parts
  return createPreparedAnswers({
    resolver: parts.resolver,
    // Off when each answer must be logged, or may depend on who asks (a local service).
    enabled: !settings.logRequests && settings.localServices.length === 0,
    negotiatedVaries: parts.negotiatedVaries,
    maxHandleLength: settings.maxHandleLength,
    allowedSchemes: settings.allowedSchemes,
    publicBaseUrl: settings.publicBaseUrl,
    behindProxy: settings.trustProxy !== false,
    fallbackHost: parts.fallbackHost,
    served: metrics.preparedAnswers.tally(),
    outcomes: {
      redirect: metrics.answer('redirect', 'hit'),
      values: metrics.answer('values', 'hit'),
      notFound: metrics.answer('not_found'),
      api: { found: metrics.otherAnswers.hit, notFound: metrics.otherAnswers.not_found }
    },
    serving: parts.serving,
    now: parts.now
  })
}

/** A batch's lookups at once: more than a client may have in flight and waiting would only earn 429s from its own queue. */
function batchConcurrency(settings: Pick<Config, 'batchConcurrency' | 'upstreamPerClient' | 'upstreamClientQueue'>): number {
  return Math.min(settings.batchConcurrency, settings.upstreamPerClient + settings.upstreamClientQueue)
}

/** Closes each, the last opened first, every one even when one fails; then the first failure, if any. */
async function closeAll(closers: ReadonlyArray<() => Promise<void>>): Promise<void> {
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
