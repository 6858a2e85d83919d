import { readdir } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config/schema.js'
import { freshnessPolicy } from '../handle/freshness.js'
import type { FreshnessPolicy } from '../handle/freshness.js'
import type { Metrics } from '../observe/metrics.js'
import { createRecordCache } from '../resolve/cache/record-cache.js'
import type { RecordCache } from '../resolve/cache/record-cache.js'
import type { OpenAccessCache } from '../resolve/open-access/finder.js'
import { cacheSourceOf, sourceId } from '../resolve/cache/source.js'
import type { CacheSource } from '../resolve/cache/source.js'
import {
  closeRedis,
  createRedisClient,
  describeRedis,
  notClusterNodes,
  redisSettingsOf,
  waitConnected,
  watchSlowSetup
} from '../resolve/fleet/redis.js'
import type { RedisClient, RedisSettingKey, RedisSettings } from '../resolve/fleet/redis.js'
import type { RecordFetcher } from '../resolve/upstream/fetcher.js'
import { openAccessRedisKey } from '../resolve/open-access/finder.js'
import { createSharedTier, sharedFetcher } from '../resolve/cache/shared-tier.js'
import { loadSnapshot, scheduleSnapshots } from '../resolve/cache/cache-file.js'
import { openAccessCacheOf } from './open-access.js'
import type { OpenAccessCacheSettings } from './open-access.js'

/**
 * The cache's other tiers (behaviour.md §11): the snapshot file (loaded now, written periodically and
 * when the app closes) and the shared tier in Redis (connected now, waited for at most
 * REDIS_CONNECT_TIMEOUT_MS, closed with the app); app.ts runs `preClose` and `close` as hooks.
 */
export interface CacheTiers {
  /** The Redis client, for the rate limiter too; undefined without REDIS_URL (or REDIS_SENTINELS, REDIS_CLUSTER_NODES). */
  redis: RedisClient | undefined
  /** The upstream as the resolver should see it: through the shared tier when there is one. */
  wrap<F extends RecordFetcher>(upstream: F): F | RecordFetcher
  /** Writes the snapshot and stops its timer, as closing begins (a preClose hook); nothing without CACHE_FILE. */
  preClose(): Promise<void>
  /** Closes the Redis client (an onClose hook); nothing without Redis. */
  close(): Promise<void>
  /**
   * After a key was dropped from the process's memory (a purge): the snapshot written again without it,
   * and with `shared`, its record and open-access answer deleted from Redis ('none' without Redis).
   */
  forget(key: string, shared: boolean): Promise<'deleted' | 'none' | 'failed'>
}

/** The settings of the caches: the records' (its bounds, their freshness), the open-access answers', and the other tiers. */
export type CacheSettings = CacheTierSettings &
  OpenAccessCacheSettings &
  Pick<Config, 'cacheMaxEntries' | 'cacheMaxBytes' | 'cacheMinTtlSeconds' | 'cacheMaxTtlSeconds' | 'negativeTtlSeconds' | 'maxStaleSeconds'>

/** The caches and how long what they hold stays fresh and is kept (one policy for every tier, src/handle/freshness.ts). */
export interface Caches {
  freshness: FreshnessPolicy
  cache: RecordCache
  /** The open-access answers' memory (a provider over the network only), kept in the snapshot with the records. */
  openAccessCache: OpenAccessCache | undefined
  tiers: CacheTiers
}

/** The records' cache in memory, the open-access answers' memory, and the other tiers of both (behaviour.md §11). */
export async function setUpCaches(
  settings: CacheSettings,
  ctx: { log: FastifyBaseLogger; metrics: Metrics; now: () => number }
): Promise<Caches> {
  const { log, metrics, now } = ctx
  const freshness = freshnessPolicy(settings)
  const cache = createRecordCache({ maxEntries: settings.cacheMaxEntries, maxBytes: settings.cacheMaxBytes, freshness })
  metrics.observeCache(() => ({ entries: cache.size, bytes: cache.bytes }))
  const openAccessCache = openAccessCacheOf(settings)
  const tiers = await setUpCacheTiers(log, settings, { cache, freshness, metrics, now, openAccess: openAccessCache })
  return { freshness, cache, openAccessCache, tiers }
}

/** The settings of the snapshot file and the shared tier in Redis (and what names the records' source). */
export type CacheTierSettings = Pick<
  Config,
  | 'cacheFile'
  | 'cacheSnapshotIntervalSeconds'
  | 'upstreamMaxBodyBytes'
  | 'maxHandleLength'
  | 'upstreamUrl'
  | 'offline'
  | 'redisKeyPrefix'
  | 'redisLockTtlMs'
  | 'redisWaitPollMs'
  | RedisSettingKey
>

// A snapshot line is one record: no record is larger than an upstream answer may be, twice over for escaping.
const LINE_SLACK_BYTES = 64 * 1024

/** The other files of a snapshot's family: `base` and `base.<n>`, where `file` is one of them. */
async function siblingSnapshots(file: string): Promise<string[]> {
  const base = file.replace(/\.\d+$/, '')
  let names: string[]
  try {
    names = await readdir(dirname(base))
  } catch {
    return []
  }
  const own = basename(base)
  return names
    .filter((name) => name === own || (name.startsWith(`${own}.`) && /^\d+$/.test(name.slice(own.length + 1))))
    .map((name) => join(dirname(base), name))
    .filter((path) => path !== file)
    .sort()
}

