import { writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { chromium } from 'playwright-core'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { AxeBuilder } from '@axe-core/playwright'
import { buildApp } from '../../src/app.js'
import type { AppDeps } from '../../src/app.js'
import type { Config } from '../../src/config/schema.js'
import { advance, uncheckedState } from '../../src/handle/health/confirm.js'
import { slotOf } from '../../src/handle/health/schedule.js'
import { cacheKey } from '../../src/handle/name.js'
import type { CheckResult, CheckVerdict, DoiState } from '../../src/handle/health/types.js'
import { openHealthDb } from '../../src/resolve/health/db.js'
import { createPruner } from '../../src/resolve/health/prune.js'
import { testConfig } from './app.js'
import { FakeUpstream } from './fake-upstream.js'
import { PROBE_RECORDS } from './records.js'
import { TEST_TOOLS } from './test-tools.js'

/**
 * Debian's chromium, driven by playwright-core (behaviour.md §12). CI installs it (.ci/run); without it
 * the browser tests fail with this message rather than skip, so a missing browser is never a pass.
 */
export function chromiumPath(): string {
  const found = TEST_TOOLS.find((tool) => tool.name === 'Chromium')?.find(process.env)
  if (found === undefined) {
    throw new Error(
      "The browser tests need Chromium and found none: install Debian's package (apt-get install -y --no-install-recommends chromium; .ci/run does) or set CHROMIUM_PATH."
    )
  }
  return found
}

export async function launchBrowser(): Promise<Browser> {
  return await chromium.launch({ executablePath: chromiumPath(), headless: true })
}

export interface Served {
  /** http://127.0.0.1:PORT, without a trailing slash. */
  origin: string
  app: FastifyInstance
  upstream: FakeUpstream
  close: () => Promise<void>
}

/** Our app listening on 127.0.0.1 (a real socket, as a browser needs), in front of the fake upstream. */
export async function serve(overrides: Partial<Config> = {}, deps: AppDeps = {}): Promise<Served> {
  const upstream = await FakeUpstream.start(PROBE_RECORDS)
  const config = testConfig(upstream.url, { port: 0, ...overrides })
  const app = await buildApp(config, deps)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  return {
    origin: `http://127.0.0.1:${port}`,
    app,
    upstream,
    close: async () => {
      await app.close()
      await upstream.close()
    }
  }
}

export interface OpenedPage {
  page: Page
  context: BrowserContext
  /** Every request the page tried to make to another origin (each was refused). */
  offOrigin: string[]
  status: number | undefined
}

/**
 * A page in a fresh context. Every request is intercepted: one to another origin is aborted and
 * remembered, so a test can say that a page needs nothing from elsewhere.
 */
export async function openPage(
  browser: Browser,
  origin: string,
  path: string,
  opts: { colorScheme?: 'light' | 'dark'; javaScriptEnabled?: boolean } = {}
): Promise<OpenedPage> {
  const context = await browser.newContext({ colorScheme: opts.colorScheme ?? 'light', javaScriptEnabled: opts.javaScriptEnabled ?? true })
  const offOrigin: string[] = []
  await context.route('**/*', async (route) => {
    const url = route.request().url()
    if (new URL(url).origin === origin) return await route.continue()
    offOrigin.push(url)
    return await route.abort('blockedbyclient')
  })
  const page = await context.newPage()
  const response = await page.goto(origin + path, { waitUntil: 'load' })
  return { page, context, offOrigin, status: response?.status() }
}

/** axe-core's serious and critical findings on the page, one line each (empty when there are none). */
export async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze()
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.nodes.map((n) => `${v.id} (${v.impact ?? ''}): ${n.target.join(' ')}: ${n.failureSummary ?? v.help}`))
}

const DAY_MS = 86_400_000
const JOURNAL = 'https://journal.example/articles'

/** One seeded DOI: what each of its checks found, a day apart, the last one `daysAgo` 0. */
interface SeededDoi {
  doi: string
  checks: Array<{ verdict: CheckVerdict; status: number | null; url: string | null; evidence: string }>
}

