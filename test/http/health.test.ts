import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { get } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { openHealthDb } from '../../src/resolve/health/db.js'
import { cacheKey } from '../../src/handle/name.js'
import type { Config } from '../../src/config/schema.js'
import type { Services } from '../../src/services.js'
import { setup, testConfig } from '../support/app.js'
import { startServer, workersListening } from '../support/server-process.js'
import { FakeLandingSite, pages } from '../support/fake-landing.js'
import { FakeUpstream } from '../support/fake-upstream.js'
import { fakeLookup } from '../support/landing-dns.js'
import { admin, str } from '../support/records.js'

// Issue 42 (plan §5, §6): /health, /health.json and /health.csv of a server whose checks ran through its own
// health service, against a real fake registry and a real fake landing site on loopback.

const MANY = 201 // one more than a page of /health's broken list
const CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

let dir: string
let site: FakeLandingSite
let upstream: FakeUpstream
let app: FastifyInstance
let services: Services | undefined

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'doi-proxy-health-http-'))
  site = await FakeLandingSite.start({ pages: { '/alive': pages.citationDoi('10.5555/alive'), '/gone': pages.status(404) } })
  const url = (path: string): string => `${site.origin('journal.test')}${path}`
  const records: Record<string, ReturnType<typeof admin>[]> = {
    '10.5555/alive': [str(1, 'URL', url('/alive')), admin()],
    '10.5555/gone': [str(1, 'URL', url('/gone')), admin()],
    '10.6666/gone': [str(1, 'URL', url('/gone')), admin()]
  }
  const many = Array.from({ length: MANY }, (_, i) => `10.7777/m${String(i).padStart(3, '0')}`)
  for (const doi of many) records[doi] = [str(1, 'URL', url('/gone')), admin()]
  upstream = await FakeUpstream.start(records)
  const list = join(dir, 'watched.txt')
  writeFileSync(list, ['# ours', '10.5555/alive', 'doi:10.5555/gone', 'https://doi.org/10.6666/gone', ...many, ''].join('\n'))
  const config = testConfig(upstream.url, {
    healthListFile: list,
    healthDb: join(dir, 'health.sqlite'),
    healthIntervalSeconds: 60,
    healthConfirm: 2,
    healthConfirmGapSeconds: 0,
    healthKeepDays: 1,
    landingAllowPrivate: ['127.0.0.0/8'],
    landingHostDelayMs: 0,
    landingPerHost: 4,
    contactEmail: 'ops@example.org'
  })
  app = await buildApp(config, {
    landingLookup: fakeLookup({ 'journal.test': '127.0.0.2' }),
    onServices: (built) => {
      services = built
    }
  })
  await app.ready()
  // Every DOI checked now, failures checked again until confirmed (HEALTH_CONFIRM=2): the command's pass.
  await services?.health?.runOnce(0, new AbortController().signal)
}, 120_000)

