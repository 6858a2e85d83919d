import { AggregatorRegistry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { createMetrics } from '../../src/observe/metrics.js'

// prom-client's cluster aggregation adds up the series of the same name and labels. doi-proxy's workers
// label theirs (worker="1", …; test/main.test.ts), so none are merged; were they, a state must stay a state.
describe('state gauges merged across workers', () => {
  it('the upstream unreachable on two workers reads 1, both breakers open reads 2, one worker off Redis reads 0', async () => {
    const workers = [true, false].map((redisUp) => {
      const metrics = createMetrics()
      metrics.observeUpstream({ unreachable: () => true, openPrefixes: () => 1 })
      metrics.breakerOpen.set(2)
      metrics.observeSharedTier(() => redisUp)
      return metrics
    })
    const merged = AggregatorRegistry.aggregate(await Promise.all(workers.map(async (m) => await m.registry.getMetricsAsJSON())))
    const value = async (name: string): Promise<number | undefined> => (await merged.getSingleMetric(name)?.get())?.values[0]?.value
    expect(await value('doi_proxy_upstream_unreachable')).toBe(1)
    expect(await value('doi_proxy_upstream_circuit_state')).toBe(2)
    expect(await value('doi_proxy_shared_cache_up')).toBe(0)
    // A count stays a count: two workers' open prefix breakers.
    expect(await value('doi_proxy_prefix_circuits_open')).toBe(2)
  })
})
