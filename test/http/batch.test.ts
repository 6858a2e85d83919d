import { request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { setup } from '../support/app.js'
import { admin, str, PROBE_RECORDS } from '../support/records.js'
import type { BatchResult } from '../../src/http/batch.js'
import { OPENAPI_DOCUMENT } from '../../src/http/openapi.js'

const NDJSON = 'application/x-ndjson; charset=utf-8'

/** The DOIs the upstream was asked for (not the prefix records a redirect reads its namespace from). */
function doisAsked(upstream: Awaited<ReturnType<typeof setup>>['upstream']): string[] {
  return upstream.seen.map((r) => r.handle).filter((h) => h.includes('/'))
}

function lines(body: string): BatchResult[] {
  expect(body.endsWith('\n') || body === '').toBe(true)
  return body
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as BatchResult)
}

async function batch(
  app: Awaited<ReturnType<typeof setup>>['app'],
  body: string,
  type = 'text/plain'
): Promise<{ status: number; type: string | undefined; results: BatchResult[]; raw: string }> {
  const res = await app.inject({ method: 'POST', url: '/api/batch', headers: { 'content-type': type }, payload: body })
  if (res.statusCode !== 200 && !/BATCH_MAX|JSON/.test(res.body)) throw new Error(`unexpected ${res.statusCode}: ${res.body}`)
  return {
    status: res.statusCode,
    type: res.headers['content-type'] as string | undefined,
    results: res.statusCode === 200 ? lines(res.body) : [],
    raw: res.body
  }
}

