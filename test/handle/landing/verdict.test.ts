import { describe, expect, it } from 'vitest'
import { registrableDomain } from '../../../src/handle/landing/domain.js'
import { challengeOf, landingResultOf, landingVerdictOf, type ProbeOutcome } from '../../../src/handle/landing/verdict.js'

const URL_ = 'https://journal.example/a/1'
function answer(status: number, more: Partial<Extract<ProbeOutcome, { kind: 'answer' }>> = {}): ProbeOutcome {
  return { kind: 'answer', status, url: URL_, startUrl: URL_, headers: {}, head: '', evidence: { titles: [] }, ...more }
}

// The verdict table of issue 41 ("Verdicts") and plan-41 §3.
describe('a landing verdict', () => {
  it.each<[string, ProbeOutcome, string, string]>([
    ['2xx naming the DOI', answer(200, { evidence: { titles: [], doiAt: 'citation_doi' } }), 'alive', 'citation_doi names the DOI'],
    [
      '2xx naming the title',
      answer(200, { evidence: { titles: [], titleMatch: { at: 'og:title', title: 'Soil microbes' } } }),
      'alive',
      'og:title names the title: "Soil microbes"'
    ],
    ['2xx naming neither', answer(200), 'unconfirmed', 'HTTP 200, but the page names neither the DOI nor the title'],
    [
      '2xx on another registrable domain',
      answer(200, { url: 'https://www.casino.example/', startUrl: 'https://doi.journal.example/x' }),
      'unconfirmed',
      'HTTP 200, but the page names neither the DOI nor the title; landed on casino.example, registered on journal.example'
    ],
    [
      'a Cloudflare challenge header', // cf-mitigated: Cloudflare's documented header on challenge answers
      answer(403, { headers: { 'cf-mitigated': 'challenge' }, head: '<title>Just a moment...</title>' }),
      'blocked',
      'Cloudflare challenge (cf-mitigated: challenge)'
    ],
    [
      'an Akamai 403',
      answer(403, { head: 'Access Denied ... Reference&#32;&#35;18&#46;6f2c3e17&#46;1700000000' }),
      'blocked',
      'Akamai access denial (HTTP 403)'
    ],
    ['an Akamai 403, plain', answer(403, { head: 'Reference #18.6f2c3e17.1700000000.2d1f' }), 'blocked', 'Akamai access denial (HTTP 403)'],
    [
      'a 503 challenge',
      answer(503, { head: '<script src="/cdn-cgi/challenge-platform/h/b/orchestrate"></script>' }),
      'blocked',
      'Cloudflare challenge (HTTP 503)'
    ],
    ['401', answer(401), 'blocked', 'HTTP 401: the site refuses the crawler (no known challenge page)'],
    ['429', answer(429), 'blocked', 'HTTP 429: the site asks the crawler to slow down'],
    ['404', answer(404), 'dead', `HTTP 404 at ${URL_}`],
    ['410', answer(410), 'dead', `HTTP 410 at ${URL_}`],
    ['another 4xx', answer(400), 'dead', `HTTP 400 at ${URL_}`],
    ['a 5xx on every try', answer(500, { tries: 3 }), 'dead', `HTTP 500 at ${URL_} (3 tries)`],
    ['a 503 without a challenge', answer(503, { tries: 3 }), 'dead', `HTTP 503 at ${URL_} (3 tries)`],
    [
      'robots.txt',
      { kind: 'robots', url: URL_, allowed: false, why: 'robots.txt disallows /a/1 for doi-proxy' },
      'blocked',
      'robots.txt disallows /a/1 for doi-proxy'
    ],
    [
      'DNS',
      { kind: 'failed', url: URL_, reason: 'dns', detail: 'gone.test does not resolve (ENOTFOUND)' },
      'dead',
      'DNS: gone.test does not resolve (ENOTFOUND)'
    ],
    [
      'timeouts',
      { kind: 'failed', url: URL_, reason: 'timeout', detail: 'no whole answer in 10000 ms', tries: 3 },
      'dead',
      'timeout: no whole answer in 10000 ms (3 tries)'
    ],
    [
      'a refused address',
      {
        kind: 'failed',
        url: 'http://127.0.0.1/',
        reason: 'refused-address',
        detail: '127.0.0.1 is a loopback address (LANDING_ALLOW_PRIVATE)'
      },
      'dead',
      'refused: 127.0.0.1 is a loopback address (LANDING_ALLOW_PRIVATE)'
    ],
    [
      'a loop',
      { kind: 'failed', url: URL_, reason: 'loop', detail: '/b leads back to /a', status: 302 },
      'dead',
      'redirect loop: /b leads back to /a'
    ]
  ])('%s', (_name, outcome, verdict, evidence) => {
    expect(landingVerdictOf(outcome)).toMatchObject({ verdict, evidence })
  })

  it('carries the status and the final URL', () => {
    expect(landingVerdictOf(answer(404))).toEqual({ verdict: 'dead', status: 404, url: URL_, evidence: `HTTP 404 at ${URL_}` })
    expect(landingVerdictOf({ kind: 'failed', url: URL_, reason: 'tls', detail: 'self-signed certificate' }).status).toBeNull()
  })
})

