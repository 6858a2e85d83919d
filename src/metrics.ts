import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

/**
 * Our Prometheus instruments, on a registry of their own (one per app, so tests can build many).
 * Labels are small fixed sets: never a label per DOI.
 */
export function createMetrics () {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'doi_proxy_' })
  return {
    registry,
    resolutions: new Counter({
      name: 'doi_proxy_resolutions_total',
      help: 'Proxy answers by outcome',
      labelNames: ['outcome'] as const, // redirect, alias, values, showurls, not_found, bad_request, upstream_error
      registers: [registry]
    }),
    cache: new Counter({
      name: 'doi_proxy_cache_lookups_total',
      help: 'Record cache lookups by result',
      labelNames: ['result'] as const, // hit, miss, stale, bypass, shared (joined an in-flight miss)
      registers: [registry]
    }),
    upstreamDuration: new Histogram({
      name: 'doi_proxy_upstream_request_duration_seconds',
      help: 'Upstream Handle API request latency by outcome',
      labelNames: ['outcome'] as const, // found, not_found, error
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry]
    }),
    upstreamErrors: new Counter({
      name: 'doi_proxy_upstream_errors_total',
      help: 'Upstream failures by error code',
      labelNames: ['code'] as const,
      registers: [registry]
    })
  }
}

export type Metrics = ReturnType<typeof createMetrics>
