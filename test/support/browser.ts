import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { chromium } from 'playwright-core'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { AxeBuilder } from '@axe-core/playwright'
import { buildApp } from '../../src/app.js'
import type { Config } from '../../src/config/schema.js'
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
export async function serve(overrides: Partial<Config> = {}): Promise<Served> {
  const upstream = await FakeUpstream.start(PROBE_RECORDS)
  const config = testConfig(upstream.url, { port: 0, ...overrides })
  const app = await buildApp(config)
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
