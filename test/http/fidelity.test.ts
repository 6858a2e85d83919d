import { Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { setup } from '../support/app.js'
import { admin, str } from '../support/records.js'
import { rawRequest } from '../support/raw-http.js'

// Where we slipped from the reference proxy (behaviour.md §3–§8, R1–R11), each with the behaviour a user sees.

const RECORDS = {
  10.5555: [admin()],
  '10.5555/plain': [admin(), str(1, 'URL', 'http://example.org/plain')],
  '10.5555/alias': [str(1, 'HS_ALIAS', '10.5555/plain')]
}

describe('the query form posted to / (behaviour.md R1 step 5)', () => {
  it("POST / with a form field hdl redirects to the DOI's URL", async () => {
    const { app } = await setup({ records: RECORDS })
    const res = await app.inject({
      method: 'POST',
      url: '/',
      payload: 'hdl=10.5555%2Fplain',
      headers: { 'content-type': 'application/x-www-form-urlencoded' }
    })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/plain')
  })

  it("a posted alias goes to its target's URL, not to a 301 (behaviour.md R2)", async () => {
    const { app } = await setup({ records: RECORDS })
    const res = await app.inject({
      method: 'POST',
      url: '/',
      payload: 'hdl=10.5555/alias',
      headers: { 'content-type': 'application/x-www-form-urlencoded' }
    })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/plain')
  })

  it("the form's other fields are the proxy's parameters: noredirect shows the values", async () => {
    const { app } = await setup({ records: RECORDS })
    const res = await app.inject({
      method: 'POST',
      url: '/',
      payload: 'hdl=10.5555/plain&noredirect=',
      headers: { 'content-type': 'application/x-www-form-urlencoded' }
    })
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('http://example.org/plain')
  })
})

describe('?action=api (behaviour.md R4)', () => {
  it("answers the REST API's JSON, as /api/handles does", async () => {
    const { app } = await setup({ records: RECORDS })
    const viaProxy = await app.inject({ url: '/10.5555/plain?action=api&type=URL' })
    const viaApi = await app.inject({ url: '/api/handles/10.5555/plain?type=URL' })
    expect(viaProxy.statusCode).toBe(200)
    expect(viaProxy.headers['content-type']).toBe(viaApi.headers['content-type'])
    expect(viaProxy.body).toBe(viaApi.body)
  })
})

describe('Expires with namespace locations (behaviour.md R11)', () => {
  const NS_RECORDS = {
    10.17879: [admin(), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/DATACITE</locs></HS_NAMESPACE>')],
    '10.SERV/DATACITE': [
      admin(),
      str(
        1,
        '10320/loc',
        '<locations><location weight="0" http_role="conneg" href_template="https://data.crosscite.org/{hdl}"/></locations>'
      )
    ],
    '10.17879/x': [str(1, 'URL', 'https://example.org/x')]
  }

  it("is the kept namespace entry's remaining life, not a fresh hour on every request", async () => {
    let now = Date.parse('2026-11-22T12:00:00Z')
    const { app } = await setup({ records: NS_RECORDS, deps: { now: () => now } })
    expect((await app.inject({ url: '/10.17879/x' })).headers.expires).toBe('Sun, 22 Nov 2026 13:00:00 GMT')
    now += 20 * 60_000
    expect((await app.inject({ url: '/10.17879/x' })).headers.expires).toBe('Sun, 22 Nov 2026 13:00:00 GMT')
  })

  it("is the record's own TTL when that ends first", async () => {
    const now = Date.parse('2026-11-22T12:00:00Z')
    const { app } = await setup({
      records: { ...NS_RECORDS, '10.17879/x': [str(1, 'URL', 'https://example.org/x', 600)] },
      deps: { now: () => now }
    })
    expect((await app.inject({ url: '/10.17879/x' })).headers.expires).toBe('Sun, 22 Nov 2026 12:10:00 GMT')
  })
})

describe('the shipped sample store never shadows real DOIs (behaviour.md §9)', () => {
  const SAMPLES = fileURLToPath(new URL('../../config/sample-records', import.meta.url))

  it('a real DOI under 10.5555 goes upstream while the samples are loaded', async () => {
    const { app, upstream } = await setup({
      records: { '10.5555/12345678': [str(1, 'URL', 'https://example.org/real')] },
      overrides: { localStoreDir: SAMPLES }
    })
    const res = await app.inject({ url: '/10.5555/12345678' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://example.org/real')
    expect(upstream.count('10.5555/12345678')).toBe(1)
  })

  it('a sample record still answers from the local store', async () => {
    const { app, upstream } = await setup({ records: {}, overrides: { localStoreDir: SAMPLES } })
    expect((await app.inject({ url: '/10.5555/sample' })).statusCode).toBe(302)
    expect(upstream.count('10.5555/sample')).toBe(0)
  })
})

describe('handle types fold ASCII letters only (behaviour.md §2.8)', () => {
  it('a type spelled with a dotless ı is not an HS_ALIAS, though JavaScript would upper-case it to one', async () => {
    const { app } = await setup({
      records: { ...RECORDS, '10.5555/dotless': [str(1, 'HS_ALıAS', '10.5555/plain'), str(2, 'URL', 'http://example.org/own')] }
    })
    const res = await app.inject({ url: '/10.5555/dotless' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/own')
  })
})

describe('handle types fold ASCII letters only: the alias behind a 301', () => {
  it('the Expires of an alias redirect comes from the real HS_ALIAS value, not from a dotless-ı look-alike before it', async () => {
    const now = Date.parse('2026-11-22T12:00:00Z')
    const records = {
      ...RECORDS,
      '10.5555/two-alias': [str(1, 'HS_ALıAS', '10.5555/other', 60), str(2, 'HS_ALIAS', '10.5555/plain', 3600)]
    }
    const { app } = await setup({ records, deps: { now: () => now } })
    const res = await app.inject({ url: '/10.5555/two-alias' })
    expect(res.statusCode).toBe(301)
    expect(res.headers.location).toMatch(/\/10\.5555\/plain$/)
    expect(res.headers.expires).toBe('Sun, 22 Nov 2026 13:00:00 GMT')
  })
})

describe('legacy URL candidates (behaviour.md R3)', () => {
  it('a 0.TYPE/URL value is a candidate next to a 10320/loc without locations', async () => {
    const { app } = await setup({
      records: {
        '10.5555/typed': [
          str(1, '10320/loc', '<locations chooseby="locatt"></locations>'),
          str(2, '0.TYPE/URL', 'http://example.org/typed')
        ]
      }
    })
    const res = await app.inject({ url: '/10.5555/typed' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/typed')
  })
})

describe('the REST API repeats what the upstream said', () => {
  it('an upstream responseCode 200 (values not found) is answered as responseCode 200, not 1', async () => {
    const { app, upstream } = await setup({ records: RECORDS })
    upstream.mode = { kind: 'status', status: 200, body: JSON.stringify({ responseCode: 200, handle: '10.5555/empty', values: [] }) }
    const res = await app.inject({ url: '/api/handles/10.5555/empty' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ responseCode: 200, values: [], handle: '10.5555/empty' })
  })
})

describe('error answers', () => {
  it('a 502 says X-Cache: MISS, like every resolution answer', async () => {
    const { app, upstream } = await setup({ records: RECORDS, overrides: { upstreamRetries: 0 } })
    upstream.mode = { kind: 'status', status: 500 }
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(502)
    expect(res.headers['x-cache']).toBe('MISS')
  })

  it("a 20,000-character path answers our HTML 431 page, not Fastify's JSON", async () => {
    const { app } = await setup({ records: RECORDS })
    const res = await rawRequest(app, `/10.5555/${'x'.repeat(20_000)}`)
    expect(res.status).toBe(431)
    expect(res.headers['content-type']).toEqual(['text/html; charset=utf-8'])
    expect(res.body).toContain('too long')
    expect(res.body).not.toContain('"statusCode"')
  })

  it('an unreachable upstream gives a page in plain words, without error codes', async () => {
    const { app, upstream } = await setup({ records: RECORDS, overrides: { upstreamRetries: 0 } })
    await upstream.close()
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(502)
    expect(res.body).toContain('We could not reach the DOI registry')
    expect(res.body).not.toMatch(/ECONNREFUSED|ENOTFOUND|usable answer/)
    // A refused connection lasts until someone acts: the page says what to do once, not "try again" (issue 27).
    expect(res.body.match(/start:offline/g)?.length).toBe(1)
    expect(res.body).not.toMatch(/try again/i)
  })

  it('an expected upstream failure is logged as a warning without a stack trace', async () => {
    const lines: Array<Record<string, unknown>> = []
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(
          ...chunk
            .toString()
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as Record<string, unknown>)
        )
        done()
      }
    })
    const { app, upstream } = await setup({
      records: RECORDS,
      overrides: { upstreamRetries: 0 },
      deps: { logger: pino({ level: 'info' }, sink) }
    })
    await upstream.close()
    await app.inject({ url: '/10.5555/plain' })
    const failure = lines.find((l) => l.msg === 'upstream lookup failed')
    expect(failure?.level).toBe(40)
    expect(failure?.code).toBe('DP_UPSTREAM_UNREACHABLE')
    expect(JSON.stringify(lines)).not.toContain('"stack"')
  })
})

describe('requests Node cannot parse', () => {
  it('a HEAD request whose target holds raw control bytes gets a 400 without a body', async () => {
    const { app } = await setup({ records: RECORDS })
    const res = await rawRequest(app, Buffer.from('/10.5555/a\x01b'), 'HEAD')
    expect(res.status).toBe(400)
    expect(res.body).toBe('')
  })

  it('the same GET gets our HTML 400 page', async () => {
    const { app } = await setup({ records: RECORDS })
    const res = await rawRequest(app, Buffer.from('/10.5555/a\x01b'), 'GET')
    expect(res.status).toBe(400)
    expect(res.body).toContain('could not be read as HTTP')
  })
})
