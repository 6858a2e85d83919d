import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addressRulesOf } from '../../../src/handle/address-rules.js'
import { landingUserAgent } from '../../../src/config/schema.js'
import { createLandingProber, type LandingProber, type LandingProberOptions } from '../../../src/resolve/landing/prober.js'
import { FakeLandingSite, pages, selfSignedCert, Sentinel } from '../../support/fake-landing.js'
import { fakeLookup } from '../../support/landing-dns.js'

const DOI = '10.1234/landing.1'
const TITLE = 'Soil microbes of Iowa: a survey'
const TIMEOUT_MS = 500
const MAX_BYTES = 256 * 1024
const USER_AGENT = landingUserAgent({ userAgent: 'doi-proxy/0.1.0', contactEmail: 'ops@example.org' })

let site: FakeLandingSite
let tlsSite: FakeLandingSite
let sentinel: Sentinel
let prober: LandingProber
let lookup: ReturnType<typeof fakeLookup>

function chain(prefix: string, n: number, end: string): Record<string, ReturnType<typeof pages.redirect>> {
  const out: Record<string, ReturnType<typeof pages.redirect>> = {}
  for (let i = 0; i < n; i++) out[`/${prefix}/${i}`] = pages.redirect(i + 1 === n ? end : `/${prefix}/${i + 1}`)
  return out
}

function options(more: Partial<LandingProberOptions> = {}): LandingProberOptions {
  return {
    userAgent: USER_AGENT,
    timeoutMs: TIMEOUT_MS,
    maxBytes: MAX_BYTES,
    perHost: 4,
    hostDelayMs: 0,
    robotsTtlMs: 60_000,
    // The tests' sites are on 127.0.0.2; 127.0.0.1 (the sentinel) stays refused.
    rules: addressRulesOf(['127.0.0.2/32']),
    lookup,
    retryBaseMs: 10,
    ...more
  }
}

beforeAll(async () => {
  sentinel = await Sentinel.start()
  lookup = fakeLookup({
    'journal.test': '127.0.0.2',
    'casino.test': '127.0.0.2',
    'gone.test': 'ENOTFOUND',
    'sentinel.test': '127.0.0.1',
    'rebind.test': ['127.0.0.2', '127.0.0.1'] // one allowed address among refused ones: refused whole
  })
  site = await FakeLandingSite.start({
    pages: {
      '/citation-doi': pages.citationDoi(DOI),
      '/json-ld': pages.jsonLd(DOI),
      '/doi-in-text': pages.doiInText(DOI),
      '/title-only': pages.titleOnly(TITLE),
      '/casino': pages.casino(),
      '/cf-challenge': pages.cfChallenge(),
      '/akamai-403': pages.akamai403(),
      '/404': pages.status(404),
      '/410': pages.status(410),
      '/500': pages.status(500),
      '/429-retry': pages.retryAfter(1, 1, pages.citationDoi(DOI)),
      '/429-long': pages.retryAfter(3600, 5, pages.citationDoi(DOI)),
      '/loop/a': pages.redirect('/loop/b'),
      '/loop/b': pages.redirect('/loop/a'),
      ...chain('ten', 10, '/citation-doi'),
      ...chain('eleven', 11, '/citation-doi'),
      '/to-casino': pages.redirect((s) => `http://casino.test:${s.port}/casino`),
      '/to-sentinel': pages.redirect(() => `http://127.0.0.1:${sentinel.port}/`),
      '/to-sentinel-v6': pages.redirect(() => `http://[::ffff:127.0.0.1]:${sentinel.port}/`),
      '/to-sentinel-name': pages.redirect(() => `http://sentinel.test:${sentinel.port}/`),
      '/to-rebind': pages.redirect(() => `http://rebind.test:${sentinel.port}/`),
      '/to-file': pages.redirect('file:///etc/passwd'),
      '/huge': pages.huge(DOI, 50),
      '/drip': pages.drip(100),
      '/set-cookie': pages.setCookie('/after-cookie'),
      '/after-cookie': pages.citationDoi(DOI)
    }
  })
  tlsSite = await FakeLandingSite.start({ tls: await selfSignedCert(), pages: { '/a': pages.citationDoi(DOI) } })
  prober = createLandingProber(options())
})

afterAll(async () => {
  await prober.close()
  await site.close()
  await tlsSite.close()
  await sentinel.close()
})

