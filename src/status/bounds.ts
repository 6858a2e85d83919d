import { Gauge } from 'prom-client'
import type { Registry } from 'prom-client'
import type { Config } from '../config/schema.js'

/**
 * The bounds in force as gauges, so a dashboard or an alert can set what is used against what is
 * allowed (cache bytes against CACHE_MAX_BYTES, in-flight lookups against UPSTREAM_MAX_CONCURRENT).
 * Set once: they change only with the configuration, at a restart.
 */
export function registerBoundGauges (registry: Registry, config: Config): void {
  const bounds: ReadonlyArray<[string, string, number]> = [
    ['doi_proxy_cache_max_entries', 'CACHE_MAX_ENTRIES: most records the cache holds', config.cacheMaxEntries],
    ['doi_proxy_cache_max_bytes', 'CACHE_MAX_BYTES: most bytes of records the cache holds', config.cacheMaxBytes],
    ['doi_proxy_upstream_max_concurrent', 'UPSTREAM_MAX_CONCURRENT: most upstream requests in flight', config.upstreamMaxConcurrent],
    ['doi_proxy_upstream_queue_max', 'UPSTREAM_QUEUE_SIZE: most lookups waiting for an upstream slot', config.upstreamQueueSize]
  ]
  for (const [name, help, value] of bounds) {
    if (registry.getSingleMetric(name) !== undefined) continue
    new Gauge({ name, help, registers: [registry] }).set(value)
  }
}
