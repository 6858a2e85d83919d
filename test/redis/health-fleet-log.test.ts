import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { compareLogIds } from '../../src/handle/health/log-id.js'
import type { HealthEvent } from '../../src/handle/health/types.js'
import { createLease, type Lease } from '../../src/resolve/fleet/lease.js'
import { createRedisClient, waitConnected } from '../../src/resolve/fleet/redis.js'
import { createFleetLog, type FleetLog, type FleetLogOptions } from '../../src/resolve/health/fleet-log.js'
import { TestCluster, useReplicaConnections, useTestRedis } from '../support/redis.js'

// Issue 42, plan D8: every replica's health database is a copy fed by the fleet log, a Redis stream that only
// the lease's holder writes checks to. Replicas on one real redis-server, each with its own connection and a
// small database in memory (the real one's contract: apply skips an id at or before its position).
const PREFIX = 'doi-proxy:health:1:{fleet}:'
const LOG = `${PREFIX}log`
const HOUR = 3_600_000
const redisServer = useTestRedis()
const connection = useReplicaConnections(redisServer, 300)
const stoppable: Array<Lease | FleetLog> = []

afterEach(async () => {
  await Promise.all(stoppable.splice(0).map(async (s) => await s.stop()))
})

/** A replica's database as the log sees it: the events applied in order, and its position. */
class MemoryDb {
  position = '0-0'
  readonly applied: Array<{ id: string; event: HealthEvent }> = []
  apply = (id: string, event: HealthEvent): boolean => {
    if (compareLogIds(id, this.position) <= 0) return false
    this.applied.push({ id, event })
    this.position = id
    return true
  }

  get keys(): string[] {
    return this.applied.map((a) => a.event.key)
  }
}

interface Replica {
  db: MemoryDb
  log: FleetLog
  lease: Lease
  gaps: Array<{ from: string; to: string }>
  errors: string[]
}

/** A replica: its lease (started when `bid`), its log (reading when `read`), its database. */
async function replica(
  opts: { bid?: boolean; read?: boolean; db?: MemoryDb; keepMs?: number } & Partial<FleetLogOptions> = {}
): Promise<Replica> {
  const redis = await connection()
  const db = opts.db ?? new MemoryDb()
  const lease = createLease({ redis, prefix: PREFIX, ttlMs: 2_000, renewMs: 500 })
  const gaps: Replica['gaps'] = []
  const errors: string[] = []
  const log = createFleetLog({
    redis,
    prefix: PREFIX,
    lease,
    keepMs: opts.keepMs ?? HOUR,
    apply: db.apply,
    position: () => db.position,
    onGap: (gap) => gaps.push(gap),
    onError: (err) => errors.push(err.message),
    blockMs: opts.blockMs ?? 1_000,
    ...(opts.count === undefined ? {} : { count: opts.count })
  })
  stoppable.push(log, lease)
  if (opts.bid === true) {
    lease.start()
    await until(() => lease.held())
  }
  if (opts.read !== false) log.start()
  return { db, log, lease, gaps, errors }
}

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const started = performance.now()
  while (!check()) {
    if (performance.now() - started > ms) throw new Error(`not within ${ms} ms`)
    await sleep(10)
  }
}

const AT = 1_790_000_000_000

type Check = Extract<HealthEvent, { t: 'check' }>

function check(key: string, overrides: Partial<Check> = {}): Check {
  return {
    v: 1,
    t: 'check',
    key,
    doi: key,
    prefix: key.slice(0, key.indexOf('/')).toLowerCase(),
    at: AT,
    kind: 'scheduled',
    verdict: 'dead',
    status: 404,
    registeredUrl: 'https://journal.test/a',
    finalUrl: 'https://journal.test/a',
    evidence: 'HTTP 404 at https://journal.test/a',
    ms: 120,
    state: {
      verdict: 'alive',
      since: AT - 86_400_000,
      confirmedAt: AT - 86_400_000,
      streak: 1,
      streakVerdict: 'dead',
      streakFirstAt: AT,
      streakLastAt: AT,
      window: 2959,
      retries: 0,
      nextAt: AT + 21_600_000
    },
    ...overrides
  }
}

const watch = (key: string): HealthEvent => ({ v: 1, t: 'watch', key, doi: key, prefix: key.slice(0, key.indexOf('/')), source: 'seen' })

