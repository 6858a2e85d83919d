import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { setup } from './support/app.js'

// deploy/grafana/doi-proxy.json and deploy/prometheus/alerts.yml (issue 15, docs/operations.md).
const ROOT = new URL('../', import.meta.url)
const dashboardText = readFileSync(new URL('deploy/grafana/doi-proxy.json', ROOT), 'utf8')
const alertsText = readFileSync(new URL('deploy/prometheus/alerts.yml', ROOT), 'utf8')

interface Panel { type: string, title: string, targets?: Array<{ expr: string }> }
interface Rule { alert: string, expr: string, for?: string, labels?: Record<string, string>, annotations?: Record<string, string> }

const METRIC = /\bdoi_proxy_[a-z0-9_]+/g

/** The metric names /metrics declares (its # TYPE lines), with their types. */
async function exposedMetrics (): Promise<Map<string, string>> {
  const { app } = await setup()
  const text = (await app.inject('/metrics')).body
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1] as string, m[2] as string]))
}

/** A name from an expression as /metrics declares it: a histogram's _bucket, _sum and _count are its own. */
function declaredName (name: string, exposed: Map<string, string>): string {
  const base = name.replace(/_(bucket|sum|count)$/, '')
  return base !== name && exposed.get(base) === 'histogram' ? base : name
}

describe('the Grafana dashboard', () => {
  const dashboard = JSON.parse(dashboardText) as { title: string, panels: Panel[] }
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
  const rules = (parse(alertsText) as { groups: Array<{ name: string, rules: Rule[] }> }).groups.flatMap((g) => g.rules)

  it('cover an open breaker, stale answers, upstream errors and saturation', () => {
    expect(rules.map((r) => r.alert)).toEqual(expect.arrayContaining(['DoiProxyBreakerOpen', 'DoiProxyStaleRatioHigh', 'DoiProxyUpstreamErrors', 'DoiProxyUpstreamSaturated']))
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
