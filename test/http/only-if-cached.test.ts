import { Writable } from 'node:stream'
import { pino } from 'pino'
import { describe, expect, it, onTestFinished } from 'vitest'
import { setup } from '../support/app.js'
import { FakeAgency } from '../support/fake-agency.js'
import { admin, str } from '../support/records.js'
import { onlyIfCached } from '../../src/http/admission.js'
import type { BatchResult } from '../../src/http/batch.js'

// RFC 9111 §5.2.1.7: "The only-if-cached request directive indicates that the client only wishes to obtain a
// stored response. Caches that honor this request directive SHOULD, upon receiving it, respond with either a
// stored response consistent with the other constraints of the request or a 504 (Gateway Timeout) status code."

const ONLY = { 'cache-control': 'only-if-cached' }

describe('Cache-Control: only-if-cached', () => {
  it.each([
    ['only-if-cached', true],
    ['max-age=0, Only-If-Cached', true],
    ['no-cache', false],
    ['only-if-cached-not', false],
    ['', false]
  ])('reads %j as only-if-cached: %s (RFC 9111 §5.2: directive names are case-insensitive)', (header, expected) => {
    expect(onlyIfCached(header)).toBe(expected)
  })

  it('a DOI not held is a 504 at once on every route (an upstream that hangs is never waited for), and nothing is asked upstream', async () => {
    const { app, upstream } = await setup()
    upstream.mode = { kind: 'hang' }
    await app.inject({ url: '/healthz' })
    for (const url of [
      '/10.5555/plain',
      '/api/handles/10.5555/plain',
      '/10.5555/plain?noredirect',
      '/openurl?rft_id=info:doi/10.5555/plain',
      '/10.5555/plain?auth'
    ]) {
      const started = performance.now()
      const res = await app.inject({ url, headers: ONLY })
      // Under the 2 s a lookup of the hanging upstream would take (the machine is busy: the 100 ms goal is for bench/).
      expect(performance.now() - started, url).toBeLessThan(1500)
      expect(res.statusCode, url).toBe(504)
      expect(res.body, url).toContain('only-if-cached')
    }
    const ra = await app.inject({ url: '/doiRA/10.5555/plain', headers: ONLY })
    expect(ra.statusCode).toBe(504)
    expect(upstream.seen).toHaveLength(0)
  })

  it('the REST API answers its own JSON shape for it', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/api/handles/10.5555/plain', headers: ONLY })
    expect(res.json()).toMatchObject({ responseCode: 2, handle: '10.5555/plain' })
  })

  it('a DOI held in the cache answers as usual, from the cache', async () => {
    const { app, upstream } = await setup()
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(302)
    const res = await app.inject({ url: '/10.5555/plain', headers: ONLY })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/plain')
    expect(res.headers['x-cache']).toBe('HIT')
    expect((await app.inject({ url: '/api/handles/10.5555/plain', headers: ONLY })).statusCode).toBe(200)
    expect((await app.inject({ url: '/10.5555/plain?noredirect', headers: ONLY })).statusCode).toBe(200)
    expect(upstream.count('10.5555/plain')).toBe(1)
  })

  it('a DOI in the local records answers, and one that is not is a 504', async () => {
    const { app, upstream } = await setup({ overrides: { localStoreDir: 'config/sample-records' } })
    expect((await app.inject({ url: '/10.5555/sample', headers: ONLY })).statusCode).toBe(302)
    expect((await app.inject({ url: '/10.5555/elsewhere', headers: ONLY })).statusCode).toBe(504)
    expect(upstream.seen).toHaveLength(0)
  })

  it('metadata not held is a 504 and the agency is not asked; the same metadata once held answers', async () => {
    const agency = await FakeAgency.start({ '10.9999/paper': { 'application/x-bibtex': '@article{paper}\n' } })
    onTestFinished(async () => {
      await agency.close()
    })
    const conneg = `<locations><location weight="0" http_role="conneg" href_template="${agency.origin}/{hdl}"/></locations>`
    const { app } = await setup({
      records: {
        10.9999: [admin(), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/FAKE</locs></HS_NAMESPACE>')],
        '10.SERV/FAKE': [admin(), str(1, '10320/loc', conneg)],
        '10.9999/paper': [str(1, 'URL', 'https://publisher.example/paper')]
      },
      overrides: { metadataMode: 'fetch', metadataHosts: [agency.host] }
    })
    const bib = { accept: 'application/x-bibtex' }
    // The record is held, its metadata is not.
    expect((await app.inject({ url: '/10.9999/paper' })).statusCode).toBe(302)
    expect((await app.inject({ url: '/10.9999/paper', headers: { ...bib, ...ONLY } })).statusCode).toBe(504)
    expect(agency.seen).toHaveLength(0)
    expect((await app.inject({ url: '/10.9999/paper', headers: bib })).statusCode).toBe(200)
    const held = await app.inject({ url: '/10.9999/paper', headers: { ...bib, ...ONLY } })
    expect(held.statusCode).toBe(200)
    expect(held.body).toBe('@article{paper}\n')
    expect(agency.seen).toHaveLength(1)
  })
})

describe('Cache-Control: only-if-cached on POST /api/batch', () => {
  it('answers the held lines and gives each line not held registered: null with status 504, asking nothing upstream', async () => {
    const { app, upstream } = await setup({ overrides: { localStoreDir: 'config/sample-records' } })
    expect((await app.inject({ url: '/10.6666/cached' })).statusCode).toBe(404)
    const asked = upstream.seen.length
    const res = await app.inject({
      method: 'POST',
      url: '/api/batch',
      headers: { ...ONLY, 'content-type': 'text/plain' },
      payload: '10.5555/sample\n10.6666/cached\n10.6666/elsewhere\nnot a doi\n'
    })
    expect(res.statusCode).toBe(200)
    const results = res.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as BatchResult)
    expect(results.map((r) => [r.input, r.registered, r.status, r.source])).toEqual([
      ['10.5555/sample', true, 302, 'local'],
      ['10.6666/cached', false, 404, 'cache'],
      ['10.6666/elsewhere', null, 504, null],
      ['not a doi', false, null, null]
    ])
    expect(results[2]!.error).toMatch(/only-if-cached/)
    expect(upstream.seen).toHaveLength(asked)
  })
})

describe('Cache-Control: only-if-cached in the log', () => {
  it('a DOI not held logs no warning: nothing was looked up, so no lookup failed', async () => {
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
    const { app } = await setup({ deps: { logger: pino({ level: 'info' }, sink) } })
    expect((await app.inject({ url: '/10.5555/plain', headers: ONLY })).statusCode).toBe(504)
    expect((await app.inject({ url: '/api/handles/10.5555/plain', headers: ONLY })).statusCode).toBe(504)
    const batch = await app.inject({
      method: 'POST',
      url: '/api/batch',
      headers: { ...ONLY, 'content-type': 'text/plain' },
      payload: '10.5555/plain\n10.5555/multi\n'
    })
    expect(batch.body).toContain('"status":504')
    expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([])
    expect(lines.map((l) => l.msg)).not.toContain('upstream lookup failed')
  })
})
