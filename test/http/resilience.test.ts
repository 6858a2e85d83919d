import { describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { setup } from '../support/app.js'
import type { UpstreamMode } from '../support/fake-upstream.js'

// Issue 5: a cached DOI keeps resolving through every kind of upstream failure; an uncached one fails
// quickly and clearly; the upstream is never hammered.

const EXPIRED = 2 * 86_400_000 // past the 24 h cap: every record is stale

describe('serving stale records when the upstream fails', () => {
  it.each<[string, UpstreamMode | 'down']>([
    ['down (connection refused)', 'down'],
    ['hanging', { kind: 'hang' }],
    ['answering 500', { kind: 'status', status: 500 }],
    ['answering 429 with Retry-After', { kind: 'status', status: 429, headers: { 'retry-after': '1' } }],
    ['answering 503', { kind: 'status', status: 503 }],
    // Answers we cannot read: the registry, or something in front of it, is failing (issue 25).
    ['answering 200 text/html (a captive portal, a CDN error page)', { kind: 'html', status: 200 }],
    ['answering broken JSON', { kind: 'broken-json' }],
    ['answering an unknown responseCode', { kind: 'status', status: 200, body: '{"responseCode":42}' }],
    ['answering a 50 MB body', { kind: 'huge', bytes: 50_000_000 }]
  ])('a cached DOI keeps resolving while the upstream is %s', async (_name, mode) => {
    let now = Date.parse('2026-11-22T12:00:00Z')
    const { app, upstream } = await setup({ deps: { now: () => now }, overrides: { upstreamTimeoutMs: 400, upstreamRetryBaseMs: 20 } })
    expect((await app.inject({ url: '/10.5555/plain' })).headers['x-cache']).toBe('MISS')
    now += EXPIRED
    if (mode === 'down') await upstream.close()
    else upstream.mode = mode
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/plain')
    expect(res.headers['x-cache']).toBe('STALE')
  })

  it('a stale answer is counted in /metrics', async () => {
    let now = Date.parse('2026-11-22T12:00:00Z')
    const { app, upstream } = await setup({ deps: { now: () => now } })
    await app.inject({ url: '/10.5555/plain' })
    now += EXPIRED
    upstream.mode = { kind: 'status', status: 500, headers: {} }
    await app.inject({ url: '/10.5555/plain' })
    // The DOI's record and its prefix record (namespace locations) both came from the stale cache.
    expect((await app.inject({ url: '/metrics' })).body).toMatch(/doi_proxy_stale_answers_total 2/)
  })

  it('during an outage the stale warning is logged once a second, not once per request', async () => {
    let now = Date.parse('2026-11-22T12:00:00Z')
    const lines: Array<Record<string, unknown>> = []
    const logger = pino(
      { level: 'warn' },
      {
        write: (line: string) => {
          lines.push(JSON.parse(line) as Record<string, unknown>)
        }
      }
    )
    const { app, upstream } = await setup({ deps: { now: () => now, logger }, overrides: { upstreamRetries: 0 } })
    await app.inject({ url: '/10.5555/plain' })
    now += EXPIRED
    upstream.mode = { kind: 'status', status: 500 }
    for (let i = 0; i < 5; i++) expect((await app.inject({ url: '/10.5555/plain' })).headers['x-cache']).toBe('STALE')
    expect(lines.filter((l) => l.msg === 'upstream failed; serving a stale record')).toHaveLength(1)
    now += 1000 // a second on: said again
    expect((await app.inject({ url: '/10.5555/plain' })).headers['x-cache']).toBe('STALE')
    expect(lines.filter((l) => l.msg === 'upstream failed; serving a stale record')).toHaveLength(2)
  })

  it('a record older than the staleness limit is not served', async () => {
    let now = Date.parse('2026-11-22T12:00:00Z')
    const { app, upstream } = await setup({ deps: { now: () => now }, overrides: { maxStaleSeconds: 3600 } })
    await app.inject({ url: '/10.5555/plain' })
    now += 86_400_000 + 3_600_000 + 1000
    upstream.mode = { kind: 'status', status: 500 }
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(502)
  })

  it('the API also answers from a stale record', async () => {
    let now = Date.parse('2026-11-22T12:00:00Z')
    const { app, upstream } = await setup({ deps: { now: () => now } })
    await app.inject({ url: '/api/handles/10.5555/plain' })
    now += EXPIRED
    upstream.mode = { kind: 'status', status: 502 }
    const res = await app.inject({ url: '/api/handles/10.5555/plain' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-cache']).toBe('STALE')
  })
})

describe('uncached DOIs fail quickly and clearly', () => {
  it.each<[string, UpstreamMode | 'down', number]>([
    ['down', 'down', 502],
    ['hanging', { kind: 'hang' }, 504],
    ['answering 500', { kind: 'status', status: 500 }, 502]
  ])('while the upstream is %s an uncached DOI gets an HTML error page that says so', async (_name, mode, status) => {
    const { app, upstream } = await setup({ overrides: { upstreamTimeoutMs: 300, upstreamRetryBaseMs: 10 } })
    if (mode === 'down') await upstream.close()
    else upstream.mode = mode
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(status)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(res.body).toContain('DOI registry')
  })
})

describe('politeness to the upstream', () => {
  it('a 503 is retried with backoff and then succeeds', async () => {
    const { app, upstream } = await setup({ overrides: { upstreamRetryBaseMs: 10 } })
    upstream.script = [{ kind: 'status', status: 503 }]
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(302)
    expect(upstream.count('10.5555/plain')).toBe(2)
  })

  // One rule (docs/operations.md "Retries"): a 500 used to be asked once, a 502, 503 or 504 three times.
  it.each([500, 502, 503, 504])('an upstream %i is asked 1 + UPSTREAM_RETRIES times, as every 5xx is', async (status) => {
    const { app, upstream } = await setup({ overrides: { upstreamRetries: 2, upstreamRetryBaseMs: 10 } })
    upstream.mode = { kind: 'status', status }
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(502)
    expect(upstream.count('10.5555/plain')).toBe(3)
  })

  it('a 429 whose Retry-After fits in the time budget is retried and the DOI resolves', async () => {
    const { app, upstream } = await setup({ overrides: { upstreamTimeoutMs: 3000, upstreamRetryBaseMs: 1 } })
    upstream.script = [{ kind: 'status', status: 429, headers: { 'retry-after': '1' } }]
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/plain')
    expect(upstream.count('10.5555/plain')).toBe(2)
  })

  // The backoff alone (1 ms) would retry at once and succeed: only honouring Retry-After gives up here.
  it('a 429 whose Retry-After outlasts the time budget is not retried: 503 with its Retry-After passed on (issue 25)', async () => {
    const { app, upstream } = await setup({ overrides: { upstreamTimeoutMs: 3000, upstreamRetryBaseMs: 1 } })
    upstream.script = [{ kind: 'status', status: 429, headers: { 'retry-after': '30' } }]
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(503)
    expect(res.headers['retry-after']).toBe('30')
    expect(res.body).toContain('try again in 30 s')
    expect(upstream.count('10.5555/plain')).toBe(1)
  })

  it('the API answers a rate-limited lookup with 503 and Retry-After too', async () => {
    const { app, upstream } = await setup({ overrides: { upstreamRetries: 0 } })
    upstream.mode = { kind: 'status', status: 429, headers: { 'retry-after': '7' } }
    const res = await app.inject({ url: '/api/handles/10.5555/plain' })
    expect(res.statusCode).toBe(503)
    expect(res.headers['retry-after']).toBe('7')
    expect(JSON.parse(res.body)).toMatchObject({ responseCode: 2 })
  })

  it.each<[string, () => Record<string, string>, string]>([
    ['a Retry-After of a day is passed on as 60 s', () => ({ 'retry-after': '86400' }), '60'],
    ['a Retry-After as an HTTP date is passed on in seconds', () => ({ 'retry-after': new Date(Date.now() + 20_000).toUTCString() }), '20'],
    ['a 429 without Retry-After is passed on as 5 s', () => ({}), '5'],
    ['an unreadable Retry-After is passed on as 5 s', () => ({ 'retry-after': 'soon' }), '5']
  ])('%s', async (_name, headersNow, expected) => {
    const { app, upstream } = await setup({ overrides: { upstreamRetries: 0 } })
    const headers = headersNow()
    upstream.mode = { kind: 'status', status: 429, headers }
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(503)
    // An HTTP date has whole seconds: it may read one second less by the time it arrives.
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(
      Number(expected) - (headers['retry-after']?.includes('GMT') === true ? 1 : 0)
    )
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(Number(expected))
  })

  it("while the registry's Retry-After runs, no request is sent: other uncached DOIs get 503 with the time left", async () => {
    const { app, upstream } = await setup({ overrides: { upstreamRetries: 0 } })
    upstream.script = [{ kind: 'status', status: 429, headers: { 'retry-after': '2' } }]
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(503)
    const before = upstream.seen.length
    const other = await app.inject({ url: '/10.5555/other' })
    expect(other.statusCode).toBe(503)
    expect(other.headers['retry-after']).toBe('2')
    expect(upstream.seen.length).toBe(before)
    await new Promise((resolve) => setTimeout(resolve, 2100))
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(302)
  })

  it('a 404 is an answer, not retried', async () => {
    const { app, upstream } = await setup()
    await app.inject({ url: '/10.5555/nope' })
    expect(upstream.count('10.5555/nope')).toBe(1)
  })

  it('no more requests than the concurrency cap are in flight at the upstream', async () => {
    const { app, upstream } = await setup({ overrides: { upstreamMaxConcurrent: 2, negativeTtlSeconds: 0 } })
    upstream.mode = { kind: 'slow', delayMs: 50 }
    let peak = 0
    const timer = setInterval(() => {
      peak = Math.max(peak, upstream.inFlight)
    }, 2)
    await Promise.all(Array.from({ length: 12 }, (_, i) => app.inject({ url: `/10.5555/n${i}?noredirect` })))
    clearInterval(timer)
    expect(peak).toBeGreaterThan(0)
    expect(peak).toBeLessThanOrEqual(2)
  })

  it('a full queue answers 503 with Retry-After at once', async () => {
    const { app, upstream } = await setup({ overrides: { upstreamMaxConcurrent: 1, upstreamQueueSize: 1, upstreamTimeoutMs: 2000 } })
    upstream.mode = { kind: 'slow', delayMs: 300 }
    const answers = await Promise.all(['a', 'b', 'c', 'd'].map((s) => app.inject({ url: `/10.5555/${s}` })))
    const refused = answers.filter((r) => r.statusCode === 503)
    expect(refused.length).toBe(2)
    expect(refused[0]?.headers['retry-after']).toBe('5')
    expect(answers.filter((r) => r.statusCode === 404)).toHaveLength(2)
  })

  it('a lookup waiting too long in the queue answers 503', async () => {
    const { app, upstream } = await setup({ overrides: { upstreamMaxConcurrent: 1, upstreamQueueTimeoutMs: 50 } })
    upstream.mode = { kind: 'slow', delayMs: 400 }
    const [first, second] = await Promise.all([app.inject({ url: '/10.5555/a' }), app.inject({ url: '/10.5555/b' })])
    expect(first.statusCode).toBe(404)
    expect(second.statusCode).toBe(503)
  })
})

describe('the circuit breaker', () => {
  it('opens after repeated failures, fails fast while open, and closes after a good probe', async () => {
    const { app, upstream } = await setup({
      overrides: { upstreamRetries: 0, breakerVolumeThreshold: 3, breakerErrorThresholdPercent: 50, breakerResetMs: 300 }
    })
    // The CDN in front of the registry failing: an HTML 502, a fault of the whole upstream.
    upstream.mode = { kind: 'html', status: 502 }
    for (let i = 0; i < 4; i++) await app.inject({ url: `/10.5555/f${i}` })
    const before = upstream.seen.length
    const fast = await app.inject({ url: '/10.5555/plain' })
    expect(fast.statusCode).toBe(503)
    expect(fast.body).toContain('paused')
    expect(upstream.seen.length).toBe(before) // not even asked
    expect((await app.inject({ url: '/metrics' })).body).toMatch(/doi_proxy_upstream_circuit_state 2/)
    upstream.mode = { kind: 'ok' }
    await new Promise((resolve) => setTimeout(resolve, 350))
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(302)
    expect((await app.inject({ url: '/metrics' })).body).toMatch(/doi_proxy_upstream_circuit_state 0/)
  })

  it('not-found answers do not open the breaker', async () => {
    const { app, upstream } = await setup({ overrides: { breakerVolumeThreshold: 3, negativeTtlSeconds: 0 } })
    for (let i = 0; i < 10; i++) await app.inject({ url: `/10.5555/missing-${i}` })
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(302)
    expect(upstream.count('10.5555/plain')).toBe(1)
  })

  it('while open, a cached DOI is served stale', async () => {
    let now = Date.parse('2026-11-22T12:00:00Z')
    const { app, upstream } = await setup({ deps: { now: () => now }, overrides: { upstreamRetries: 0, breakerVolumeThreshold: 2 } })
    await app.inject({ url: '/10.5555/plain' })
    now += EXPIRED
    upstream.mode = { kind: 'status', status: 500 }
    for (let i = 0; i < 3; i++) await app.inject({ url: `/10.5555/f${i}` })
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(302)
    expect(res.headers['x-cache']).toBe('STALE')
  })
})
