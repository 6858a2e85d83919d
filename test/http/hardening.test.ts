import { describe, expect, it } from 'vitest'
import { setup } from '../support/app.js'
import { admin, str } from '../support/records.js'
import { rawRequest } from '../support/raw-http.js'

// behaviour.md §9: no reader can deny another, no record can speak for us. Every test talks to the
// real fake upstream, which answers junk as the CDN in front of doi.org does (HTML 400/414).

const RECORDS = {
  10.5555: [admin()],
  '10.5555/plain': [admin(), str(1, 'URL', 'http://example.org/plain')],
  '10.5555/other': [admin(), str(1, 'URL', 'http://example.org/other')]
}
const BREAKER = { breakerVolumeThreshold: 5, breakerErrorThresholdPercent: 50, breakerResetMs: 15_000 }

describe('the circuit breaker counts upstream faults only', () => {
  it("eighty junk DOIs the CDN refuses as too long never stop other readers' DOIs", async () => {
    const { app } = await setup({ records: RECORDS, overrides: BREAKER })
    const junk = `/10.5555/${'%C3%A9'.repeat(3900)}`
    for (let i = 0; i < 80; i++) {
      const res = await app.inject({ url: `${junk}${i}` })
      expect(res.statusCode).toBe(414)
    }
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(302)
  })

  it('a DOI the CDN refuses as malformed answers 400 with a page that says so, and opens nothing', async () => {
    const { app, upstream } = await setup({ records: RECORDS, overrides: BREAKER })
    upstream.mode = { kind: 'html', status: 400 }
    for (let i = 0; i < 20; i++) {
      const res = await app.inject({ url: `/10.5555/junk-${i}` })
      expect(res.statusCode).toBe(400)
      expect(res.body).toContain('refused this DOI name as malformed')
    }
    upstream.mode = { kind: 'ok' }
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(302)
  })

  it('dot segments go upstream encoded, so no CDN normalises them into another handle', async () => {
    const { app, upstream } = await setup({ records: { ...RECORDS, '10.5555/../x': [str(1, 'URL', 'http://example.org/dots')] } })
    // A raw request: an HTTP library would resolve the dots before sending.
    const res = await rawRequest(app, '/10.5555/../x')
    expect(res.headers.location).toEqual(['http://example.org/dots'])
    expect(upstream.seen.map((r) => r.path)).toContain('/api/handles/10.5555/%2E%2E/x')
  })

  it("a broken handle server (JSON 500s for its prefix) pauses only that prefix, not other readers' DOIs", async () => {
    const { app, upstream } = await setup({ records: RECORDS, overrides: { ...BREAKER, upstreamRetries: 0 } })
    upstream.mode = {
      kind: 'status',
      status: 500,
      body: JSON.stringify({ responseCode: 2, message: 'Error resolving handle: server not reachable' })
    }
    for (let i = 0; i < 12; i++) await app.inject({ url: `/10.9999/broken-${i}`, remoteAddress: '192.0.2.66' })
    const paused = await app.inject({ url: '/10.9999/broken-99', remoteAddress: '192.0.2.66' })
    expect(paused.statusCode).toBe(503)
    expect(paused.body).toContain('DOIs with this prefix')
    upstream.mode = { kind: 'ok' }
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: '198.51.100.7' })).statusCode).toBe(302)
  })

  it('real upstream faults still open the breaker: uncached DOIs of any prefix then fail fast with 503', async () => {
    const { app, upstream } = await setup({ records: RECORDS, overrides: { ...BREAKER, upstreamRetries: 0 } })
    upstream.mode = { kind: 'html', status: 502 }
    for (let i = 0; i < 10; i++) await app.inject({ url: `/10.9999/fault-${i}` })
    const before = upstream.seen.length
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(503)
    expect(res.headers['retry-after']).toBeDefined()
    expect(upstream.seen.length).toBe(before)
  })
})

