import { describe, expect, it } from 'vitest'
import { beginDrain } from '../../src/app.js'
import { setup } from '../support/app.js'

// buildApp registers its route plugins after the global ones (src/app.ts): the root's hooks reach every
// plugin, and a route takes the error handler in place when its plugin is registered. One route of each
// plugin, and what no route answers.
const ANSWERS = [
  { name: 'ops', method: 'GET', url: '/healthz', status: 200 },
  { name: 'static', method: 'GET', url: '/robots.txt', status: 200 },
  { name: 'api', method: 'GET', url: '/api/handles/10.5555/plain', status: 200 },
  { name: 'ra', method: 'GET', url: '/doiRA/10.5555/plain', status: 200 },
  { name: 'proxy', method: 'GET', url: '/10.5555/plain', status: 302 },
  { name: 'openurl', method: 'GET', url: '/openurl?rft_id=info:doi/10.5555/plain', status: 302 },
  { name: 'settings', method: 'GET', url: '/settings', status: 200 },
  { name: 'not found (405)', method: 'DELETE', url: '/10.5555/plain', status: 405 }
] as const

describe('how buildApp is put together', () => {
  it("every plugin's answers carry the CORS headers and, while draining, close their connection", async () => {
    const { app } = await setup()
    for (const draining of [false, true]) {
      if (draining) beginDrain(app)
      for (const { name, method, url, status } of ANSWERS) {
        const res = await app.inject({ method, url })
        expect([name, res.statusCode]).toEqual([name, status])
        expect([name, res.headers['access-control-allow-origin']]).toEqual([name, '*'])
        expect([name, res.headers.connection]).toEqual([name, draining ? 'close' : 'keep-alive'])
      }
    }
  })

  it("errors thrown on the way to a route plugin's handler get the root's error page, HTML or API JSON", async () => {
    const { app } = await setup()
    const tooLarge = await app.inject({
      method: 'POST',
      url: '/',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `hdl=${'a'.repeat(20_000)}`
    })
    expect(tooLarge.statusCode).toBe(413)
    expect(tooLarge.headers['content-type']).toBe('text/html; charset=utf-8')
    const badJson = await app.inject({ method: 'POST', url: '/openurl', headers: { 'content-type': 'application/json' }, payload: '{' })
    expect(badJson.statusCode).toBe(400)
    expect(badJson.headers['content-type']).toBe('text/html; charset=utf-8')
    const apiMethod = await app.inject({ method: 'PUT', url: '/api/handles/10.5555/plain' })
    expect(apiMethod.statusCode).toBe(405)
    expect(apiMethod.headers['content-type']).toMatch(/^application\/json/)
  })

  it('/openurl and /settings read a posted form as the proxy does', async () => {
    const { app } = await setup()
    const openurl = await app.inject({
      method: 'POST',
      url: '/openurl',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'rft_id=info:doi/10.5555/plain'
    })
    expect(openurl.statusCode).toBe(302)
    expect(openurl.headers.location).toBe('http://example.org/plain')
    const settings = await app.inject({
      method: 'POST',
      url: '/settings',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'service=none'
    })
    expect(settings.statusCode).not.toBe(415)
  })

  it('answers a preflight request', async () => {
    const { app } = await setup()
    const res = await app.inject({
      method: 'OPTIONS',
      url: '/10.5555/plain',
      headers: { origin: 'https://example.com', 'access-control-request-method': 'GET' }
    })
    expect(res.statusCode).toBe(204)
    expect(res.headers['access-control-allow-methods']).toBe('GET, HEAD, POST')
    expect(res.headers['access-control-max-age']).toBe('86400')
  })
})