export async function setUpCacheTiers(
  log: FastifyBaseLogger,
  config: CacheTierSettings,
  deps: {
    cache: RecordCache
    freshness: FreshnessPolicy
    metrics: Metrics
    now: () => number
    openAccess?: OpenAccessCache | undefined
  }
): Promise<CacheTiers> {
  const { cache, freshness, metrics, now, openAccess } = deps
  // What the records are made from: a snapshot or a Redis key made from another source is never read.
  const source = cacheSourceOf(config)
  const { preClose, rewriteSnapshot } = await setUpCacheFile(log, config, { cache, now, openAccess, source })

  const settings = redisSettingsOf(config)
  if (settings === undefined) {
    return {
      redis: undefined,
      wrap: (upstream) => upstream,
      preClose,
      close: async () => {},
      forget: async () => {
        await rewriteSnapshot()
        return 'none'
      }
    }
  }
  const redis = await connectRedis(log, settings, config)
  const tier = createSharedTier({
    redis,
    prefix: config.redisKeyPrefix,
    source: sourceId(source),
    lockTtlMs: config.redisLockTtlMs,
    pollMs: config.redisWaitPollMs,
    freshness,
    maxValueBytes: 2 * config.upstreamMaxBodyBytes + LINE_SLACK_BYTES,
    now,
    metrics,
    log
  })
  return {
    redis,
    preClose,
    forget: async (key, shared) => {
      await rewriteSnapshot()
      if (!shared) return 'none'
      try {
        // One key each: in a Cluster the two live in different slots.
        await Promise.all([redis.del(tier.recordKey(key)), redis.del(openAccessRedisKey(config.redisKeyPrefix, key))])
        return 'deleted'
      } catch {
        return 'failed'
      }
    },
    close: async () => {
      tier.close()
      tier.flushLog()
      await closeRedis(redis, config.redisCommandTimeoutMs * 10)
    },
    wrap: (upstream) =>
      sharedFetcher(upstream, {
        tier,
        cache,
        now,
        pollMs: config.redisWaitPollMs,
        lockTtlMs: config.redisLockTtlMs,
        freshness
      })
  }
}

/**
 * CACHE_FILE: every file of its family loaded now, and written periodically and as closing begins
 * (`preClose`) and after a purge (`rewriteSnapshot`); both do nothing without one.
 */
async function setUpCacheFile(
  log: FastifyBaseLogger,
  config: CacheTierSettings,
  deps: { cache: RecordCache; now: () => number; openAccess: OpenAccessCache | undefined; source: CacheSource }
): Promise<{ preClose: () => Promise<void>; rewriteSnapshot: () => Promise<void> }> {
  const { cache, now, openAccess, source } = deps
  const none = async (): Promise<void> => {}
  if (config.cacheFile === undefined) return { preClose: none, rewriteSnapshot: none }
  const file = config.cacheFile
  // Every file of the family, this one last (loaded last is kept most recently used): with WORKERS>1
  // each worker writes CACHE_FILE.<n>, and the cluster hands any request to any worker, so each
  // worker takes all of them back; a change of WORKERS loses nothing either.
  for (const one of [...(await siblingSnapshots(file)), file]) {
    const started = performance.now()
    const loaded = await loadSnapshot({
      file: one,
      cache,
      now,
      maxLineBytes: 2 * config.upstreamMaxBodyBytes + LINE_SLACK_BYTES,
      maxKeyLength: config.maxHandleLength * 4,
      source,
      openAccess,
      takeBack: one === file,
      log
    })
    if (loaded.loaded + loaded.expired + loaded.bad + (loaded.openAccess ?? 0) > 0) {
      log.info({ file: one, ...loaded, entries: cache.size, ms: Math.round(performance.now() - started) }, 'loaded the cache snapshot')
    }
  }
  const snapshots = scheduleSnapshots({
    file,
    cache,
    openAccess,
    source,
    now,
    intervalMs: config.cacheSnapshotIntervalSeconds * 1000,
    log
  })
  // Written as closing begins, not after in-flight requests drain: a request stuck on a slow upstream
  // may outlast SHUTDOWN_GRACE_MS, and the process would exit with the cache unwritten.
  return {
    preClose: async () => {
      await snapshots.close()
    },
    rewriteSnapshot: async () => {
      await snapshots.rewrite('purge')
    }
  }
}

/**
 * The Redis client, connected now: waited for at most REDIS_CONNECT_TIMEOUT_MS, then used as it is (it
 * reconnects by itself), with a warning that says why it is not ready yet.
 */
async function connectRedis(
  log: FastifyBaseLogger,
  settings: RedisSettings,
  config: Pick<Config, 'redisConnectTimeoutMs' | 'redisCommandTimeoutMs'>
): Promise<RedisClient> {
  const redis = createRedisClient(settings)
  const setup = watchSlowSetup(redis)
  const notCluster = notClusterNodes(redis)
  if (!(await waitConnected(redis, config.redisConnectTimeoutMs))) {
    const nodes = notCluster()
    if (nodes.length > 0) {
      log.warn(
        { redis: describeRedis(settings.topology), nodes },
        'REDIS_CLUSTER_NODES names a Redis that is not a cluster (its cluster support is disabled): for a single server use REDIS_URL, else name nodes of a Redis Cluster; working with the local cache meanwhile'
      )
    } else if (setup.slow()) {
      // Connected, but its first commands took longer than the timeout: it will never be ready as it is.
      log.warn(
        { redis: describeRedis(settings.topology), commandTimeoutMs: config.redisCommandTimeoutMs },
        `the shared cache (Redis) accepts connections but answers slower than REDIS_COMMAND_TIMEOUT_MS (${config.redisCommandTimeoutMs} ms); working with the local cache, not sharing, until it answers in time: raise REDIS_COMMAND_TIMEOUT_MS above its round trip to share (docs/deployment.md)`
      )
    } else {
      log.warn(
        { redis: describeRedis(settings.topology) },
        'the shared cache (Redis) is not reachable; working with the local cache until it is'
      )
    }
  }
  setup.stop()
  return redis
}
