import { describe, expect, it } from 'vitest'
import { request } from 'undici'
import type { FastifyInstance } from 'fastify'
import { beginDrain } from '../../src/app.js'
import type { AppDeps } from '../../src/app.js'
import type { Config } from '../../src/config/schema.js'
import type { HandleValue } from '../../src/handle/types.js'
import { setup } from '../support/app.js'
import type { TestSetup } from '../support/app.js'
import { PROBE_RECORDS, admin, str } from '../support/records.js'

// The hot path (src/http/prepared-answers.ts, serve) answers before Fastify routes a request, so it is seen only over
// real HTTP: these tests listen on 127.0.0.1 and ask with undici, never app.inject.

const NOW = Date.parse('2026-11-25T07:26:02.500Z')

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'

/** A prefix whose namespace location is conneg only (like Crossref's), and a DOI under it. */
const CONNEG_RECORDS: Record<string, HandleValue[]> = {
  '10.7000': [admin(), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/TEST</locs></HS_NAMESPACE>')],
  '10.SERV/TEST': [
    admin(),
    str(1, '10320/loc', '<locations><location weight="0" http_role="conneg" href_template="https://data.example/{hdl}"/></locations>')
  ],
  '10.7000/article': [admin(), str(1, 'URL', 'https://publisher.example/article')]
}

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

async function serve(
  opts: { overrides?: Partial<Config>; records?: Record<string, HandleValue[]>; deps?: AppDeps } = {}
): Promise<TestSetup & { get: (path: string, headers?: Record<string, string>, method?: 'GET' | 'HEAD') => Promise<Answer> }> {
  // A fixed clock unless a test moves its own: two answers a moment apart would otherwise differ in Expires
  // across a second's boundary.
  const s = await setup({
    ...opts,
    records: opts.records ?? { ...PROBE_RECORDS, ...CONNEG_RECORDS },
    deps: { now: () => NOW, ...opts.deps }
  })
  await s.app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = s.app.server.address() as { port: number }
  const get = async (path: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET'): Promise<Answer> => {
    const res = await request(`http://127.0.0.1:${port}${path}`, { method, headers })
    const body = await res.body.text()
    const { date: _date, 'keep-alive': _keepAlive, ...rest } = res.headers
    return { status: res.statusCode, headers: rest, body }
  }
  return { ...s, get }
}

/** A Prometheus counter or gauge read from /metrics. */
async function metric(app: FastifyInstance, name: string): Promise<number> {
  const text = (await app.inject({ url: '/metrics' })).body
  const line = text.split('\n').find((l) => l.startsWith(`${name} `))
  // A labelled counter shows no line before its first increment.
  return Number(line?.split(' ')[1] ?? 0)
}

const prepared = async (app: FastifyInstance): Promise<number> => await metric(app, 'doi_proxy_prepared_answers_total')

describe('the hot path: prepared answers of cached records', () => {
  it('from its first repeat on, a cached DOI gets the very answer the route gave, from its prepared answer', async () => {
    const { app, get } = await serve()
    const first = await get('/10.5555/plain')
    expect(first.headers['x-cache']).toBe('MISS')
    const second = await get('/10.5555/plain')
    expect(await prepared(app)).toBe(0)
    const third = await get('/10.5555/plain')
    expect(await prepared(app)).toBe(1)
    expect(third).toEqual(second)
    expect(second).toEqual({ ...first, headers: { ...first.headers, 'x-cache': 'HIT' } })
    expect(third.status).toBe(302)
    expect(third.headers.location).toBe('http://example.org/plain')
    expect(third.headers['x-cache']).toBe('HIT')
    expect(third.headers['access-control-allow-origin']).toBe('*')
    expect(third.headers['access-control-expose-headers']).toBe('Location, Vary, Link, X-Cache, Expires')
    expect(third.headers.expires).toBeDefined()
    expect(Number(third.headers['content-length'])).toBe(Buffer.byteLength(third.body))
  })

  it('the first request of a cached record through the route prepares its answer', async () => {
    const { app, get } = await serve()
    // A query string keeps the first answer on the route: the record is cached, no answer prepared.
    await get('/10.5555/multi?x=1')
    const route = await get('/10.5555/multi')
    expect(await prepared(app)).toBe(0)
    const hot = await get('/10.5555/multi')
    expect(await prepared(app)).toBe(1)
    expect(hot).toEqual(route)
    expect(hot.headers.location).toBe('http://example.org/first')
  })

  it('HEAD gets the same headers as GET and no body', async () => {
    const { app, get } = await serve()
    await get('/10.5555/plain')
    const full = await get('/10.5555/plain')
    const head = await get('/10.5555/plain', {}, 'HEAD')
    expect(await prepared(app)).toBe(1)
    expect(head.body).toBe('')
    // undici asks to close the connection after a HEAD; the rest is the same.
    expect({ ...head.headers, connection: undefined }).toEqual({ ...full.headers, connection: undefined })
  })

  it('hits answered on the hot path are counted as cache hits and redirects', async () => {
    const { app, get } = await serve()
    await get('/10.5555/plain')
    await get('/10.5555/plain')
    const hits = await metric(app, 'doi_proxy_cache_lookups_total{result="hit"}')
    const redirects = await metric(app, 'doi_proxy_resolutions_total{outcome="redirect"}')
    for (let i = 0; i < 5; i++) await get('/10.5555/plain')
    expect(await prepared(app)).toBe(5)
    expect(await metric(app, 'doi_proxy_cache_lookups_total{result="hit"}')).toBe(hits + 5)
    expect(await metric(app, 'doi_proxy_resolutions_total{outcome="redirect"}')).toBe(redirects + 5)
  })

  it('a browser, a tool and a BibTeX client each get their own answer', async () => {
    const { app, get } = await serve()
    const clients = {
      browser: { 'user-agent': FIREFOX, accept: 'text/html' },
      tool: { 'user-agent': 'curl/8.5.0' },
      bibtex: { accept: 'application/x-bibtex' }
    }
    for (const headers of Object.values(clients)) {
      await get('/10.7000/article', headers)
      await get('/10.7000/article', headers)
    }
    const before = await prepared(app)
    const hot = Object.fromEntries(
      await Promise.all(Object.entries(clients).map(async ([name, headers]) => [name, await get('/10.7000/article', headers)] as const))
    )
    expect(await prepared(app)).toBe(before + 3)
    expect(hot.browser?.headers.location).toBe('https://publisher.example/article')
    expect(hot.tool?.headers.location).toBe('https://publisher.example/article')
    expect(hot.bibtex?.headers.location).toBe('https://data.example/10.7000%2Farticle') // {hdl} is encoded as doi.org does
    expect(hot.bibtex?.headers.vary).toBe('Accept')
  })

  it('a record whose 10320/loc draws at random is never frozen into one answer', async () => {
    let flip = 0
    const records = {
      ...PROBE_RECORDS,
      '10.5555/draw': [
        admin(),
        str(1, '10320/loc', '<locations><location href="http://a.example/"/><location href="http://b.example/"/></locations>')
      ]
    }
    const { app, get } = await serve({ records, deps: { random: () => (flip++ % 2 === 0 ? 0.1 : 0.9) } })
    const seen = new Set<string>()
    for (let i = 0; i < 6; i++) seen.add(String((await get('/10.5555/draw')).headers.location))
    expect(seen).toEqual(new Set(['http://a.example/', 'http://b.example/']))
    expect(await prepared(app)).toBe(0)
  })

  it('a record whose 10320/loc draws at random keeps its candidate set with its cache entry, built once', async () => {
    let flip = 0
    const records = {
      ...CONNEG_RECORDS,
      '10.7000/draw': [
        admin(),
        str(1, '10320/loc', '<locations><location href="http://a.example/"/><location href="http://b.example/"/></locations>')
      ]
    }
    const { app, get } = await serve({ records, deps: { random: () => (flip++ % 2 === 0 ? 0.1 : 0.9) } })
    // The record, its prefix and the namespace locations, cached; a type filter keeps the record's own work off its entry.
    await get('/10.7000/draw?type=10320/loc')
    const bare = await metric(app, 'doi_proxy_cache_bytes')
    await get('/10.7000/draw')
    const withPlan = await metric(app, 'doi_proxy_cache_bytes')
    expect(withPlan).toBeGreaterThan(bare)
    const seen = new Set<string>()
    for (let i = 0; i < 6; i++) seen.add(String((await get('/10.7000/draw')).headers.location))
    expect(seen).toEqual(new Set(['http://a.example/', 'http://b.example/']))
    expect(await metric(app, 'doi_proxy_cache_bytes')).toBe(withPlan)
  })

  it('a record with a location for one country is chosen per reader, never from a prepared answer', async () => {
    const { app, get } = await serve({ overrides: { countryHeader: 'CF-IPCountry' } })
    await get('/10.5555/loc')
    await get('/10.5555/loc')
    expect((await get('/10.5555/loc', { 'cf-ipcountry': 'GB' })).headers.location).toBe('http://example.org/loc-b')
    expect((await get('/10.5555/loc')).headers.location).toBe('http://example.org/loc-a')
    expect(await prepared(app)).toBe(0)
  })

  it('Expires on a prepared answer follows the clock', async () => {
    let now = Date.parse('2026-11-23T10:00:00Z')
    const { get } = await serve({ deps: { now: () => now } })
    await get('/10.5555/plain')
    await get('/10.5555/plain')
    now += 10 * 60_000
    const hot = await get('/10.5555/plain')
    expect(hot.headers.expires).toBe(new Date(now + 86_400_000).toUTCString())
  })

  it('a record fetched again after it went stale is answered anew, not with the old prepared answer', async () => {
    let now = Date.parse('2026-11-23T10:00:00Z')
    const { upstream, get } = await serve({ overrides: { cacheMaxTtlSeconds: 60, cacheMinTtlSeconds: 0 }, deps: { now: () => now } })
    await get('/10.5555/plain')
    await get('/10.5555/plain')
    upstream.set('10.5555/plain', [admin(), str(1, 'URL', 'http://example.org/moved')])
    expect((await get('/10.5555/plain')).headers.location).toBe('http://example.org/plain')
    now += 61_000
    expect((await get('/10.5555/plain')).headers.location).toBe('http://example.org/moved')
    expect((await get('/10.5555/plain')).headers.location).toBe('http://example.org/moved')
  })

  it('the not-found page from the hot path links to the host that was asked', async () => {
    const { app, get } = await serve()
    await get('/10.5555/missing', { host: 'a.example' })
    await get('/10.5555/missing', { host: 'a.example' })
    const a = await get('/10.5555/missing', { host: 'a.example' })
    expect(await prepared(app)).toBe(1)
    const b = await get('/10.5555/missing', { host: 'b.example' })
    expect(a.status).toBe(404)
    expect(a.body).toContain('http://a.example/')
    expect(b.status).toBe(404)
    expect(b.body).toContain('http://b.example/')
    expect(b.body).not.toContain('a.example')
  })

  it('behind a trusted proxy, the not-found page is left to the route, which reads X-Forwarded-Host', async () => {
    const { app, get } = await serve({ overrides: { trustProxy: true } })
    for (let i = 0; i < 3; i++) await get('/10.5555/missing', { 'x-forwarded-host': 'a.example' })
    const b = await get('/10.5555/missing', { 'x-forwarded-host': 'b.example' })
    expect(b.body).toContain('http://b.example/')
    expect(await prepared(app)).toBe(0)
  })

  it('a record with nothing to redirect to gets its values page from the hot path', async () => {
    const { app, get } = await serve()
    await get('/10.5555/novalues', { host: 'a.example' })
    const route = await get('/10.5555/novalues', { host: 'a.example' })
    const hot = await get('/10.5555/novalues', { host: 'a.example' })
    const other = await get('/10.5555/novalues', { host: 'b.example' })
    expect(await prepared(app)).toBe(1)
    expect(hot).toEqual(route)
    expect(hot.status).toBe(200)
    expect(hot.body).toContain('HS_ADMIN')
    expect(other.body).toContain('http://b.example/')
    expect(await metric(app, 'doi_proxy_resolutions_total{outcome="values"}')).toBe(4)
  })

  it("the REST API gives the route's JSON from the hot path", async () => {
    const { app, get } = await serve()
    await get('/api/handles/10.5555/plain')
    const route = await get('/api/handles/10.5555/plain')
    const hot = await get('/api/handles/10.5555/plain')
    expect(await prepared(app)).toBe(1)
    expect(hot).toEqual(route)
    expect(JSON.parse(hot.body)).toMatchObject({ responseCode: 1, handle: '10.5555/plain' })
    expect(hot.headers['content-type']).toBe('application/json;charset=utf-8')
  })

  it('a request with a query string is answered by the route, never from a prepared answer', async () => {
    const { app, get } = await serve()
    await get('/10.5555/plain')
    await get('/api/handles/10.5555/plain')
    const before = await prepared(app)
    const appended = await get('/10.5555/plain?urlappend=%3Fpage%3D2')
    expect(appended.headers.location).toBe('http://example.org/plain?page=2')
    const api = await get('/api/handles/10.5555/plain?type=URL')
    expect(JSON.parse(api.body).values).toHaveLength(1)
    expect(await prepared(app)).toBe(before)
  })

  it('while draining, a cached DOI is answered by the route and closes its connection', async () => {
    const { app, get } = await serve()
    await get('/10.5555/plain')
    expect((await get('/10.5555/plain')).headers.connection).toBe('keep-alive')
    const before = await prepared(app)
    beginDrain(app)
    const draining = await get('/10.5555/plain')
    expect(draining.status).toBe(302)
    expect(draining.headers.connection).toBe('close')
    expect(await prepared(app)).toBe(before)
  })

  it('a DOI spelled many ways keeps eight prepared spellings and answers every spelling right', async () => {
    const { app, get } = await serve()
    const spellings = ['plain', 'PLAIN', 'Plain', 'pLain', 'plAin', 'plaIn', 'plaiN', 'PLain', 'PLAin', 'PLAIn'].map((s) => `/10.5555/${s}`)
    // Each spelling's first answer is prepared while the entry has room for it.
    for (const path of spellings) await get(path)
    expect(await prepared(app)).toBe(0)
    for (const path of spellings) expect((await get(path)).headers.location).toBe('http://example.org/plain')
    expect(await prepared(app)).toBe(8)
  })

  it('a handle named like one of our routes never shadows the route', async () => {
    const { get } = await serve()
    // Routed as a DOI (the router keeps duplicate slashes), read as the handle "metrics" (leading slashes
    // are trimmed, as doi.org does), not found, so its page could be prepared for "metrics".
    for (let i = 0; i < 3; i++) expect((await get('//metrics')).status).toBe(404)
    const metrics = await get('/metrics')
    expect(metrics.status).toBe(200)
    expect(metrics.body).toContain('doi_proxy_resolutions_total')
  })

  it("prepared answers count against the cache's byte budget", async () => {
    const { app, get } = await serve()
    await get('/10.5555/plain?x=1')
    const before = await metric(app, 'doi_proxy_cache_bytes')
    await get('/10.5555/plain')
    const after = await metric(app, 'doi_proxy_cache_bytes')
    const page = (await get('/10.5555/plain')).body
    expect(after - before).toBeGreaterThan(Buffer.byteLength(page))
  })

  it('with LOG_REQUESTS every answer goes through the route, so each one is logged', async () => {
    const { app, get } = await serve({ overrides: { logRequests: true } })
    for (let i = 0; i < 3; i++) expect((await get('/10.5555/plain')).status).toBe(302)
    expect(await prepared(app)).toBe(0)
  })
})
