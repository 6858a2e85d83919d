import { createHash } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { addressRulesOf } from '../../src/handle/address-rules.js'
import type { LandingLookup } from '../../src/resolve/landing/address-guard.js'
import { createFleetHostSlots } from '../../src/resolve/landing/fleet-host-slots.js'
import { createLandingChecks } from '../../src/resolve/landing/landing-checks.js'
import { createLandingProber, type LandingProber } from '../../src/resolve/landing/prober.js'
import { setup } from '../support/app.js'
import { FakeLandingSite, pages } from '../support/fake-landing.js'
import { fakeLookup, slowFirst } from '../support/landing-dns.js'
import { str } from '../support/records.js'
import { useReplicaConnections, useTestRedis } from '../support/redis.js'

// Issue 41: the replicas are polite together. Two probers (two replicas) on one real redis-server
// against one site: LANDING_PER_HOST in flight and LANDING_HOST_DELAY_MS between starts hold for both
// together; with Redis gone each keeps its own limits.
const DOI = '10.1234/fleet.1'
const redisServer = useTestRedis()
const lookup = fakeLookup({ 'a.test': '127.0.0.2' })
const opened: Array<{ close: () => Promise<void> }> = []
const redis = useReplicaConnections(redisServer, 500)

afterEach(async () => {
  await Promise.all(opened.splice(0).map(async (o) => await o.close()))
})

async function site(): Promise<FakeLandingSite> {
  const s = await FakeLandingSite.start({
    pages: { '/fast': pages.citationDoi(DOI), '/slow': pages.slow(150, pages.citationDoi(DOI)) }
  })
  opened.push(s)
  return s
}

/** A replica's prober: its own Redis connection, its host slots shared with the fleet. */
async function replica(perHost: number, hostDelayMs: number, lookupOf: LandingLookup = lookup): Promise<LandingProber> {
  const p = createLandingProber({
    userAgent: 'doi-proxy/test landing-check',
    timeoutMs: 5_000,
    maxBytes: 64 * 1024,
    perHost,
    hostDelayMs,
    robotsTtlMs: 60_000,
    rules: addressRulesOf(['127.0.0.2/32']),
    lookup: lookupOf,
    retryBaseMs: 10,
    hostSlots: createFleetHostSlots({
      redis: await redis(),
      prefix: 'doi-proxy:landing:1:',
      perHost,
      delayMs: hostDelayMs,
      leaseMs: 6_000,
      pollMs: 10
    })
  })
  opened.push(p)
  return p
}

const probeAll = async (p: LandingProber, s: FakeLandingSite, path: string, n: number, tag: string) =>
  await Promise.all(
    Array.from({ length: n }, async (_, i) => await p.probe({ doi: DOI, url: `${s.origin('a.test')}${path}?${tag}${i}`, titles: [] }))
  )

