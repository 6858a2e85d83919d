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

// Issue 41: the verdicts of check --verify, landing fetches and retraction lookups, each under its labels.
describe('the metrics of check --verify', () => {
  it('count verdicts by level and verdict, landing hops by outcome, retraction lookups by source and outcome', async () => {
    const metrics = createMetrics()
    metrics.verifyVerdicts.inc({ level: 'metadata', verdict: 'mismatch' })
    metrics.verifyVerdicts.inc({ level: 'landing', verdict: 'unknown' })
    metrics.landingFetches.inc({ outcome: 'refused_address' })
    metrics.retractionLookups.inc({ source: 'crossref', outcome: 'found' })
    const text = await metrics.exposition()
    expect(text).toContain('doi_proxy_verify_verdicts_total{level="metadata",verdict="mismatch"} 1')
    expect(text).toContain('doi_proxy_verify_verdicts_total{level="landing",verdict="unknown"} 1')
    expect(text).toContain('doi_proxy_landing_fetches_total{outcome="refused_address"} 1')
    expect(text).toContain('doi_proxy_retraction_lookups_total{source="crossref",outcome="found"} 1')
  })
})

// Issue 42: resolution health's series, declared in every app (0 while health is off) so alerts and dashboards read them anywhere.
describe('the metrics of resolution health', () => {
  it('show checks by verdict from the start at 0, and DOIs by prefix and verdict once set', async () => {
    const metrics = createMetrics()
    const before = await metrics.exposition()
    expect(before).toContain('doi_proxy_health_checks_total{verdict="dead"} 0')
    expect(before).toContain('doi_proxy_health_checks_total{verdict="error"} 0')
    expect(before).toContain('doi_proxy_health_enabled 0')
    expect(before).toContain('doi_proxy_health_checker 0')
    expect(before).toContain('# TYPE doi_proxy_health_newly_broken_total counter')
    metrics.healthDois.set({ prefix: '10.5555', verdict: 'not-found' }, 3)
    metrics.healthChecks.inc({ verdict: 'takeover' })
    metrics.healthNewlyBroken.inc({ prefix: '10.5555', verdict: 'takeover' })
    metrics.healthOverdue.set(2)
    const text = await metrics.exposition()
    expect(text).toContain('doi_proxy_health_dois{prefix="10.5555",verdict="not-found"} 3')
    expect(text).toContain('doi_proxy_health_checks_total{verdict="takeover"} 1')
    expect(text).toContain('doi_proxy_health_newly_broken_total{prefix="10.5555",verdict="takeover"} 1')
    expect(text).toContain('doi_proxy_health_overdue_dois 2')
  })

  it("merged across workers, the DOIs by verdict read as one copy's (every writer holds the same), never a sum", async () => {
    const workers = [createMetrics(), createMetrics()]
    for (const metrics of workers) metrics.healthDois.set({ prefix: '10.5555', verdict: 'dead' }, 4)
    const merged = AggregatorRegistry.aggregate(await Promise.all(workers.map(async (m) => await m.registry.getMetricsAsJSON())))
    expect((await merged.getSingleMetric('doi_proxy_health_dois')?.get())?.values[0]?.value).toBe(4)
  })
})

// Issue 43: the registry copy's figures join /metrics only when a copy is attached.
describe('the metrics of the registry copy', () => {
  it('are absent without a copy', async () => {
    expect(await createMetrics().exposition()).not.toContain('doi_proxy_copy_')
  })

  it('show lookups by result, records and as-of per agency, updates and citations once a copy is observed', async () => {
    const metrics = createMetrics()
    const hit = metrics.copy.lookups.tally({ result: 'hit' })
    hit.inc()
    hit.inc()
    metrics.copy.updates.inc({ agency: 'crossref', outcome: 'done' })
    metrics.copy.citations.inc({ format: 'bibliography', outcome: 'queue_full' })
    metrics.observeCopy(() => ({ records: { crossref: 9, datacite: 4 }, asOf: { crossref: 1_750_000_000 } }))
    const text = await metrics.exposition()
    expect(text).toContain('doi_proxy_copy_lookups_total{result="hit"} 2')
    expect(text).toContain('doi_proxy_copy_records{agency="crossref"} 9')
    expect(text).toContain('doi_proxy_copy_records{agency="datacite"} 4')
    expect(text).toContain('doi_proxy_copy_as_of_seconds{agency="crossref"} 1750000000')
    expect(text).toContain('doi_proxy_copy_updates_total{agency="crossref",outcome="done"} 1')
    expect(text).toContain('doi_proxy_copy_citations_total{format="bibliography",outcome="queue_full"} 1')
  })
})
