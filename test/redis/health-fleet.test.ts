import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pino from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { cacheKey } from '../../src/handle/name.js'
import { slotOf, windowOf } from '../../src/handle/health/schedule.js'
import { openHealthDb } from '../../src/resolve/health/db.js'
import type { HealthSettings } from '../../src/resolve/health/health-service.js'
import { createHealthReader } from '../../src/resolve/health/reader.js'
import { FakeLandingSite, pages } from '../support/fake-landing.js'
import { FakeUpstream } from '../support/fake-upstream.js'
import type { ReplicaOptions } from '../support/health-replica.js'
import { admin, str } from '../support/records.js'
import { useTestRedis } from '../support/redis.js'

// Issue 42 item 2: one checker for the whole fleet. Two replicas as real processes, each with its own history file,
// share one redis-server; the holder is killed (SIGKILL: it gives nothing up) in the middle of the interval's first
// checks, and the other takes over. Short times: an interval of 20 s, a lease of 1 s renewed every 250 ms.
const redisServer = useTestRedis()
const opened: Array<{ close: () => Promise<void> }> = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map(async (o) => await o.close()))
})

const N = 40
const INTERVAL_MS = 20_000
const LEASE_TTL_MS = 1_000
const PER_HOST = 2
const NAMES = { 'one.test': '127.0.0.2', 'two.test': '127.0.0.3' }

interface Replica {
  child: ChildProcess
  states: Array<{ state: string; at: number }>
  output: () => string
  db: string
}

async function world() {
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-health-fleet-'))
  opened.push({ close: async () => rmSync(dir, { recursive: true, force: true }) })
  const table = Object.fromEntries(Array.from({ length: N }, (_, i) => [`/w${i}`, pages.slow(200, pages.citationDoi(`10.5555/w${i}`))]))
  const sites = [
    await FakeLandingSite.start({ host: '127.0.0.2', pages: table }),
    await FakeLandingSite.start({ host: '127.0.0.3', pages: table })
  ]
  opened.push(...sites)
  const upstream = await FakeUpstream.start({})
  opened.push(upstream)
  const names = Object.keys(NAMES)
  for (let i = 0; i < N; i++) upstream.set(`10.5555/w${i}`, [str(1, 'URL', `${sites[i % 2]!.origin(names[i % 2])}/w${i}`), admin()])
  const list = join(dir, 'watch.txt')
  writeFileSync(list, Array.from({ length: N }, (_, i) => `10.5555/w${i}`).join('\n') + '\n')

  const start = async (name: string): Promise<Replica> => {
    const settings: HealthSettings = {
      healthWatch: ['10.5555'],
      healthListFile: list,
      healthIntervalSeconds: INTERVAL_MS / 1000,
      healthConfirm: 3,
      healthConfirmGapSeconds: 5,
      healthDb: join(dir, `${name}.sqlite`),
      healthKeepDays: 30,
      healthConcurrency: 16,
      healthMaxDois: 1000,
      healthLogKeepSeconds: 3600,
      landingPerHost: PER_HOST,
      redisKeyPrefix: 'doi-proxy:'
    }
    const opts: ReplicaOptions = {
      upstream: upstream.url,
      redis: redisServer().url,
      names: NAMES,
      settings,
      leaseTtlMs: LEASE_TTL_MS,
      leaseRenewMs: 250
    }
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/health-replica.ts', JSON.stringify(opts)], {
      stdio: ['ignore', 'pipe', 'pipe']
    })
    opened.push({
      close: async () => {
        child.kill('SIGKILL')
      }
    })
    const replica: Replica = { child, states: [], output: () => out, db: join(dir, `${name}.sqlite`) }
    let out = ''
    child.stderr?.on('data', (c: Buffer) => {
      out += c.toString()
    })
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString()
      for (const m of c.toString().matchAll(/^state (\w+)$/gm)) replica.states.push({ state: m[1]!, at: Date.now() })
    })
    return replica
  }
  // The landing requests for each DOI (robots.txt aside), with the epoch time each came.
  const visits = (): Array<{ doi: string; at: number }> => {
    const skew = Date.now() - performance.now()
    return sites.flatMap((s) => s.seen.filter((r) => r.path.startsWith('/w')).map((r) => ({ doi: `10.5555${r.path}`, at: r.at + skew })))
  }
  return { sites, start, visits }
}

