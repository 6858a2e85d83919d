import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { request } from 'undici'
import { admin, str } from '../support/records.js'
import { setup } from '../support/app.js'
import { REFRESH_SCRIPT, REFRESH_SCRIPT_HASH } from '../../src/http/views/status.js'
import { buildConfig, ConfigError } from '../../src/config/schema.js'
import { createHash } from 'node:crypto'

describe('/status (issue 15)', () => {
  it('an operator on the same machine sees the status page', async () => {
    const { app } = await setup()
    const res = await app.inject('/status')
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.body).toContain('<h1>Resolver status</h1>')
  })

  it('a client outside STATUS_ALLOW gets 403, for the page and the JSON', async () => {
    const { app } = await setup()
    const page = await app.inject({ url: '/status', remoteAddress: '203.0.113.9' })
    expect(page.statusCode).toBe(403)
    expect(page.body).toContain('STATUS_ALLOW')
    expect(page.body).not.toContain('Resolver status')
    const json = await app.inject({ url: '/status.json', remoteAddress: '203.0.113.9' })
    expect(json.statusCode).toBe(403)
    expect(json.json()).toEqual({ message: expect.stringContaining('STATUS_ALLOW') })
  })

  it('a refusal of the status page is kept by no cache and readable by no other site', async () => {
    const { app } = await setup()
    for (const url of ['/status', '/status.json']) {
      const res = await app.inject({ url, remoteAddress: '203.0.113.9', headers: { origin: 'https://elsewhere.example' } })
      expect(res.statusCode).toBe(403)
      expect(res.headers['cache-control']).toBe('no-store')
      expect(res.headers['access-control-allow-origin']).toBeUndefined()
    }
  })

  it('STATUS_ALLOW lets a named network in', async () => {
    const { app } = await setup({ overrides: { statusAllow: ['203.0.113.0/24'] } })
    expect((await app.inject({ url: '/status', remoteAddress: '203.0.113.9' })).statusCode).toBe(200)
    expect((await app.inject({ url: '/status', remoteAddress: '127.0.0.1' })).statusCode).toBe(403)
  })

  it("behind a trusted proxy, the reader's forwarded address decides, not the proxy's", async () => {
    const { app } = await setup({ overrides: { trustProxy: ['127.0.0.1'] } })
    const res = await app.inject({ url: '/status', remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': '198.51.100.4' } })
    expect(res.statusCode).toBe(403)
  })

  it('a reader coming through a proxy that is not trusted is refused, though the proxy is on loopback', async () => {
    for (const trustProxy of [false, 1] as const) {
      const { app } = await setup({ overrides: { trustProxy } })
      const res = await app.inject({ url: '/status.json', remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': '198.51.100.4' } })
      expect(res.statusCode).toBe(403)
    }
  })

  it('another web site cannot read it: no CORS headers', async () => {
    const { app } = await setup()
    for (const url of ['/status', '/status.json']) {
      const res = await app.inject({ url, headers: { origin: 'https://evil.example' } })
      expect(res.headers['access-control-allow-origin']).toBeUndefined()
    }
  })

  it('the page runs no script but its own refresh', async () => {
    const { app } = await setup()
    const res = await app.inject('/status')
    expect(REFRESH_SCRIPT_HASH).toBe(`sha256-${createHash('sha256').update(REFRESH_SCRIPT).digest('base64')}`)
    expect(res.headers['content-security-policy']).toContain(`script-src '${REFRESH_SCRIPT_HASH}'`)
    expect(res.headers['content-security-policy']).toContain("default-src 'none'")
    expect(res.body).toContain(`<script>${REFRESH_SCRIPT}</script>`)
    expect(res.body.match(/<script/g)).toHaveLength(1)
  })

  it('the JSON twin counts a cached DOI as a hit and a missing one as not found', async () => {
    const { app } = await setup()
    await app.inject('/10.5555/plain')
    await app.inject('/10.5555/plain')
    await app.inject('/10.5555/nothing-here')
    const res = await app.inject('/status.json')
    expect(res.statusCode).toBe(200)
    const s = res.json()
    expect(s.requests.lastHour.hit).toBeGreaterThanOrEqual(1)
    expect(s.requests.lastHour.not_found).toBe(1)
    expect(s.cache.entries).toBeGreaterThanOrEqual(2)
    expect(s.cache.maxEntries).toBe(200_000)
    expect(s.version).toMatch(/^\d+\.\d+\.\d+/)
  })

  it('an upstream failure shows in the recent errors by its code, without the DOI or the reader', async () => {
    const { app, upstream } = await setup({ overrides: { upstreamRetries: 0 } })
    upstream.mode = { kind: 'status', status: 500 }
    await app.inject({ url: '/10.5555/secret-reading', remoteAddress: '192.0.2.77', headers: { 'user-agent': 'ReaderBrowser/1' } })
    const json = (await app.inject('/status.json')).body
    const page = (await app.inject('/status')).body
    expect(JSON.parse(json).upstreamErrors).toMatchObject([{ code: 'DP_UPSTREAM_STATUS', count: 1 }])
    expect(page).toContain('<code>DP_UPSTREAM_STATUS</code>')
    for (const text of [json, page]) {
      expect(text).not.toContain('secret-reading')
      expect(text).not.toContain('192.0.2.77')
      expect(text).not.toContain('ReaderBrowser')
    }
  })

  it('shows the configured local services, escaped', async () => {
    const { app } = await setup({
      overrides: {
        localServices: [
          { id: 'lib', name: 'Lib <script>alert(1)</script>', url: 'https://r.example/?id={doi}', networks: [], prefixes: [] }
        ]
      }
    })
    const page = (await app.inject('/status')).body
    expect(page).toContain('Lib &lt;script&gt;alert(1)&lt;/script&gt; (<code>lib</code>)')
  })

  it('shows the limits in force', async () => {
    const { app } = await setup({ overrides: { rateLimitMax: 100 } })
    const page = (await app.inject('/status')).body
    expect(page).toContain('100 per 60 s (RATE_LIMIT_MAX, RATE_LIMIT_WINDOW_MS)')
  })
})

/** doi_proxy_answers_total by outcome, and the sum of doi_proxy_resolutions_total, as /metrics shows them. */
function answersIn(text: string): { answers: Record<string, number>; resolutions: number } {
  const answers = Object.fromEntries(
    [...text.matchAll(/^doi_proxy_answers_total\{outcome="(\w+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])])
  )
  const resolutions = [...text.matchAll(/^doi_proxy_resolutions_total\{outcome="\w+"\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0)
  return { answers, resolutions }
}

describe('/status counts every answer once, as /metrics does (issue 44.7)', () => {
  it('an offline mirror that answered 60 redirects from its local records shows 60 local answers', async () => {
    const { app } = await setup({ overrides: { offline: true, localStoreDir: 'config/sample-records' } })
    for (let i = 0; i < 60; i++) expect((await app.inject('/10.5555/sample')).statusCode).toBe(302)
    const s = (await app.inject('/status.json')).json()
    expect(s.requests.lastHour.local).toBe(60)
    expect(s.requests.sinceStart.local).toBe(60)
    const { answers } = answersIn((await app.inject('/metrics')).body)
    expect(answers.local).toBe(60)
    const page = (await app.inject('/status')).body
    expect(page).toMatch(/<td>local record<\/td><td[^>]*>[^<]*<\/td><td[^>]*>60<\/td><td[^>]*>60<\/td>/)
  })

  it('an offline mirror that answered 5 REST API requests and a batch of 4 lines shows 9 local answers', async () => {
    const { app } = await setup({ overrides: { offline: true, localStoreDir: 'config/sample-records' } })
    for (let i = 0; i < 5; i++) expect((await app.inject('/api/handles/10.5555/sample')).statusCode).toBe(200)
    const batch = await app.inject({
      method: 'POST',
      url: '/api/batch',
      headers: { 'content-type': 'text/plain' },
      payload: '10.5555/sample\n'.repeat(4)
    })
    expect(batch.statusCode).toBe(200)
    expect(batch.body.trim().split('\n')).toHaveLength(4)
    const s = (await app.inject('/status.json')).json()
    expect(s.requests.sinceStart.local).toBe(9)
    const { answers, resolutions } = answersIn((await app.inject('/metrics')).body)
    expect(answers.local).toBe(9)
    expect(resolutions).toBe(0) // the proxy answered nothing: its own counter is untouched
    const page = (await app.inject('/status')).body
    expect(page).toMatch(/<td>local record<\/td><td[^>]*>[^<]*<\/td><td[^>]*>9<\/td><td[^>]*>9<\/td>/)
  })

  it('REST API answers written before routing, from the answer kept with a cached record, count as cache hits', async () => {
    // Real HTTP: kept answers are written by the server's front door, which app.inject does not pass.
    const { app } = await setup()
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as { port: number }
    const get = async (path: string): Promise<number> => {
      const res = await request(`http://127.0.0.1:${port}${path}`)
      await res.body.dump()
      return res.statusCode
    }
    for (let i = 0; i < 5; i++) expect(await get('/api/handles/10.5555/plain')).toBe(200) // a miss, then hits
    for (let i = 0; i < 3; i++) expect(await get('/api/handles/10.5555/nothing-here')).toBe(404)
    const text = (await app.inject('/metrics')).body
    expect(Number(/^doi_proxy_prepared_answers_total (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(0)
    const { answers, resolutions } = answersIn(text)
    expect(answers).toEqual({ local: 0, hit: 4, miss: 1, stale: 0, not_found: 3, bad_request: 0, error: 0 })
    expect(resolutions).toBe(0)
    expect((await app.inject('/status.json')).json().requests.sinceStart).toEqual(answers)
  })

  it('after mixed traffic, the page, its JSON and /metrics give the same count of each outcome', async () => {
    let now = Date.parse('2026-11-22T12:00:00Z')
    const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-store-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    writeFileSync(
      join(dir, 'records.ndjson'),
      [
        { handle: '10.9999', values: [admin()] },
        { handle: '10.9999/local', values: [str(1, 'URL', 'https://library.example/local')] }
      ]
        .map((r) => JSON.stringify(r))
        .join('\n') + '\n'
    )
    const { app, upstream } = await setup({ deps: { now: () => now }, overrides: { localStoreDir: dir, upstreamRetries: 0 } })
    const asked: Array<[string, number]> = [
      ['/10.9999/local', 302],
      ['/10.9999/local', 302],
      ['/10.9999/local', 302], // local
      ['/10.5555/plain', 302], // miss
      ['/10.5555/plain', 302],
      ['/10.5555/plain', 302], // hit (the second from its prepared answer)
      ['/10.5555/nothing-here', 404], // not found
      ['/10.5555/plain?urlappend=%0A', 400] // bad request
    ]
    for (const [url, status] of asked) expect((await app.inject(url)).statusCode, url).toBe(status)
    // The REST API and a batch's lines count too, under the same outcomes (and not as the proxy's resolutions).
    const api: Array<[string, number]> = [
      ['/api/handles/10.9999/local', 200], // local
      ['/api/handles/10.5555/plain', 200],
      ['/api/handles/10.5555/plain', 200],
      ['/api/handles/10.5555/plain', 200], // hit
      ['/10.5555/plain?action=api', 200], // hit
      ['/api/handles/10.5555/nothing-here', 404] // not found
    ]
    for (const [url, status] of api) expect((await app.inject(url)).statusCode, url).toBe(status)
    const batch = async (payload: string): Promise<Array<{ status: number | null }>> => {
      const res = await app.inject({ method: 'POST', url: '/api/batch', headers: { 'content-type': 'text/plain' }, payload })
      expect(res.statusCode).toBe(200)
      return res.body
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
    }
    // local, hit, bad request (not a DOI), not found
    expect((await batch('10.9999/local\n10.5555/plain\nnot a doi\n10.5555/nothing-here\n')).map((r) => r.status)).toEqual([
      302,
      302,
      null,
      404
    ])
    now += 2 * 86_400_000 // every record is stale
    upstream.mode = { kind: 'status', status: 500 }
    const stale = await app.inject('/10.5555/plain')
    expect(stale.headers['x-cache']).toBe('STALE')
    expect((await app.inject('/api/handles/10.5555/plain')).headers['x-cache']).toBe('STALE') // stale
    expect((await app.inject('/10.5555/multi')).statusCode).toBe(502) // error
    expect((await batch('10.5555/multi\n')).map((r) => r.status)).toEqual([502]) // error
    const expected = { local: 5, hit: 7, miss: 1, stale: 2, not_found: 3, bad_request: 2, error: 2 }
    const s = (await app.inject('/status.json')).json()
    const { answers, resolutions } = answersIn((await app.inject('/metrics')).body)
    expect(s.requests.sinceStart).toEqual(expected)
    expect(answers).toEqual(expected)
    expect(resolutions).toBe(10)
    const page = (await app.inject('/status')).body
    for (const [name, n] of [
      ['local record', 5],
      ['cache hit', 7],
      ['miss (asked upstream)', 1],
      ['stale', 2],
      ['not found', 3],
      ['bad request or refused', 2],
      ['error', 2]
    ] as const) {
      expect(page).toMatch(new RegExp(`<td>${escapeRegExp(name)}</td><td[^>]*>[^<]*</td><td[^>]*>[^<]*</td><td[^>]*>${n}</td>`))
    }
  })
})

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

describe('bounds in /metrics', () => {
  it('/metrics shows the bounds in force, for dashboards to set usage against', async () => {
    const { app } = await setup({ overrides: { cacheMaxBytes: 1_048_576, upstreamMaxConcurrent: 4 } })
    const text = (await app.inject('/metrics')).body
    expect(text).toMatch(/^doi_proxy_cache_max_bytes 1048576$/m)
    expect(text).toMatch(/^doi_proxy_upstream_max_concurrent 4$/m)
    expect(text).toMatch(/^doi_proxy_cache_max_entries 200000$/m)
    expect(text).toMatch(/^doi_proxy_upstream_queue_max 1000$/m)
  })
})

describe('STATUS_ALLOW', () => {
  it('is loopback only by default', () => {
    expect(buildConfig(undefined, {}).statusAllow).toEqual(['127.0.0.0/8', '::1/128'])
  })

  it('takes addresses and CIDRs, and refuses anything else by name', () => {
    expect(buildConfig(undefined, { STATUS_ALLOW: '10.0.0.0/8, 2001:db8::/32' }).statusAllow).toEqual(['10.0.0.0/8', '2001:db8::/32'])
    expect(() => buildConfig(undefined, { STATUS_ALLOW: 'everyone' })).toThrow(ConfigError)
    expect(() => buildConfig(undefined, { STATUS_ALLOW: 'everyone' })).toThrow(/STATUS_ALLOW/)
  })
})