afterAll(async () => {
  await app?.close()
  await upstream?.close()
  await site?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('/health (issue 42)', () => {
  it('shows an operator each prefix and the confirmed broken DOIs, with no script and a strict CSP', async () => {
    const res = await app.inject('/health')
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(res.headers['content-security-policy']).toBe(CSP)
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(res.body).toContain('<h1>DOI health</h1>')
    expect(res.body).not.toContain('<script')
    for (const [i, prefix] of ['10.5555', '10.6666', '10.7777'].entries()) {
      expect(res.body).toContain(`<h2 id="h-prefix-${i}">${prefix}</h2>`)
    }
    expect(res.body).toContain('href="http://localhost:80/health?doi=10.5555%2Fgone"')
    expect(res.body).toContain('Confirmed broken DOIs (203)')
    expect(res.body).not.toContain('10.5555/alive</a>')
  })

  it('pages the broken list by a cursor: Next page, then the rest', async () => {
    const first = await app.inject('/health')
    const next = /href="[^"]*health\?after=([^"&]+)"[^>]*>Next page/.exec(first.body)
    expect(next).not.toBeNull()
    const rowsOf = (body: string): number => (body.match(/<tr><td><a href="[^"]*health\?doi=/g) ?? []).length
    // The broken table of page one is full (the newly broken table repeats this week's).
    const second = await app.inject(`/health?after=${next?.[1] ?? ''}`)
    expect(second.statusCode).toBe(200)
    expect(second.body).toContain('First page')
    expect(second.body).not.toContain('Next page')
    expect(rowsOf(first.body) - rowsOf(second.body)).toBe(200 - 3)
  })

  it('a cursor that is not one of ours is a 400, as a page and as JSON', async () => {
    const page = await app.inject('/health?after=not-a-cursor')
    expect(page.statusCode).toBe(400)
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(page.body).toContain('after=')
  })

  it('?prefix= shows that prefix alone', async () => {
    const res = await app.inject('/health?prefix=10.6666')
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('<option value="10.6666" selected>')
    expect(res.body).toContain('10.6666/gone')
    expect(res.body).not.toContain('10.5555/gone')
    expect(res.body).toContain('Confirmed broken DOIs (1)')
  })

  it('?doi= shows one DOI: its verdict and its checks', async () => {
    const res = await app.inject('/health?doi=10.5555/gone')
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('<h1>DOI health: 10.5555/gone</h1>')
    expect(res.body).toContain('dead: 404')
    expect(res.body).toContain('The last 2 checks, newest first')
    const unknown = await app.inject('/health?doi=10.5555/never-watched')
    expect(unknown.statusCode).toBe(404)
  })

  it('/health.json has the shape of plan §5, times in ISO 8601', async () => {
    const res = await app.inject('/health.json')
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(res.headers['content-security-policy']).toBe(CSP)
    const body = res.json()
    expect(Object.keys(body)).toEqual(['generatedAt', 'settings', 'checker', 'prefixes', 'broken'])
    expect(body.settings).toEqual({ intervalSeconds: 60, confirm: 2, confirmGapSeconds: 0, keepDays: 1 })
    expect(body.checker).toMatchObject({ state: 'paused', overdue: 0, lastCheckAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/) })
    expect(body.prefixes.map((p: { prefix: string }) => p.prefix)).toEqual(['10.5555', '10.6666', '10.7777'])
    expect(body.prefixes[0]).toMatchObject({
      prefix: '10.5555',
      watched: false,
      counts: { alive: 1, unconfirmed: 0, blocked: 0, dead: 1, takeover: 0, 'not-found': 0, 'no-url': 0, unchecked: 0 },
      newlyBroken: 1,
      overdue: 0,
      history: [{ day: expect.stringMatching(/^\d{4}-\d\d-\d\d$/), counts: expect.objectContaining({ dead: 1 }) }]
    })
    expect(body.broken).toHaveLength(MANY + 2)
    expect(body.broken[0]).toEqual({
      doi: '10.5555/gone',
      prefix: '10.5555',
      verdict: 'dead',
      since: expect.stringMatching(/Z$/),
      confirmedAt: expect.stringMatching(/Z$/),
      url: `${site.origin('journal.test')}/gone`,
      status: 404,
      evidence: expect.any(String),
      registeredUrl: `${site.origin('journal.test')}/gone`,
      lastGoodUrl: null,
      lastGoodAt: null,
      checkedAt: expect.stringMatching(/Z$/)
    })
  })

  it('/health.json?doi= gives that DOI state and checks', async () => {
    const res = await app.inject('/health.json?doi=doi:10.5555/gone')
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body).toMatchObject({ doi: '10.5555/gone', prefix: '10.5555', watched: true, state: { verdict: 'dead', streak: 0 } })
    expect(body.checks.map((c: { kind: string; verdict: string }) => [c.kind, c.verdict])).toEqual([
      ['confirm', 'dead'],
      ['once', 'dead']
    ])
    expect(body.checks[0].at).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/)
    const unknown = await app.inject('/health.json?doi=10.5555/never-watched')
    expect(unknown.statusCode).toBe(404)
    expect(unknown.json()).toEqual({ message: expect.stringContaining('not watched') })
  })

  it('/health.csv is exactly doi,verdict,since,url,evidence, one row per broken DOI, as an attachment', async () => {
    const json = (await app.inject('/health.json?prefix=10.5555')).json()
    const [gone] = json.broken as Array<{ since: string; evidence: string }>
    const res = await app.inject('/health.csv?prefix=10.5555')
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8; header=present')
    const today = new Date().toISOString().slice(0, 10)
    expect(res.headers['content-disposition']).toBe(`attachment; filename="doi-health-10.5555-${today}.csv"`)
    expect(gone?.evidence).not.toMatch(/[",\r\n]/)
    expect(res.body).toBe(
      `doi,verdict,since,url,evidence\r\n10.5555/gone,dead,${gone?.since},${site.origin('journal.test')}/gone,${gone?.evidence}\r\n`
    )
  })

  it('/health.csv of all prefixes pages through every broken DOI', async () => {
    const res = await app.inject('/health.csv')
    const today = new Date().toISOString().slice(0, 10)
    expect(res.headers['content-disposition']).toBe(`attachment; filename="doi-health-all-${today}.csv"`)
    const lines = res.body.split('\r\n')
    expect(lines[0]).toBe('doi,verdict,since,url,evidence')
    expect(lines.at(-1)).toBe('')
    expect(lines).toHaveLength(1 + MANY + 2 + 1)
    expect(lines.slice(1, 3).map((l) => l.split(',')[0])).toEqual(['10.5555/gone', '10.6666/gone'])
  })

  it('is for the operators only: 403 outside STATUS_ALLOW and behind a proxy it cannot see past, never CORS', async () => {
    for (const url of ['/health', '/health.json', '/health.csv', '/health?doi=10.5555/gone']) {
      const outside = await app.inject({ url, remoteAddress: '203.0.113.9', headers: { origin: 'https://elsewhere.example' } })
      expect(outside.statusCode).toBe(403)
      expect(outside.body).toContain('STATUS_ALLOW')
      expect(outside.body).not.toContain('10.5555/gone,')
      expect(outside.headers['access-control-allow-origin']).toBeUndefined()
      expect(outside.headers['cache-control']).toBe('no-store')
      const proxied = await app.inject({ url, remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': '198.51.100.4' } })
      expect(proxied.statusCode).toBe(403)
      const inside = await app.inject({ url, headers: { origin: 'https://elsewhere.example' } })
      expect(inside.statusCode).toBe(200)
      expect(inside.headers['access-control-allow-origin']).toBeUndefined()
      expect(inside.headers['access-control-expose-headers']).toBeUndefined()
    }
  })
})

describe('/health with health off', () => {
  it('is 404 for the page, the JSON and the CSV', async () => {
    const { app: off } = await setup()
    for (const url of ['/health', '/health.json', '/health.csv']) {
      const res = await off.inject(url)
      expect(res.statusCode).toBe(404)
      expect(res.body).toContain('HEALTH_WATCH')
    }
    expect((await off.inject('/health.json')).json()).toEqual({ message: expect.stringContaining('off') })
  })

  it('builds no health service and no pages when no DOI is watched', async () => {
    let built: Services | undefined
    const { upstream: up } = await setup()
    const config: Config = testConfig(up.url)
    const off = await buildApp(config, { onServices: (s) => (built = s) })
    await off.close()
    expect(built?.health).toBeUndefined()
    expect(built?.healthPages).toBeUndefined()
  })
})

describe('resolution health in a serving process (issue 42, plan D8)', () => {
  it('checks a due DOI on its own once the server listens, and the host’s other workers read the same history', async () => {
    const here = mkdtempSync(join(tmpdir(), 'doi-proxy-health-serving-'))
    const landing = await FakeLandingSite.start({ pages: { '/p': pages.citationDoi('10.5555/due') } })
    const registry = await FakeUpstream.start({ '10.5555/due': [str(1, 'URL', `${landing.origin('journal.test')}/p`), admin()] })
    const apps: FastifyInstance[] = []
    try {
      const dbFile = join(here, 'health.sqlite')
      const list = join(here, 'watched.txt')
      writeFileSync(list, '10.5555/due\n')
      const config = testConfig(registry.url, {
        port: 0,
        healthListFile: list,
        healthDb: dbFile,
        healthIntervalSeconds: 60,
        healthKeepDays: 1,
        healthConfirmGapSeconds: 0,
        landingAllowPrivate: ['127.0.0.0/8'],
        landingHostDelayMs: 0,
        contactEmail: 'ops@example.org'
      })
      // Worker 2 starts before worker 1 has made the file: its pages say so (503) rather than fail.
      const second = await buildApp(config, { clusterWorker: { index: 2 } })
      apps.push(second)
      await second.ready()
      const early = await second.inject('/health.json')
      expect(early.statusCode).toBe(503)
      // The DOI watched two minutes ago (its first check due within an interval of then): due now.
      const seed = openHealthDb({
        file: dbFile,
        log: { info: () => {}, warn: () => {} },
        intervalMs: 60_000,
        checkpointEveryMs: 0,
        now: () => Date.now() - 120_000
      })
      seed.upsertWatched('list', [{ key: cacheKey('10.5555/due'), doi: '10.5555/due', prefix: '10.5555' }], seed.nextGeneration())
      await seed.close()
      // The writer (worker 1): the scheduler picks the DOI as it starts.
      let built: Services | undefined
      const first = await buildApp(config, {
        clusterWorker: { index: 1 },
        landingLookup: fakeLookup({ 'journal.test': '127.0.0.2' }),
        onServices: (s) => (built = s)
      })
      apps.push(first)
      await first.ready()
      expect(built?.health).toBeDefined()
      expect((await first.inject('/health.json')).json().checker.state).toBe('paused')
      await first.listen({ host: '127.0.0.1', port: 0 })
      await expect
        .poll(async () => (await first.inject('/health.json?doi=10.5555/due')).json().checks?.length ?? 0, {
          timeout: 90_000,
          interval: 250
        })
        .toBeGreaterThan(0)
      const mine = (await first.inject('/health.json?doi=10.5555/due')).json()
      expect(mine.checks[0]).toMatchObject({ kind: 'scheduled', verdict: 'alive', status: 200 })
      expect((await first.inject('/health.json')).json().checker.state).toBe('running')
      expect(landing.paths).toContain('/p')
      // Worker 2 reads the same history read-only, and the checker as worker 1 recorded it.
      await new Promise((resolve) => setTimeout(resolve, 1_100))
      const theirs = await second.inject('/health.json?doi=10.5555/due')
      expect(theirs.statusCode).toBe(200)
      expect(theirs.json().checks).toEqual(mine.checks)
      expect((await second.inject('/health.json')).json().checker.state).toBe('running')
    } finally {
      for (const a of apps.reverse()) await a.close()
      await registry.close()
      await landing.close()
      rmSync(here, { recursive: true, force: true })
    }
  }, 120_000)
})

describe('resolution health with WORKERS=2 (issue 42, plan D9)', () => {
  it('watches the DOIs of a watched prefix that either worker found, worker 1 writing them', async () => {
    const here = mkdtempSync(join(tmpdir(), 'doi-proxy-health-workers-'))
    const landing = await FakeLandingSite.start({ pages: {} })
    const dois = Array.from({ length: 20 }, (_, i) => `10.5555/w${i}`)
    const registry = await FakeUpstream.start(
      Object.fromEntries(dois.map((doi) => [doi, [str(1, 'URL', `${landing.origin()}/${doi}`), admin()]]))
    )
    try {
      const server = await startServer({
        WORKERS: '2',
        UPSTREAM_URL: registry.url,
        HEALTH_WATCH: '10.5555',
        HEALTH_DB: join(here, 'health.sqlite'),
        LANDING_ALLOW_PRIVATE: '127.0.0.0/8',
        LOG_REQUESTS: 'true',
        LOG_LEVEL: 'info'
      })
      await workersListening(server, 2)
      const origin = `http://127.0.0.1:${server.port}`
      // A connection each (no keep-alive), so the primary hands them to both workers.
      for (const doi of dois) expect(await statusOnNewConnection(`${origin}/${doi}`)).toBe(302)
      // Both workers answered some of them (the primary hands connections round robin).
      const answeredBy = new Set(
        server
          .output()
          .split('\n')
          .filter((line) => line.includes('"/10.5555/w'))
          .map((line) => (JSON.parse(line) as { pid: number }).pid)
      )
      expect(answeredBy.size).toBe(2)
      await expect
        .poll(
          async () => {
            const res = await fetch(`${origin}/health.json`)
            return res.status === 200
              ? ((await res.json()) as { prefixes: Array<{ counts: { unchecked: number } }> }).prefixes[0]?.counts.unchecked
              : res.status
          },
          { timeout: 30_000, interval: 250 }
        )
        .toBe(dois.length)
    } finally {
      await registry.close()
      await landing.close()
      rmSync(here, { recursive: true, force: true })
    }
  }, 90_000)
})

/** GET `url` on a connection of its own, closed after: its status. */
async function statusOnNewConnection(url: string): Promise<number | undefined> {
  return await new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode))
    }).on('error', reject)
  })
}