describe('the health log without Redis', () => {
  it('applies each event at once, with ids that only grow', async () => {
    const db = new MemoryDb()
    let clock = AT
    const log = createFleetLog({ prefix: PREFIX, keepMs: HOUR, apply: db.apply, position: () => db.position, now: () => clock })
    const ids: string[] = []
    for (const key of ['10.5555/A', '10.5555/B']) {
      const out = await log.publish(check(key))
      if (out.ok) ids.push(out.id)
    }
    clock += 5
    const third = await log.publish(watch('10.5555/c'))
    if (third.ok) ids.push(third.id)
    expect(ids).toEqual([`${AT}-0`, `${AT}-1`, `${AT + 5}-0`])
    expect(db.keys).toEqual(['10.5555/A', '10.5555/B', '10.5555/c'])
    expect(db.position).toBe(`${AT + 5}-0`)
  })

  it('writes after the database position even when the clock is behind it', async () => {
    const db = new MemoryDb()
    db.position = `${AT + 60_000}-7`
    const log = createFleetLog({ prefix: PREFIX, keepMs: HOUR, apply: db.apply, position: () => db.position, now: () => AT })
    expect(await log.publish(check('10.5555/A'))).toEqual({ ok: true, id: `${AT + 60_000}-8` })
    expect(db.keys).toEqual(['10.5555/A'])
  })

  it('refuses an event the log cannot carry, and applies nothing', async () => {
    const db = new MemoryDb()
    const log = createFleetLog({ prefix: PREFIX, keepMs: HOUR, apply: db.apply, position: () => db.position })
    expect(await log.publish(check('10.5555/A', { prefix: '10.9999' }))).toEqual({ ok: false, reason: 'refused' })
    expect(db.applied).toEqual([])
  })
})