const at = (path: string): string => `${site.origin('journal.test')}${path}`
const probe = async (path: string) => await prober.probe({ doi: DOI, url: at(path), titles: [TITLE] })
const count = (path: string): number => site.paths.filter((p) => p === path).length

describe('a landing page, probed', () => {
  it.each([
    ['/citation-doi', 'alive', 200, 'citation_doi names the DOI'],
    ['/json-ld', 'alive', 200, 'JSON-LD names the DOI'],
    ['/doi-in-text', 'alive', 200, "the page's text names the DOI"],
    ['/title-only', 'alive', 200, '<title> names the title: "Soil microbes of Iowa: a survey | Journal of Tests"'],
    ['/casino', 'unconfirmed', 200, 'HTTP 200, but the page names neither the DOI nor the title'],
    ['/cf-challenge', 'blocked', 403, 'Cloudflare challenge (cf-mitigated: challenge)'],
    ['/akamai-403', 'blocked', 403, 'Akamai access denial (HTTP 403)'],
    ['/404', 'dead', 404, 'HTTP 404 at <url>'],
    ['/410', 'dead', 410, 'HTTP 410 at <url>']
  ])('%s is %s', async (path, verdict, status, evidence) => {
    expect(await probe(path)).toEqual({ verdict, status, url: at(path), evidence: evidence.replace('<url>', at(path)) })
  })

  it('names the other domain a redirect landed on', async () => {
    const result = await probe('/to-casino')
    expect(result).toMatchObject({ verdict: 'unconfirmed', url: `http://casino.test:${site.port}/casino` })
    expect(result.evidence).toContain('landed on casino.test, registered on journal.test')
  })

  it('sends a User-Agent naming doi-proxy and its contact', async () => {
    await probe('/citation-doi')
    const seen = site.seen.filter((s) => s.path === '/citation-doi')
    expect(seen.length).toBeGreaterThan(0)
    for (const s of seen) {
      expect(s.userAgent).toBe('doi-proxy/0.1.0 landing-check (+docs/checking-dois.md#the-crawler; mailto:ops@example.org)')
    }
  })

  it('never sends a cookie, even one a page set on the way', async () => {
    expect((await probe('/set-cookie')).verdict).toBe('alive')
    expect(count('/after-cookie')).toBe(1)
    expect(site.seen.filter((s) => s.cookie !== undefined)).toEqual([])
  })

  it('reads at most LANDING_MAX_BYTES of a 50 MB page and judges it from its head', async () => {
    expect(await probe('/huge')).toMatchObject({ verdict: 'alive', evidence: 'citation_doi names the DOI' })
    // What the server wrote before the connection was cut: the bytes read plus the sockets' buffers.
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(site.bytesWritten).toBeLessThan(12 * 1024 * 1024)
  })

  it('gives up a dripping page at LANDING_TIMEOUT_MS on each of 3 tries: dead', async () => {
    const started = performance.now()
    const result = await probe('/drip')
    const took = performance.now() - started
    expect(result).toMatchObject({ verdict: 'dead', status: null, evidence: `timeout: no whole answer in ${TIMEOUT_MS} ms (3 tries)` })
    expect(count('/drip')).toBe(3)
    expect(took).toBeGreaterThanOrEqual(3 * TIMEOUT_MS - 50)
    expect(took).toBeLessThan(3 * TIMEOUT_MS + 1000)
  })

  it('tries a 5xx three times, then calls it dead', async () => {
    expect(await probe('/500')).toMatchObject({ verdict: 'dead', status: 500, evidence: `HTTP 500 at ${at('/500')} (3 tries)` })
    expect(count('/500')).toBe(3)
  })

  it("waits a 429's Retry-After (at most a minute) before the next try", async () => {
    const started = performance.now()
    expect(await probe('/429-retry')).toMatchObject({ verdict: 'alive' })
    expect(performance.now() - started).toBeGreaterThanOrEqual(950)
    expect(count('/429-retry')).toBe(2)
  })

  it('does not wait an hour for a 429: blocked at once', async () => {
    expect(await probe('/429-long')).toMatchObject({ verdict: 'blocked', status: 429 })
    expect(count('/429-long')).toBe(1)
  })

  it('follows 10 redirects', async () => {
    expect(await probe('/ten/0')).toMatchObject({ verdict: 'alive', url: at('/citation-doi') })
  })

  it('calls an 11th redirect dead', async () => {
    expect(await probe('/eleven/0')).toMatchObject({ verdict: 'dead', evidence: 'too many redirects: more than 10 redirects' })
    expect(count('/citation-doi')).toBeGreaterThan(0)
  })

  it('calls a redirect loop dead', async () => {
    expect(await probe('/loop/a')).toMatchObject({
      verdict: 'dead',
      url: at('/loop/a'),
      evidence: `redirect loop: ${at('/loop/a')} was reached before`
    })
  })

  it('calls a redirect to another scheme dead', async () => {
    expect(await probe('/to-file')).toMatchObject({
      verdict: 'dead',
      evidence: `a redirect without a usable Location: HTTP 302 at ${at('/to-file')}`
    })
  })

  it('calls a name that does not resolve dead', async () => {
    expect(await prober.probe({ doi: DOI, url: 'http://gone.test/a', titles: [] })).toEqual({
      verdict: 'dead',
      status: null,
      url: 'http://gone.test/a',
      evidence: 'DNS: gone.test does not resolve (ENOTFOUND)'
    })
  })

  it('calls a self-signed certificate dead', async () => {
    const result = await prober.probe({ doi: DOI, url: `${tlsSite.origin('journal.test')}/a`, titles: [] })
    expect(result).toMatchObject({ verdict: 'dead', status: null })
    expect(result.evidence).toMatch(/^TLS: self[- ]signed certificate/)
    expect(tlsSite.paths).toEqual([])
  })

  it('stops waiting for the next try when the caller leaves', async () => {
    const controller = new AbortController()
    const slow = createLandingProber(options({ retryBaseMs: 10_000 }))
    try {
      const pending = slow.probe({ doi: DOI, url: at('/500'), titles: [] }, controller.signal)
      setTimeout(() => controller.abort(new Error('the reader left')), 200)
      await expect(pending).rejects.toThrow('the reader left')
    } finally {
      await slow.close()
    }
  })

  it('stops when the caller leaves', async () => {
    const controller = new AbortController()
    const pending = prober.probe({ doi: DOI, url: at('/drip'), titles: [] }, controller.signal)
    setTimeout(() => controller.abort(new Error('the reader left')), 50)
    await expect(pending).rejects.toThrow('the reader left')
  })
})

