import { afterEach, describe, expect, it } from 'vitest'
import { addressRulesOf } from '../../../src/handle/address-rules.js'
import { createLandingChecks, type LandingChecksOptions } from '../../../src/resolve/landing/landing-checks.js'
import { createLandingProber, type LandingProber } from '../../../src/resolve/landing/prober.js'
import { FakeLandingSite, pages } from '../../support/fake-landing.js'
import { fakeLookup } from '../../support/landing-dns.js'

// Issue 41: a landing verdict is probed once and kept, alive/unconfirmed for LANDING_TTL_SECONDS,
// blocked/dead for LANDING_SHORT_TTL_SECONDS; callers asking at once share one probe.
const DOI = '10.1234/cached.1'
const lookup = fakeLookup({ 'a.test': '127.0.0.2' })
const opened: Array<{ close: () => Promise<void> }> = []

afterEach(async () => {
  await Promise.all(opened.splice(0).map(async (o) => await o.close()))
})

async function site(): Promise<FakeLandingSite> {
  const s = await FakeLandingSite.start({
    pages: {
      '/alive': pages.citationDoi(DOI),
      '/dead': pages.status(404),
      '/slow': pages.slow(400, pages.citationDoi(DOI))
    }
  })
  opened.push(s)
  return s
}

function prober(): LandingProber {
  const p = createLandingProber({
    userAgent: 'doi-proxy/test landing-check',
    timeoutMs: 5_000,
    maxBytes: 64 * 1024,
    perHost: 4,
    hostDelayMs: 0,
    robotsTtlMs: 60_000,
    rules: addressRulesOf(['127.0.0.2/32']),
    lookup,
    retryBaseMs: 10
  })
  opened.push(p)
  return p
}

function checks(more: Partial<LandingChecksOptions> = {}) {
  return createLandingChecks({ prober: prober(), ttlMs: 86_400_000, shortTtlMs: 3_600_000, maxEntries: 100, ...more })
}

const pagesAsked = (s: FakeLandingSite): string[] => s.paths.filter((p) => p !== '/robots.txt')
const url = (s: FakeLandingSite, path: string): string => `${s.origin('a.test')}${path}`

describe('landing verdicts kept', () => {
  it('answers a second check from the cache: the site sees one request', async () => {
    const s = await site()
    const c = checks()
    const first = await c.check(DOI, url(s, '/alive'), [])
    const second = await c.check(DOI.toUpperCase(), url(s, '/alive'), [])
    expect(first.verdict).toBe('alive')
    expect(second).toEqual(first)
    expect(pagesAsked(s)).toEqual(['/alive'])
  })

  it('checks again when the DOI is registered at another URL', async () => {
    const s = await site()
    const c = checks()
    await c.check(DOI, url(s, '/alive'), [])
    expect((await c.check(DOI, url(s, '/dead'), [])).verdict).toBe('dead')
    expect(pagesAsked(s)).toEqual(['/alive', '/dead'])
  })

  it('keeps an alive verdict for LANDING_TTL_SECONDS', async () => {
    const s = await site()
    let clock = 1_000_000 // not 0: lru-cache reads a start of 0 as no start
    const c = checks({ ttlMs: 10_000, shortTtlMs: 1_000, now: () => clock })
    await c.check(DOI, url(s, '/alive'), [])
    clock += 9_000
    await c.check(DOI, url(s, '/alive'), [])
    expect(pagesAsked(s)).toHaveLength(1)
    clock += 1_500
    await c.check(DOI, url(s, '/alive'), [])
    expect(pagesAsked(s)).toHaveLength(2)
  })

  it('keeps a dead verdict only for LANDING_SHORT_TTL_SECONDS', async () => {
    const s = await site()
    let clock = 1_000_000 // not 0: lru-cache reads a start of 0 as no start
    const c = checks({ ttlMs: 10_000, shortTtlMs: 1_000, now: () => clock })
    await c.check(DOI, url(s, '/dead'), [])
    clock += 900
    await c.check(DOI, url(s, '/dead'), [])
    expect(pagesAsked(s)).toHaveLength(1)
    clock += 600
    await c.check(DOI, url(s, '/dead'), [])
    expect(pagesAsked(s)).toHaveLength(2)
  })

  it('keeps nothing when the TTLs are 0', async () => {
    const s = await site()
    const c = checks({ ttlMs: 0, shortTtlMs: 0 })
    await c.check(DOI, url(s, '/alive'), [])
    await c.check(DOI, url(s, '/alive'), [])
    expect(pagesAsked(s)).toHaveLength(2)
  })
})

