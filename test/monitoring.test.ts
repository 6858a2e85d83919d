import { readFileSync } from 'node:fs'
import { describe, expect, it, onTestFinished } from 'vitest'
import { parse } from 'yaml'
import { buildApp } from '../src/app.js'
import { buildConfig } from '../src/config/schema.js'
import { setup } from './support/app.js'
import { Blackhole } from './support/blackhole.js'
import { FakeUpstream } from './support/fake-upstream.js'
import { evaluate, parseScrape } from './support/promql.js'
import type { Scrape } from './support/promql.js'
import { PROBE_RECORDS } from './support/records.js'

// deploy/grafana/doi-proxy.json and deploy/prometheus/alerts.yml (issue 15, docs/operations.md).
const ROOT = new URL('../', import.meta.url)
const dashboardText = readFileSync(new URL('deploy/grafana/doi-proxy.json', ROOT), 'utf8')
const alertsText = readFileSync(new URL('deploy/prometheus/alerts.yml', ROOT), 'utf8')

interface Panel {
  type: string
  title: string
  targets?: Array<{ expr: string }>
}
interface Rule {
  alert: string
  expr: string
  for?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
}

const METRIC = /\bdoi_proxy_[a-z0-9_]+/g

/** The metric names /metrics declares (its # TYPE lines), with their types. */
async function exposedMetrics(): Promise<Map<string, string>> {
  const { app } = await setup()
  const text = (await app.inject('/metrics')).body
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1] as string, m[2] as string]))
}

/** A name from an expression as /metrics declares it: a histogram's _bucket, _sum and _count are its own. */
function declaredName(name: string, exposed: Map<string, string>): string {
  const base = name.replace(/_(bucket|sum|count)$/, '')
  return base !== name && exposed.get(base) === 'histogram' ? base : name
}

describe('the Grafana dashboard', () => {
  const dashboard = JSON.parse(dashboardText) as { title: string; panels: Panel[] }
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr))

  it('is JSON with panels that query Prometheus', () => {
    expect(dashboard.title).toBe('doi-proxy')
    expect(exprs.length).toBeGreaterThan(10)
  })

  it('names only metrics that a running app exposes', async () => {
    const exposed = await exposedMetrics()
    const named = new Set(exprs.flatMap((e) => e.match(METRIC) ?? []).map((n) => declaredName(n, exposed)))
    expect(named.size).toBeGreaterThan(10)
    expect([...named].filter((n) => !exposed.has(n))).toEqual([])
  })
})

describe('the Prometheus alert rules', () => {
  const rules = (parse(alertsText) as { groups: Array<{ name: string; rules: Rule[] }> }).groups.flatMap((g) => g.rules)

  it('cover an open breaker, stale answers, upstream errors and saturation', () => {
    expect(rules.map((r) => r.alert)).toEqual(
      expect.arrayContaining(['DoiProxyBreakerOpen', 'DoiProxyStaleRatioHigh', 'DoiProxyUpstreamErrors', 'DoiProxyUpstreamSaturated'])
    )
  })

  it('each has a duration, a severity and a summary', () => {
    for (const rule of rules) {
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/)
      expect(['warning', 'critical'], rule.alert).toContain(rule.labels?.severity)
      expect(rule.annotations?.summary, rule.alert).toBeTruthy()
    }
  })

  it('name only metrics that a running app exposes', async () => {
    const exposed = await exposedMetrics()
    const named = new Set(rules.flatMap((r) => r.expr.match(METRIC) ?? []).map((n) => declaredName(n, exposed)))
    expect(named.size).toBeGreaterThan(5)
    expect([...named].filter((n) => !exposed.has(n))).toEqual([])
  })
})

describe('the alert rules against a blackholed upstream (issue 45.16)', () => {
  const rules = (parse(alertsText) as { groups: Array<{ name: string; rules: Rule[] }> }).groups.flatMap((g) => g.rules)
  const firing = (before: Scrape, after: Scrape): string[] =>
    rules.filter((r) => evaluate(r.expr, before, after).length > 0).map((r) => r.alert)

  it('a silent upstream (connections accepted, nothing answered) pages on what readers feel; a healthy one pages on nothing', async () => {
    let now = Date.parse('2026-11-22T12:00:00Z')
    const fake = await FakeUpstream.start(PROBE_RECORDS)
    const hole = await Blackhole.start(fake.url)
    const config = {
      ...buildConfig(undefined, {}),
      upstreamUrl: hole.url,
      upstreamTimeoutMs: 400,
      upstreamRetries: 0,
      localStoreDir: undefined,
      cacheFile: undefined,
      maxEventLoopDelayMs: 0
    }
    const app = await buildApp(config, { now: () => now })
    await app.ready()
    onTestFinished(async () => {
      await app.close()
      await hole.close()
      await fake.close()
    })
    const scrape = async (): Promise<Scrape> => parseScrape((await app.inject('/metrics')).body, Date.now())
    const started = await scrape()
    for (const url of ['/10.5555/plain', '/10.5555/multi', '/10.5555/plain', '/10.5555/nothing-here']) await app.inject(url)
    const healthy = await scrape()
    expect(firing(started, healthy)).toEqual([])

    now += 2 * 86_400_000 // every cached record has expired: readers get stale answers
    hole.silence()
    const partitioned = await scrape()
    const statuses: number[] = []
    let n = 0
    const deadline = Date.now() + 30_000
    // Readers keep asking (new DOIs of two prefixes, and a cached one) until the lookups have told what they found.
    for (;;) {
      const wave = Array.from({ length: 12 }, (_, i) => (i === 0 ? '/10.5555/plain' : `/${i % 2 === 0 ? '10.5555' : '10.7777'}/new-${n++}`))
      statuses.push(
        ...(await Promise.all(wave.map(async (url, i) => (await app.inject({ url, remoteAddress: `127.0.0.${1 + i}` })).statusCode)))
      )
      const seen = await scrape()
      const value = (name: string): number => seen.series.get(name)?.[0]?.value ?? 0
      if (value('doi_proxy_upstream_unreachable') === 1 && value('doi_proxy_prefix_circuits_open') >= 2) break
      if (Date.now() > deadline) {
        throw new Error(
          `after ${statuses.length} requests: unreachable ${value('doi_proxy_upstream_unreachable')}, prefix breakers open ${value('doi_proxy_prefix_circuits_open')}`
        )
      }
    }
    expect(statuses.filter((s) => s >= 500).length).toBeGreaterThan(statuses.length / 2)
    expect(statuses).toContain(302) // the cached DOI, stale
    const during = await scrape()
    expect(firing(partitioned, during)).toEqual(
      expect.arrayContaining(['DoiProxyReaderErrors', 'DoiProxyUpstreamUnreachable', 'DoiProxyPrefixBreakersOpen'])
    )
  }, 60_000)

  it('the rules that page on what readers feel page within 5 minutes', () => {
    for (const name of ['DoiProxyReaderErrors', 'DoiProxyUpstreamUnreachable']) {
      const rule = rules.find((r) => r.alert === name)
      expect(rule?.labels?.severity, name).toBe('critical')
      expect(Number.parseInt(rule?.for ?? '', 10), name).toBeLessThanOrEqual(5)
      expect(rule?.for, name).toMatch(/^\d+m$/)
    }
  })
})