describe('POST /api/batch: one NDJSON line per input line', () => {
  it('answers each DOI with its registration, where GET /{doi} redirects and with which status', async () => {
    const { app } = await setup()
    const { status, type, results } = await batch(app, '10.5555/plain\n10.5555/missing\n')
    expect(status).toBe(200)
    expect(type).toBe(NDJSON)
    expect(results).toEqual([
      { input: '10.5555/plain', doi: '10.5555/plain', registered: true, url: 'http://example.org/plain', source: 'upstream', status: 302 },
      { input: '10.5555/missing', doi: null, registered: false, url: null, source: 'upstream', status: 404 }
    ])
  })

  it('skips blank lines and # comments, and reads CRLF lines', async () => {
    const { app } = await setup()
    const { results } = await batch(app, '# my paper\r\n\r\n   \r\n10.5555/plain\r\n  # indented comment\r\n10.5555/multi\r\n')
    expect(results.map((r) => r.input)).toEqual(['10.5555/plain', '10.5555/multi'])
  })

  it.each([
    ['doi:10.5555/plain', '10.5555/plain'],
    ['urn:doi:10.5555:plain', '10.5555/plain'],
    ['https://doi.org/10.5555/plain', '10.5555/plain'],
    ['http://dx.doi.org/10.5555/plain', '10.5555/plain'],
    ['https://doi.org/10.5555/plain?utm_source=x#top', '10.5555/plain'],
    ['10.5555%2Fplain', '10.5555/plain'],
    ['  10.5555/plain  ', '10.5555/plain'],
    ['10.5555/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-0', '10.5555/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-0'],
    ['10.5555/hash%23frag', '10.5555/hash#frag']
  ])('reads %s as /{doi} does', async (input, doi) => {
    const { app } = await setup()
    const { results } = await batch(app, input)
    expect(results).toEqual([expect.objectContaining({ input, doi, registered: true })])
  })

  it('follows a shortDOI (an HS_ALIAS) to the DOI the registry holds, reporting the 301 GET /{doi} answers', async () => {
    const { app } = await setup({ records: { ...PROBE_RECORDS, '10/abc': [admin(), str(1, 'HS_ALIAS', '10.5555/plain')] } })
    const { results } = await batch(app, '10/abc')
    expect(results).toEqual([
      { input: '10/abc', doi: '10.5555/plain', registered: true, url: 'http://localhost:80/10.5555/plain', source: 'upstream', status: 301 }
    ])
  })

  it('takes a JSON array of strings', async () => {
    const { app } = await setup()
    const { results } = await batch(app, JSON.stringify(['10.5555/plain', 'doi:10.5555/missing']), 'application/json')
    expect(results.map((r) => [r.input, r.registered])).toEqual([
      ['10.5555/plain', true],
      ['doi:10.5555/missing', false]
    ])
  })

  it('refuses a JSON body that is not an array of strings, saying what is wrong', async () => {
    const { app } = await setup()
    const res = await batch(app, '["10.5555/plain", 3]', 'application/json')
    expect(res.status).toBe(400)
    expect(JSON.parse(res.raw)).toEqual({
      message: 'The JSON body must be an array of strings (DOIs) or {"doi", "title", "year", "author"} objects; item 1 is number.'
    })
    expect((await batch(app, '{"dois": []}', 'application/json')).status).toBe(400)
    expect((await batch(app, '[', 'application/json')).status).toBe(400)
  })

  it('answers a line that is not a DOI without a lookup, and goes on', async () => {
    const { app, upstream } = await setup()
    const { results } = await batch(app, 'hello world\n10.5555/plain\n')
    expect(results[0]).toEqual({
      input: 'hello world',
      doi: null,
      registered: false,
      url: null,
      source: null,
      status: null,
      error: expect.stringMatching(/^not a DOI name: /)
    })
    expect(results[1]).toEqual(expect.objectContaining({ registered: true }))
    expect(doisAsked(upstream)).toEqual(['10.5555/plain'])
  })

  it('answers every line that is not a DOI name alike, with status null: an empty string, a malformed name, a non-DOI', async () => {
    const { app, upstream } = await setup()
    const { results } = await batch(app, JSON.stringify(['', '  ', 'doi:', '10.5555/pl\u0000ain', 'not a doi']), 'application/json')
    expect(results).toEqual(
      ['', '  ', 'doi:', '10.5555/pl\u0000ain', 'not a doi'].map((input) => ({
        input,
        doi: null,
        registered: false,
        url: null,
        source: null,
        status: null,
        error: expect.stringMatching(/^not a DOI name: /)
      }))
    )
    expect(results[0]!.error).toBe('not a DOI name: the line is empty')
    expect(upstream.seen).toEqual([])
  })

  it('refuses hostile lines one by one: a 64 KB line, a NUL, a CR in the middle', async () => {
    const { app, upstream } = await setup()
    const long = `10.5555/${'a'.repeat(64 * 1024)}`
    const { status, results } = await batch(app, [long, '10.5555/pl\u0000ain', '10.5555/pl\rain', '10.5555/plain'].join('\n'))
    expect(status).toBe(200)
    expect(results.map((r) => [r.registered, r.status])).toEqual([
      [false, null],
      [false, null],
      [false, null],
      [true, 302]
    ])
    expect(results[0]!.error).toMatch(/^not a DOI name: The DOI name is too long/)
    expect(results[1]!.error).toMatch(/control character \(U\+0000\)/)
    expect(results[2]!.error).toMatch(/control character \(U\+000D\)/)
    expect(doisAsked(upstream)).toEqual(['10.5555/plain'])
  })

  it('looks a DOI up once however often the batch names it', async () => {
    const { app, upstream } = await setup({ overrides: { negativeTtlSeconds: 0 } })
    const { results } = await batch(
      app,
      ['10.5555/missing', 'doi:10.5555/MISSING', '10.5555/plain', 'https://doi.org/10.5555/missing'].join('\n')
    )
    expect(results.map((r) => r.registered)).toEqual([false, false, true, false])
    expect(upstream.count('10.5555/missing')).toBe(1)
  })

  it('looks a DOI up once per batch even when its record has ttl 0, which the cache does not keep', async () => {
    const records = { '10.5555/zero': [admin(), str(1, 'URL', 'http://example.org/zero', 0)], 10.5555: [admin()] }
    const { app, upstream } = await setup({ records })
    const { results } = await batch(app, Array(2000).fill('10.5555/zero').join('\n'))
    expect(results).toHaveLength(2000)
    expect(results.every((r) => r.registered === true && r.url === 'http://example.org/zero')).toBe(true)
    expect(upstream.count('10.5555/zero')).toBe(1)
  })

  it('keeps the input order while lookups run at once and finish in another order', async () => {
    const records: Record<string, ReturnType<typeof admin>[]> = {}
    for (let i = 0; i < 40; i++) records[`10.5555/n${i}`] = [admin(), str(1, 'URL', `http://example.org/${i}`)]
    const { app, upstream } = await setup({ records, overrides: { batchConcurrency: 8 } })
    // The first lines answer last: the order of the answer is the input's, not the upstream's.
    upstream.script = Array.from({ length: 8 }, (_, i) => ({ kind: 'slow' as const, delayMs: 200 - i * 20 }))
    let peak = 0
    const timer = setInterval(() => {
      peak = Math.max(peak, upstream.inFlight)
    }, 2)
    const names = Object.keys(records)
    const { results } = await batch(app, names.join('\n'))
    clearInterval(timer)
    expect(results.map((r) => r.input)).toEqual(names)
    expect(results.map((r) => r.url)).toEqual(names.map((_, i) => `http://example.org/${i}`))
    expect(peak).toBeGreaterThan(1)
    expect(peak).toBeLessThanOrEqual(8)
  })

  it('gives registered: null for the lines the upstream failed, and answers the others', async () => {
    const { app, upstream } = await setup({ overrides: { upstreamRetries: 0, batchConcurrency: 1 } })
    // One lookup at a time: 10.5555/plain, its prefix 10.5555 (its namespace), then 10.5555/multi fails.
    upstream.script = [{ kind: 'ok' }, { kind: 'ok' }, { kind: 'html', status: 503 }]
    const { results } = await batch(app, '10.5555/plain\n10.5555/multi\n10.5555/loc\n')
    expect(upstream.seen.map((r) => r.handle).slice(0, 3)).toEqual(['10.5555/plain', '10.5555', '10.5555/multi'])
    expect(results.map((r) => r.registered)).toEqual([true, null, true])
    expect(results[1]).toEqual({
      input: '10.5555/multi',
      doi: null,
      registered: null,
      url: null,
      source: 'upstream',
      status: expect.any(Number),
      error: expect.any(String)
    })
    expect(results[1]!.status).toBeGreaterThanOrEqual(502)
    expect(results[1]!.error).not.toMatch(/\n/)
  })

  it('answers a second identical batch from the cache, without asking the upstream', async () => {
    const { app, upstream } = await setup()
    const body = '10.5555/plain\n10.5555/missing\n10.5555/alias\n'
    const first = await batch(app, body)
    const asked = upstream.seen.length
    const second = await batch(app, body)
    expect(upstream.seen.length).toBe(asked)
    expect(second.results.map((r) => r.source)).toEqual(['cache', 'cache', 'cache'])
    expect(second.results.map(({ source, ...rest }) => rest)).toEqual(first.results.map(({ source, ...rest }) => rest))
  })

  it('stops the lookups when the reader goes away mid-stream', async () => {
    const records: Record<string, ReturnType<typeof admin>[]> = {}
    for (let i = 0; i < 200; i++) records[`10.5555/n${i}`] = [admin(), str(1, 'URL', `http://example.org/${i}`)]
    const { app, upstream } = await setup({ records, overrides: { batchConcurrency: 2 } })
    // Each lookup outlasts the moment the server takes to notice the reader left, even on a busy machine.
    upstream.mode = { kind: 'slow', delayMs: 200 }
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    const body = Object.keys(records).join('\n')
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, method: 'POST', path: '/api/batch', headers: { 'content-type': 'text/plain' } },
        (res) => {
          res.once('data', () => {
            req.destroy()
            resolve()
          })
        }
      )
      req.on('error', () => {})
      req.end(body)
      setTimeout(() => reject(new Error('no answer')), 5000)
    })
    const atLeave = upstream.seen.length
    // Long enough that a batch going on would start several more rounds of two (one every 200 ms).
    await new Promise((resolve) => setTimeout(resolve, 1500))
    // The lookups in flight when the reader left may finish; none starts after.
    expect(upstream.seen.length).toBeLessThanOrEqual(atLeave + 2)
    expect(upstream.seen.length).toBeLessThan(20)
  })
})