describe('checks asked at once', () => {
  it('makes one probe for two callers', async () => {
    const s = await site()
    const c = checks()
    const [a, b] = await Promise.all([c.check(DOI, url(s, '/slow'), []), c.check(DOI, url(s, '/slow'), [])])
    expect(a.verdict).toBe('alive')
    expect(b).toEqual(a)
    expect(pagesAsked(s)).toEqual(['/slow'])
  })

  it("does not abort the other caller's probe when one caller leaves", async () => {
    const s = await site()
    const c = checks()
    const leaving = new AbortController()
    const first = c.check(DOI, url(s, '/slow'), [], leaving.signal)
    const second = c.check(DOI, url(s, '/slow'), [], new AbortController().signal)
    setTimeout(() => leaving.abort(new Error('the first caller left')), 100)
    await expect(first).rejects.toThrow('the first caller left')
    expect((await second).verdict).toBe('alive')
    expect(pagesAsked(s)).toEqual(['/slow'])
  })

  it('aborts the probe when every caller has left', async () => {
    const s = await site()
    const c = checks()
    const a = new AbortController()
    const b = new AbortController()
    const first = c.check(DOI, url(s, '/slow'), [], a.signal)
    const second = c.check(DOI, url(s, '/slow'), [], b.signal)
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(s.inFlight).toBe(1)
    a.abort(new Error('gone'))
    b.abort(new Error('gone'))
    await expect(first).rejects.toThrow('gone')
    await expect(second).rejects.toThrow('gone')
    // The site sees its request end (the connection closed) long before the page's 400 ms.
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(s.inFlight).toBe(0)
    // Nothing kept from an aborted probe: the next check probes again.
    expect((await c.check(DOI, url(s, '/slow'), [])).verdict).toBe('alive')
    expect(pagesAsked(s)).toEqual(['/slow', '/slow'])
  })

  it('says so, visiting nothing, past the most probes under way at once', async () => {
    const s = await site()
    const c = checks({ maxFlights: 1 })
    const [a, b] = await Promise.all([c.check(DOI, url(s, '/slow'), []), c.check('10.1234/other', url(s, '/alive'), [])])
    expect(a.verdict).toBe('alive')
    expect(b).toEqual({
      verdict: null,
      status: null,
      url: url(s, '/alive'),
      evidence: null,
      error: 'too many landing checks at once: try again later'
    })
    expect(pagesAsked(s)).toEqual(['/slow'])
  })

  it("passes the reader's admission before a probe, and not for an answer at hand", async () => {
    const s = await site()
    const c = checks()
    let admitted = 0
    const admit = async (): Promise<void> => {
      admitted++
    }
    await c.check(DOI, url(s, '/alive'), [], undefined, admit)
    await c.check(DOI, url(s, '/alive'), [], undefined, admit)
    expect(admitted).toBe(1)
  })

  it('visits nothing when the admission refuses', async () => {
    const s = await site()
    const c = checks()
    const refuse = async (): Promise<never> => {
      throw new Error('rate limited')
    }
    await expect(c.check(DOI, url(s, '/alive'), [], undefined, refuse)).rejects.toThrow('rate limited')
    expect(pagesAsked(s)).toEqual([])
  })
})

describe('a landing verdict checked again (issue 42: confirming a failure)', () => {
  it('visits the page again though a verdict is kept, and keeps the new one', async () => {
    const table: Record<string, Parameters<typeof FakeLandingSite.start>[0]['pages'][string]> = { '/moving': pages.citationDoi(DOI) }
    const s = await FakeLandingSite.start({ pages: table })
    opened.push(s)
    const c = checks()
    expect((await c.check(DOI, url(s, '/moving'), [])).verdict).toBe('alive')
    table['/moving'] = pages.status(404)
    expect((await c.check(DOI, url(s, '/moving'), [])).verdict).toBe('alive')
    expect((await c.recheck(DOI, url(s, '/moving'), [])).verdict).toBe('dead')
    expect((await c.check(DOI, url(s, '/moving'), [])).verdict).toBe('dead')
    expect(pagesAsked(s).filter((p) => p === '/moving').length).toBeGreaterThanOrEqual(2)
  })

  it('joins a probe already under way for the same DOI and URL: the site sees one request', async () => {
    const s = await site()
    const c = checks()
    const [first, again] = await Promise.all([c.check(DOI, url(s, '/slow'), []), c.recheck(DOI, url(s, '/slow'), [])])
    expect(again).toEqual(first)
    expect(pagesAsked(s)).toEqual(['/slow'])
  })
})
