import { describe, expect, it, vi } from 'vitest'
import { setup } from '../support/app.js'
import { str } from '../support/records.js'

describe('the upstream request', () => {
  it('asks the upstream for the whole record, path-encoded, with our User-Agent and contact', async () => {
    const { app, upstream } = await setup({ overrides: { userAgent: 'doi-proxy-test/1', contactEmail: 'ops@library.example' } })
    await app.inject({ url: '/10.5555/with%20space?type=URL&index=1', headers: { cookie: 'session=secret', authorization: 'Bearer x' } })
    const seen = upstream.requestsFor('10.5555/with space').at(-1)
    expect(seen?.path).toBe('/api/handles/10.5555/with%20space')
    expect(seen?.headers['user-agent']).toBe('doi-proxy-test/1 (mailto:ops@library.example)')
    expect(seen?.headers.cookie).toBeUndefined()
    expect(seen?.headers.authorization).toBeUndefined()
  })

  it('asks for the content codings it reads (no Accept-Encoding would accept any, RFC 9110 §12.5.3)', async () => {
    const { app, upstream } = await setup()
    await app.inject({ url: '/10.5555/plain' })
    expect(upstream.requestsFor('10.5555/plain').at(-1)?.headers['accept-encoding']).toBe('gzip, deflate, br')
  })

  it('sends the handle in the case the user gave', async () => {
    const { app, upstream } = await setup()
    await app.inject({ url: '/10.5555/Plain' })
    expect(upstream.requestsFor('10.5555/plain').map((r) => r.handle)).toEqual(['10.5555/Plain'])
  })
})

