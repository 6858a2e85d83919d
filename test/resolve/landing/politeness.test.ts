import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { afterEach, describe, expect, it } from 'vitest'
import { addressRulesOf } from '../../../src/handle/address-rules.js'
import { createLandingProber, type LandingProber, type LandingProberOptions } from '../../../src/resolve/landing/prober.js'
import { FakeLandingSite, pages, type Page } from '../../support/fake-landing.js'
import { fakeLookup, slowFirst } from '../../support/landing-dns.js'

// Issue 41: a careful crawler. At most LANDING_PER_HOST at once and LANDING_HOST_DELAY_MS between starts
// per host (a robots.txt Crawl-delay wins when longer), robots.txt honoured (RFC 9309), a slow host
// holding only its own probes.
const DOI = '10.1234/polite.1'
const lookup = fakeLookup({ 'a.test': '127.0.0.2', 'b.test': '127.0.0.3' })
const opened: Array<{ close: () => Promise<void> }> = []

async function site(robots: string | number | undefined, extra: Record<string, Page> = {}, host = '127.0.0.2'): Promise<FakeLandingSite> {
  const started = await FakeLandingSite.start({
    host,
    robots,
    pages: { '/fast': pages.citationDoi(DOI), '/slow': pages.slow(150, pages.citationDoi(DOI)), ...extra }
  })
  opened.push(started)
  return started
}

function prober(more: Partial<LandingProberOptions> = {}): LandingProber {
  const made = createLandingProber({
    userAgent: 'doi-proxy/test landing-check',
    timeoutMs: 5_000,
    maxBytes: 64 * 1024,
    perHost: 2,
    hostDelayMs: 0,
    robotsTtlMs: 60_000,
    rules: addressRulesOf(['127.0.0.2/32', '127.0.0.3/32']),
    lookup,
    retryBaseMs: 10,
    ...more
  })
  opened.push(made)
  return made
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map(async (o) => await o.close()))
})

const url = (s: FakeLandingSite, path: string, name = 'a.test'): string => `${s.origin(name)}${path}`
const gaps = (times: number[]): number[] => times.slice(1).map((t, i) => t - (times[i] ?? 0))

describe('per-host limits', () => {
  it('has at most LANDING_PER_HOST requests in flight at one host', async () => {
    const s = await site(undefined)
    const p = prober({ perHost: 2 })
    const results = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => await p.probe({ doi: DOI, url: url(s, `/slow?${i}`), titles: [] }))
    )
    expect(results.map((r) => r.verdict)).toEqual(Array(8).fill('alive'))
    expect(s.peak).toBe(2)
  })

  it('waits LANDING_HOST_DELAY_MS between two starts at one host', async () => {
    const s = await site(undefined)
    const p = prober({ perHost: 4, hostDelayMs: 200 })
    await Promise.all(Array.from({ length: 4 }, async (_, i) => await p.probe({ doi: DOI, url: url(s, `/fast?${i}`), titles: [] })))
    expect(s.seen).toHaveLength(5) // robots.txt, then the four pages
    // Measured where the fake sees each request come: a new connection's setup may shift one by a few ms.
    for (const gap of gaps(s.seen.map((r) => r.at))) expect(gap).toBeGreaterThanOrEqual(170)
  })

  it('counts LANDING_HOST_DELAY_MS from when a request is written, not from its slot', async () => {
    // The first connection's name lookup takes 600 ms: a slot's gap counted from its grant let the next
    // request (on a connection of its own) reach the host before it.
    const s = await site(undefined)
    const p = prober({ perHost: 2, hostDelayMs: 300, lookup: slowFirst(lookup, 600) })
    await Promise.all([0, 1, 2].map(async (i) => await p.probe({ doi: DOI, url: url(s, `/fast?${i}`), titles: [] })))
    expect(s.seen).toHaveLength(4) // robots.txt, then the three pages
    for (const gap of gaps(s.seen.map((r) => r.at))) expect(gap).toBeGreaterThanOrEqual(290)
  })

  it('counts LANDING_HOST_DELAY_MS from after the write, even when a pause comes between a request start and its write', async () => {
    // undici tells subscribers of undici:client:sendHeaders between a request's start and its write: a
    // subscriber that holds the loop 200 ms (as a GC may) delays the first page's write, not the next page.
    const s = await site(undefined)
    const p = prober({ perHost: 2, hostDelayMs: 300 })
    let held = 0
    const hold = (message: unknown): void => {
      const path = (message as { request: { path: string } }).request.path
      if (path === '/fast?0' && held++ === 0) for (const until = performance.now() + 200; performance.now() < until;);
    }
    subscribe('undici:client:sendHeaders', hold)
    try {
      await p.probe({ doi: DOI, url: url(s, '/fast?0'), titles: [] })
      await Promise.all([1, 2].map(async (i) => await p.probe({ doi: DOI, url: url(s, `/fast?${i}`), titles: [] })))
    } finally {
      unsubscribe('undici:client:sendHeaders', hold)
    }
    expect(held).toBe(1)
    expect(s.seen.map((r) => r.path)).toEqual(['/robots.txt', '/fast?0', '/fast?1', '/fast?2'])
    for (const gap of gaps(s.seen.map((r) => r.at))) expect(gap).toBeGreaterThanOrEqual(290)
  })

  it("waits a robots.txt's Crawl-delay when it is longer", async () => {
    const s = await site('User-agent: doi-proxy\nCrawl-delay: 1\n')
    const p = prober({ hostDelayMs: 0 })
    await Promise.all([0, 1].map(async (i) => await p.probe({ doi: DOI, url: url(s, `/fast?${i}`), titles: [] })))
    const pageStarts = s.seen.filter((r) => r.path !== '/robots.txt').map((r) => r.at)
    expect(pageStarts).toHaveLength(2)
    expect(gaps(pageStarts)[0]).toBeGreaterThanOrEqual(950)
  })

  it('lets a slow host hold only its own probes', async () => {
    const a = await site(undefined, { '/stuck': pages.slow(3_000, pages.citationDoi(DOI)) })
    const b = await site(undefined, {}, '127.0.0.3')
    const p = prober({ perHost: 1 })
    const stuck = [0, 1, 2].map(async (i) => await p.probe({ doi: DOI, url: url(a, `/stuck?${i}`), titles: [] }).catch(() => undefined))
    await new Promise((resolve) => setTimeout(resolve, 50))
    const started = performance.now()
    expect(await p.probe({ doi: DOI, url: url(b, '/fast', 'b.test'), titles: [] })).toMatchObject({ verdict: 'alive' })
    expect(performance.now() - started).toBeLessThan(1_000)
    expect(a.peak).toBe(1)
    await p.close()
    await Promise.all(stuck)
  })
})