describe('upstream-bound work is shared fairly between clients', () => {
  /**
   * A flooding client queues ten misses (the last one `lastFlood`), then a reader asks for `readerUrl`.
   * Returns the reader's status and its place among the answers, in the order they finished.
   */
  async function readerAfterFlood(lastFlood: string, readerUrl: string): Promise<{ status: number; place: number }> {
    const { app, upstream } = await setup({ records: RECORDS, overrides: { upstreamMaxConcurrent: 2, upstreamPerClient: 1 } })
    // Long enough that a busy machine's delays stay well inside one lookup: the reader's two round trips
    // must end before the flood's third lookup does.
    upstream.mode = { kind: 'slow', delayMs: 200 }
    const finished: string[] = []
    const ask = async (who: string, url: string, remoteAddress: string): Promise<number> => {
      const res = await app.inject({ url, remoteAddress })
      finished.push(who)
      return res.statusCode
    }
    const flood = Array.from({ length: 10 }, (_, i) => ask(`flood-${i}`, i === 9 ? lastFlood : `/10.5555/flood-${i}`, '192.0.2.66'))
    await new Promise((resolve) => setTimeout(resolve, 5))
    const status = await ask('reader', readerUrl, '198.51.100.7')
    await Promise.all(flood)
    return { status, place: finished.indexOf('reader') }
  }

  it("a reader's uncached DOI is answered before a flooding client's queue drains", async () => {
    const { status, place } = await readerAfterFlood('/10.5555/flood-9', '/10.5555/plain')
    expect(status).toBe(302)
    expect(place).toBeLessThan(3)
  })

  it("a reader asking for a DOI that a flooding client has queued does not wait in that client's queue", async () => {
    const { status, place } = await readerAfterFlood('/10.5555/plain', '/10.5555/plain')
    expect(status).toBe(302)
    expect(place).toBeLessThan(3)
  })

  it('a client with more lookups waiting than its share gets 429 with Retry-After', async () => {
    const { app, upstream } = await setup({ records: RECORDS, overrides: { upstreamPerClient: 1, upstreamClientQueue: 2 } })
    upstream.mode = { kind: 'slow', delayMs: 50 }
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) => app.inject({ url: `/10.5555/many-${i}`, remoteAddress: '192.0.2.66' }))
    )
    const refused = answers.filter((r) => r.statusCode === 429)
    expect(refused).toHaveLength(2)
    expect(refused[0]?.headers['retry-after']).toBe('5')
    expect(refused[0]?.body).toContain('too many DOI lookups in progress')
  })

  it('a trusted network (a campus link resolver) is not bounded per client', async () => {
    const { app, upstream } = await setup({
      records: RECORDS,
      overrides: { upstreamPerClient: 1, upstreamClientQueue: 2, trustedNetworks: ['192.0.2.0/24'] }
    })
    upstream.mode = { kind: 'slow', delayMs: 20 }
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) => app.inject({ url: `/10.5555/many-${i}`, remoteAddress: '192.0.2.66' }))
    )
    expect(answers.map((r) => r.statusCode)).toEqual([404, 404, 404, 404, 404])
  })

  it("the addresses of one IPv6 /64 share one client's share", async () => {
    const { app, upstream } = await setup({ records: RECORDS, overrides: { upstreamPerClient: 1, upstreamClientQueue: 0 } })
    upstream.mode = { kind: 'slow', delayMs: 50 }
    const [first, second] = await Promise.all([
      app.inject({ url: '/10.5555/v6-a', remoteAddress: '2001:db8:1:2::a' }),
      app.inject({ url: '/10.5555/v6-b', remoteAddress: '2001:db8:1:2:ffff::b' })
    ])
    expect([first?.statusCode, second?.statusCode].sort()).toEqual([404, 429])
  })

  it("a cached DOI is answered while the client's share is exhausted", async () => {
    const { app, upstream } = await setup({ records: RECORDS, overrides: { upstreamPerClient: 1, upstreamClientQueue: 0 } })
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: '192.0.2.66' })).statusCode).toBe(302)
    upstream.mode = { kind: 'hang' }
    const pending = app.inject({ url: '/10.5555/slow', remoteAddress: '192.0.2.66' })
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: '192.0.2.66' })).statusCode).toBe(302)
    expect((await app.inject({ url: '/10.5555/another', remoteAddress: '192.0.2.66' })).statusCode).toBe(429)
    upstream.mode = { kind: 'ok' }
    await upstream.close()
    await pending
  })
})

