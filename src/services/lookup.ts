import type { FastifyBaseLogger } from 'fastify'
import { LRUCache } from 'lru-cache'
import type { Config } from '../config/schema.js'
import type { FreshnessPolicy } from '../handle/freshness.js'
import { cacheKey } from '../handle/name.js'
import { createLogThrottle } from '../observe/log-throttle.js'
import type { Metrics } from '../observe/metrics.js'
import type { RecordCache } from '../resolve/cache/record-cache.js'
import type { CopyTier } from '../resolve/copy/tier.js'
import { openLocalStore } from '../resolve/local-store/store.js'
import type { LocalStore } from '../resolve/local-store/store.js'
import { createProxyService } from '../resolve/lookup/proxy-service.js'
import type { ProxyService } from '../resolve/lookup/proxy-service.js'
import { createResolver } from '../resolve/lookup/resolver.js'
import type { Resolver } from '../resolve/lookup/resolver.js'
import { recordingFetcher, recordingLocal } from '../resolve/recording/recorder.js'
import type { Recorder } from '../resolve/recording/recorder.js'
import type { FairQueue } from '../resolve/upstream/fair-queue.js'
import type { RecordFetcher } from '../resolve/upstream/fetcher.js'

export type LookupSettings = Pick<Config, 'refreshAhead' | 'allowedSchemes'>

/** What the lookup flow is made of, each built before it. */
export interface LookupParts {
  /** The upstream through the shared tier and the breakers; undefined offline. */
  fetcher: RecordFetcher | undefined
  queue: FairQueue
  local: LocalStore | undefined
  /** The registry copy's tier (REGISTRY_COPY); undefined without a copy. */
  copy?: CopyTier | undefined
  cache: RecordCache
  freshness: FreshnessPolicy
  /** RECORD_TO: what is fetched, and what the local store answers, is written down too. */
  recorder: Recorder | undefined
  metrics: Metrics
  log: FastifyBaseLogger
  now: () => number
  /** Random source in [0,1) for 10320/loc weighted choice. */
  random: () => number
  /**
   * Told of each record the upstream found on a miss (issue 42: resolution health's seen DOIs,
   * src/resolve/health/seen.ts `onFound`); none while health watches no prefix, so a miss pays nothing.
   */
  onFound?: ((handle: string, key: string) => void) | undefined
}

/**
 * The lookup flow (docs/architecture.md, "One lookup path"): the resolver (local records, the cache, the
 * registry copy, the fair queue, the upstream) and the proxy service on it, with their logs: a stale answer and a failed refresh,
 * throttled; broken 10320/loc data, once per record.
 */
export function createLookup(settings: LookupSettings, parts: LookupParts): { resolver: Resolver; proxyService: ProxyService } {
  const { fetcher, local, recorder, metrics, log, now } = parts
  const throttleStale = createLogThrottle(1000, now)
  const resolver = createResolver({
    upstream: fetcher === undefined || recorder === undefined ? fetcher : recordingFetcher(fetcher, recorder),
    queue: parts.queue,
    local: recorder === undefined || local === undefined ? local : recordingLocal(local, recorder),
    copy: parts.copy,
    cache: parts.cache,
    metrics,
    now,
    freshness: parts.freshness,
    refreshAhead: settings.refreshAhead,
    onStale: (handle, err) => {
      metrics.staleServed.inc()
      throttleStale(err.code, (suppressed) => log.warn({ handle, code: err.code, suppressed }, 'upstream failed; serving a stale record'))
    },
    onRefreshError: (handle, err) => log.warn({ handle, err }, 'background refresh failed'),
    onFound: parts.onFound
  })
  const reportedProblems = new LRUCache<string, true>({ max: 10_000 })
  const proxyService = createProxyService({
    resolver,
    allowedSchemes: settings.allowedSchemes,
    now,
    random: parts.random,
    onLocationProblems: (handle, problems) => {
      // Once per record and set of problems, not once per request (issue 3: "log it once per record").
      const key = `${cacheKey(handle)}\u0000${problems.join('\u0000')}`
      if (reportedProblems.has(key)) return
      reportedProblems.set(key, true)
      log.warn({ handle, problems }, 'skipped broken 10320/loc data')
    }
  })
  return { resolver, proxyService }
}

export type LocalStoreSettings = Pick<Config, 'localStoreDir' | 'localAuthoritativePrefixes' | 'localStoreWatch' | 'localStorePollMs'>

/** The local records (behaviour.md §3, §9), read now and watched; undefined without LOCAL_STORE_DIR. Its count goes to /metrics. */
export async function openLocalRecords(
  settings: LocalStoreSettings,
  ctx: { log: FastifyBaseLogger; metrics: Metrics }
): Promise<LocalStore | undefined> {
  if (settings.localStoreDir === undefined) return undefined
  const local = await openLocalStore({
    dir: settings.localStoreDir,
    authoritativePrefixes: settings.localAuthoritativePrefixes,
    watch: settings.localStoreWatch,
    ...(settings.localStorePollMs > 0 ? { poll: true, pollIntervalMs: settings.localStorePollMs } : {}),
    log: ctx.log
  })
  ctx.metrics.observeLocalStore(() => local.stats().records)
  return local
}
