import { readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { describe, expect, it, onTestFinished } from 'vitest'
import { parse } from 'yaml'
import { buildApp } from '../src/app.js'
import { buildConfig } from '../src/config/schema.js'
import { addressRulesOf } from '../src/handle/address-rules.js'
import { slotOf } from '../src/handle/health/schedule.js'
import { cacheKey } from '../src/handle/name.js'
import { createChecker } from '../src/resolve/health/checker.js'
import { createHealth } from '../src/resolve/health/health-service.js'
import { createLandingChecks } from '../src/resolve/landing/landing-checks.js'
import { createLandingProber } from '../src/resolve/landing/prober.js'
import { createServices } from '../src/services.js'
import { setup, testConfig } from './support/app.js'
import { Blackhole } from './support/blackhole.js'
import { FakeLandingSite, pages } from './support/fake-landing.js'
import { FakeUpstream } from './support/fake-upstream.js'
import { fakeLookup } from './support/landing-dns.js'
import { evaluate, parseScrape } from './support/promql.js'
import type { Scrape } from './support/promql.js'
import { admin, PROBE_RECORDS, str } from './support/records.js'

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

  it('has a DOI health row: watched DOIs by verdict, checks per minute by verdict, newly broken per day (issue 42)', () => {
    const rowAt = dashboard.panels.findIndex((p) => p.type === 'row' && p.title === 'DOI health')
    expect(rowAt).toBeGreaterThan(-1)
    const next = dashboard.panels.slice(rowAt + 1).findIndex((p) => p.type === 'row')
    const row = dashboard.panels.slice(rowAt + 1, next === -1 ? undefined : rowAt + 1 + next)
    expect(row.map((p) => p.title)).toEqual(['Watched DOIs by verdict', 'Checks per minute by verdict', 'Newly broken per day'])
    const [watched, checks, newly] = row.map((p) => p.targets?.[0]?.expr ?? '')
    // Every replica holds the same history: one replica's figure, never a sum over them.
    expect(watched).toMatch(/^max by \(prefix, verdict\) \(doi_proxy_health_dois\b/)
    expect(checks).toContain('doi_proxy_health_checks_total')
    expect(newly).toMatch(/^sum by \(prefix\) \(increase\(doi_proxy_health_newly_broken_total\{[^}]*\}\[1d\]\)\)$/)
  })
})

describe('the Prometheus alert rules', () => {
  const rules = (parse(alertsText) as { groups: Array<{ name: string; rules: Rule[] }> }).groups.flatMap((g) => g.rules)

  it('cover an open breaker, stale answers, upstream errors and saturation', () => {
    expect(rules.map((r) => r.alert)).toEqual(
      expect.arrayContaining(['DoiProxyBreakerOpen', 'DoiProxyStaleRatioHigh', 'DoiProxyUpstreamErrors', 'DoiProxyUpstreamSaturated'])
    )
  })

  it('cover resolution health: DOIs newly broken, no checker, checks falling behind (issue 42)', () => {
    expect(rules.map((r) => r.alert)).toEqual(
      expect.arrayContaining(['DoiProxyHealthNewlyBroken', 'DoiProxyHealthNoChecker', 'DoiProxyHealthBehind'])
    )
    const newly = rules.find((r) => r.alert === 'DoiProxyHealthNewlyBroken')
    // The owner acts on the list: the description says where it is.
    expect(newly?.annotations?.description).toContain('/health.csv')
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

describe('the health alerts around a confirmation (issue 42)', () => {
  const rules = (parse(alertsText) as { groups: Array<{ name: string; rules: Rule[] }> }).groups.flatMap((g) => g.rules)
  const health = rules.filter((r) => r.alert.startsWith('DoiProxyHealth'))
  const firing = (before: Scrape, after: Scrape): Rule[] => health.filter((r) => evaluate(r.expr, before, after).length > 0)

  it('DoiProxyHealthNewlyBroken fires between the scrapes around a dead page confirmed, naming its prefix and verdict; nothing fires before', async () => {
    // A DOI whose first check falls within a second of its watching (its slot in the interval), so the test waits for nothing.
    const intervalMs = 60_000
    let n = 0
    while (slotOf(cacheKey(`10.5555/gone-${n}`), intervalMs) > 1000) n++
    const doi = `10.5555/gone-${n}`
    const site = await FakeLandingSite.start({ pages: { '/gone': pages.status(404) } })
    const upstream = await FakeUpstream.start({ [doi]: [str(1, 'URL', `${site.origin('journal.test')}/gone`), admin()] })
    const dir = await mkdtemp(join(tmpdir(), 'doi-proxy-monitoring-'))
    const listFile = join(dir, 'dois.txt')
    await writeFile(listFile, `${doi}\n`)
    const config = testConfig(upstream.url, {
      healthListFile: listFile,
      healthIntervalSeconds: 60,
      healthConfirm: 2,
      healthConfirmGapSeconds: 0,
      healthDb: undefined,
      healthKeepDays: 1
    })
    const log = pino({ level: 'silent' })
    const { services, hooks } = await createServices(config, {}, { log, lifecycle: { ready: true } })
    const prober = createLandingProber({
      userAgent: 'doi-proxy/test health',
      timeoutMs: 5_000,
      maxBytes: 64 * 1024,
      perHost: 2,
      hostDelayMs: 0,
      robotsTtlMs: 60_000,
      rules: addressRulesOf(['127.0.0.0/8']),
      lookup: fakeLookup({ 'journal.test': '127.0.0.2' }),
      retryBaseMs: 10
    })
    const landing = createLandingChecks({ prober, ttlMs: 86_400_000, shortTtlMs: 3_600_000, maxEntries: 100 })
    const checker = createChecker({ proxyService: services.proxyService, landing, resolveMs: 5_000 })
    const scrape = async (): Promise<Scrape> => parseScrape(await services.metrics.exposition(), Date.now())
    const off = await scrape()
    const healthService = createHealth({ settings: config, checker, metrics: services.metrics, log, now: Date.now, metricsEveryMs: 100 })
    onTestFinished(async () => {
      await healthService.close()
      await prober.close()
      await hooks.onClose()
      await site.close()
      await upstream.close()
      await rm(dir, { recursive: true, force: true })
    })
    // Off: no health alert, whatever the scrapes.
    expect(firing(off, off)).toEqual([])

    await healthService.start()
    const before = await scrape()
    const deadline = Date.now() + 20_000
    let after = before
    while ((after.series.get('doi_proxy_health_newly_broken_total') ?? []).every((s) => s.value === 0)) {
      if (Date.now() > deadline) {
        throw new Error(`not confirmed: ${JSON.stringify([healthService.reader.summary(), site.paths, healthService.checkerState()])}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
      after = await scrape()
    }
    // One check is a failure, the second (a gap of 0 later) confirms it: the site saw both.
    expect(site.paths.filter((p) => p === '/gone')).toHaveLength(2)
    expect(firing(before, before).map((r) => r.alert)).toEqual([])
    const newly = health.find((r) => r.alert === 'DoiProxyHealthNewlyBroken') as Rule
    expect(evaluate(newly.expr, before, after)).toEqual([{ labels: { prefix: '10.5555', verdict: 'dead' }, value: 1 }])
    expect(firing(before, after).map((r) => r.alert)).toEqual(['DoiProxyHealthNewlyBroken'])

    // The checker stopped while health is on: DoiProxyHealthNoChecker's condition holds.
    await healthService.close()
    const stopped = await scrape()
    expect(firing(stopped, stopped).map((r) => r.alert)).toEqual(['DoiProxyHealthNoChecker'])
  }, 30_000)
})
