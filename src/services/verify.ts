import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config/schema.js'
import { landingUserAgent, upstreamUserAgent } from '../config/schema.js'
import { addressRulesOf } from '../handle/address-rules.js'
import type { Metrics } from '../observe/metrics.js'
import type { RedisClient } from '../resolve/fleet/redis.js'
import type { LandingLookup } from '../resolve/landing/address-guard.js'
import { createFleetHostSlots } from '../resolve/landing/fleet-host-slots.js'
import { createLandingChecks, type LandingChecks } from '../resolve/landing/landing-checks.js'
import { createLandingProber } from '../resolve/landing/prober.js'
import { createRecordedLanding } from '../resolve/landing/recorded-verdicts.js'
import type { StoredMetadata } from '../resolve/local-store/metadata.js'
import type { ProxyService } from '../resolve/lookup/proxy-service.js'
import type { MetadataService } from '../resolve/metadata/agencies.js'
import type { Recorder } from '../resolve/recording/recorder.js'
import { createCrossrefUpdates } from '../resolve/retraction/crossref-updates.js'
import { loadRetractionWatch } from '../resolve/retraction/retraction-watch.js'
import { createRetractions } from '../resolve/retraction/retractions.js'
import { createRegisteredMetadata } from '../resolve/verify/registered-metadata.js'
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
  | 'landingPerHost'
  | 'landingHostDelayMs'
  | 'landingTimeoutMs'
  | 'landingMaxBytes'
  | 'landingRobotsTtlSeconds'
  | 'landingAllowPrivate'
  | 'landingTtlSeconds'
  | 'landingShortTtlSeconds'
  | 'landingCacheMaxEntries'
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
  /** Name lookups of landing hosts (tests: test/support/landing-dns.ts); node:dns by default. */
  landingLookup?: LandingLookup | undefined
}

/**
 * The verifier of `POST /api/batch?verify=` (issue 41), built from the settings: the registered metadata
 * (through the agencies' cache), the retraction service (Crossref's REST API with this worker's share of
 * CROSSREF_CONCURRENCY, given by main/workers.ts, or the Retraction Watch file read now; offline, the answers recorded), the landing
 * verdicts (setUpLanding). Undefined when VERIFY_LEVELS is empty: every `?verify=` is then refused.
 */
export async function setUpVerify(
  config: VerifySettings,
  parts: VerifyParts
): Promise<{ verifier: Verifier | undefined; close: () => Promise<void> }> {
  const levels = new Set(config.verifyLevels)
  if (levels.size === 0) return { verifier: undefined, close: async () => {} }
  const { metrics, log } = parts
  const registered = createRegisteredMetadata({
    proxyService: parts.proxyService,
    service: parts.metadataService,
    hosts: config.metadataHosts,
    stored: parts.stored,
    recorder: parts.recorder
  })
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
  const landing = levels.has('landing') ? setUpLanding(config, parts, closers) : undefined
  const verifier = createVerifier({ registered, retractions, landing, metrics })
  return {
    verifier,
    close: async () => {
      for (const close of closers.reverse()) await close()
    }
  }
}

/**
 * The landing verdicts: online, the prober behind the fleet's host slots (LANDING_PER_HOST and
 * LANDING_HOST_DELAY_MS for all the replicas together when REDIS_URL is set) and the verdicts' cache
 * (one probe per DOI and URL across the fleet), each verdict recorded with RECORD_TO; offline, the
 * verdicts recorded earlier, and no page visited.
 */
function setUpLanding(
  config: VerifySettings,
  parts: VerifyParts,
  closers: Array<() => Promise<void>>
): Pick<LandingChecks, 'check'> | undefined {
  if (config.offline) return parts.stored === undefined ? undefined : createRecordedLanding(parts.stored)
  const prefix = `${config.redisKeyPrefix}landing:1:`
  const hostSlots = createFleetHostSlots({
    redis: parts.redis,
    prefix,
    perHost: config.landingPerHost,
    delayMs: config.landingHostDelayMs,
    // A lease outlives the longest try: a replica that dies mid-fetch frees its slot after it.
    leaseMs: config.landingTimeoutMs + 5_000
  })
  const prober = createLandingProber({
    userAgent: landingUserAgent(config),
    timeoutMs: config.landingTimeoutMs,
    maxBytes: config.landingMaxBytes,
    perHost: config.landingPerHost,
    hostDelayMs: config.landingHostDelayMs,
    robotsTtlMs: config.landingRobotsTtlSeconds * 1000,
    rules: addressRulesOf(config.landingAllowPrivate),
    lookup: parts.landingLookup,
    hostSlots,
    onFetch: (outcome) => {
      parts.metrics.landingFetches.inc({ outcome })
    }
  })
  closers.push(prober.close)
  const checks = createLandingChecks({
    prober,
    ttlMs: config.landingTtlSeconds * 1000,
    shortTtlMs: config.landingShortTtlSeconds * 1000,
    maxEntries: config.landingCacheMaxEntries,
    redis: parts.redis,
    prefix,
    // Another replica's probe is waited for as long as a page with its redirects and tries may take.
    lockMs: 12 * config.landingTimeoutMs,
    recorder: parts.recorder
  })
  if (config.contactEmail !== undefined) return checks
  // Said once, when the first page is visited: a server that is never asked to visit one has nothing to fix.
  let warned = false
  return {
    check: async (...args) => {
      if (!warned) {
        warned = true
        parts.log.warn(
          'CONTACT_EMAIL is empty: landing pages are visited by a crawler naming no one to contact (docs/checking-dois.md#the-crawler); publishers block crawlers they cannot reach'
        )
      }
      return await checks.check(...args)
    }
  }
}
