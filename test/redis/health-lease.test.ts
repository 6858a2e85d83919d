import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import type { HealthEvent } from '../../src/handle/health/types.js'
import { createLease, type Lease, type LeaseChange } from '../../src/resolve/fleet/lease.js'
import { createFleetLog } from '../../src/resolve/health/fleet-log.js'
import { useReplicaConnections, useTestRedis } from '../support/redis.js'

// Issue 42, plan D8: one health checker for the whole fleet, by a lease in Redis. Replicas on one real
// redis-server, each with its own connection (as two processes would), on short times: a lease of 600 ms
// renewed every 150 ms.
const PREFIX = 'doi-proxy:health:1:{fleet}:'
const TTL = 600
const RENEW = 150
const redisServer = useTestRedis()
const connection = useReplicaConnections(redisServer, 300)
const leases: Lease[] = []

afterEach(async () => {
  await Promise.all(leases.splice(0).map(async (l) => await l.stop()))
})

/** A replica's lease, started, with every change it heard. */
async function replica(opts: { ttlMs?: number; renewMs?: number } = {}) {
  const changes: LeaseChange[] = []
  const lease = createLease({ redis: await connection(), prefix: PREFIX, ttlMs: opts.ttlMs ?? TTL, renewMs: opts.renewMs ?? RENEW })
  leases.push(lease)
  lease.start((change) => changes.push(change))
  return { lease, changes }
}

async function until(check: () => boolean, ms = 5_000): Promise<number> {
  const started = performance.now()
  while (!check()) {
    if (performance.now() - started > ms) throw new Error(`not within ${ms} ms`)
    await sleep(10)
  }
  return performance.now() - started
}

const check = (key: string): HealthEvent => ({
  v: 1,
  t: 'check',
  key,
  doi: key,
  prefix: '10.5555',
  at: 1_790_000_000_000,
  kind: 'scheduled',
  verdict: 'alive',
  status: 200,
  registeredUrl: 'https://journal.test/a',
  finalUrl: 'https://journal.test/a',
  evidence: 'citation_doi names the DOI',
  ms: 120,
  state: {
    verdict: 'alive',
    since: 1_790_000_000_000,
    confirmedAt: 1_790_000_000_000,
    streak: 0,
    streakVerdict: null,
    streakFirstAt: null,
    streakLastAt: null,
    window: 2959,
    retries: 0,
    nextAt: 1_790_604_800_000
  }
})