describe('the cache (behaviour.md §3)', () => {
  it('a second request is answered from the cache: X-Cache MISS then HIT, one upstream request', async () => {
    const { app, upstream } = await setup()
    expect((await app.inject({ url: '/10.5555/plain' })).headers['x-cache']).toBe('MISS')
    expect((await app.inject({ url: '/10.5555/plain?noredirect' })).headers['x-cache']).toBe('HIT')
    expect(upstream.count('10.5555/plain')).toBe(1)
  })

  it('ASCII case variants share one cache entry, other letters do not', async () => {
    const { app, upstream } = await setup()
    await app.inject({ url: '/10.5555/plain' })
    expect((await app.inject({ url: '/10.5555/PLAIN' })).headers['x-cache']).toBe('HIT')
    await app.inject({ url: '/10.5555/caf%C3%A9' })
    expect((await app.inject({ url: '/10.5555/CAF%C3%89' })).headers['x-cache']).toBe('MISS')
    expect(upstream.count('10.5555/plain')).toBe(1)
  })

  it('concurrent requests for one uncached DOI make one upstream request', async () => {
    const { app, upstream } = await setup()
    upstream.mode = { kind: 'slow', delayMs: 100 }
    const answers = await Promise.all(Array.from({ length: 50 }, () => app.inject({ url: '/10.5555/plain' })))
    expect(answers.every((r) => r.statusCode === 302)).toBe(true)
    expect(upstream.count('10.5555/plain')).toBe(1)
  })

  it('a not-found answer is cached for the negative TTL', async () => {
    let now = Date.parse('2026-11-22T12:00:00Z')
    const { app, upstream } = await setup({ deps: { now: () => now }, overrides: { negativeTtlSeconds: 60 } })
    expect((await app.inject({ url: '/10.5555/missing' })).statusCode).toBe(404)
    expect((await app.inject({ url: '/10.5555/missing' })).headers['x-cache']).toBe('HIT')
    expect(upstream.count('10.5555/missing')).toBe(1)
    now += 61_000
    upstream.set('10.5555/missing', [str(1, 'URL', 'http://example.org/now-here')])
    const later = await app.inject({ url: '/10.5555/missing' })
    expect(later.statusCode).toBe(302)
    expect(upstream.count('10.5555/missing')).toBe(2)
  })

  it('negative caching can be turned off', async () => {
    const { app, upstream } = await setup({ overrides: { negativeTtlSeconds: 0 } })
    await app.inject({ url: '/10.5555/missing' })
    await app.inject({ url: '/10.5555/missing' })
    expect(upstream.count('10.5555/missing')).toBe(2)
  })

  it('a record expires after the smallest ttl of its values', async () => {
    let now = Date.parse('2026-11-22T12:00:00Z')
    const { app, upstream } = await setup({
      deps: { now: () => now },
      overrides: { refreshAhead: false },
      records: { '10.1/short': [str(1, 'URL', 'http://example.org/a', 300), str(2, 'DESC', 'x', 86400)] }
    })
    await app.inject({ url: '/10.1/short' })
    now += 299_000
    expect((await app.inject({ url: '/10.1/short' })).headers['x-cache']).toBe('HIT')
    now += 2_000
    expect((await app.inject({ url: '/10.1/short' })).headers['x-cache']).toBe('MISS')
    expect(upstream.count('10.1/short')).toBe(2)
  })

  it('a record asked for in the last tenth of its lifetime is refreshed in the background', async () => {
    let now = Date.parse('2026-11-22T12:00:00Z')
    const { app, upstream } = await setup({
      deps: { now: () => now },
      records: { '10.1/hot': [str(1, 'URL', 'http://example.org/old', 1000)] }
    })
    await app.inject({ url: '/10.1/hot' })
    upstream.set('10.1/hot', [str(1, 'URL', 'http://example.org/new', 1000)])
    now += 500_000
    expect((await app.inject({ url: '/10.1/hot' })).headers.location).toBe('http://example.org/old')
    expect(upstream.count('10.1/hot')).toBe(1)
    now += 450_000
    const hit = await app.inject({ url: '/10.1/hot' })
    expect(hit.headers['x-cache']).toBe('HIT')
    expect(hit.headers.location).toBe('http://example.org/old')
    await vi.waitFor(() => expect(upstream.count('10.1/hot')).toBe(2), { timeout: 5000 })
    // Stored once its answer is read, a moment after the upstream saw it: until then the old record answers.
    await vi.waitFor(async () => expect((await app.inject({ url: '/10.1/hot' })).headers.location).toBe('http://example.org/new'), {
      timeout: 5000
    })
    now += 100_000 // past the first lifetime: the refreshed record answers
    const after = await app.inject({ url: '/10.1/hot' })
    expect(after.headers['x-cache']).toBe('HIT')
    expect(after.headers.location).toBe('http://example.org/new')
    expect(upstream.count('10.1/hot')).toBe(2) // refreshed once
  })

  it('a value with ttl 0 is not cached', async () => {
    const { app, upstream } = await setup({ records: { '10.1/zero': [str(1, 'URL', 'http://example.org/a', 0)] } })
    await app.inject({ url: '/10.1/zero' })
    expect((await app.inject({ url: '/10.1/zero' })).headers['x-cache']).toBe('MISS')
    expect(upstream.count('10.1/zero')).toBe(2)
  })

  it('auth bypasses the cache, asks the upstream with auth=true, and refreshes the cache', async () => {
    const { app, upstream } = await setup()
    await app.inject({ url: '/10.5555/plain' })
    upstream.set('10.5555/plain', [str(1, 'URL', 'http://example.org/changed')])
    const auth = await app.inject({ url: '/10.5555/plain?auth' })
    expect(auth.headers['x-cache']).toBe('BYPASS')
    expect(auth.headers.location).toBe('http://example.org/changed')
    expect(upstream.requestsFor('10.5555/plain').at(-1)?.path).toBe('/api/handles/10.5555/plain?auth=true')
    const after = await app.inject({ url: '/10.5555/plain' })
    expect(after.headers['x-cache']).toBe('HIT')
    expect(after.headers.location).toBe('http://example.org/changed')
  })

  it('cert bypasses the cache too: a cached record is asked of the upstream again', async () => {
    const { app, upstream } = await setup()
    await app.inject({ url: '/10.5555/plain' })
    const res = await app.inject({ url: '/10.5555/plain?cert' })
    expect(res.headers['x-cache']).toBe('BYPASS')
    expect(upstream.count('10.5555/plain')).toBe(2)
  })

  it('cert is passed through upstream', async () => {
    const { app, upstream } = await setup()
    await app.inject({ url: '/10.5555/plain?cert' })
    expect(upstream.requestsFor('10.5555/plain').at(-1)?.path).toBe('/api/handles/10.5555/plain?cert=true')
  })

  it('the cache holds no more than its entry bound', async () => {
    const records = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`10.1/n${i}`, [str(1, 'URL', `http://example.org/${i}`)]]))
    const { app, upstream } = await setup({ records, overrides: { cacheMaxEntries: 3 } })
    for (let i = 0; i < 10; i++) await app.inject({ url: `/10.1/n${i}` })
    expect((await app.inject({ url: '/10.1/n9' })).headers['x-cache']).toBe('HIT')
    expect((await app.inject({ url: '/10.1/n0' })).headers['x-cache']).toBe('MISS')
    expect(upstream.count('10.1/n0')).toBe(2)
  })
})