/** What `seedHealth` writes: alive, dead (with a last good page), taken over, not registered, and one of another prefix. */
export const SEEDED_DOIS: readonly SeededDoi[] = [
  {
    doi: '10.5555/alive',
    checks: Array.from({ length: 4 }, () => ({
      verdict: 'alive',
      status: 200,
      url: `${JOURNAL}/alive`,
      evidence: 'citation_doi names the DOI'
    }))
  },
  {
    doi: '10.5555/dead-page',
    checks: [
      { verdict: 'alive', status: 200, url: `${JOURNAL}/dead-page`, evidence: 'citation_doi names the DOI' },
      { verdict: 'dead', status: 404, url: `${JOURNAL}/dead-page`, evidence: 'HTTP 404 <Not Found> & "gone"' },
      { verdict: 'dead', status: 404, url: `${JOURNAL}/dead-page`, evidence: 'HTTP 404 <Not Found> & "gone"' },
      { verdict: 'dead', status: 404, url: `${JOURNAL}/dead-page`, evidence: 'HTTP 404 <Not Found> & "gone"' }
    ]
  },
  {
    doi: '10.5555/taken',
    checks: [
      { verdict: 'alive', status: 200, url: `${JOURNAL}/taken`, evidence: 'the title is on the page' },
      {
        verdict: 'takeover',
        status: 200,
        url: 'https://casino.example/a-very-long-path/that/goes/on/and/on/without/any/break/at/all/for/a/while',
        evidence: 'landed on casino.example; alive on journal.example until then'
      },
      {
        verdict: 'takeover',
        status: 200,
        url: 'https://casino.example/a-very-long-path/that/goes/on/and/on/without/any/break/at/all/for/a/while',
        evidence: 'landed on casino.example; alive on journal.example until then'
      }
    ]
  },
  {
    doi: '10.5555/unregistered',
    checks: [
      { verdict: 'not-found', status: 404, url: null, evidence: 'the registry does not know this DOI (HTTP 404)' },
      { verdict: 'not-found', status: 404, url: null, evidence: 'the registry does not know this DOI (HTTP 404)' }
    ]
  },
  {
    doi: '10.6666/other',
    checks: [{ verdict: 'blocked', status: 403, url: 'https://walled.example/x', evidence: 'a bot wall (Cloudflare challenge)' }]
  }
]

/**
 * A health history for the pages (issue 42), written as the checker would (fleet log events through the real
 * database, HEALTH_CONFIRM=2), one check a day ending today, each day rolled up for the chart; every DOI next
 * due in a month, so a server on it checks nothing while a test looks. Answers the list file naming them.
 */
export async function seedHealth(dir: string, now = Date.now()): Promise<{ db: string; list: string }> {
  const file = `${dir}/health.sqlite`
  const list = `${dir}/watched.txt`
  const intervalMs = 7 * DAY_MS
  const rules = { confirm: 2, gapMs: 0, intervalMs }
  const db = openHealthDb({ file, log: { info: () => {}, warn: () => {} }, checkpointEveryMs: 0, now: () => now })
  const states = new Map<string, DoiState>()
  let seq = 0
  const days = Math.max(...SEEDED_DOIS.map((d) => d.checks.length))
  for (let day = days - 1; day >= 0; day--) {
    const at = now - day * DAY_MS
    for (const { doi, checks } of SEEDED_DOIS) {
      const key = cacheKey(doi)
      const prefix = doi.slice(0, doi.indexOf('/'))
      const check = checks[checks.length - 1 - day]
      if (check === undefined) continue
      if (!states.has(key)) {
        db.applyEvent(`${at}-${seq++}`, { v: 1, t: 'watch', key, doi, prefix, source: 'seen' })
        states.set(key, uncheckedState(at, slotOf(key, intervalMs), intervalMs))
      }
      const result: CheckResult = {
        verdict: check.verdict,
        status: check.status,
        registeredUrl: `${JOURNAL}/${doi}`,
        finalUrl: check.url,
        evidence: check.evidence,
        ms: 120
      }
      const next = advance(
        states.get(key) as DoiState,
        { verdict: check.verdict, kind: 'scheduled' },
        { ...rules, slot: slotOf(key, intervalMs) },
        at
      )
      const state = { ...next.state, nextAt: now + 30 * DAY_MS }
      states.set(key, state)
      db.applyEvent(`${at}-${seq++}`, { v: 1, t: 'check', key, doi, prefix, at, kind: 'scheduled', state, ...result })
    }
    createPruner(db, { keepDays: 365, log: { info: () => {}, warn: () => {} }, now: () => at }).rollup()
  }
  await db.close()
  writeFileSync(list, SEEDED_DOIS.map((d) => d.doi).join('\n') + '\n')
  return { db: file, list }
}