describe('the health log in Redis', () => {
  it("copies the checker's checks to every replica, in the order they were made, with the same ids", async () => {
    const checker = await replica({ bid: true })
    const other = await replica()
    const keys = Array.from({ length: 50 }, (_, i) => `10.5555/D${i}`)
    const ids: string[] = []
    for (const key of keys) {
      const out = await checker.log.publish(check(key))
      expect(out.ok).toBe(true)
      if (out.ok) ids.push(out.id)
    }
    await until(() => checker.db.applied.length === 50 && other.db.applied.length === 50)
    for (const r of [checker, other]) {
      expect(r.db.keys).toEqual(keys)
      expect(r.db.applied.map((a) => a.id)).toEqual(ids)
      expect(r.db.applied[0]?.event).toEqual(check('10.5555/D0'))
      expect(r.gaps).toEqual([])
      expect(r.errors).toEqual([])
    }
  })

  it('writes no check from a replica that does not hold the lease, and any replica’s seen DOI', async () => {
    const checker = await replica({ bid: true })
    const other = await replica()
    other.lease.start()
    await sleep(100)
    expect(await other.log.publish(check('10.5555/NOT-MINE'))).toEqual({ ok: false, reason: 'not-holder' })
    expect((await other.log.publish(watch('10.5555/seen-on-b'))).ok).toBe(true)
    await until(() => checker.db.applied.length === 1)
    expect(checker.db.applied.map((a) => a.event)).toEqual([watch('10.5555/seen-on-b')])
    const admin = redisServer().client()
    expect(await admin.xlen(LOG)).toBe(1)
    admin.disconnect()
  })

  it('resumes from the database position: only the later entries are read', async () => {
    const checker = await replica({ bid: true, read: false })
    const ids: string[] = []
    for (const key of ['10.5555/A', '10.5555/B', '10.5555/C']) {
      const out = await checker.log.publish(check(key))
      if (out.ok) ids.push(out.id)
    }
    const db = new MemoryDb()
    db.position = ids[0] ?? ''
    const restarted = await replica({ db })
    await until(() => db.applied.length === 2)
    await sleep(200)
    expect(db.keys).toEqual(['10.5555/B', '10.5555/C'])
    expect(restarted.gaps).toEqual([])
  })

  it('drains the whole log before this replica bids, in reads of at most COUNT entries', async () => {
    const checker = await replica({ bid: true, read: false })
    for (let i = 0; i < 120; i++) expect((await checker.log.publish(check(`10.5555/D${i}`))).ok).toBe(true)
    const late = await replica({ read: false, count: 50 })
    expect(await late.log.drain()).toBe(true)
    expect(late.db.keys).toEqual(Array.from({ length: 120 }, (_, i) => `10.5555/D${i}`))
  })

  it('trims entries older than HEALTH_LOG_KEEP_SECONDS, and a replica that was away longer is told of its gap', async () => {
    const admin = redisServer().client()
    // One entry per node of the stream, so the approximate trim (MINID ~) removes each old entry.
    await admin.config('SET', 'stream-node-max-entries', '1')
    const checker = await replica({ bid: true, keepMs: 300 })
    const early: string[] = []
    for (const key of ['10.5555/OLD1', '10.5555/OLD2']) {
      const out = await checker.log.publish(check(key))
      if (out.ok) early.push(out.id)
    }
    await until(() => checker.db.applied.length === 2)
    // A replica that read the first entry, then went away.
    const away = new MemoryDb()
    away.position = early[0] ?? ''
    await sleep(400)
    const after = await checker.log.publish(check('10.5555/NEW'))
    expect(after.ok).toBe(true)
    expect(await admin.xlen(LOG)).toBe(1)
    await until(() => checker.db.applied.length === 3)
    expect(checker.gaps).toEqual([])
    const back = await replica({ db: away, keepMs: 300 })
    await until(() => away.applied.length === 1)
    expect(away.keys).toEqual(['10.5555/NEW'])
    expect(back.gaps).toEqual([{ from: early[0], to: after.ok ? after.id : '' }])
    // A new database meets the gap too: history before the stream's first entry is not in it.
    const fresh = await replica({ keepMs: 300 })
    await until(() => fresh.db.applied.length === 1)
    expect(fresh.gaps).toEqual([{ from: '0-0', to: after.ok ? after.id : '' }])
    await admin.config('SET', 'stream-node-max-entries', '100')
    admin.disconnect()
  })

  it('reports no gap to a new database when nothing was trimmed', async () => {
    const checker = await replica({ bid: true, read: false })
    await checker.log.publish(check('10.5555/A'))
    const fresh = await replica()
    await until(() => fresh.db.applied.length === 1)
    expect(fresh.gaps).toEqual([])
  })

  it('skips entries that are not events, whatever Redis holds, and applies the rest in order', async () => {
    const checker = await replica({ bid: true, read: false })
    const admin = redisServer().client()
    const good = check('10.5555/GOOD')
    const planted: Array<string | Buffer> = [
      'not json',
      JSON.stringify({ ...good, verdict: 'alive<script>' }),
      JSON.stringify({ ...good, prefix: '10.9999' }),
      JSON.stringify({ ...good, state: { ...good.state, nextAt: 1e300 } }),
      JSON.stringify({ ...good, ms: -1 }),
      JSON.stringify({ ...good, v: 2 }),
      JSON.stringify([good]),
      JSON.stringify({ ...good, key: `10.5555/${'x'.repeat(2000)}` }),
      JSON.stringify({ ...good, evidence: 'x'.repeat(200_000) }),
      Buffer.from([0xff, 0xfe, 0x00])
    ]
    for (const text of planted) await admin.xadd(LOG, '*', 'e', text)
    await admin.xadd(LOG, '*', 'other', 'field')
    // The known fields, kept; an unknown one and a prototype's name, dropped.
    await admin.xadd(LOG, '*', 'e', JSON.stringify(good).replace('{', '{"__proto__":{"polluted":true},"extra":"<b>",'))
    await checker.log.publish(check('10.5555/LAST'))
    const r = await replica()
    await until(() => r.db.applied.length === 2)
    await sleep(200)
    expect(r.db.applied.map((a) => a.event)).toEqual([good, check('10.5555/LAST')])
    expect(Object.keys(r.db.applied[0]?.event ?? {})).not.toContain('extra')
    expect(Object.getPrototypeOf(r.db.applied[0]?.event)).toBe(Object.prototype)
    expect(r.errors).toHaveLength(planted.length + 1)
    expect(r.errors[0]).toMatch(/^health log entry \d+-\d+ is not an event: skipped$/)
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined()
    admin.disconnect()
  })

  it('stops at once while its read waits for new entries', async () => {
    const r = await replica({ blockMs: 5_000 })
    await sleep(100)
    const started = performance.now()
    await r.log.stop()
    expect(performance.now() - started).toBeLessThan(500)
  })

  it('goes on reading once Redis is back, and stops at once while it is down', async () => {
    const checker = await replica({ bid: true })
    const other = await replica()
    expect((await checker.log.publish(check('10.5555/BEFORE'))).ok).toBe(true)
    await until(() => other.db.applied.length === 1)
    await redisServer().kill()
    try {
      await until(() => other.errors.length > 0 && !checker.lease.held())
      expect(await checker.log.publish(check('10.5555/WHILE-DOWN'))).toEqual({ ok: false, reason: 'not-holder' })
    } finally {
      await redisServer().run()
    }
    await until(() => checker.lease.held())
    expect((await checker.log.publish(check('10.5555/AFTER'))).ok).toBe(true)
    await until(() => other.db.applied.length === 2)
    expect(other.db.keys).toEqual(['10.5555/BEFORE', '10.5555/AFTER'])
    await redisServer().kill()
    try {
      const started = performance.now()
      await other.log.stop()
      expect(performance.now() - started).toBeLessThan(500)
    } finally {
      await redisServer().run()
    }
  })

  it('reads an entry again after an apply that failed (the disk), and none is lost', async () => {
    const checker = await replica({ bid: true, read: false })
    for (const key of ['10.5555/A', '10.5555/B']) await checker.log.publish(check(key))
    const db = new MemoryDb()
    let fail = 1
    const apply = db.apply
    db.apply = (id, event) => {
      if (event.key === '10.5555/B' && fail-- > 0) throw new Error('SQLITE_FULL: database or disk is full')
      return apply(id, event)
    }
    const r = await replica({ db })
    await until(() => db.applied.length === 2)
    expect(db.keys).toEqual(['10.5555/A', '10.5555/B'])
    expect(r.errors).toEqual(['SQLITE_FULL: database or disk is full'])
  })
})