describe('POST /api/batch: limits', () => {
  it('refuses more lines than BATCH_MAX_LINES with a 413 that names the limit', async () => {
    const { app, upstream } = await setup({ overrides: { batchMaxLines: 3 } })
    const res = await batch(app, '# a comment does not count\n10.5555/a\n10.5555/b\n\n10.5555/c\n10.5555/d\n')
    expect(res.status).toBe(413)
    expect(JSON.parse(res.raw)).toEqual({
      message: expect.stringContaining('At most 3 lines in one batch (BATCH_MAX_LINES); this one has 4.'),
      limit: 'BATCH_MAX_LINES'
    })
    expect(upstream.seen).toEqual([])
    expect((await batch(app, '10.5555/a\n10.5555/b\n10.5555/c\n')).status).toBe(200)
  })

  it('takes a JSON body larger than the 16 KiB every other route allows, up to BATCH_MAX_BYTES', async () => {
    const { app } = await setup()
    const body = JSON.stringify(Array.from({ length: 2000 }, (_, i) => `10.5555/plain${i % 2 === 0 ? '' : ' '}`))
    expect(body.length).toBeGreaterThan(16 * 1024)
    const { status, results } = await batch(app, body, 'application/json')
    expect(status).toBe(200)
    expect(results).toHaveLength(2000)
  })

  it('refuses a body over BATCH_MAX_BYTES with a 413 that names the limit', async () => {
    const { app } = await setup({ overrides: { batchMaxBytes: 2048 } })
    const res = await batch(app, '10.5555/plain\n'.repeat(200))
    expect(res.status).toBe(413)
    expect(JSON.parse(res.raw)).toEqual({ message: expect.stringContaining('larger than 2048 bytes'), limit: 'BATCH_MAX_BYTES' })
  })

  it('counts batches and their lines in /metrics', async () => {
    const { app } = await setup()
    await batch(app, '10.5555/plain\n10.5555/missing\nnot-a-doi\n')
    const metrics = (await app.inject({ url: '/metrics' })).body
    expect(metrics).toContain('doi_proxy_batch_requests_total{outcome="answered"} 1')
    expect(metrics).toContain('doi_proxy_batch_lines_total{answer="registered"} 1')
    expect(metrics).toContain('doi_proxy_batch_lines_total{answer="unregistered"} 1')
    expect(metrics).toContain('doi_proxy_batch_lines_total{answer="invalid"} 1')
  })
  it('counts a batch over either limit as too_large, and one that is not JSON as bad_request', async () => {
    const { app } = await setup({ overrides: { batchMaxLines: 3, batchMaxBytes: 2048 } })
    expect((await batch(app, '10.5555/a\n10.5555/b\n10.5555/c\n10.5555/d\n')).status).toBe(413)
    expect((await batch(app, '10.5555/plain\n'.repeat(200))).status).toBe(413)
    expect((await batch(app, '[1, 2', 'application/json')).status).toBe(400)
    const metrics = (await app.inject({ url: '/metrics' })).body
    expect(metrics).toContain('doi_proxy_batch_requests_total{outcome="too_large"} 2')
    expect(metrics).toContain('doi_proxy_batch_requests_total{outcome="bad_request"} 1')
  })
})