describe('bot walls', () => {
  it.each([
    [403, {}, '<div id="challenge-body"><script>window._cf_chl_opt={}</script>', 'Cloudflare challenge (HTTP 403)'],
    [403, {}, '<iframe src="https://geo.captcha-delivery.com/captcha/">', 'DataDome challenge (HTTP 403)'],
    [403, {}, '<div id="px-captcha"></div>', 'PerimeterX (HUMAN) challenge (HTTP 403)'],
    [403, {}, 'Request unsuccessful. Incapsula incident ID: 123', 'Imperva (Incapsula) challenge (HTTP 403)'],
    [200, { 'cf-mitigated': 'challenge' }, '', 'Cloudflare challenge (cf-mitigated: challenge)'],
    [200, {}, '/cdn-cgi/challenge-platform/', undefined], // a 200 page that mentions the path is a page
    [404, {}, '_cf_chl_opt', undefined],
    [403, {}, 'Forbidden', undefined]
  ])('%i %o %s → %s', (status, headers, head, wall) => {
    expect(challengeOf(status, headers, head)).toBe(wall)
  })
})

describe('registrable domains (the Public Suffix List)', () => {
  it.each([
    ['www.journal.example', 'journal.example'],
    ['pubs.bbc.co.uk', 'bbc.co.uk'], // a multi-label public suffix
    ['user.github.io', 'user.github.io'], // a private suffix: each user owns theirs
    ['127.0.0.2', '127.0.0.2'],
    ['[::1]', '::1'],
    ['Journal.Example.', 'journal.example']
  ])('%s → %s', (host, domain) => {
    expect(registrableDomain(host)).toBe(domain)
  })
})

describe('a landing verdict read back (Redis, a recording)', () => {
  const good = { verdict: 'alive', status: 200, url: 'https://example.org/a', evidence: 'citation_doi names the DOI' }
  // input → believed? Anything not exactly a verdict is asked anew: a hostile or stale Redis must not decide.
  const vectors: Array<[string, unknown, boolean]> = [
    ['a verdict with its status', good, true],
    ['a verdict with no status (a refused address)', { ...good, verdict: 'dead', status: null }, true],
    ['an unknown verdict', { ...good, verdict: 'fine' }, false],
    ['a null verdict (a failure to find out is not kept)', { ...good, verdict: null }, false],
    ['a status that is not HTTP', { ...good, status: 42 }, false],
    ['a status as text', { ...good, status: '200' }, false],
    ['a fractional status', { ...good, status: 200.5 }, false],
    ['no URL', { ...good, url: undefined }, false],
    ['evidence past 4,000 characters', { ...good, evidence: 'x'.repeat(4_001) }, false],
    ['a URL past 4,000 characters', { ...good, url: 'https://e.org/' + 'x'.repeat(4_000) }, false],
    ['not an object', 'alive', false],
    ['null', null, false]
  ]
  it.each(vectors)('%s', (_name, input, believed) => {
    const got = landingResultOf(input)
    expect(got !== undefined).toBe(believed)
    if (believed) expect(got).toEqual(input)
  })

  it('keeps only the four fields, whatever else the text carries', () => {
    expect(landingResultOf({ ...good, from: 'https://example.org/start', extra: '<script>' })).toEqual(good)
  })
})
