import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser } from 'playwright-core'
import { launchBrowser, openPage, seedHealth, serve, seriousViolations } from '../support/browser.js'
import { fakeLookup } from '../support/landing-dns.js'
import type { Served } from '../support/browser.js'

// behaviour.md §12: every page a person sees, in a real headless Chromium, light and dark.
// One browser and one listening app for the whole file; a fresh context per page.
let browser: Browser
let served: Served
let dir: string

beforeAll(async () => {
  browser = await launchBrowser()
  // /health on a seeded history (issue 42): its DOIs listed, none due while the pages are looked at.
  dir = mkdtempSync(join(tmpdir(), 'doi-proxy-browser-health-'))
  const health = await seedHealth(dir)
  served = await serve(
    {
      upstreamRetries: 0,
      localServices: [
        { id: 'library', name: 'Our Library', url: 'https://resolver.example/openurl?rft_id=info:doi/{doi}', networks: [], prefixes: [] }
      ],
      healthListFile: health.list,
      healthDb: health.db,
      healthKeepDays: 365
    },
    // No landing page is visited here; a name is never looked up for real.
    { landingLookup: fakeLookup({}) }
  )
}, 30_000)

afterAll(async () => {
  await browser?.close()
  await served?.close()
  rmSync(dir, { recursive: true, force: true })
})

/** Pages by what a reader or an operator sees, with how to reach each. */
const PAGES: ReadonlyArray<{ name: string; path: string; status: number; before?: () => void; after?: () => void }> = [
  { name: 'the home page', path: '/', status: 200 },
  { name: 'the values page', path: '/10.5555/multi?noredirect', status: 200 },
  { name: 'the not-found page', path: '/10.5555/does-not-exist', status: 404 },
  { name: 'the trailing-slash page', path: '/10.5555/plain/', status: 404 },
  { name: 'the bad-request page', path: '/10.5555/a%01b', status: 400 },
  {
    name: 'the upstream-error page',
    path: '/10.5555/registry-is-failing',
    status: 502,
    before: () => {
      served.upstream.mode = { kind: 'status', status: 500 }
    },
    after: () => {
      served.upstream.mode = { kind: 'ok' }
    }
  },
  { name: 'the settings page', path: '/settings', status: 200 },
  { name: 'the status page', path: '/status', status: 200 },
  { name: 'the health page', path: '/health', status: 200 },
  { name: 'the health page of one prefix', path: '/health?prefix=10.5555', status: 200 },
  { name: "one DOI's health page", path: '/health?doi=10.5555/dead-page', status: 200 }
]

describe.each(['light', 'dark'] as const)('in the %s colour scheme', (colorScheme) => {
  it.each(PAGES)(
    '$name has no serious or critical accessibility problem and loads nothing from elsewhere',
    async ({ path, status, before, after }) => {
      before?.()
      try {
        const opened = await openPage(browser, served.origin, path, { colorScheme })
        try {
          expect(opened.status).toBe(status)
          expect(await seriousViolations(opened.page)).toEqual([])
          expect(opened.offOrigin).toEqual([])
          expect(await opened.page.getAttribute('html', 'lang')).toBe('en')
          expect(await opened.page.title()).not.toBe('')
        } finally {
          await opened.context.close()
        }
      } finally {
        after?.()
      }
    }
  )
})

describe('without JavaScript', () => {
  it("the home form takes a reader to the DOI's values", async () => {
    const { page, context, offOrigin } = await openPage(browser, served.origin, '/', { javaScriptEnabled: false })
    try {
      await page.getByLabel('DOI', { exact: true }).fill('10.5555/multi')
      await page.getByLabel('Show the record instead of redirecting').check()
      await Promise.all([page.waitForURL(/\/10\.5555\/multi\?noredirect/), page.getByRole('button', { name: 'Resolve' }).click()])
      expect(await page.title()).toBe('DOI Name Values')
      expect(await page.locator('h1').textContent()).toBe('DOI: 10.5555/multi')
      expect(offOrigin).toEqual([])
    } finally {
      await context.close()
    }
  })

  it("a doi.org URL pasted into the home form lands on the DOI's own URL", async () => {
    const { page, context } = await openPage(browser, served.origin, '/', { javaScriptEnabled: false })
    try {
      await page.getByLabel('DOI', { exact: true }).fill('https://doi.org/10.5555/multi')
      await page.getByLabel('Show the record instead of redirecting').check()
      await Promise.all([
        page.waitForURL(`${served.origin}/10.5555/multi?noredirect=on`),
        page.getByRole('button', { name: 'Resolve' }).click()
      ])
      expect(await page.locator('h1').textContent()).toBe('DOI: 10.5555/multi')
    } finally {
      await context.close()
    }
  })

  it('the status page shows its figures', async () => {
    const { page, context } = await openPage(browser, served.origin, '/status', { javaScriptEnabled: false })
    try {
      expect(await page.locator('h1').textContent()).toBe('Resolver status')
      expect(await page.locator('svg[role=img]').count()).toBeGreaterThanOrEqual(3)
      expect(await page.locator('#refresh').count()).toBe(0)
    } finally {
      await context.close()
    }
  })
})