describe('one deadline per request', () => {
  it('a hanging upstream answers 504 at the request deadline, not at the upstream timeout', async () => {
    const { app, upstream } = await setup({ records: RECORDS, overrides: { requestDeadlineMs: 200, upstreamTimeoutMs: 60_000 } })
    upstream.mode = { kind: 'hang' }
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(504)
    expect(res.body).toContain('took longer than we allow a request')
    expect(res.headers['x-cache']).toBe('MISS')
  })

  it('alias hops share one deadline: a long slow chain ends in 504', async () => {
    const chain: Record<string, ReturnType<typeof str>[]> = { '10.5555/end': [str(1, 'URL', 'http://example.org/end')] }
    for (let i = 0; i < 10; i++) chain[`10.5555/hop-${i}`] = [str(1, 'HS_ALIAS', i === 9 ? '10.5555/end' : `10.5555/hop-${i + 1}`)]
    const { app, upstream } = await setup({ records: chain, overrides: { requestDeadlineMs: 250 } })
    upstream.mode = { kind: 'slow', delayMs: 60 }
    const res = await app.inject({ url: '/10.5555/hop-0?noredirect' })
    expect(res.statusCode).toBe(504)
    expect(upstream.seen.length).toBeLessThan(11)
  })

  it('a Retry-After beyond the deadline is not waited for: the answer is 502 after one request', async () => {
    const { app, upstream } = await setup({ records: RECORDS, overrides: { requestDeadlineMs: 2000 } })
    upstream.mode = { kind: 'status', status: 503, headers: { 'retry-after': '30' } }
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(502)
    expect(upstream.count('10.5555/plain')).toBe(1)
  })

  it("a 503 followed by an answer is retried through undici's retry interceptor", async () => {
    const { app, upstream } = await setup({ records: RECORDS, overrides: { upstreamRetryBaseMs: 10 } })
    upstream.script = [{ kind: 'status', status: 503 }]
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(302)
    expect(upstream.count('10.5555/plain')).toBe(2)
  })

  it('a connection reset is retried', async () => {
    const { app, upstream } = await setup({ records: RECORDS, overrides: { upstreamRetryBaseMs: 10 } })
    upstream.script = [{ kind: 'reset' }]
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(302)
    expect(upstream.count('10.5555/plain')).toBe(2)
  })
})

describe('every limit sees the decoded request', () => {
  it('?%61uth is auth: it bypasses the cache and counts against the auth limit', async () => {
    const { app, upstream } = await setup({ records: RECORDS, overrides: { authRateLimitMax: 1, rateLimitAllowList: [] } })
    expect((await app.inject({ url: '/10.5555/plain?%61uth', remoteAddress: '192.0.2.10' })).headers['x-cache']).toBe('BYPASS')
    expect(upstream.requestsFor('10.5555/plain')[0]?.path).toBe('/api/handles/10.5555/plain?auth=true')
    expect((await app.inject({ url: '/10.5555/plain?%61uth', remoteAddress: '192.0.2.10' })).statusCode).toBe(429)
  })

  it('requests the router refuses to decode still count against the rate limit', async () => {
    const { app } = await setup({ records: RECORDS, overrides: { rateLimitMax: 1, rateLimitAllowList: [] } })
    expect((await app.inject({ url: '/10.5555/a%', remoteAddress: '192.0.2.10' })).statusCode).toBe(404)
    expect((await app.inject({ url: '/10.5555/b%', remoteAddress: '192.0.2.10' })).statusCode).toBe(429)
  })

  it('an absolute-form request target is resolved and limited like its path', async () => {
    const { app } = await setup({ records: RECORDS, overrides: { rateLimitMax: 1, rateLimitAllowList: [] } })
    const first = await rawRequest(app, 'http://resolver.example/10.5555/plain')
    expect(first.status).toBe(302)
    expect(first.headers.location).toEqual(['http://example.org/plain'])
    expect((await rawRequest(app, 'http://resolver.example/10.5555/uncached')).status).toBe(429)
  })
})

