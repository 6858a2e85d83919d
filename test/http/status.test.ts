import { describe, expect, it } from 'vitest'
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

  it('behind a trusted proxy, the reader\'s forwarded address decides, not the proxy\'s', async () => {
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
    const { app } = await setup({ overrides: { localServices: [{ id: 'lib', name: 'Lib <script>alert(1)</script>', url: 'https://r.example/?id={doi}', networks: [], prefixes: [] }] } })
    const page = (await app.inject('/status')).body
    expect(page).toContain('Lib &lt;script&gt;alert(1)&lt;/script&gt; (<code>lib</code>)')
  })

  it('shows the limits in force', async () => {
    const { app } = await setup({ overrides: { rateLimitMax: 100 } })
    const page = (await app.inject('/status')).body
    expect(page).toContain('100 per 60 s (RATE_LIMIT_MAX, RATE_LIMIT_WINDOW_MS)')
  })
})

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