describe('the health log on a Redis Cluster', () => {
  let cluster: TestCluster | undefined
  beforeAll(async () => {
    cluster = await TestCluster.start()
  }, 30_000)
  afterAll(async () => {
    await cluster?.close()
  })

  async function clusterReplica(db = new MemoryDb()) {
    const redis = createRedisClient({
      topology: { kind: 'cluster', nodes: [{ host: '127.0.0.1', port: cluster?.masters[0]?.port ?? 0 }] },
      commandTimeoutMs: 1_000,
      connectTimeoutMs: 1_000
    })
    onTestFinished(() => {
      redis.disconnect()
    })
    expect(await waitConnected(redis, 5_000)).toBe(true)
    const lease = createLease({ redis, prefix: PREFIX, ttlMs: 2_000, renewMs: 500 })
    const errors: string[] = []
    const log = createFleetLog({
      redis,
      prefix: PREFIX,
      lease,
      keepMs: HOUR,
      apply: db.apply,
      position: () => db.position,
      onError: (err) => errors.push(err.message),
      blockMs: 1_000
    })
    stoppable.push(log, lease)
    return { db, lease, log, errors, redis }
  }

  // The lease, its epoch and the log share one hash tag: one slot, so the scripts that touch them together run.
  it("copies the checker's checks to the other replica, and refuses a stale holder's", async () => {
    const checker = await clusterReplica()
    checker.lease.start()
    await until(() => checker.lease.held())
    const other = await clusterReplica()
    other.log.start()
    const stale = createFleetLog({
      redis: checker.redis,
      prefix: PREFIX,
      lease: { key: checker.lease.key, token: () => 'a-holder-long-gone' },
      keepMs: HOUR,
      apply: () => true,
      position: () => '0-0'
    })
    expect(await stale.publish(check('10.5555/STALE'))).toEqual({ ok: false, reason: 'not-holder' })
    const keys = Array.from({ length: 20 }, (_, i) => `10.5555/C${i}`)
    for (const key of keys) expect((await checker.log.publish(check(key))).ok).toBe(true)
    await until(() => other.db.applied.length === 20)
    expect(other.db.keys).toEqual(keys)
    expect(other.errors).toEqual([])
  })
})