async function until(what: string, check: () => boolean, ms: number, replicas: Replica[]): Promise<void> {
  const started = performance.now()
  while (!check()) {
    if (performance.now() - started > ms) {
      throw new Error(`${what}: not within ${ms} ms\n${replicas.map((r) => r.output()).join('\n---\n')}`)
    }
    await sleep(20)
  }
}

const last = (r: Replica): string | undefined => r.states.at(-1)?.state

describe('the health checker of a fleet of two replicas on one redis-server', () => {
  it('goes to the other replica when its holder is killed mid-interval, and no DOI is checked twice in a window', async () => {
    const w = await world()
    const a = await w.start('a')
    await until('replica a holds the lease', () => last(a) === 'running', 30_000, [a])
    const b = await w.start('b')
    await until('replica b sees the checker elsewhere', () => last(b) === 'elsewhere', 30_000, [a, b])

    // Mid-interval: a has checked some DOIs, not all (the first checks are spread over the 20 s).
    await until('a third of the DOIs checked', () => new Set(w.visits().map((v) => v.doi)).size >= N / 3, 30_000, [a, b])
    expect(new Set(w.visits().map((v) => v.doi)).size).toBeLessThan(N)
    a.child.kill('SIGKILL')
    const killedAt = Date.now()

    await until('replica b takes over', () => last(b) === 'running', 10_000, [a, b])
    const tookOver = b.states.find((s) => s.state === 'running')!.at
    // Not before the dead holder's lease ran out, and soon after (a lease and a renewal).
    expect(tookOver - killedAt).toBeGreaterThan(LEASE_TTL_MS / 2)
    expect(tookOver - killedAt).toBeLessThan(LEASE_TTL_MS + 4_000)
    // b's own history, read as b writes it: a's checks before the kill (through the fleet's log), its own after.
    const db = openHealthDb({ file: b.db, readonly: true, log: pino({ level: 'silent' }), now: Date.now })
    opened.push(db)
    const reader = createHealthReader(db, { watched: ['10.5555'], now: Date.now })
    const dois = Array.from({ length: N }, (_, i) => `10.5555/w${i}`)
    const checksOf = (doi: string) => reader.history(cacheKey(doi), 100)?.checks ?? []
    await until('every DOI checked and recorded', () => dois.every((doi) => checksOf(doi).length > 0), INTERVAL_MS + 15_000, [b])
    const stopped = new Promise((resolve) => b.child.once('exit', resolve))
    b.child.kill('SIGTERM')
    await stopped

    let recorded = 0
    let recordedBeforeKill = 0
    for (const doi of dois) {
      const key = cacheKey(doi)
      const checks = checksOf(doi)
      const windows = checks.map((c) => windowOf(c.at, slotOf(key, INTERVAL_MS), INTERVAL_MS))
      expect(new Set(windows).size, `${doi} checked twice in one window`).toBe(windows.length)
      recorded += checks.length
      recordedBeforeKill += checks.filter((c) => c.at < killedAt).length
      // A visit never recorded is a check cut short (a's when it was killed, b's when it stopped): at most one a DOI.
      const visits = w.visits().filter((v) => v.doi === doi).length
      expect(visits - checks.length, doi).toBeGreaterThanOrEqual(0)
      expect(visits - checks.length, doi).toBeLessThanOrEqual(1)
    }
    expect(recordedBeforeKill).toBeGreaterThanOrEqual(N / 3 - PER_HOST * 2)
    // Cut short: at most what a had in flight when killed and b when stopped, LANDING_PER_HOST a host each.
    expect(w.visits().length - recorded).toBeLessThanOrEqual(2 * PER_HOST * w.sites.length)
    for (const site of w.sites) expect(site.peak).toBeLessThanOrEqual(PER_HOST)
  }, 90_000)
})