describe('the OpenAPI description', () => {
  it('documents POST /api/batch with its NDJSON answer and its limits', async () => {
    const { app } = await setup()
    const doc = (await app.inject({ url: '/api/openapi.json' })).json() as typeof OPENAPI_DOCUMENT
    const op = (
      doc.paths as Record<
        string,
        { post?: { requestBody: { content: Record<string, unknown> }; responses: Record<string, { content?: Record<string, unknown> }> } }
      >
    )['/api/batch']?.post
    expect(op).toBeDefined()
    expect(Object.keys(op!.requestBody.content).sort()).toEqual(['application/json', 'text/plain'])
    expect(Object.keys(op!.responses[200]!.content!)).toEqual(['application/x-ndjson'])
    expect(Object.keys(op!.responses)).toEqual(expect.arrayContaining(['200', '400', '413', '429', '503']))
    expect(JSON.stringify(op)).toContain('BATCH_MAX_LINES')
  })
})

describe('POST /api/batch: the rate limit counts a batch by its lookups', () => {
  const distinct = (n: number): Record<string, ReturnType<typeof admin>[]> => {
    const records: Record<string, ReturnType<typeof admin>[]> = {}
    for (let i = 0; i < n; i++) records[`10.5555/n${i}`] = [admin(), str(1, 'URL', `http://example.org/${i}`)]
    return records
  }
  const post = async (app: Awaited<ReturnType<typeof setup>>['app'], body: string): Promise<BatchResult[]> => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/batch',
      remoteAddress: '192.0.2.1',
      headers: { 'content-type': 'text/plain' },
      payload: body
    })
    expect(res.statusCode).toBe(200)
    return lines(res.body)
  }

  it('each distinct DOI that needs the registry counts as one lookup; past the limit a line gets 429 with retryAfter', async () => {
    const records = distinct(8)
    const { app, upstream } = await setup({
      records,
      overrides: { rateLimitMax: 3, rateLimitWindowMs: 60_000, rateLimitAllowList: [], batchConcurrency: 1 }
    })
    const names = Object.keys(records)
    // A repeat costs nothing: it takes its first line's answer.
    const results = await post(app, [...names, names[0]].join('\n'))
    expect(results.map((r) => r.registered)).toEqual([true, true, true, null, null, null, null, null, true])
    for (const r of results.slice(3, 8)) {
      expect(r).toEqual(
        expect.objectContaining({
          doi: null,
          url: null,
          status: 429,
          error: expect.stringMatching(/too many DOI lookups.*try again in \d+ s/)
        })
      )
      expect(r.retryAfter).toBeGreaterThan(0)
      expect(r.retryAfter).toBeLessThanOrEqual(60)
    }
    expect(doisAsked(upstream).filter((h) => h !== '10.5555')).toEqual(names.slice(0, 3))
    // The batch spent the client's budget: its next lookup is refused, with Retry-After.
    const single = await app.inject({ url: '/10.5555/n7', remoteAddress: '192.0.2.1' })
    expect(single.statusCode).toBe(429)
    expect(Number(single.headers['retry-after'])).toBeGreaterThan(0)
  })

  it('cached lines cost nothing: a second batch of the same DOIs is answered whole', async () => {
    const records = distinct(3)
    const { app } = await setup({ records, overrides: { rateLimitMax: 3, rateLimitAllowList: [] } })
    const body = Object.keys(records).join('\n')
    expect((await post(app, body)).map((r) => r.registered)).toEqual([true, true, true])
    expect((await post(app, body)).map((r) => [r.registered, r.source])).toEqual([
      [true, 'cache'],
      [true, 'cache'],
      [true, 'cache']
    ])
  })

  it("a line over the client's share of the fair queue (batches sent at once) says when to come back", async () => {
    const records = distinct(12)
    const { app, upstream } = await setup({ records, overrides: { upstreamPerClient: 1, upstreamClientQueue: 0, batchConcurrency: 4 } })
    upstream.mode = { kind: 'slow', delayMs: 100 }
    const names = Object.keys(records)
    const [a, b] = await Promise.all([post(app, names.slice(0, 6).join('\n')), post(app, names.slice(6).join('\n'))])
    const refused = [...a, ...b].filter((r) => r.status === 429)
    expect(refused.length).toBeGreaterThan(0)
    for (const r of refused) expect(r).toEqual(expect.objectContaining({ registered: null, retryAfter: expect.any(Number) }))
  })
})