describe('the health page (issue 42)', () => {
  it('shows each prefix, its chart and the broken DOIs, without JavaScript', async () => {
    const { page, context, offOrigin } = await openPage(browser, served.origin, '/health', { javaScriptEnabled: false })
    try {
      expect(await page.locator('h1').textContent()).toBe('DOI health')
      expect(await page.locator('h2').allTextContents()).toEqual(['10.5555', '10.6666', 'Newly broken this week', 'Broken DOIs'])
      expect(await page.locator('svg[role=img]').count()).toBe(2)
      const broken = page.getByRole('table', { name: /Confirmed broken DOIs/ })
      expect(await broken.getByRole('link', { name: '10.5555/dead-page' }).count()).toBe(1)
      expect(await broken.getByText('HTTP 404: HTTP 404 <Not Found> & "gone"').count()).toBe(1)
      expect(offOrigin).toEqual([])
    } finally {
      await context.close()
    }
  })

  it("one DOI's page shows its verdict since when and its checks", async () => {
    const { page, context } = await openPage(browser, served.origin, '/health?doi=10.5555/dead-page', { javaScriptEnabled: false })
    try {
      expect(await page.locator('h1').textContent()).toBe('DOI health: 10.5555/dead-page')
      expect(await page.locator('#state').textContent()).toMatch(/^dead: .* since /)
      expect(await page.getByRole('table', { name: 'The last 4 checks, newest first' }).locator('tbody tr').count()).toBe(4)
    } finally {
      await context.close()
    }
  })

  it('the prefix picker shows one prefix, without JavaScript', async () => {
    const { page, context } = await openPage(browser, served.origin, '/health', { javaScriptEnabled: false })
    try {
      await page.getByLabel('Prefix').selectOption('10.6666')
      await Promise.all([page.waitForURL(/\/health\?prefix=10\.6666$/), page.getByRole('button', { name: 'Show' }).click()])
      expect(await page.locator('h2').allTextContents()).toEqual(['10.6666', 'Newly broken this week', 'Broken DOIs'])
    } finally {
      await context.close()
    }
  })
})

describe('with JavaScript', () => {
  it('the status page offers to stop its refresh', async () => {
    const { page, context } = await openPage(browser, served.origin, '/status')
    try {
      await expect.poll(async () => await page.getByLabel('Refresh every 10 seconds').isChecked()).toBe(true)
    } finally {
      await context.close()
    }
  })
})

/** WCAG's contrast ratio of two computed CSS colours (rgb or rgba, opaque). */
function contrast(a: string, b: string): number {
  const luminance = (css: string): number => {
    const [r = 0, g = 0, bl = 0] = (css.match(/[\d.]+/g) ?? [])
      .slice(0, 3)
      .map(Number)
      .map((v) => {
        const c = v / 255
        return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
      })
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl
  }
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number]
  return (hi + 0.05) / (lo + 0.05)
}

describe('form controls', () => {
  it.each(['light', 'dark'] as const)("the DOI field's border stands out from the page, 3:1 at least (%s)", async (colorScheme) => {
    const { page, context } = await openPage(browser, served.origin, '/', { colorScheme })
    try {
      const colours = await page.evaluate(() => ({
        border: getComputedStyle(document.getElementById('hdl') as Element).borderTopColor,
        page: getComputedStyle(document.body).backgroundColor
      }))
      expect(contrast(colours.border, colours.page)).toBeGreaterThanOrEqual(3)
    } finally {
      await context.close()
    }
  })
})

describe('keyboard', () => {
  it.each(['light', 'dark'] as const)('the DOI field shows where the focus is (%s)', async (colorScheme) => {
    const { page, context } = await openPage(browser, served.origin, '/10.5555/does-not-exist', { colorScheme })
    try {
      let focused = ''
      for (let i = 0; i < 10 && focused !== 'hdl'; i++) {
        await page.keyboard.press('Tab')
        focused = await page.evaluate(() => document.activeElement?.id ?? '')
      }
      expect(focused).toBe('hdl')
      const ring = await page.evaluate(() => {
        const style = getComputedStyle(document.activeElement as Element)
        return { outline: style.outlineStyle, width: style.outlineWidth, shadow: style.boxShadow }
      })
      expect(ring.outline !== 'none' || ring.shadow !== 'none').toBe(true)
      expect(ring.outline === 'none' || ring.width !== '0px').toBe(true)
    } finally {
      await context.close()
    }
  })
})