describe('a compressing upstream (issue 25)', () => {
  it.each(['gzip', 'deflate', 'br'] as const)('an upstream answering with Content-Encoding %s resolves', async (encoding) => {
    const { app, upstream } = await setup()
    upstream.mode = { kind: 'encoded', encoding }
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/plain')
    expect((await app.inject({ url: '/10.5555/nope' })).statusCode).toBe(404)
  })

  // The bomb is valid JSON once decoded (a record with no values): only the bound on decoded bytes refuses it.
  it('a decompression bomb (50 MB of JSON in a few hundred KB of gzip) is cut at the body bound: 502, the same as a 50 MB body', async () => {
    // The fake compresses 50 MB when asked: time enough for that on a busy machine.
    const { app, upstream } = await setup({ overrides: { upstreamTimeoutMs: 10_000 } })
    upstream.mode = { kind: 'huge', bytes: 50_000_000, encoding: 'gzip' }
    const res = await app.inject({ url: '/10.5555/plain?noredirect' })
    expect(res.statusCode).toBe(502)
    expect(res.body).toContain('could not read')
  })

  it('a gzip answer within the bound once decoded is read', async () => {
    const { app, upstream } = await setup()
    upstream.mode = { kind: 'huge', bytes: 500_000, encoding: 'gzip' }
    expect((await app.inject({ url: '/10.5555/plain?noredirect' })).statusCode).toBe(200)
  })

  it('a Content-Encoding we did not ask for is an answer we cannot read (502), not an unreachable registry', async () => {
    const { app, upstream } = await setup()
    upstream.mode = { kind: 'status', status: 200, body: '{"responseCode":1}', headers: { 'content-encoding': 'zstd' } }
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(502)
    expect(res.body).toContain('could not read')
  })

  it('a gzip body that does not decode is an answer we cannot read (502), not an unreachable registry', async () => {
    const { app, upstream } = await setup()
    upstream.mode = { kind: 'status', status: 200, body: '{"responseCode":1}', headers: { 'content-encoding': 'gzip' } }
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(502)
    expect(res.body).toContain('could not read')
  })
})

describe('upstream failures (behaviour.md §8)', () => {
  it('a slow upstream within the timeout still resolves', async () => {
    const { app, upstream } = await setup()
    upstream.mode = { kind: 'slow', delayMs: 300 }
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(302)
  })

  it('a hanging upstream gives 504 with a clear page after the timeout', async () => {
    const { app, upstream } = await setup({ overrides: { upstreamTimeoutMs: 300 } })
    upstream.mode = { kind: 'hang' }
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(504)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(res.body).toContain('took too long to answer')
  })

  it('an upstream that drops the connection halfway through its answer gives 502 at once, not a hang', async () => {
    // Quick retries (they are of a dropped connection): the time is then the answer's, not the backoff's.
    const { app, upstream } = await setup({ overrides: { upstreamTimeoutMs: 5_000, upstreamRetryBaseMs: 10 } })
    upstream.mode = { kind: 'cut-body' }
    const started = performance.now()
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(502)
    expect(performance.now() - started).toBeLessThan(2_000)
    upstream.mode = { kind: 'ok' }
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(302) // nothing of the cut answer was kept
  })

  it('an upstream 500 gives 502', async () => {
    const { app, upstream } = await setup()
    upstream.mode = { kind: 'status', status: 500 }
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(502)
    expect(res.body).toContain('is having trouble right now')
  })

  it('broken JSON from the upstream gives 502', async () => {
    const { app, upstream } = await setup()
    upstream.mode = { kind: 'broken-json' }
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(502)
    expect(res.body).toContain('could not read')
  })

  it('an unknown responseCode gives 502', async () => {
    const { app, upstream } = await setup()
    upstream.mode = { kind: 'status', status: 200, body: '{"responseCode":42}' }
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(502)
  })

  it('values that are not handle values give 502', async () => {
    const { app, upstream } = await setup()
    upstream.mode = { kind: 'status', status: 200, body: '{"responseCode":1,"values":[{"index":"x"}]}' }
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(502)
  })

  it('an upstream answer over the size bound gives 502', async () => {
    const { app, upstream } = await setup({ overrides: { upstreamMaxBodyBytes: 1024 } })
    upstream.set('10.1/big', [str(1, 'DESC', 'x'.repeat(5000))])
    expect((await app.inject({ url: '/10.1/big' })).statusCode).toBe(502)
  })

  it('an unreachable upstream gives 502 quickly', async () => {
    const { app, upstream } = await setup()
    await upstream.close()
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(502)
    expect(res.body).toContain('could not reach the DOI registry')
  })

  it('a prefix the upstream does not hold (responseCode 301) is a 404', async () => {
    const { app, upstream } = await setup()
    upstream.mode = {
      kind: 'status',
      status: 400,
      body: '{"responseCode":301,"message":"That prefix doesn\'t live here","handle":"10.9999/x"}'
    }
    expect((await app.inject({ url: '/10.9999/x' })).statusCode).toBe(404)
  })

  it('an expired record is served stale when the upstream fails', async () => {
    let now = Date.parse('2026-11-22T12:00:00Z')
    const { app, upstream } = await setup({ deps: { now: () => now } })
    await app.inject({ url: '/10.5555/plain' })
    now += 2 * 86_400_000
    upstream.mode = { kind: 'status', status: 503 }
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(302)
    expect(res.headers['x-cache']).toBe('STALE')
  })

  it('a failing upstream is not cached: the next request asks again', async () => {
    const { app, upstream } = await setup()
    upstream.mode = { kind: 'status', status: 500 }
    await app.inject({ url: '/10.5555/plain' })
    upstream.mode = { kind: 'ok' }
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(302)
  })
})
