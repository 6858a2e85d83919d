import { connect } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import { setup } from '../support/app.js'
import { dripRequest, rawRequest } from '../support/raw-http.js'
import { str } from '../support/records.js'

// What the HTTP server answers before Fastify routes anything (src/http/server-edge.ts), over real sockets.

async function listening(
  options: Parameters<typeof setup>[0] = {}
): Promise<{ port: number; app: Awaited<ReturnType<typeof setup>>['app'] }> {
  const { app } = await setup(options)
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, port: (app.server.address() as AddressInfo).port }
}

describe('a slow client is cut at REQUEST_TIMEOUT_MS', () => {
  // The shortest timeout the settings allow; Node's own check runs every 30 s unless told otherwise.
  const overrides = { requestTimeoutMs: 1000, requestDeadlineMs: 800 }

  it('headers dripped a byte every 100 ms get a 408 about a second after the first byte, not 30 s later', async () => {
    const { port } = await listening({ overrides })
    const res = await dripRequest(port, {
      drip: 'GET /10.5555/plain HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' + 'a'.repeat(200),
      intervalMs: 100,
      giveUpMs: 8_000
    })
    expect(res.status).toBe(408)
    expect(res.closedAfterMs).toBeGreaterThanOrEqual(900)
    expect(res.closedAfterMs).toBeLessThan(2_500)
  })

  it('a body dripped a byte every 100 ms after prompt headers gets a 408 about a second after the request began', async () => {
    const { port } = await listening({ overrides })
    const head = 'POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 500\r\n\r\n'
    const res = await dripRequest(port, { head, drip: 'hdl=10.5555%2Fplain&' + 'x'.repeat(480), intervalMs: 100, giveUpMs: 8_000 })
    expect(res.status).toBe(408)
    expect(res.closedAfterMs).toBeGreaterThanOrEqual(900)
    expect(res.closedAfterMs).toBeLessThan(2_500)
  })

  it('a client that stops reading a large answer is cut about REQUEST_TIMEOUT_MS after the last byte it took', async () => {
    // 10 MB of answer: more than the kernel's buffers on both ends take, so the rest waits in ours.
    const { app, upstream } = await setup({ overrides: { ...overrides, upstreamMaxBodyBytes: 16 * 1024 * 1024 } })
    upstream.set('10.1/big', [str(1, 'DESC', 'x'.repeat(10 * 1024 * 1024))])
    await app.listen({ host: '127.0.0.1', port: 0 })
    const serverSide = new Promise<Socket>((resolve) => app.server.once('connection', resolve))
    const client = connect((app.server.address() as AddressInfo).port, '127.0.0.1')
    client.pause() // never reads
    client.on('error', () => {})
    client.write('GET /api/handles/10.1/big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    const socket = await serverSide
    const started = performance.now()
    const closedAfterMs = await new Promise<number>((resolve) => {
      socket.once('close', () => resolve(performance.now() - started))
      setTimeout(() => resolve(Infinity), 8_000).unref()
    })
    client.destroy()
    expect(closedAfterMs).toBeGreaterThanOrEqual(900)
    expect(closedAfterMs).toBeLessThan(4_000)
  })

  it('a reader who sends a whole request at once is answered, even under this short timeout', async () => {
    const { app } = await setup({ overrides })
    const res = await rawRequest(app, '/10.5555/plain')
    expect(res.status).toBe(302)
  })
})

describe('methods we do not serve are a 405 with Allow, never a silent close', () => {
  it('CONNECT (a forward-proxy tunnel) is a 405 HTML page with Allow, and the connection closes', async () => {
    const { app } = await setup()
    const res = await rawRequest(app, 'example.org:443', 'CONNECT')
    expect(res.status).toBe(405)
    expect(res.headers.allow).toEqual(['GET, HEAD, POST, OPTIONS'])
    expect(res.headers['content-type']).toEqual(['text/html; charset=utf-8'])
    expect(res.headers.connection).toEqual(['close'])
    expect(res.body).toContain('The method CONNECT is not supported here')
  })

  it.each(['FOO', 'get', 'BREW'])("%s, a method Node's parser does not know, is a 405 with Allow", async (method) => {
    const { app } = await setup()
    const res = await rawRequest(app, '/10.5555/plain', method)
    expect(res.status).toBe(405)
    expect(res.headers.allow).toEqual(['GET, HEAD, POST, OPTIONS'])
    expect(res.body).toContain(`The method ${method} is not supported here`)
  })

  it('PROPFIND, a method Node knows and we do not serve, is the same 405', async () => {
    const { app } = await setup()
    const res = await rawRequest(app, '/10.5555/plain', 'PROPFIND')
    expect(res.status).toBe(405)
    expect(res.headers.allow).toEqual(['GET, HEAD, POST, OPTIONS'])
    expect(res.body).toContain('The method PROPFIND is not supported here')
  })

  it('bytes that are no method at all (a TLS hello on the http port) stay a 400', async () => {
    const { app } = await setup()
    const res = await rawRequest(app, '/', '\u0016\u0003\u0001\u0002\u0000\u0001')
    expect(res.status).toBe(400)
    expect(res.headers.allow).toBeUndefined()
  })
})