describe('POST /api/batch: fairness', () => {
  it("a batch of misses waits its turn in the fair queue: another reader's single DOI is not stuck behind it", async () => {
    const records: Record<string, ReturnType<typeof admin>[]> = { '10.6666/single': [admin(), str(1, 'URL', 'http://example.org/single')] }
    for (let i = 0; i < 60; i++) records[`10.5555/n${i}`] = [admin(), str(1, 'URL', `http://example.org/${i}`)]
    const { app, upstream } = await setup({ records, overrides: { upstreamMaxConcurrent: 2, upstreamPerClient: 2, batchConcurrency: 8 } })
    upstream.mode = { kind: 'slow', delayMs: 100 }
    const names = Object.keys(records).filter((n) => n.startsWith('10.5555/'))
    const batchDone = app.inject({
      method: 'POST',
      url: '/api/batch',
      remoteAddress: '192.0.2.1',
      headers: { 'content-type': 'text/plain' },
      payload: names.join('\n')
    })
    await new Promise((resolve) => setTimeout(resolve, 250))
    const started = performance.now()
    const single = await app.inject({ url: '/10.6666/single', remoteAddress: '198.51.100.7' })
    const waited = performance.now() - started
    expect(single.statusCode).toBe(302)
    // Served in turn: about two upstream round trips (its DOI and its prefix), not the batch's 60 / 2 × 100 ms.
    expect(waited).toBeLessThan(1500)
    const res = await batchDone
    expect(lines(res.body).map((r) => r.registered)).toEqual(names.map(() => true))
  })
})
