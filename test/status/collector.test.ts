import { describe, expect, it } from 'vitest'
import { createMetrics } from '../../src/observe/metrics.js'
import { buildConfig } from '../../src/config/schema.js'
import { createStatusCollector } from '../../src/status/collector.js'
import { quantile } from '../../src/status/latency.js'

function rig(opts: { slots?: number } = {}) {
  let t = Date.UTC(2026, 10, 23, 12, 0, 0)
  const metrics = createMetrics()
  const config = buildConfig(undefined, {})
  const collector = createStatusCollector({ metrics, settings: config, now: () => t, stepMs: 10_000, slots: opts.slots ?? 360 })
  return {
    metrics,
    config,
    collector,
    tick: (ms: number) => {
      t += ms
    }
  }
}

describe('status collector', () => {
  it('counts each answer once in the current step, by where its record came from or why there was none', async () => {
    const { metrics, collector, tick } = rig()
    const times = (n: number, tally: { inc: () => void }): void => {
      for (let i = 0; i < n; i++) tally.inc()
    }
    times(4, metrics.answer('redirect', 'local'))
    times(1, metrics.answer('values', 'local'))
    times(7, metrics.answer('redirect', 'hit'))
    times(2, metrics.answer('alias', 'miss'))
    times(1, metrics.answer('redirect', 'stale'))
    times(2, metrics.answer('not_found', 'local'))
    times(1, metrics.answer('bad_request'))
    times(1, metrics.answer('upstream_error'))
    tick(5000)
    const s = await collector.snapshot()
    const expected = { local: 5, hit: 7, miss: 2, stale: 1, not_found: 2, bad_request: 1, error: 1 }
    expect(s.requests.lastHour).toEqual(expected)
    expect(s.requests.sinceStart).toEqual(expected)
  })

  it('reads the cache hit ratio from cache lookups: a lookup that joined another or bypassed the cache is not a hit', async () => {
    const { metrics, collector } = rig()
    metrics.cache.inc({ result: 'hit' }, 7)
    metrics.cache.inc({ result: 'miss' })
    metrics.cache.inc({ result: 'shared' })
    metrics.cache.inc({ result: 'stale' })
    expect((await collector.snapshot()).cache.hitRatioLastHour).toBe(0.7)
  })

  it('reads a counter once: sampling twice does not count twice', async () => {
    const { metrics, collector } = rig()
    const hit = metrics.answer('redirect', 'hit')
    for (let i = 0; i < 3; i++) hit.inc()
    await collector.sample()
    await collector.sample()
    expect((await collector.snapshot()).requests.lastHour.hit).toBe(3)
  })

  it('gives one point per step, as a rate per second', async () => {
    const { metrics, collector, tick } = rig()
    await collector.sample()
    tick(10_000)
    const hit = metrics.answer('redirect', 'hit')
    for (let i = 0; i < 50; i++) hit.inc()
    await collector.sample()
    tick(10_000)
    const s = await collector.snapshot()
    expect(s.requests.perSecond.hit).toHaveLength(3)
    expect(s.requests.perSecond.hit[1]).toBe(5)
  })

  it('forgets what is older than its slots', async () => {
    const { metrics, collector, tick } = rig({ slots: 6 })
    const hit = metrics.answer('redirect', 'hit')
    for (let i = 0; i < 5; i++) hit.inc()
    await collector.sample()
    expect((await collector.snapshot()).requests.lastHour.hit).toBe(5)
    tick(60_000)
    const s = await collector.snapshot()
    expect(s.requests.perSecond.hit).toHaveLength(6)
    expect(s.requests.lastHour.hit).toBe(0)
    expect(s.requests.sinceStart.hit).toBe(5)
  })

  it('measures upstream latency p50 and p99, and the share that failed', async () => {
    const { metrics, collector, tick } = rig()
    for (let i = 0; i < 98; i++) metrics.upstreamDuration.observe({ outcome: 'found' }, 0.04)
    metrics.upstreamDuration.observe({ outcome: 'error' }, 4)
    metrics.upstreamDuration.observe({ outcome: 'error' }, 4)
    tick(1000)
    const s = await collector.snapshot()
    expect(s.upstream.lastHour.requests).toBe(100)
    expect(s.upstream.lastHour.errors).toBe(2)
    expect(s.upstream.errorRate.at(-1)).toBe(0.02)
    const p50 = s.upstream.lastHour.p50Ms ?? 0
    expect(p50).toBeGreaterThan(25)
    expect(p50).toBeLessThanOrEqual(50)
    expect(s.upstream.lastHour.p99Ms).toBeGreaterThan(2500)
  })

  it('remembers when the breaker opened', async () => {
    const { metrics, collector, tick } = rig()
    await collector.sample()
    metrics.breakerOpen.set(2)
    tick(1000)
    await collector.sample()
    tick(1000)
    await collector.sample()
    const s = await collector.snapshot()
    expect(s.breaker.state).toBe('open')
    expect(s.breaker.openings).toEqual(['2026-11-23T12:00:01.000Z'])
  })

  it('keeps a run of the same upstream error as one entry, and at most 20 entries', async () => {
    const { metrics, collector, tick } = rig()
    metrics.upstreamErrors.inc({ code: 'DP_UPSTREAM_TIMEOUT' })
    await collector.sample()
    tick(1000)
    metrics.upstreamErrors.inc({ code: 'DP_UPSTREAM_TIMEOUT' }, 2)
    await collector.sample()
    expect((await collector.snapshot()).upstreamErrors).toEqual([
      { from: '2026-11-23T12:00:00.000Z', to: '2026-11-23T12:00:01.000Z', code: 'DP_UPSTREAM_TIMEOUT', count: 3 }
    ])
    for (let i = 0; i < 30; i++) {
      tick(60_000)
      metrics.upstreamErrors.inc({ code: i % 2 === 0 ? 'DP_UPSTREAM_STATUS' : 'DP_UPSTREAM_UNREACHABLE' })
      await collector.sample()
    }
    const errors = (await collector.snapshot()).upstreamErrors
    expect(errors).toHaveLength(20)
    expect(errors[0]?.code).toBe('DP_UPSTREAM_UNREACHABLE')
  })

  it('shows each limit with its setting and how often it refused', async () => {
    const { metrics, collector } = rig()
    metrics.refusals.inc({ reason: 'client_share' }, 4)
    const s = await collector.snapshot()
    const share = s.limits.find((l) => l.reason === 'client_share')
    expect(share).toMatchObject({ refusedLastHour: 4, refusedSinceStart: 4 })
    expect(share?.setting).toContain('UPSTREAM_PER_CLIENT')
    expect(s.limits.map((l) => l.reason)).toEqual(['load_shed', 'rate_limit', 'auth_rate_limit', 'client_share', 'queue_full'])
  })

  it('counts local-service diversions by service and reason', async () => {
    const { metrics, collector } = rig()
    metrics.localServiceDiversions.inc({ service: 'library', reason: 'network' }, 3)
    metrics.localServiceLoopGuard.inc()
    const s = await collector.snapshot()
    expect(s.localServices.diversions).toEqual([{ labels: { reason: 'network', service: 'library' }, lastHour: 3, sinceStart: 3 }])
    expect(s.localServices.loopGuard).toEqual({ lastHour: 1, sinceStart: 1 })
  })
})

describe('histogram quantile', () => {
  const bounds = [0.1, 1, Infinity]
  it('interpolates inside the bucket, as Prometheus does', () => {
    expect(quantile({ bounds, counts: [0, 10, 0] }, 0.5)).toBeCloseTo(0.55)
  })

  it('answers the largest finite bound for the +Inf bucket', () => {
    expect(quantile({ bounds, counts: [0, 0, 5] }, 0.99)).toBe(1)
  })

  it('has no answer without observations', () => {
    expect(quantile({ bounds, counts: [0, 0, 0] }, 0.5)).toBeNull()
  })
})