describe('records cannot speak for us', () => {
  const HEADERS = [
    'Access-Control-Allow-Origin: https://evil.example',
    'Strict-Transport-Security: max-age=1',
    'Cache-Control: public, max-age=999999',
    'Refresh: 0; url=https://evil.example/',
    'Set-Cookie: session=evil',
    'Content-Security-Policy: default-src *',
    'X-Frame-Options: ALLOWALL',
    'X-Cache: HIT-BY-RECORD',
    'X-Forwarded-Host: evil.example',
    'X-Record-Note: kept',
    'Link: <https://example.org/meta.json>; rel="describedby"',
    '<script>alert(1)</script>',
    '<meta http-equiv="refresh" content="0; url=https://evil.example/">',
    '<meta http-equiv="refresh" content="0; url=http://example.org/plain">',
    '<link rel="stylesheet" href="https://evil.example/x.css">',
    '<meta name="citation_doi" content="10.5555/h" onload="alert(1)">',
    '<link rel="alternate" type="application/json" href="https://example.org/a?b=1&amp;c=&quot;2&quot;">',
    '<link rel="cite-as" href="javascript:alert(1)">',
    '<meta name="citation_title" content="A &lt;b&gt; title">'
  ].join('\n')
  const HOSTILE = {
    ...RECORDS,
    '10.5555/h': [
      str(1, 'URL', 'http://example.org/plain'),
      str(2, '10320/loc', '<locations><location href="http://example.org/plain"/></locations>'),
      str(3, '10320/headers', HEADERS)
    ]
  }

  it('only Link and unreserved X- headers from a record reach the client', async () => {
    const { app } = await setup({ records: HOSTILE })
    const res = await app.inject({ url: '/10.5555/h' })
    expect(res.statusCode).toBe(302)
    expect(res.headers['access-control-allow-origin']).toBe('*')
    expect(res.headers['strict-transport-security']).toBeUndefined()
    expect(res.headers['cache-control']).toBeUndefined()
    expect(res.headers.refresh).toBeUndefined()
    expect(res.headers['set-cookie']).toBeUndefined()
    expect(res.headers['content-security-policy']).toBeUndefined()
    expect(res.headers['x-frame-options']).toBeUndefined()
    expect(res.headers['x-cache']).toBe('MISS')
    expect(res.headers['x-forwarded-host']).toBeUndefined()
    expect(res.headers['x-record-note']).toBe('kept')
    expect(res.headers.link).toEqual(['<https://example.org/meta.json>; rel="describedby"'])
  })

  it('the redirect page keeps only rebuilt, escaped <link> and <meta> elements from a record', async () => {
    const { app } = await setup({ records: HOSTILE })
    const { body } = await app.inject({ url: '/10.5555/h' })
    const head = body.slice(body.indexOf('<head>'), body.indexOf('</head>'))
    expect(head).toBe(
      '<head><title>Handle Redirect</title>\n' +
        '<meta http-equiv="refresh" content="0; url=http://example.org/plain">\n' +
        '<link rel="alternate" type="application/json" href="https://example.org/a?b=1&amp;c=&quot;2&quot;">\n' +
        '<meta name="citation_title" content="A &lt;b&gt; title">\n'
    )
  })
})

