import { afterEach, describe, expect, it } from 'vitest'
import type { FailureVerdict } from '../../../src/handle/health/types.js'
import { openHealthDb } from '../../../src/resolve/health/db.js'
import type { HealthDb, WatchedDoi } from '../../../src/resolve/health/db.js'
import { createPruner } from '../../../src/resolve/health/prune.js'
import { createHealthReader } from '../../../src/resolve/health/reader.js'
import { AT, checkEvent, stateOf, watched } from '../../support/health-writer.js'

// What the health pages read (issue 42, plan D6, §5), from a history in memory filled through the fleet log's events.

const DAY = 86_400_000
const opened: HealthDb[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map(async (db) => await db.close()))
})

let clock = AT
let seq = 0
function history(): HealthDb {
  clock = AT
  seq = 0
  const db = openHealthDb({ file: undefined, log: { info() {}, warn() {} }, now: () => clock })
  opened.push(db)
  return db
}
const apply = (db: HealthDb, ...args: Parameters<typeof checkEvent>): void => {
  db.applyEvent(`${++seq}-0`, checkEvent(...args))
}
/** A DOI seen alive, then confirmed broken with `verdict` at `at`. */
function broken(db: HealthDb, doi: WatchedDoi, verdict: FailureVerdict, at: number): void {
  apply(db, doi, at - 10 * DAY, 'alive', { result: { finalUrl: `https://journal.example/${doi.key}` } })
  apply(db, doi, at, verdict, { state: stateOf(verdict, at, { since: at - DAY, confirmedAt: at }) })
}