describe('host slots across the fleet', () => {
  it('has at most LANDING_PER_HOST requests in flight at one host across two replicas', async () => {
    const s = await site()
    const [a, b] = [await replica(2, 0), await replica(2, 0)]
    const results = (await Promise.all([probeAll(a, s, '/slow', 5, 'a'), probeAll(b, s, '/slow', 5, 'b')])).flat()
    expect(results.map((r) => r.verdict)).toEqual(Array(10).fill('alive'))
    expect(s.peak).toBe(2)
  })

  it('waits LANDING_HOST_DELAY_MS between two starts at one host across two replicas', async () => {
    const s = await site()
    const [a, b] = [await replica(4, 150), await replica(4, 150)]
    await Promise.all([probeAll(a, s, '/fast', 3, 'a'), probeAll(b, s, '/fast', 3, 'b')])
    const starts = s.seen.map((r) => r.at)
    expect(starts).toHaveLength(8) // each replica's robots.txt, then the six pages
    // Measured where the fake sees each request come: a new connection's setup may shift one by a few ms.
    for (const [i, t] of starts.slice(1).entries()) expect(t - (starts[i] ?? 0)).toBeGreaterThanOrEqual(120)
  })

  it('counts LANDING_HOST_DELAY_MS from when a request is written, across two replicas', async () => {
    // Replica a's first name lookup takes 600 ms: its slot must hold b's next start until a's request is written.
    const s = await site()
    const [a, b] = [await replica(2, 300, slowFirst(lookup, 600)), await replica(2, 300)]
    await Promise.all([probeAll(a, s, '/fast', 2, 'a'), probeAll(b, s, '/fast', 2, 'b')])
    const starts = s.seen.map((r) => r.at)
    expect(starts).toHaveLength(6) // each replica's robots.txt, then the four pages
    for (const [i, t] of starts.slice(1).entries()) expect(t - (starts[i] ?? 0)).toBeGreaterThanOrEqual(290)
  })

  it('probes a DOI once across two replicas', async () => {
    const s = await site()
    const checks = async () =>
      createLandingChecks({
        prober: await replica(2, 0),
        ttlMs: 60_000,
        shortTtlMs: 60_000,
        maxEntries: 10,
        redis: await redis(),
        pollMs: 10
      })
    const [a, b] = [await checks(), await checks()]
    const url = `${s.origin('a.test')}/slow`
    const [x, y] = await Promise.all([a.check(DOI, url, []), b.check(DOI, url, [])])
    expect(x.verdict).toBe('alive')
    expect(y).toEqual(x)
    expect(s.paths.filter((p) => p !== '/robots.txt')).toEqual(['/slow'])
  })

  it('probes anew when what Redis holds for the DOI is not a verdict', async () => {
    const s = await site()
    const url = `${s.origin('a.test')}/fast`
    const key = createHash('sha256').update(`${DOI}\n${url}`).digest('hex')
    const planted = await redis()
    await planted.set(
      `doi-proxy:landing:1:answer:${key}`,
      JSON.stringify({ verdict: 'alive<script>', status: 200, url, evidence: 'x' }),
      'PX',
      60_000
    )
    const checks = createLandingChecks({
      prober: await replica(2, 0),
      ttlMs: 60_000,
      shortTtlMs: 60_000,
      maxEntries: 10,
      redis: await redis()
    })
    expect((await checks.check(DOI, url, [])).verdict).toBe('alive')
    expect(s.paths.filter((p) => p !== '/robots.txt')).toEqual(['/fast'])
  })

  it('keeps each replica to its own limits when Redis is stopped', async () => {
    const s = await site()
    const a = await replica(2, 0)
    await redisServer().kill()
    try {
      const started = performance.now()
      const results = await probeAll(a, s, '/slow', 6, 'a')
      expect(results.map((r) => r.verdict)).toEqual(Array(6).fill('alive'))
      expect(s.peak).toBe(2)
      expect(performance.now() - started).toBeLessThan(3_000)
    } finally {
      await redisServer().run()
    }
  })
})

describe('two servers with one REDIS_URL', () => {
  it('visit each landing page once and keep LANDING_PER_HOST between them', async () => {
    const s = await FakeLandingSite.start({ pages: { '/slow': pages.slow(150, pages.status(200)) } })
    opened.push(s)
    const dois = Array.from({ length: 8 }, (_, i) => `10.1234/page.${i}`)
    const records = Object.fromEntries(dois.map((doi, i) => [doi, [str(1, 'URL', `${s.origin('a.test')}/slow?${i}`)]]))
    const replica = async () =>
      await setup({
        records,
        overrides: {
          redisUrl: redisServer().url,
          landingAllowPrivate: ['127.0.0.2/32'],
          landingPerHost: 1,
          landingHostDelayMs: 0,
          landingTimeoutMs: 2000
        },
        deps: { landingLookup: lookup }
      })
    const [a, b] = await Promise.all([replica(), replica()])
    const ask = async (app: typeof a.app) =>
      await app.inject({
        method: 'POST',
        url: '/api/batch?verify=landing',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify(dois)
      })
    const answers = await Promise.all([ask(a.app), ask(b.app)])
    for (const res of answers) {
      const verdicts = res.body
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => (JSON.parse(l) as { landing: { verdict: string } }).landing.verdict)
      expect(verdicts).toEqual(dois.map(() => 'unconfirmed'))
    }
    expect(s.peak).toBe(1)
    expect(s.seen.filter((r) => r.path.startsWith('/slow'))).toHaveLength(dois.length)
  })
})
