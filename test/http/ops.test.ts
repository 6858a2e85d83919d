import { describe, expect, it, vi } from 'vitest'
import { Client } from 'undici'
import { setup } from '../support/app.js'
import { beginDrain } from '../../src/app.js'

describe('operations routes', () => {
  it('/healthz answers 200 while the process lives', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/healthz' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ status: 'ok' })
  })

  it('on close, in-flight requests finish and new connections are refused', async () => {
    const { app, upstream } = await setup()
    expect((await app.inject({ url: '/readyz' })).statusCode).toBe(200)
    upstream.mode = { kind: 'slow', delayMs: 300 }
    await app.listen({ host: '127.0.0.1', port: 0 })
    const address = app.server.address() as { port: number }
    const client = new Client(`http://127.0.0.1:${address.port}`, { pipelining: 0 })
    const keepAlive = new Client(`http://127.0.0.1:${address.port}`)
    expect((await keepAlive.request({ path: '/readyz', method: 'GET' })).statusCode).toBe(200)
    const inflight = client.request({ path: '/10.5555/plain', method: 'GET' })
    // Waits on state, not on sleeps a busy machine may outlast: the request is at the upstream, then the
    // server has stopped listening.
    await vi.waitFor(
      () => {
        expect(upstream.count('10.5555/plain')).toBe(1)
      },
      { timeout: 5000, interval: 5 }
    )
    const closing = app.close()
    await vi.waitFor(
      () => {
        expect(app.server.listening).toBe(false)
      },
      { timeout: 5000, interval: 5 }
    )
    const during = await keepAlive.request({ path: '/readyz', method: 'GET' }).catch(() => ({ statusCode: 'connection closed' }))
    expect(during.statusCode).toBe('connection closed')
    expect((await inflight).statusCode).toBe(302)
    await closing
    await Promise.all([client.close(), keepAlive.close()])
  })

  it('/readyz answers 503 while draining, and requests are still served with Connection: close', async () => {
    const { app } = await setup()
    expect((await app.inject({ url: '/readyz' })).statusCode).toBe(200)
    beginDrain(app)
    expect((await app.inject({ url: '/readyz' })).statusCode).toBe(503)
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.connection).toBe('close')
  })

  it('/readyz does not depend on the upstream', async () => {
    const { app, upstream } = await setup()
    await upstream.close()
    expect((await app.inject({ url: '/readyz' })).statusCode).toBe(200)
  })

  it('/metrics shows our counters without a label per DOI', async () => {
    const { app } = await setup()
    await app.inject({ url: '/10.5555/plain' })
    await app.inject({ url: '/10.5555/plain' })
    await app.inject({ url: '/10.5555/nonexistent' })
    const res = await app.inject({ url: '/metrics' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(/^text\/plain/)
    expect(res.body).toMatch(/doi_proxy_resolutions_total\{outcome="redirect"\} 2/)
    expect(res.body).toMatch(/doi_proxy_resolutions_total\{outcome="not_found"\} 1/)
    // The first redirect also reads the prefix record 10.5555 (its namespace locations, then kept for an hour).
    expect(res.body).toMatch(/doi_proxy_cache_lookups_total\{result="miss"\} 3/)
    expect(res.body).toMatch(/doi_proxy_cache_lookups_total\{result="hit"\} 1/)
    expect(res.body).toMatch(/doi_proxy_upstream_request_duration_seconds_count\{outcome="found"\} 2/)
    expect(res.body).toMatch(/doi_proxy_upstream_request_duration_seconds_count\{outcome="not_found"\} 1/)
    expect(res.body).toMatch(/doi_proxy_cache_entries 3/)
    expect(res.body).not.toContain('10.5555')
  })

  it('/metrics counts upstream errors by code', async () => {
    const { app, upstream } = await setup()
    upstream.mode = { kind: 'status', status: 500 }
    await app.inject({ url: '/10.5555/plain' })
    const res = await app.inject({ url: '/metrics' })
    expect(res.body).toMatch(/doi_proxy_upstream_errors_total\{code="DP_UPSTREAM_STATUS"\} 1/)
  })

  it('a request id from X-Request-Id is kept; one is made otherwise', async () => {
    const { app } = await setup()
    const res = await app.inject({ url: '/healthz', headers: { 'x-request-id': 'abc-123' } })
    expect(res.statusCode).toBe(200)
  })
})

describe('CORS (behaviour.md §7)', () => {
  it.each([['/10.5555/plain'], ['/10.5555/nonexistent'], ['/10.5555/plain?noredirect'], ['/'], ['/healthz']])(
    '%s allows any origin and exposes Location, Vary, Link and X-Cache',
    async (url) => {
      const { app } = await setup()
      const res = await app.inject({ url, headers: { origin: 'https://tool.example' } })
      expect(res.headers['access-control-allow-origin']).toBe('*')
      expect(res.headers['access-control-expose-headers']).toMatch(/Location, Vary, Link, X-Cache/)
    }
  )

  it('a preflight from a browser tool is answered', async () => {
    const { app } = await setup()
    const res = await app.inject({
      method: 'OPTIONS',
      url: '/10.5555/plain',
      headers: { origin: 'https://tool.example', 'access-control-request-method': 'GET' }
    })
    expect(res.statusCode).toBe(204)
    expect(res.headers['access-control-allow-origin']).toBe('*')
    expect(res.headers['access-control-allow-methods']).toContain('GET')
  })
})

describe('static routes', () => {
  it("/robots.txt is the reference's", async () => {
    const { app, upstream } = await setup()
    const res = await app.inject({ url: '/robots.txt' })
    expect(res.body).toBe('User-agent: *\nCrawl-delay: 1\nRequest-rate: 1/1\n')
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8')
    expect(upstream.seen).toHaveLength(0)
  })

  it('/favicon.ico is an icon', async () => {
    const { app, upstream } = await setup()
    const res = await app.inject({ url: '/favicon.ico' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('image/x-icon')
    expect(res.rawPayload.subarray(0, 4)).toEqual(Buffer.from([0, 0, 1, 0]))
    expect(upstream.seen).toHaveLength(0)
  })

  it('a method other than GET, HEAD or POST is 405 with Allow and an HTML page', async () => {
    const { app } = await setup()
    const res = await app.inject({ method: 'DELETE', url: '/10.5555/plain' })
    expect(res.statusCode).toBe(405)
    expect(res.headers.allow).toBe('GET, HEAD, POST, OPTIONS')
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
  })

  it('a method the JSON API does not serve is a JSON 405, not an HTML page', async () => {
    const { app } = await setup()
    const res = await app.inject({
      method: 'PUT',
      url: '/api/handles/10.5555/plain',
      payload: '{}',
      headers: { 'content-type': 'application/json' }
    })
    expect(res.statusCode).toBe(405)
    expect(res.headers['content-type']).toBe('application/json;charset=utf-8')
    expect(res.json()).toEqual({ responseCode: 2, message: 'The method PUT is not supported here; use GET or HEAD.' })
  })
})