describe('urlappend never moves a redirect to another site', () => {
  it.each([
    ['@evil.example', 'user info that turns the host into evil.example'],
    ['.evil.example', 'a longer host name'],
    [':8443', 'another port'],
    ['%40evil.example', 'an encoded @'],
    ['%5C%40evil.example', 'a backslash, which is a slash before encoding and user info after (found by bench/fuzz.ts)'],
    ['%5C%5Cevil.example', 'two backslashes']
  ])('?urlappend=%s is a 400 (%s)', async (append) => {
    const { app } = await setup({ records: { ...RECORDS, '10.5555/bare': [str(1, 'URL', 'https://example.org')] } })
    const res = await app.inject({ url: `/10.5555/bare?urlappend=${append}` })
    expect(res.statusCode).toBe(400)
    expect(res.headers.location).toBeUndefined()
    expect(res.body).toContain('another site')
  })

  it.each([
    ['/sub/page', 'https://example.org/sub/page'],
    ['?q=1', 'https://example.org?q=1'],
    ['%23section', 'https://example.org#section']
  ])('?urlappend=%s is appended', async (append, location) => {
    const { app } = await setup({ records: { ...RECORDS, '10.5555/bare': [str(1, 'URL', 'https://example.org')] } })
    const res = await app.inject({ url: `/10.5555/bare?urlappend=${append}` })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe(location)
  })
})

describe('findings of the security review', () => {
  it('behind TRUST_PROXY=1 each reader is the address the proxy saw, and cannot pick another by writing X-Forwarded-For', async () => {
    const { app } = await setup({ records: RECORDS, overrides: { trustProxy: 1, rateLimitMax: 1, rateLimitAllowList: [] } })
    // Every request comes through the one proxy (127.0.0.1), which appends the address it saw.
    const ask = async (forwardedFor: string, i: number): Promise<number> =>
      (await app.inject({ url: `/10.5555/uncached-${i}`, remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': forwardedFor } }))
        .statusCode
    expect(await ask('198.51.100.1, 203.0.113.9', 1)).toBe(404)
    expect(await ask('198.51.100.2, 203.0.113.9', 2)).toBe(429) // the same reader, whatever it wrote first
    expect(await ask('198.51.100.1, 203.0.113.10', 3)).toBe(404) // another reader has its own limit
  })

  it('a forwarded scheme other than http or https never reaches a Location', async () => {
    const { app } = await setup({
      records: { ...RECORDS, '10.5555/alias': [str(1, 'HS_ALIAS', '10.5555/plain')] },
      overrides: { trustProxy: true }
    })
    const res = await app.inject({ url: '/10.5555/alias', headers: { 'x-forwarded-proto': 'javascript', host: 'resolver.example' } })
    expect(res.statusCode).toBe(301)
    expect(res.headers.location).toBe('http://resolver.example/10.5555/plain')
  })

  it('a record cannot steer a reverse proxy with X-Accel-Redirect or X-Sendfile', async () => {
    const headers = 'X-Accel-Redirect: /internal/secret\nX-Accel-Expires: 0\nX-Sendfile: /etc/passwd\nX-Kept: yes'
    const { app } = await setup({
      records: {
        '10.5555/accel': [
          str(1, '10320/loc', '<locations><location href="http://example.org/a"/></locations>'),
          str(2, '10320/headers', headers)
        ]
      }
    })
    const res = await app.inject({ url: '/10.5555/accel' })
    expect(res.statusCode).toBe(302)
    expect(res.headers['x-accel-redirect']).toBeUndefined()
    expect(res.headers['x-accel-expires']).toBeUndefined()
    expect(res.headers['x-sendfile']).toBeUndefined()
    expect(res.headers['x-kept']).toBe('yes')
  })

  it("showurls XML, which repeats a record's attributes, is sandboxed and never sniffed as a page", async () => {
    const xhtml =
      '<locations><location xmlns="http://www.w3.org/1999/xhtml" href="http://example.org/a" onmouseover="alert(1)"/></locations>'
    const { app } = await setup({ records: { '10.5555/xml': [str(1, '10320/loc', xhtml)] } })
    const res = await app.inject({ url: '/10.5555/xml?action=showurls' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-security-policy']).toBe("default-src 'none'; sandbox")
    expect(res.headers['x-content-type-options']).toBe('nosniff')
  })
})
