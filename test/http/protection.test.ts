import { describe, expect, it } from 'vitest'
import { overloadEventLoop, setup } from '../support/app.js'

// Each lookup below asks for a DOI not yet cached: only upstream-bound work is counted (behaviour.md §9).
const uncached = (i: number): string => `/10.5555/uncached-${i}`

describe('inbound rate limits', () => {
  it('are off by default for ordinary requests', async () => {
    const { app } = await setup({ overrides: { rateLimitAllowList: [] } })
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => app.inject({ url: uncached(i), remoteAddress: '192.0.2.10' })))
    expect(answers.every((r) => r.statusCode === 404)).toBe(true)
  })

  it('when on, a client over the limit gets 429 with Retry-After and an HTML page', async () => {
    const { app } = await setup({ overrides: { rateLimitMax: 3, rateLimitAllowList: [] } })
    const codes = []
    for (let i = 0; i < 5; i++) codes.push((await app.inject({ url: uncached(i), remoteAddress: '192.0.2.10' })).statusCode)
    expect(codes).toEqual([404, 404, 404, 429, 429])
    const res = await app.inject({ url: uncached(9), remoteAddress: '192.0.2.10' })
    expect(res.headers['retry-after']).toBeDefined()
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
  })

  it('a cached DOI is never limited, even for a client over its limit', async () => {
    const { app } = await setup({ overrides: { rateLimitMax: 1, rateLimitAllowList: [] } })
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: '192.0.2.10' })).statusCode).toBe(302)
    expect((await app.inject({ url: uncached(1), remoteAddress: '192.0.2.10' })).statusCode).toBe(429)
    for (let i = 0; i < 5; i++) expect((await app.inject({ url: '/10.5555/plain', remoteAddress: '192.0.2.10' })).statusCode).toBe(302)
  })

  it('each client address has its own budget', async () => {
    const { app } = await setup({ overrides: { rateLimitMax: 1, rateLimitAllowList: [] } })
    expect((await app.inject({ url: uncached(1), remoteAddress: '192.0.2.10' })).statusCode).toBe(404)
    expect((await app.inject({ url: uncached(2), remoteAddress: '192.0.2.11' })).statusCode).toBe(404)
  })

  it('an allow-listed network (a campus) is never limited', async () => {
    const { app } = await setup({ overrides: { rateLimitMax: 1, rateLimitAllowList: ['198.51.100.0/24'] } })
    for (let i = 0; i < 5; i++) expect((await app.inject({ url: uncached(i), remoteAddress: '198.51.100.7' })).statusCode).toBe(404)
  })

  it('auth requests have their own stricter limit, even when the general one is off', async () => {
    const { app } = await setup({ overrides: { authRateLimitMax: 2, rateLimitAllowList: [] } })
    const codes = []
    for (let i = 0; i < 3; i++) codes.push((await app.inject({ url: '/10.5555/plain?auth', remoteAddress: '192.0.2.10' })).statusCode)
    expect(codes).toEqual([302, 302, 429])
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: '192.0.2.10' })).statusCode).toBe(302)
    expect((await app.inject({ url: '/api/handles/10.5555/plain?auth=true', remoteAddress: '192.0.2.10' })).statusCode).toBe(429)
  })

  it('health and metrics routes are never limited', async () => {
    const { app } = await setup({ overrides: { rateLimitMax: 1, rateLimitAllowList: [] } })
    for (let i = 0; i < 3; i++) expect((await app.inject({ url: '/healthz', remoteAddress: '192.0.2.10' })).statusCode).toBe(200)
  })
})

describe('load shedding (issue 5)', () => {
  it('while the event loop lags, resolution requests get 503 with Retry-After but /healthz still answers', async () => {
    const { app } = await setup({ overrides: { maxEventLoopDelayMs: 50 } })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    await overloadEventLoop()
    const [shed, health] = await Promise.all([fetch(`${base}/10.5555/plain`, { redirect: 'manual' }), fetch(`${base}/healthz`)])
    expect(shed.status).toBe(503)
    expect(shed.headers.get('retry-after')).toBe('5')
    expect(health.status).toBe(200)
  })
})

describe('request bounds', () => {
  it('a handle longer than the limit is 414', async () => {
    const { app, upstream } = await setup()
    const res = await app.inject({ url: `/10.5555/${'x'.repeat(5000)}` })
    expect(res.statusCode).toBe(414)
    expect(upstream.seen).toHaveLength(0)
  })

  it('invalid UTF-8 in the path is 400 with a clear page', async () => {
    const { app, upstream } = await setup()
    const res = await app.inject({ url: '/10.5555/%C3%28' })
    expect(res.statusCode).toBe(400)
    expect(res.body).toContain('UTF-8')
    expect(upstream.seen).toHaveLength(0)
  })

  it('a control character in the handle is 400', async () => {
    const { app } = await setup()
    expect((await app.inject({ url: '/10.5555/a%00b' })).statusCode).toBe(400)
  })

  it('a lone % in the path is kept literally and resolved', async () => {
    const { app, upstream } = await setup()
    await app.inject({ url: '/10.5555/50%' })
    expect(upstream.requestsFor('10.5555/50%').map((r) => r.path)).toEqual(['/api/handles/10.5555/50%25'])
  })
})
