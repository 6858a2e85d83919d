import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config/schema.js'
import { healthEnabled, landingUserAgent } from '../config/schema.js'
import { addressRulesOf } from '../handle/address-rules.js'
import type { Metrics } from '../observe/metrics.js'
import type { RedisClient } from '../resolve/fleet/redis.js'
import type { LandingLookup } from '../resolve/landing/address-guard.js'
import { createFleetHostSlots } from '../resolve/landing/fleet-host-slots.js'
import { createLandingChecks } from '../resolve/landing/landing-checks.js'
import type { LandingChecks } from '../resolve/landing/landing-checks.js'
import { createLandingProber } from '../resolve/landing/prober.js'
import { createRecordedLanding } from '../resolve/landing/recorded-verdicts.js'
import type { StoredMetadata } from '../resolve/local-store/metadata.js'
import type { Recorder } from '../resolve/recording/recorder.js'

/** The settings the landing pages' visits read (issue 41), and what says who needs them. */
export type LandingSettings = Pick<
  Config,
  | 'verifyLevels'
  | 'healthWatch'
  | 'healthListFile'
  | 'offline'
  | 'userAgent'
  | 'contactEmail'
  | 'redisKeyPrefix'
  | 'landingPerHost'
  | 'landingHostDelayMs'
  | 'landingTimeoutMs'
  | 'landingMaxBytes'
  | 'landingRobotsTtlSeconds'
  | 'landingAllowPrivate'
  | 'landingTtlSeconds'
  | 'landingShortTtlSeconds'
  | 'landingCacheMaxEntries'
>

export interface LandingParts {
  stored: ((handle: string) => StoredMetadata | undefined) | undefined
  recorder: Pick<Recorder, 'recordMetadata'> | undefined
  redis: RedisClient | undefined
  metrics: Pick<Metrics, 'landingFetches'>
  log: Pick<FastifyBaseLogger, 'warn'>
  /** Name lookups of landing hosts (tests: test/support/landing-dns.ts); node:dns by default. */
  landingLookup?: LandingLookup | undefined
}

/** The one landing stack of a process: what `?verify=landing` asks (`checks`) and, online, what health's checker asks (`live`). */
export interface Landing {
  /** The verdicts `?verify=landing` reads: online the live checks, offline the recorded verdicts; undefined when no one visits pages. */
  checks: Pick<LandingChecks, 'check'> | undefined
  /** Online only: the checks over the prober, with `recheck` (a failure visited again to be confirmed). */
  live: Pick<LandingChecks, 'check' | 'recheck'> | undefined
  close: () => Promise<void>
}

/**
 * The landing pages' visits of this process, built once (issue 42: never a second prober): online, one prober
 * behind the fleet's host slots (LANDING_PER_HOST and LANDING_HOST_DELAY_MS for all the replicas together when
 * REDIS_URL is set) and the verdicts' cache (one probe per DOI and URL across the fleet), each verdict recorded
 * with RECORD_TO; offline, the verdicts recorded earlier, and no page visited. Built only when VERIFY_LEVELS has
 * `landing` or health checks are on; `?verify=` and the health checker share it.
 */
export function setUpLanding(config: LandingSettings, parts: LandingParts): Landing {
  const none: Landing = { checks: undefined, live: undefined, close: async () => {} }
  if (!config.verifyLevels.includes('landing') && !healthEnabled(config)) return none
  if (config.offline) return parts.stored === undefined ? none : { ...none, checks: createRecordedLanding(parts.stored) }
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
  const close = async (): Promise<void> => {
    await prober.close()
  }
  if (config.contactEmail !== undefined) return { checks, live: checks, close }
  // Said once, when the first page is visited: a server that is never asked to visit one has nothing to fix.
  let warned = false
  const warn = (): void => {
    if (warned) return
    warned = true
    parts.log.warn(
      'CONTACT_EMAIL is empty: landing pages are visited by a crawler naming no one to contact (docs/checking-dois.md#the-crawler); publishers block crawlers they cannot reach'
    )
  }
  const live: Landing['live'] = {
    check: async (...args) => {
      warn()
      return await checks.check(...args)
    },
    recheck: async (...args) => {
      warn()
      return await checks.recheck(...args)
    }
  }
  return { checks: live, live, close }
}
