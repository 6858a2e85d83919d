import type { FastifyBaseLogger } from 'fastify'
import type { RedisClient } from '../resolve/fleet/redis.js'
import type { Dispatcher } from 'undici'
import type { Config } from '../config/schema.js'
import { openAccessProviderInForce } from '../config/open-access.js'
import { upstreamUserAgent, workerShareOf } from '../config/schema.js'
import { createLogThrottle } from '../observe/log-throttle.js'
import type { Metrics } from '../observe/metrics.js'
import { createOpenAccess, createOpenAccessCache } from '../resolve/open-access/finder.js'
import type { OpenAccess, OpenAccessCache } from '../resolve/open-access/finder.js'
import { fileProvider, openAlexProvider, unpaywallProvider } from '../resolve/open-access/providers.js'
import type { OpenAccessProviderClient } from '../resolve/open-access/providers.js'

/** The settings of the provider in force: which, where, and how it is asked over the network. */
export type ProviderSettings = Pick<
  Config,
  | 'oaProvider'
  | 'offline'
  | 'unpaywallUrl'
  | 'unpaywallEmail'
  | 'openalexUrl'
  | 'oaSnapshotFile'
  | 'oaSnapshotMaxEntries'
  | 'oaTimeoutMs'
  | 'oaConnections'
  | 'oaMaxBodyBytes'
  | 'upstreamConnectTimeoutMs'
  | 'userAgent'
  | 'contactEmail'
>

/** The settings of the answers' memory. */
export type OpenAccessCacheSettings = Pick<Config, 'oaProvider' | 'oaCacheMaxEntries' | 'oaTtlSeconds' | 'oaNegativeTtlSeconds'>

/** The settings of the open-access source: its provider, its memory, its day and its share of Redis. */
export type OpenAccessSettings = ProviderSettings &
  OpenAccessCacheSettings &
  Pick<Config, 'oaBudgetMs' | 'oaDailyLimit' | 'workers' | 'redisKeyPrefix' | 'redisWaitPollMs'>

/**
 * The open-access source of link-out chains (docs/institutional.md "Open access first"): its provider
 * (a file is read now), its cache and shared tier; its `close` is for the app's close. Undefined
 * without OA_PROVIDER, and offline for a provider over the network (never built: no connection).
 */
export async function setUpOpenAccess(
  log: FastifyBaseLogger,
  config: OpenAccessSettings,
  deps: {
    metrics: Metrics
    now: () => number
    redis: RedisClient | undefined
    dispatcher?: Dispatcher | undefined
    cache?: OpenAccessCache | undefined
  }
): Promise<OpenAccess | undefined> {
  const provider = await providerOf(log, config, deps.dispatcher)
  if (provider === undefined) return undefined
  const throttle = createLogThrottle(10_000)
  const openAccess = createOpenAccess({
    provider,
    metrics: deps.metrics,
    now: deps.now,
    budgetMs: config.oaBudgetMs,
    ttlSeconds: config.oaTtlSeconds,
    negativeTtlSeconds: config.oaNegativeTtlSeconds,
    maxEntries: config.oaCacheMaxEntries,
    dailyLimit: config.oaDailyLimit,
    // WORKERS count the day together in Redis; without it (or while it does not answer) each counts its share.
    localDailyLimit: workerShareOf(config.oaDailyLimit, config.workers),
    redis: deps.redis,
    redisPrefix: config.redisKeyPrefix,
    lockMs: config.oaTimeoutMs,
    pollMs: config.redisWaitPollMs,
    ...(deps.cache === undefined ? {} : { cache: deps.cache }),
    onError: (doi, err) =>
      throttle(provider.name, (suppressed) =>
        log.warn(
          { doi, provider: provider.name, err: (err as Error).message, suppressed },
          'the open-access provider failed; the chain went on to its next step'
        )
      )
  })
  return openAccess
}

/**
 * The memory of a provider asked over the network (Unpaywall, OpenAlex), made before the cache tiers so
 * the cache snapshot loads its answers and writes them back; undefined for none or OA_PROVIDER=file
 * (read from its file at each start).
 */
export function openAccessCacheOf(config: OpenAccessCacheSettings): OpenAccessCache | undefined {
  if (config.oaProvider !== 'unpaywall' && config.oaProvider !== 'openalex') return undefined
  return createOpenAccessCache({
    maxEntries: config.oaCacheMaxEntries,
    provider: config.oaProvider,
    maxKeepMs: Math.max(config.oaTtlSeconds, config.oaNegativeTtlSeconds) * 1000
  })
}

async function providerOf(
  log: FastifyBaseLogger,
  config: ProviderSettings,
  dispatcher: Dispatcher | undefined
): Promise<OpenAccessProviderClient | undefined> {
  const http = {
    userAgent: upstreamUserAgent(config),
    timeoutMs: config.oaTimeoutMs,
    connectTimeoutMs: config.upstreamConnectTimeoutMs,
    connections: config.oaConnections,
    maxBodyBytes: config.oaMaxBodyBytes,
    ...(dispatcher === undefined ? {} : { dispatcher })
  }
  const provider = openAccessProviderInForce(config)
  // Said once at start, so the operator knows why the open-access step is skipped offline.
  if (provider !== config.oaProvider) {
    log.warn(
      { oaProvider: config.oaProvider },
      'offline (OFFLINE=true): the open-access provider is not asked, no connection is made; the chains go on to their next step (OA_PROVIDER=file answers offline)'
    )
  }
  switch (provider) {
    case undefined:
      return undefined
    case 'unpaywall':
      return unpaywallProvider(config.unpaywallUrl, config.unpaywallEmail as string, http)
    case 'openalex':
      return openAlexProvider(config.openalexUrl, config.contactEmail, http)
    case 'file':
      return await fileProvider(config.oaSnapshotFile as string, config.oaSnapshotMaxEntries, (fields, message) =>
        log.info(fields, message)
      )
  }
}
