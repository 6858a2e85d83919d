import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config/schema.js'
import { healthEnabled } from '../config/schema.js'
import type { Metrics } from '../observe/metrics.js'
import type { Fleet } from '../resolve/fleet/messages.js'
import { MAX_SEEN_PER_MESSAGE } from '../resolve/fleet/messages.js'
import type { RedisClient } from '../resolve/fleet/redis.js'
import { createChecker } from '../resolve/health/checker.js'
import { createHealth, openHealthPages } from '../resolve/health/health-service.js'
import type { Health, HealthPages, HealthSettings } from '../resolve/health/health-service.js'
import { createSeenDois, watchEventOf } from '../resolve/health/seen.js'
import type { LandingChecks } from '../resolve/landing/landing-checks.js'
import type { StoredMetadata } from '../resolve/local-store/metadata.js'
import type { LocalStore } from '../resolve/local-store/store.js'
import type { ProxyService } from '../resolve/lookup/proxy-service.js'
import type { MetadataService } from '../resolve/metadata/agencies.js'
import type { Recorder } from '../resolve/recording/recorder.js'
import { registeredMetadataOf } from './verify.js'

/** The settings resolution health reads (issue 42). */
export type HealthServiceSettings = HealthSettings & Pick<Config, 'metadataHosts' | 'requestDeadlineMs'>

export interface HealthParts {
  proxyService: Pick<ProxyService, 'answer'>
  /** The agencies' cache (registered titles); undefined: none fetched. */
  metadataService: MetadataService | undefined
  stored: ((handle: string) => StoredMetadata | undefined) | undefined
  recorder: Pick<Recorder, 'recordMetadata'> | undefined
  /** The process's one landing stack (services/landing.ts `live`). */
  landing: Pick<LandingChecks, 'check' | 'recheck'> | undefined
  store: Pick<LocalStore, 'keys' | 'onReload'> | undefined
  /** The record cache's entries, passed over once at start (the DOIs answered before a restart). */
  cacheEntries: () => Iterable<readonly [string, { readonly kind: string }]>
  redis: RedisClient | undefined
  /** This host's other workers (`health-seen` to worker 1). */
  fleet: Pick<Fleet, 'tellHost' | 'onMessage'>
  metrics: Metrics
  log: FastifyBaseLogger
  now: () => number
  /** WORKERS > 1: this worker's number (the first writes the host's history); undefined: the one process. */
  worker: number | undefined
  /** The health lease's time to live and renewal (tests shorten them). */
  leaseTtlMs?: number | undefined
  leaseRenewMs?: number | undefined
}

export interface HealthSetUp {
  /** The writer's health (the one process, or worker 1): undefined in the other workers and when health is off. */
  health: Health | undefined
  /** What the pages read here (every process with health on). */
  pages: HealthPages
  /** The resolver's miss callback (seen DOIs); undefined when HEALTH_WATCH names no prefix. */
  onFound: ((handle: string, key: string) => void) | undefined
  /** At onReady: the watched DOIs, the log, the lease, the checks (never at construction: the command runs none of it). */
  start(): Promise<void>
  close(): Promise<void>
}

/**
 * Resolution health in this process (issue 42, plan D8, D9, D13), or undefined when it is off. The writer (the one
 * process, or worker 1 with WORKERS > 1) opens the host's history, syncs the watched DOIs, bids for the fleet's
 * lease and, holding it, checks; the other workers open the history read-only for the pages and send the DOIs
 * their resolver found to worker 1 (`health-seen`). The checker resolves through the proxy service as its own
 * client of the fair queue and visits pages with the process's one landing stack.
 */
export function setUpHealth(config: HealthServiceSettings, parts: HealthParts): HealthSetUp | undefined {
  if (!healthEnabled(config)) return undefined
  const { log, now, metrics } = parts
  const watching = config.healthWatch.length > 0
  const writer = parts.worker === undefined || parts.worker === 1
  if (!writer) {
    const pages = openHealthPages({ settings: config, log, now })
    // Found here, watched by worker 1: told to it as host messages, at most MAX_SEEN_PER_MESSAGE each.
    const seen = createSeenDois({
      prefixes: config.healthWatch,
      announce: (batch) => {
        for (let i = 0; i < batch.length; i += MAX_SEEN_PER_MESSAGE) {
          parts.fleet.tellHost({ kind: 'health-seen', dois: batch.slice(i, i + MAX_SEEN_PER_MESSAGE).map((event) => event.doi) })
        }
      },
      log
    })
    return {
      health: undefined,
      pages,
      onFound: watching ? seen.onFound : undefined,
      start: async () => {
        metrics.healthEnabled.set(1)
        await seen.fromCache(parts.cacheEntries())
      },
      close: async () => {
        await seen.stop()
        await pages.close()
      }
    }
  }
  if (parts.landing === undefined) throw new Error('health checks need the landing stack (services/landing.ts)')
  const registered = registeredMetadataOf(config, parts)
  const checker = createChecker({
    proxyService: parts.proxyService,
    registered,
    landing: parts.landing,
    resolveMs: config.requestDeadlineMs
  })
  const health = createHealth({
    settings: config,
    checker,
    store: parts.store,
    redis: parts.redis,
    metrics,
    log,
    now,
    leaseTtlMs: parts.leaseTtlMs,
    leaseRenewMs: parts.leaseRenewMs
  })
  // The other workers' seen DOIs, watched here as if found here.
  parts.fleet.onMessage((message) => {
    if (message.kind !== 'health-seen') return
    for (const doi of message.dois) {
      const event = watchEventOf(doi)
      if (event !== undefined) health.seen.onFound(event.doi, event.key)
    }
  })
  return {
    health,
    pages: health.pages,
    onFound: watching ? health.seen.onFound : undefined,
    start: async () => {
      try {
        await health.start()
        await health.seen.fromCache(parts.cacheEntries())
      } catch (err) {
        // Serving goes on: the pages say the checker is not running.
        log.error({ err }, 'resolution health could not start')
      }
    },
    close: health.close
  }
}