describe('one landing stack per process (issue 42: never a second prober)', () => {
  it('a page visited for ?verify=landing is not visited again by the health check of the same DOI', async () => {
    const here = mkdtempSync(join(tmpdir(), 'doi-proxy-health-shared-'))
    const landing = await FakeLandingSite.start({ pages: { '/shared': pages.citationDoi('10.5555/shared') } })
    try {
      const list = join(here, 'watched.txt')
      writeFileSync(list, '10.5555/shared\n')
      let built: Services | undefined
      const { app: shared } = await setup({
        records: { '10.5555/shared': [str(1, 'URL', `${landing.origin('journal.test')}/shared`), admin()] },
        overrides: {
          verifyLevels: ['landing'],
          healthListFile: list,
          healthDb: join(here, 'health.sqlite'),
          healthConfirmGapSeconds: 0,
          landingAllowPrivate: ['127.0.0.0/8'],
          landingHostDelayMs: 0,
          contactEmail: 'ops@example.org'
        },
        deps: { landingLookup: fakeLookup({ 'journal.test': '127.0.0.2' }), onServices: (s) => (built = s) }
      })
      const batch = await shared.inject({
        method: 'POST',
        url: '/api/batch?verify=landing',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify(['10.5555/shared'])
      })
      expect(batch.statusCode).toBe(200)
      expect(batch.body).toContain('"alive"')
      await built?.health?.runOnce(0, new AbortController().signal)
      const checks = (await shared.inject('/health.json?doi=10.5555/shared')).json().checks
      expect(checks).toEqual([expect.objectContaining({ kind: 'once', verdict: 'alive' })])
      expect(landing.paths.filter((p) => p === '/shared')).toEqual(['/shared'])
      await shared.close() // before its database goes (closed again, harmlessly, when the test ends)
    } finally {
      await landing.close()
      rmSync(here, { recursive: true, force: true })
    }
  })
})
