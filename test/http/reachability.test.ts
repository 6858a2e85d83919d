import { describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { setup } from '../support/app.js'

// Issue 27: whether the upstream answers is known, logged when it changes, shown on /status, and named on
// the reader's page; a registry that cannot be reached (DNS, refused) is not retried as if it were brief.

const UNRESOLVABLE = 'http://doi-proxy-test.invalid/api/handles' // RFC 6761: .invalid never resolves
const OFFLINE_HINT = 'npm run start:offline'
const EXPIRED = 2 * 86_400_000

function captureLogs(level = 'info') {
  const lines: Array<Record<string, unknown>> = []
  const logger = pino(
    { level },
    {
      write: (line: string) => {
        lines.push(JSON.parse(line) as Record<string, unknown>)
      }
    }
  )
  const about = (start: string) => lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith(start))
  return { logger, lines, about }
}

async function retriesMade(app: Awaited<ReturnType<typeof setup>>['app']): Promise<string | undefined> {
  return /doi_proxy_upstream_retries_total (\d+)/.exec((await app.inject({ url: '/metrics' })).body)?.[1]
}

describe('a registry that cannot be reached is said to be so', () => {
  it('a host name that does not resolve: a 502 page naming the DNS failure and the offline mode, not retried', async () => {
    const { app } = await setup({ overrides: { upstreamUrl: UNRESOLVABLE, upstreamRetryBaseMs: 200 } })
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(502)
    expect(res.body).toContain('host name does not resolve')
    expect(res.body).toContain(OFFLINE_HINT)
    expect(res.body).not.toContain('usually brief')
    expect(await retriesMade(app)).toBe('0')
  })

  it("a refused connection: the API's JSON says so and how to run offline, not retried", async () => {
    const { app, upstream } = await setup({ overrides: { upstreamRetryBaseMs: 200 } })
    await upstream.close()
    const res = await app.inject({ url: '/api/handles/10.5555/plain' })
    expect(res.statusCode).toBe(502)
    const message = (JSON.parse(res.body) as { message: string }).message
    expect(message).toContain('refused the connection')
    expect(message).toContain(OFFLINE_HINT)
    expect(await retriesMade(app)).toBe('0')
  })

  it('a connection cut before an answer is still a passing fault: retried, and the page says try again', async () => {
    const { app, upstream } = await setup({ overrides: { upstreamRetryBaseMs: 10 } })
    upstream.mode = { kind: 'reset' }
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(502)
    expect(res.body).toContain('usually brief')
    expect(Number(await retriesMade(app))).toBeGreaterThan(0)
  })

  it('while the breaker is open because the registry cannot be reached, the page still says why', async () => {
    const { app, upstream } = await setup({ overrides: { breakerVolumeThreshold: 3, breakerErrorThresholdPercent: 50 } })
    await upstream.close()
    for (let i = 0; i < 4; i++) await app.inject({ url: `/10.5555/f${i}` })
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(503)
    expect(res.body).toContain('paused lookups')
    expect(res.body).toContain('refused the connection')
  })

  it('/readyz stays 200 and cached DOIs are still answered while the registry cannot be reached', async () => {
    let now = Date.parse('2026-11-22T12:00:00Z')
    const { app, upstream } = await setup({ deps: { now: () => now } })
    await app.inject({ url: '/10.5555/plain' })
    now += EXPIRED
    await upstream.close()
    expect((await app.inject({ url: '/readyz' })).statusCode).toBe(200)
    const res = await app.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(302)
    expect(res.headers['x-cache']).toBe('STALE')
  })
})

describe("the upstream's state in the logs and on /status", () => {
  it('one warning when the registry stops answering and one line when it answers again, however many lookups fail between', async () => {
    const logs = captureLogs()
    const { app, upstream } = await setup({ deps: { logger: logs.logger } })
    expect((await app.inject({ url: '/10.5555/plain' })).statusCode).toBe(302)
    expect(logs.about('the upstream answers')).toHaveLength(1)
    await upstream.close()
    for (let i = 0; i < 5; i++) await app.inject({ url: `/10.5555/down-${i}` })
    const down = logs.about('the upstream cannot be reached')
    expect(down).toHaveLength(1)
    expect(down[0]).toMatchObject({ level: 40, reason: 'refused', upstream: upstream.url })
    expect(down[0]?.msg).toContain('OFFLINE=true')
    await upstream.restart()
    await app.inject({ url: '/10.5555/back' })
    expect(logs.about('the upstream answers')).toHaveLength(2)
  })

  it('an answer too large to read is still an answer: the registry is said to answer again', async () => {
    const logs = captureLogs()
    const { app, upstream } = await setup({ deps: { logger: logs.logger } })
    await upstream.close()
    await app.inject({ url: '/10.5555/down' })
    expect(logs.about('the upstream cannot be reached')).toHaveLength(1)
    await upstream.restart()
    upstream.mode = { kind: 'huge', bytes: 50_000_000 }
    expect((await app.inject({ url: '/10.5555/huge' })).statusCode).toBe(502)
    expect(logs.about('the upstream answers')).toHaveLength(1)
  })

  it.each([
    ['answers', undefined, 'the upstream answers'],
    ['does not resolve', UNRESOLVABLE, 'the upstream cannot be reached']
  ])('at start, once listening, one line says whether the upstream %s, before any reader asks', async (_name, upstreamUrl, expected) => {
    const logs = captureLogs()
    const { app } = await setup({ deps: { logger: logs.logger }, ...(upstreamUrl === undefined ? {} : { overrides: { upstreamUrl } }) })
    await app.listen({ host: '127.0.0.1', port: 0 })
    for (let i = 0; i < 100 && logs.about(expected).length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(logs.about(expected)).toHaveLength(1)
    if (upstreamUrl !== undefined) expect(logs.about(expected)[0]).toMatchObject({ reason: 'dns' })
  })

  it('/status.json and /status show whether the registry answers, and why not', async () => {
    const { app, upstream } = await setup()
    expect(
      (JSON.parse((await app.inject({ url: '/status.json' })).body) as { upstream: { reachability: unknown } }).upstream.reachability
    ).toEqual({ state: 'unknown' })
    await app.inject({ url: '/10.5555/plain' })
    expect(
      (JSON.parse((await app.inject({ url: '/status.json' })).body) as { upstream: { reachability: unknown } }).upstream.reachability
    ).toMatchObject({ state: 'answers' })
    await upstream.close()
    await app.inject({ url: '/10.5555/other' })
    const json = JSON.parse((await app.inject({ url: '/status.json' })).body) as { upstream: { reachability: unknown } }
    expect(json.upstream.reachability).toMatchObject({
      state: 'unreachable',
      reason: 'refused',
      why: expect.stringContaining('connection refused')
    })
    const page = (await app.inject({ url: '/status' })).body
    expect(page).toContain('The registry cannot be reached')
    expect(page).toContain('connection refused')
  })

  it('/status.json says offline when there is no upstream', async () => {
    const { app } = await setup({ overrides: { offline: true } })
    const json = JSON.parse((await app.inject({ url: '/status.json' })).body) as { upstream: { reachability: unknown } }
    expect(json.upstream.reachability).toEqual({ state: 'offline' })
  })
})