describe('the health checker lease', () => {
  it('is held by the first replica to bid, as holding number 1', async () => {
    const a = await replica()
    await until(() => a.lease.held())
    expect(a.changes).toEqual([{ state: 'held', epoch: 1 }])
    expect(a.lease.epoch()).toBe(1)
    const admin = redisServer().client()
    expect(await admin.get(`${PREFIX}lease`)).toBe(a.lease.token())
    admin.disconnect()
  })

  it('refuses a rival while the holder renews, for many times its length', async () => {
    const a = await replica()
    await until(() => a.lease.held())
    const b = await replica()
    await sleep(TTL * 3)
    expect(a.lease.held()).toBe(true)
    expect(b.lease.held()).toBe(false)
    expect(b.lease.state()).toBe('elsewhere')
    expect(a.changes).toEqual([{ state: 'held', epoch: 1 }])
    expect(b.changes).toEqual([{ state: 'elsewhere' }])
  })

  it("goes to a rival once a dead holder's lease runs out, and not before", async () => {
    // A holder that died: its lease stands until its time is up, nobody releases it.
    const admin = redisServer().client()
    await admin.set(`${PREFIX}lease`, 'a-replica-that-died', 'PX', 800)
    await admin.set(`${PREFIX}epoch`, '6')
    const b = await replica()
    const took = await until(() => b.lease.held())
    expect(took).toBeGreaterThan(600)
    expect(took).toBeLessThan(2_000)
    expect(b.lease.epoch()).toBe(7)
    admin.disconnect()
  })

  it('goes to a rival at once when the holder stops (it gives the lease up)', async () => {
    const a = await replica({ ttlMs: 10_000, renewMs: 200 })
    await until(() => a.lease.held())
    const b = await replica({ ttlMs: 10_000, renewMs: 200 })
    await sleep(50)
    await a.lease.stop()
    expect(a.changes.at(-1)).toEqual({ state: 'stopped' })
    // Within one bid's wait, not the lease's 10 s.
    expect(await until(() => b.lease.held())).toBeLessThan(2_000)
    expect(b.lease.epoch()).toBe(2)
  })

  it("refuses the old holder's publish once another holds the lease (fencing)", async () => {
    const a = await replica()
    await until(() => a.lease.held())
    // The old holder, paused (a long GC, a frozen VM), still believes its token: it is written under it later.
    const staleToken = a.lease.token()
    await a.lease.stop()
    const b = await replica()
    await until(() => b.lease.held())
    const spare = await connection()
    const logOf = (token: () => string | undefined) =>
      createFleetLog({
        redis: spare,
        prefix: PREFIX,
        lease: { key: b.lease.key, token },
        keepMs: 3_600_000,
        apply: () => true,
        position: () => '0-0'
      })
    expect(await logOf(() => staleToken).publish(check('10.5555/OLD'))).toEqual({ ok: false, reason: 'not-holder' })
    const fresh = await logOf(() => b.lease.token()).publish(check('10.5555/NEW'))
    expect(fresh.ok).toBe(true)
    const admin = redisServer().client()
    const entries = await admin.xrange(`${PREFIX}log`, '-', '+')
    expect(entries.map(([, fields]) => JSON.parse(fields[1] ?? '') as { key: string }).map((e) => e.key)).toEqual(['10.5555/NEW'])
    admin.disconnect()
  })

  it('stops the holder at once when a renewal finds another token', async () => {
    const a = await replica()
    await until(() => a.lease.held())
    const admin = redisServer().client()
    await admin.set(`${PREFIX}lease`, 'someone-else', 'PX', 60_000)
    expect(await until(() => !a.lease.held())).toBeLessThan(RENEW + 500)
    expect(a.changes.at(-1)).toEqual({ state: 'elsewhere', reason: 'the lease was taken over or expired' })
    expect(a.lease.token()).toBeUndefined()
    await sleep(TTL)
    expect(a.lease.held()).toBe(false)
    expect(await admin.get(`${PREFIX}lease`)).toBe('someone-else')
    admin.disconnect()
  })

  it('stops the holder when its lease runs out with nobody renewing it', async () => {
    // Renewed far too late for its time: the holding ends on our clock, whatever Redis would say.
    const a = await replica({ ttlMs: 300, renewMs: 5_000 })
    await until(() => a.lease.held())
    expect(await until(() => a.lease.state() === 'elsewhere')).toBeLessThan(1_000)
    expect(a.lease.held()).toBe(false)
    expect(a.changes).toContainEqual({ state: 'elsewhere', reason: 'the lease was not renewed in its time' })
  })

  it('pauses both replicas while Redis is stopped, and one resumes when it is back', async () => {
    const a = await replica()
    await until(() => a.lease.held())
    const b = await replica()
    await until(() => b.lease.state() === 'elsewhere')
    await redisServer().kill()
    try {
      await until(() => a.lease.state() === 'paused' && b.lease.state() === 'paused')
      expect(a.lease.held()).toBe(false)
      expect(a.lease.token()).toBeUndefined()
      expect(a.changes.find((c) => c.state === 'paused')?.reason).toMatch(/^the lease could not be renewed: Redis did not answer/)
      expect(b.changes.at(-1)?.reason).toMatch(/^Redis did not answer/)
    } finally {
      await redisServer().run()
    }
    await until(() => a.lease.held() || b.lease.held())
    await sleep(TTL * 2)
    expect([a.lease.held(), b.lease.held()].filter(Boolean)).toHaveLength(1)
    expect([a.lease.state(), b.lease.state()].sort()).toEqual(['elsewhere', 'held'])
  })

  it('stops at once while Redis does not answer', async () => {
    const a = await replica()
    await until(() => a.lease.held())
    await redisServer().kill()
    try {
      const started = performance.now()
      await a.lease.stop()
      expect(performance.now() - started).toBeLessThan(1_000)
      expect(a.lease.state()).toBe('stopped')
    } finally {
      await redisServer().run()
    }
  })

  it('bids only once the replica is ready (its copy of the log read to the end), and pauses while it cannot be', async () => {
    const admin = redisServer().client()
    let ready = false
    let asked = 0
    const changes: LeaseChange[] = []
    const lease = createLease({
      redis: await connection(),
      prefix: PREFIX,
      ttlMs: TTL,
      renewMs: RENEW,
      beforeBid: async () => {
        asked++
        if (!ready) throw new Error('the health log could not be read')
      }
    })
    leases.push(lease)
    lease.start((change) => changes.push(change))
    await until(() => asked >= 2)
    expect(lease.held()).toBe(false)
    expect(await admin.exists(`${PREFIX}lease`)).toBe(0)
    expect(changes).toEqual([{ state: 'paused', reason: 'not ready to bid: the health log could not be read' }])
    ready = true
    await until(() => lease.held())
    expect(changes.at(-1)).toEqual({ state: 'held', epoch: 1 })
    admin.disconnect()
  })

  it('is held by the one process from the start without Redis', () => {
    const changes: LeaseChange[] = []
    const lease = createLease({ redis: undefined, prefix: PREFIX, ttlMs: TTL, renewMs: RENEW })
    leases.push(lease)
    lease.start((change) => changes.push(change))
    expect(lease.held()).toBe(true)
    expect(lease.token()).toEqual(expect.any(String))
    expect(changes).toEqual([{ state: 'held', epoch: 0 }])
  })
})