describe('addresses a landing check never reaches (LANDING_ALLOW_PRIVATE)', () => {
  it.each([
    ['/to-sentinel', () => `http://127.0.0.1:${sentinel.port}/`, 'refused: 127.0.0.1 is a loopback address (LANDING_ALLOW_PRIVATE)'],
    [
      '/to-sentinel-v6',
      () => `http://[::ffff:7f00:1]:${sentinel.port}/`,
      'refused: ::ffff:7f00:1 is a loopback address (127.0.0.1, IPv4-mapped) (LANDING_ALLOW_PRIVATE)'
    ],
    [
      '/to-sentinel-name',
      () => `http://sentinel.test:${sentinel.port}/`,
      'refused: sentinel.test resolves to 127.0.0.1, a loopback address (LANDING_ALLOW_PRIVATE)'
    ],
    [
      '/to-rebind',
      () => `http://rebind.test:${sentinel.port}/`,
      'refused: rebind.test resolves to 127.0.0.1, a loopback address (LANDING_ALLOW_PRIVATE)'
    ]
  ])('a redirect %s is dead, and the address is never contacted', async (path, url, evidence) => {
    expect(await probe(path)).toEqual({ verdict: 'dead', status: null, url: url(), evidence })
    expect(sentinel.connections).toBe(0)
  })

  it('refuses a registered URL to a private address before any request', async () => {
    const strict = createLandingProber(options({ rules: addressRulesOf(false) }))
    try {
      expect(await strict.probe({ doi: DOI, url: at('/citation-doi').replace('journal.test', '127.0.0.2'), titles: [] })).toMatchObject({
        verdict: 'dead',
        evidence: 'refused: 127.0.0.2 is a loopback address (LANDING_ALLOW_PRIVATE)'
      })
      expect(await strict.probe({ doi: DOI, url: at('/citation-doi'), titles: [] })).toMatchObject({
        verdict: 'dead',
        evidence: 'refused: journal.test resolves to 127.0.0.2, a loopback address (LANDING_ALLOW_PRIVATE)'
      })
    } finally {
      await strict.close()
    }
  })
})