describe('the health reader', () => {
  it('counts the DOIs of each prefix by verdict, watched prefixes first seen empty, with newly broken and overdue', () => {
    const db = history()
    db.upsertWatched(
      'list',
      [1, 2, 3, 4, 5].map((n) => watched(n, '10.5555')),
      db.nextGeneration()
    )
    broken(db, watched(1, '10.5555'), 'dead', AT)
    broken(db, watched(2, '10.5555'), 'takeover', AT - 9 * DAY)
    apply(db, watched(3, '10.5555'), AT, 'alive')
    clock = AT + 3 * DAY
    const reader = createHealthReader(db, { watched: ['10.5555', '10.7777'], now: () => clock })
    const [first, second] = reader.summary()
    expect(first).toMatchObject({
      prefix: '10.5555',
      watched: true,
      counts: { alive: 1, dead: 1, takeover: 1, unchecked: 2, unconfirmed: 0 },
      newlyBroken: 1,
      // The two unchecked were due within a day of being added, the takeover's next check 2 days ago.
      overdue: 3,
      history: []
    })
    expect(second).toMatchObject({ prefix: '10.7777', watched: true, newlyBroken: 0, overdue: 0 })
    expect(reader.checkerStatus()).toEqual({ lastCheckAt: AT, overdue: 3 })
  })

  it('lists the broken DOIs with their evidence and last good URL, by prefix, a page at a time', () => {
    const db = history()
    const prefixes = ['10.5555', '10.6666']
    const dois = Array.from({ length: 25 }, (_, n) => watched(n, prefixes[n % 2]))
    db.upsertWatched('store', dois, db.nextGeneration())
    dois.forEach((doi, n) => {
      const verdict = (['dead', 'not-found', 'takeover', 'no-url'] as const)[n % 4] ?? 'dead'
      apply(db, doi, AT - 10 * DAY, 'alive', { result: { finalUrl: `https://journal.example/${n}` } })
      apply(db, doi, AT + n, verdict, { state: stateOf(verdict, AT + n, { since: AT - DAY }) })
    })
    apply(db, watched(99, '10.5555'), AT, 'alive')
    const reader = createHealthReader(db, { now: () => AT })
    const seen: string[] = []
    let after: string | undefined
    let pages = 0
    do {
      const page = reader.broken({ after, limit: 7 })
      seen.push(...page.rows.map((row) => row.doi))
      after = page.next ?? undefined
      pages++
    } while (after !== undefined)
    expect(pages).toBe(4)
    expect(new Set(seen).size).toBe(25)
    expect(seen.slice(0, 13).every((doi) => doi.startsWith('10.5555/'))).toBe(true)

    const [row] = reader.broken({ prefix: '10.6666', limit: 1 }).rows
    expect(row).toEqual({
      // By verdict, then time confirmed: no-url (K3) before not-found (K1, K5).
      doi: '10.6666/K3',
      prefix: '10.6666',
      verdict: 'no-url',
      since: AT - DAY,
      confirmedAt: AT + 3,
      url: 'https://www.host3.example/article/10.6666/k3',
      status: 404,
      evidence: 'HTTP 404 at https://www.host3.example/article/10.6666/k3',
      registeredUrl: 'https://host3.example/10.6666/k3',
      lastGoodUrl: 'https://journal.example/3',
      lastGoodAt: AT - 10 * DAY,
      checkedAt: AT + 3
    })
    expect(reader.broken({ prefix: '10.6666' }).rows).toHaveLength(12)
    expect(() => reader.broken({ after: 'not-a-cursor' })).toThrow(RangeError)
  })

  it('shows newly broken DOIs, newest first, and leaves out those confirmed before', () => {
    const db = history()
    db.upsertWatched(
      'store',
      [1, 2, 3].map((n) => watched(n)),
      db.nextGeneration()
    )
    broken(db, watched(1), 'dead', AT - 8 * DAY)
    broken(db, watched(2), 'not-found', AT - 2 * DAY)
    broken(db, watched(3), 'dead', AT - DAY)
    const reader = createHealthReader(db, { now: () => AT })
    expect(reader.newlyBroken(AT - 7 * DAY).map((row) => [row.doi, row.verdict])).toEqual([
      ['10.6666/K3', 'dead'],
      ['10.5555/K2', 'not-found']
    ])
  })

  it("gives one DOI's state and its checks, newest first", () => {
    const db = history()
    db.upsertWatched('seen', [watched(1)], db.nextGeneration())
    apply(db, watched(1), AT, 'alive')
    apply(db, watched(1), AT + DAY, 'dead', { kind: 'scheduled', state: stateOf('alive', AT, { streak: 1, streakVerdict: 'dead' }) })
    apply(db, watched(1), AT + 2 * DAY, 'dead', { kind: 'confirm', state: stateOf('alive', AT, { streak: 2, streakVerdict: 'dead' }) })
    const reader = createHealthReader(db, { now: () => AT })
    const one = reader.history('10.6666/k1', 2)
    expect(one?.state).toMatchObject({ verdict: 'alive', streak: 2, streakVerdict: 'dead' })
    expect(one?.watched).toBe(true)
    expect(one?.checks.map((c) => [c.at, c.kind, c.verdict, c.status, c.domain])).toEqual([
      [AT + 2 * DAY, 'confirm', 'dead', 404, 'host3.example'],
      [AT + DAY, 'scheduled', 'dead', 404, 'host3.example']
    ])
    expect(reader.history('10.6666/nothing')).toBeNull()
  })

  it('draws one point a day from the hourly rollup, today from the live counts', () => {
    const db = history()
    db.upsertWatched('list', [watched(1), watched(3)], db.nextGeneration())
    const pruner = createPruner(db, { keepDays: 30, now: () => clock })
    pruner.rollup()
    clock = AT + DAY
    apply(db, watched(1), clock, 'alive')
    pruner.rollup()
    clock = AT + 2 * DAY
    apply(db, watched(3), clock, 'dead')
    const reader = createHealthReader(db, { now: () => clock })
    expect(reader.daily('10.6666', 7).map(({ day, counts }) => [day, counts.alive, counts.dead, counts.unchecked])).toEqual([
      ['2026-11-01', 0, 0, 2],
      ['2026-11-02', 1, 0, 1],
      ['2026-11-03', 1, 1, 0]
    ])
    expect(reader.summary({ days: 2 })[0]?.history.map((point) => point.day)).toEqual(['2026-11-02', '2026-11-03'])
  })

  it('says where the history has a gap', () => {
    const db = history()
    db.recordGap(AT, AT + DAY)
    db.recordGap(AT + 2 * DAY, AT + 3 * DAY)
    expect(createHealthReader(db).checkerStatus().historyGap).toEqual({ from: AT, to: AT + 3 * DAY })
  })
})
