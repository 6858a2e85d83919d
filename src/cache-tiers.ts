import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import type { Config } from './config/schema.js'
import type { Metrics } from './metrics.js'
import type { RecordCache } from './resolve/cache.js'
import { closeRedis, createRedisClient, waitConnected } from './resolve/redis.js'
import type { RecordFetcher } from './resolve/resolver.js'
import { createSharedTier, sharedFetcher } from './resolve/shared-tier.js'
import { loadSnapshot, scheduleSnapshots } from './resolve/snapshot.js'

/**
 * The cache's other tiers (behaviour.md §11), wired into an app: the snapshot file (loaded now,
 * written periodically and when the app closes) and the shared tier in Redis (connected now, waited
 * for at most REDIS_CONNECT_TIMEOUT_MS, closed with the app).
 */
export interface CacheTiers {
  /** The Redis client, for the rate limiter too; undefined without REDIS_URL. */
  redis: Redis | undefined
  /** The upstream as the resolver should see it: through the shared tier when there is one. */
  wrap<F extends RecordFetcher> (upstream: F): F | RecordFetcher
}

// A snapshot line is one record: no record is larger than an upstream answer may be, twice over for escaping.
const LINE_SLACK_BYTES = 64 * 1024

export async function setUpCacheTiers (app: FastifyInstance, config: Config, deps: { cache: RecordCache, metrics: Metrics, now: () => number }): Promise<CacheTiers> {
  const { cache, metrics, now } = deps
  const maxStaleMs = config.maxStaleSeconds * 1000

  if (config.cacheFile !== undefined) {
    const file = config.cacheFile
    const started = performance.now()
    const loaded = await loadSnapshot({ file, cache, now, maxLineBytes: 2 * config.upstreamMaxBodyBytes + LINE_SLACK_BYTES, maxKeyLength: config.maxHandleLength * 4, log: app.log })
    if (loaded.loaded + loaded.expired + loaded.bad > 0) {
      app.log.info({ file, ...loaded, entries: cache.size, ms: Math.round(performance.now() - started) }, 'loaded the cache snapshot')
    }
    const snapshots = scheduleSnapshots({ file, cache, now, intervalMs: config.cacheSnapshotIntervalSeconds * 1000, log: app.log })
    // Written as closing begins, not after in-flight requests drain: a request stuck on a slow upstream
    // may outlast SHUTDOWN_GRACE_MS, and the process would exit with the cache unwritten.
    app.addHook('preClose', async () => { await snapshots.close() })
  }

  if (config.redisUrl === undefined) return { redis: undefined, wrap: (upstream) => upstream }
  const redis = createRedisClient({ url: config.redisUrl, commandTimeoutMs: config.redisCommandTimeoutMs, connectTimeoutMs: config.redisConnectTimeoutMs })
  app.addHook('onClose', async () => { await closeRedis(redis, config.redisCommandTimeoutMs * 10) })
  if (!await waitConnected(redis, config.redisConnectTimeoutMs)) {
    app.log.warn({}, 'the shared cache (Redis) is not reachable; working with the local cache until it is')
  }
  const tier = createSharedTier({
    redis,
    prefix: config.redisKeyPrefix,
    lockTtlMs: config.redisLockTtlMs,
    pollMs: config.redisWaitPollMs,
    maxStaleMs,
    maxFreshMs: Math.max(config.cacheMaxTtlSeconds, config.negativeTtlSeconds) * 1000,
    maxValueBytes: 2 * config.upstreamMaxBodyBytes + LINE_SLACK_BYTES,
    now,
    metrics,
    log: app.log
  })
  return {
    redis,
    wrap: (upstream) => sharedFetcher(upstream, {
      tier,
      cache,
      now,
      pollMs: config.redisWaitPollMs,
      lockTtlMs: config.redisLockTtlMs,
      maxStaleMs,
      maxTtlSeconds: config.cacheMaxTtlSeconds,
      minTtlSeconds: config.cacheMinTtlSeconds,
      negativeTtlSeconds: config.negativeTtlSeconds
    })
  }
}
