import { afterEach, describe, expect, it } from 'vitest'
import { openHealthDb } from '../../../src/resolve/health/db.js'
import type { HealthDb } from '../../../src/resolve/health/db.js'
import { createPruner } from '../../../src/resolve/health/prune.js'
import { AT, checkEvent, watched } from '../../support/health-writer.js'

// HEALTH_KEEP_DAYS and the rest of the history's bounds (issue 42, plan D3, §9): old checks go in small batches,
// a watched DOI's last good check stays, DOIs nobody watches go once they have no check left, old chart days go.

const DAY = 86_400_000
const opened: HealthDb[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map(async (db) => await db.close()))
})

let clock = AT
let seq = 0
function history(): HealthDb {
  seq = 0
  clock = AT
  const db = openHealthDb({ file: undefined, log: { info() {}, warn() {} }, now: () => clock })
  opened.push(db)
  return db
}
const count = (db: HealthDb, sql: string): number => (db.sqlite.prepare(sql).get() as { n: number }).n

describe('pruning the health history', () => {
  it('deletes the checks older than HEALTH_KEEP_DAYS, at most 500 to a transaction, and keeps the newer', async () => {
    const db = history()
    const dois = Array.from({ length: 30 }, (_, n) => watched(n))
    db.upsertWatched('store', dois, db.nextGeneration())
    // 1,230 checks a day apart per DOI over 41 days: 30 days kept.
    for (let day = 0; day < 41; day++) {
      for (const doi of dois) db.applyEvent(`${++seq}-0`, checkEvent(doi, AT + day * DAY, 'dead'))
    }
    clock = AT + 40 * DAY
    const result = await createPruner(db, { keepDays: 30, now: () => clock }).runOnce()
    expect(result.checks).toBe(10 * 30)
    expect(count(db, 'SELECT count(*) AS n FROM checks')).toBe(31 * 30)
    expect(count(db, `SELECT min(at) AS n FROM checks`)).toBe(AT + 10 * DAY)

    const small = history()
    small.upsertWatched('store', dois, small.nextGeneration())
    for (let i = 0; i < 1234; i++) small.applyEvent(`${++seq}-0`, checkEvent(dois[i % 30] ?? watched(0), AT + i, 'dead'))
    clock = AT + 100 * DAY
    const pruner = createPruner(small, { keepDays: 30, now: () => clock, batch: 500 })
    const counted = await pruner.runOnce()
    expect(counted.checks).toBe(1234)
    // rollup, three delete batches (500, 500, 234), the DOIs, the days, the vacuum.
    expect(counted.batches).toBe(7)
  })

  it("keeps a watched DOI's last good check however old, for the page's last good URL", async () => {
    const db = history()
    const doi = watched(1)
    db.upsertWatched('list', [doi], db.nextGeneration())
    db.applyEvent('1-0', checkEvent(doi, AT, 'alive'))
    db.applyEvent('2-0', checkEvent(doi, AT + DAY, 'dead'))
    clock = AT + 400 * DAY
    db.applyEvent('3-0', checkEvent(doi, clock, 'dead'))
    await createPruner(db, { keepDays: 365, now: () => clock }).runOnce()
    expect(db.sqlite.prepare('SELECT at, verdict FROM checks ORDER BY at').all()).toEqual([
      { at: AT, verdict: 0 },
      { at: clock, verdict: 3 }
    ])
  })

  it('deletes a DOI no source watches once its last check is gone, and never a watched one', async () => {
    const db = history()
    db.upsertWatched('list', [watched(1), watched(2)], db.nextGeneration())
    db.applyEvent('1-0', checkEvent(watched(1), AT, 'dead'))
    db.applyEvent('2-0', checkEvent(watched(2), AT, 'dead'))
    const generation = db.nextGeneration()
    db.upsertWatched('list', [watched(2)], generation)
    db.sweepSources('list', generation)
    clock = AT + 10 * DAY
    const pruner = createPruner(db, { keepDays: 30, now: () => clock })
    expect((await pruner.runOnce()).dois).toBe(0)
    clock = AT + 31 * DAY
    expect(await pruner.runOnce()).toMatchObject({ checks: 2, dois: 1 })
    expect(db.sqlite.prepare('SELECT key FROM dois').all()).toEqual([{ key: '10.5555/k2' }])
  })

  it("writes today's point of the chart from the counts, and deletes the days beyond the keep", async () => {
    const db = history()
    db.upsertWatched('list', [watched(1)], db.nextGeneration())
    const pruner = createPruner(db, { keepDays: 3, now: () => clock })
    for (let day = 0; day < 6; day++) {
      clock = AT + day * DAY
      if (day === 2) db.applyEvent('1-0', checkEvent(watched(1), clock, 'alive'))
      await pruner.runOnce()
    }
    expect(db.sqlite.prepare('SELECT day, verdict, n FROM daily ORDER BY day').all()).toEqual([
      { day: '2026-11-03', verdict: 'alive', n: 1 },
      { day: '2026-11-04', verdict: 'alive', n: 1 },
      { day: '2026-11-05', verdict: 'alive', n: 1 },
      { day: '2026-11-06', verdict: 'alive', n: 1 }
    ])
  })

  it('runs once at a time, and stops between batches', async () => {
    const db = history()
    const dois = Array.from({ length: 10 }, (_, n) => watched(n))
    db.upsertWatched('store', dois, db.nextGeneration())
    for (let i = 0; i < 3000; i++) db.applyEvent(`${++seq}-0`, checkEvent(dois[i % 10] ?? watched(0), AT + i, 'dead'))
    clock = AT + 100 * DAY
    const pruner = createPruner(db, { keepDays: 30, now: () => clock, batch: 100 })
    const first = pruner.runOnce()
    expect(pruner.runOnce()).toBe(first)
    await pruner.stop()
    const left = count(db, 'SELECT count(*) AS n FROM checks')
    expect(left).toBeGreaterThan(0)
    expect(left).toBeLessThan(3000)
    expect((await pruner.runOnce()).checks).toBe(left)
  })
})
