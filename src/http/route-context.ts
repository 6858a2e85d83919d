import type { Config } from '../config/schema.js'
import type { Metrics } from '../observe/metrics.js'
import type { HealthPages } from '../resolve/health/health-service.js'
import type { CountryLookup } from '../resolve/lookup/geoip.js'
import type { ProxyService } from '../resolve/lookup/proxy-service.js'
import type { UpstreamState } from '../resolve/upstream/reachability.js'
import type { Resolver } from '../resolve/lookup/resolver.js'
import type { StatusCollector } from '../status/collector.js'
import type { Admission } from './admission.js'
import type { LocalServices } from './local-service.js'
import type { MetadataAnswers } from './metadata.js'
import type { PreparedAnswers } from './prepared-answers.js'

/** What the routes share: built once per app by createServices (src/services.ts, whose Services is one). */
export interface RouteServices {
  /** Clock in epoch ms. */
  now: () => number
  metrics: Metrics
  /** Local store → cache → fair queue → upstream (through the shared tier and the breakers). */
  resolver: Resolver
  /** The proxy's flow: a handle and its query to a redirect, a page or an error. */
  proxyService: ProxyService
  /** The gate before upstream-bound work: load shedding, rate limits, the fair queue's ticket. */
  admission: Admission
  /** The optional GeoIP database, the last resort for a client's country. */
  countryLookup: CountryLookup | undefined
  /** The local services (behaviour.md §10), only when one is configured. */
  localServices: LocalServices | undefined
  /** Negotiated requests answered with stored or fetched metadata (docs/metadata.md). */
  metadata: MetadataAnswers
  /** Self-links use this host when a request's Host header is unusable. */
  fallbackHost: string
  /** Answers kept with cached records and written before routing (src/http/prepared-answers.ts). */
  prepared: PreparedAnswers
  /** Whether the upstream answers, as the last lookups found it ('unknown' offline and before any). */
  upstreamState: () => UpstreamState
  /** The status page's figures, read from the metrics once a second from ready to close (app.ts' hooks). */
  status: StatusCollector
  /** Drop a cache key from every tier of every process (DELETE /api/cache/{doi}). */
  purge: (key: string) => Promise<PurgeResult>
  /** What `/health` reads (issue 42); undefined when health is off. */
  healthPages: HealthPages | undefined
}

/**
 * What a purge did: whether this process held the key; Redis's copy deleted, or none configured, or it
 * failed; the other processes told through Redis, through the primary only (no Redis), or not (it failed).
 */
export interface PurgeResult {
  held: boolean
  redis: 'deleted' | 'none' | 'failed'
  told: 'redis' | 'host' | 'failed'
}

/**
 * What app.ts gives each route plugin (src/http/routes/*): the services, and the settings; each route names
 * the settings it reads (`K`), so it can be built from those alone.
 */
export interface RouteContext<K extends keyof Config = never> {
  config: Pick<Config, K>
  services: RouteServices
}
