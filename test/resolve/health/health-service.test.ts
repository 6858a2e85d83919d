import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { cacheKey } from '../../../src/handle/name.js'
import { createMetrics } from '../../../src/observe/metrics.js'
import { createHealth } from '../../../src/resolve/health/health-service.js'
import type { HealthSettings } from '../../../src/resolve/health/health-service.js'
import { FakeLandingSite, pages } from '../../support/fake-landing.js'
import type { Page } from '../../support/fake-landing.js'
import { FakeUpstream } from '../../support/fake-upstream.js'
import { realChecker } from '../../support/health-checker.js'
import { fakeLookup } from '../../support/landing-dns.js'
import { admin, str } from '../../support/records.js'

// Issue 42: the checker's loop through the real database, the in-process fleet log, the real resolution and
// issue 41's landing prober, against fake sites on loopback; the clock is the test's.
const opened: Array<{ close: () => Promise<void> }> = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map(async (o) => await o.close()))
})

const INTERVAL_S = 3600
const PER_HOST = 2
const lookup = fakeLookup({ 'one.test': '127.0.0.2', 'two.test': '127.0.0.3' })

async function world(n: number) {
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-health-'))
  opened.push({ close: async () => rmSync(dir, { recursive: true, force: true }) })
  const table = (host: number): Record<string, Page> =>
    Object.fromEntries(
      Array.from({ length: n }, (_, i) => [`/w${i}`, pages.slow(150, i % 5 === 0 ? pages.status(404) : pages.citationDoi(`10.5555/w${i}`))])
    )
  const sites = [
    await FakeLandingSite.start({ host: '127.0.0.2', pages: table(0) }),
    await FakeLandingSite.start({ host: '127.0.0.3', pages: table(1) })
  ]
  opened.push(...sites)
  const upstream = await FakeUpstream.start({})
  opened.push(upstream)
  const names = ['one.test', 'two.test']
  for (let i = 0; i < n; i++) {
    upstream.set(`10.5555/w${i}`, [str(1, 'URL', `${sites[i % 2]!.origin(names[i % 2])}/w${i}`), admin()])
  }
  const list = join(dir, 'watch.txt')
  writeFileSync(list, Array.from({ length: n }, (_, i) => `10.5555/w${i}`).join('\n') + '\n')
  // No verdict kept: every check visits the page, so the sites count the checks.
  const checker = await realChecker(upstream, { lookup, perHost: PER_HOST, keepVerdicts: false }, opened)
  const settings: HealthSettings = {
    healthWatch: ['10.5555'],
    healthListFile: list,
    healthIntervalSeconds: INTERVAL_S,
    healthConfirm: 3,
    healthConfirmGapSeconds: 60,
    healthDb: join(dir, 'health.sqlite'),
    healthKeepDays: 30,
    healthConcurrency: 16,
    healthMaxDois: 1000,
    healthLogKeepSeconds: 3600,
    landingPerHost: PER_HOST,
    redisKeyPrefix: 'doi-proxy:'
  }
  let clock = Date.parse('2026-11-27T00:00:00Z')
  const start = async () => {
    const health = createHealth({ settings, checker, metrics: createMetrics(), log: pino({ level: 'silent' }), now: () => clock })
    await health.start()
    return health
  }
  const advance = (ms: number): void => {
    clock += ms
  }
  const visits = (i: number): number => sites[i % 2]!.paths.filter((p) => p === `/w${i}`).length
  return { sites, start, advance, visits }
}

async function settle(health: { tick: () => number; inFlight: () => number }): Promise<void> {
  for (let i = 0; i < 400; i++) {
    health.tick()
    if (health.inFlight() === 0 && health.tick() === 0) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error('the checks did not settle in 10 s')
}

describe('the health checker over the watched DOIs', () => {
  it('checks every listed DOI once within its first day, never more than LANDING_PER_HOST at once on a host', async () => {
    const w = await world(20)
    const health = await w.start()
    opened.push(health)
    w.advance(86_400_000)
    await settle(health)
    for (let i = 0; i < 20; i++) expect(w.visits(i), `10.5555/w${i}`).toBe(1)
    for (const site of w.sites) expect(site.peak).toBeLessThanOrEqual(PER_HOST)
    const counts = health.reader.summary({ days: 1 }).find((p) => p.prefix === '10.5555')?.counts
    // The four dead pages are failing, not yet confirmed: they have no verdict yet.
    expect(counts).toMatchObject({ alive: 16, dead: 0, unchecked: 4 })
  }, 60_000)

  it('confirms a dead page only after HEALTH_CONFIRM failures a gap apart, then lists it broken since the first', async () => {
    const w = await world(6)
    const health = await w.start()
    opened.push(health)
    w.advance(86_400_000)
    await settle(health)
    const firstFailure = health.reader.history(cacheKey('10.5555/w0'))?.checks[0]?.at
    expect(health.reader.broken().rows).toEqual([])
    w.advance(30_000) // less than the gap: not yet
    await settle(health)
    expect(w.visits(0)).toBe(1)
    w.advance(30_000)
    await settle(health)
    w.advance(60_000)
    await settle(health)
    expect(w.visits(0)).toBe(3)
    const broken = health.reader.broken().rows
    expect(broken.map((b) => [b.doi, b.verdict]).sort()).toEqual([
      ['10.5555/w0', 'dead'],
      ['10.5555/w5', 'dead']
    ])
    expect(broken.find((b) => b.doi === '10.5555/w0')?.since).toBe(firstFailure)
  }, 60_000)

  it('after a restart on the same database, checks no DOI again in the same interval', async () => {
    const w = await world(10)
    const first = await w.start()
    w.advance(86_400_000)
    await settle(first)
    await first.close()
    const second = await w.start()
    opened.push(second)
    w.advance(1_000)
    await settle(second)
    // Only the dead page's confirmations are due (a gap after its failure); the others wait for their next window.
    for (let i = 1; i < 10; i++) if (i % 5 !== 0) expect(w.visits(i), `10.5555/w${i}`).toBe(1)
  }, 60_000)
})