describe('robots.txt', () => {
  it('is fetched once per origin', async () => {
    const s = await site('User-agent: *\nAllow: /\n')
    const p = prober()
    for (let i = 0; i < 3; i++) await p.probe({ doi: DOI, url: url(s, `/fast?${i}`), titles: [] })
    await Promise.all([3, 4, 5].map(async (i) => await p.probe({ doi: DOI, url: url(s, `/fast?${i}`), titles: [] })))
    expect(s.paths.filter((path) => path === '/robots.txt')).toHaveLength(1)
  })

  it.each([
    ['User-agent: *\nDisallow: /private\n', '/private/1', 'robots.txt disallows /private/1 for doi-proxy'],
    ['User-agent: doi-proxy\nDisallow: /\n\nUser-agent: *\nAllow: /\n', '/fast', 'robots.txt disallows /fast for doi-proxy'], // our token's group wins
    [503, '/fast', 'robots.txt unreachable (HTTP 503)'] // RFC 9309 2.3.1.4: a server error disallows everything
  ])('%j keeps the crawler from %s: blocked, and the page is never asked', async (robots, path, evidence) => {
    const s = await site(robots, { '/private/1': pages.citationDoi(DOI) })
    expect(await prober().probe({ doi: DOI, url: url(s, path), titles: [] })).toEqual({
      verdict: 'blocked',
      status: null,
      url: url(s, path),
      evidence
    })
    expect(s.paths).toEqual(['/robots.txt'])
  })

  it.each([
    [404], // RFC 9309 2.3.1.3: unavailable (4xx) allows everything
    ['User-agent: googlebot\nDisallow: /\n'] // another crawler's group
  ])('%j lets the crawler in', async (robots) => {
    const s = await site(robots)
    expect(await prober().probe({ doi: DOI, url: url(s, '/fast'), titles: [] })).toMatchObject({ verdict: 'alive' })
  })

  it('is judged for each host a redirect leads to', async () => {
    const b = await site('User-agent: *\nDisallow: /\n', {}, '127.0.0.3')
    const a = await site(undefined, { '/to-b': pages.redirect(() => url(b, '/fast', 'b.test')) })
    expect(await prober().probe({ doi: DOI, url: url(a, '/to-b'), titles: [] })).toMatchObject({
      verdict: 'blocked',
      url: url(b, '/fast', 'b.test')
    })
    expect(b.paths).toEqual(['/robots.txt'])
  })
})
