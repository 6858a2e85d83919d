import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config/schema.js'
import { upstreamUserAgent } from '../config/schema.js'
import type { Metrics } from '../observe/metrics.js'
import type { RedisClient } from '../resolve/fleet/redis.js'
import type { LandingChecks } from '../resolve/landing/landing-checks.js'
import type { StoredMetadata } from '../resolve/local-store/metadata.js'
import type { ProxyService } from '../resolve/lookup/proxy-service.js'
import type { MetadataService } from '../resolve/metadata/agencies.js'
import type { Recorder } from '../resolve/recording/recorder.js'
import { createCrossrefUpdates } from '../resolve/retraction/crossref-updates.js'
import { loadRetractionWatch } from '../resolve/retraction/retraction-watch.js'
import { createRetractions } from '../resolve/retraction/retractions.js'
import { createRegisteredMetadata } from '../resolve/verify/registered-metadata.js'
import type { RegisteredMetadata } from '../resolve/verify/registered-metadata.js'
import { createVerifier } from '../resolve/verify/verifier.js'
import type { Verifier } from '../resolve/verify/verifier.js'

/** The settings `?verify=` reads (docs/checking-dois.md). */
export type VerifySettings = Pick<
  Config,
  | 'verifyLevels'
  | 'offline'
  | 'userAgent'
  | 'contactEmail'
  | 'metadataHosts'
  | 'redisKeyPrefix'
  | 'retractionsFrom'
  | 'retractionsFile'
  | 'crossrefApiUrl'
  | 'crossrefConcurrency'
  | 'crossrefTimeoutMs'
  | 'crossrefMaxBodyBytes'
  | 'retractionsTtlSeconds'
  | 'upstreamConnectTimeoutMs'
>

export interface VerifyParts {
  proxyService: Pick<ProxyService, 'answer'>
  /** The agencies' cache and queues (setUpMetadata's `service`); undefined: offline or no level reads metadata. */
  metadataService: MetadataService | undefined
  stored: ((handle: string) => StoredMetadata | undefined) | undefined
  recorder: Pick<Recorder, 'recordMetadata'> | undefined
  redis: RedisClient | undefined
  metrics: Metrics
  log: FastifyBaseLogger
  now: () => number
  /** The process's one landing stack (services/landing.ts `checks`); closed by its owner, not here. */
  landing: Pick<LandingChecks, 'check'> | undefined
}

/**
 * The verifier of `POST /api/batch?verify=` (issue 41), built from the settings: the registered metadata
 * (through the agencies' cache), the retraction service (Crossref's REST API with this worker's share of
 * CROSSREF_CONCURRENCY, given by main/workers.ts, or the Retraction Watch file read now; offline, the answers recorded), the landing
 * verdicts (services/landing.ts setUpLanding, shared with health's checker). Undefined when VERIFY_LEVELS is empty: every `?verify=` is then refused.
 */
/** The registered works (CSL-JSON through our own negotiation and cache) that verification and health checks compare with. */
export function registeredMetadataOf(
  config: Pick<Config, 'metadataHosts'>,
  parts: Pick<VerifyParts, 'proxyService' | 'metadataService' | 'stored' | 'recorder'>
): RegisteredMetadata {
  return createRegisteredMetadata({
    proxyService: parts.proxyService,
    service: parts.metadataService,
    hosts: config.metadataHosts,
    stored: parts.stored,
    recorder: parts.recorder
  })
}

export async function setUpVerify(
  config: VerifySettings,
  parts: VerifyParts
): Promise<{ verifier: Verifier | undefined; close: () => Promise<void> }> {
  const levels = new Set(config.verifyLevels)
  if (levels.size === 0) return { verifier: undefined, close: async () => {} }
  const { metrics, log } = parts
  const registered = registeredMetadataOf(config, parts)
  const closers: Array<() => Promise<void>> = []
  let retractions: ReturnType<typeof createRetractions> | undefined
  if (levels.has('retraction') && config.retractionsFrom !== 'off') {
    const crossref =
      config.retractionsFrom === 'crossref' && !config.offline
        ? createCrossrefUpdates({
            baseUrl: config.crossrefApiUrl,
            mailto: config.contactEmail,
            userAgent: upstreamUserAgent(config),
            concurrency: config.crossrefConcurrency,
            timeoutMs: config.crossrefTimeoutMs,
            maxBodyBytes: config.crossrefMaxBodyBytes,
            connectTimeoutMs: config.upstreamConnectTimeoutMs
          })
        : undefined
    if (crossref !== undefined) closers.push(crossref.close)
    const file = config.retractionsFrom === 'file' ? await loadRetractionWatch(config.retractionsFile as string) : undefined
    const recorded = config.offline && parts.stored !== undefined ? { metadata: parts.stored } : undefined
    if (config.retractionsFrom === 'file' || crossref !== undefined || recorded !== undefined) {
      retractions = createRetractions({
        from: config.retractionsFrom,
        crossref,
        file,
        metrics,
        now: parts.now,
        ttlSeconds: config.retractionsTtlSeconds,
        redis: parts.redis,
        redisPrefix: config.redisKeyPrefix,
        // The queue, Crossref's pauses and its answer: its timeout, once more after a pause.
        lookupMs: 2 * config.crossrefTimeoutMs + 5_000,
        onError: (doi, err) => {
          log.warn({ doi, err }, 'retraction lookup failed')
        },
        recorder: parts.recorder,
        recorded
      })
    }
  }
  const landing = levels.has('landing') ? parts.landing : undefined
  const verifier = createVerifier({ registered, retractions, landing, metrics })
  return {
    verifier,
    close: async () => {
      for (const close of closers.reverse()) await close()
    }
  }
}
