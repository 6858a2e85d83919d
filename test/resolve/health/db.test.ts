import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { ConfigError } from '../../../src/config/schema.js'
import { startCheckpointer } from '../../../src/resolve/health/checkpointer.js'
import { logIdAfter, openHealthDb } from '../../../src/resolve/health/db.js'
import type { HealthDb, OpenHealthDbOptions } from '../../../src/resolve/health/db.js'
import { migrate, MIGRATIONS } from '../../../src/resolve/health/migrations.js'
import { AT, checkEvent, eventAt, random, stateOf, watched } from '../../support/health-writer.js'

// The health history on a real SQLite file (issue 42, plan D2–D7, §9).

const root = mkdtempSync(join(tmpdir(), 'doi-proxy-health-db-'))
afterAll(() => {
  rmSync(root, { recursive: true, force: true })
})
const opened: HealthDb[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map(async (db) => await db.close().catch(() => undefined)))
})

let n = 0
const freshFile = (): string => join(root, `h${++n}`, 'health.sqlite')
const warnings: string[] = []
const log = {
  info() {},
  warn: (_: object, msg: string) => {
    warnings.push(msg)
  }
}
function open(file: string | undefined, more: Partial<OpenHealthDbOptions> = {}): HealthDb {
  const db = openHealthDb({ file, log, now: () => AT, checkpointEveryMs: 0, ...more })
  opened.push(db)
  return db
}

/** `tally` as it is kept, and as the DOIs count it. */
function tallies(db: HealthDb): { kept: unknown[]; counted: unknown[] } {
  return {
    kept: db.sqlite.prepare('SELECT prefix, verdict, n FROM tally ORDER BY prefix, verdict').all(),
    counted: db.sqlite
      .prepare('SELECT prefix, verdict, count(*) AS n FROM dois WHERE sources <> 0 GROUP BY prefix, verdict ORDER BY prefix, verdict')
      .all()
  }
}

describe('opening the health history', () => {
  it('makes a new file in WAL mode with incremental vacuum, at the current schema, at log position 0-0', () => {
    const file = freshFile()
    const db = open(file)
    expect(db.logPosition()).toBe('0-0')
    expect(db.sqlite.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(db.sqlite.pragma('auto_vacuum', { simple: true })).toBe(2)
    expect(db.sqlite.pragma('synchronous', { simple: true })).toBe(1)
    expect(db.sqlite.pragma('user_version', { simple: true })).toBe(MIGRATIONS.at(-1)?.version)
    expect(existsSync(file)).toBe(true)
  })

  it('keeps what was applied across a close and a reopen', async () => {
    const file = freshFile()
    const first = open(file)
    first.upsertWatched('list', [watched(1)], first.nextGeneration())
    expect(first.applyEvent('5-0', checkEvent(watched(1), AT, 'alive'))).toBe(true)
    await first.close()
    const again = open(file)
    expect(again.logPosition()).toBe('5-0')
    expect(tallies(again).kept).toEqual([{ prefix: '10.6666', verdict: 'alive', n: 1 }])
    expect(again.applyEvent('5-0', checkEvent(watched(1), AT, 'dead'))).toBe(false)
  })

  it('refuses a file written by a newer version (start refused naming HEALTH_DB), leaving it as it was', () => {
    const file = freshFile()
    open(file)
    const raw = new Database(file)
    raw.pragma('user_version = 99')
    raw.close()
    const before = readFileSync(file)
    expect(() => openHealthDb({ file, log })).toThrow(ConfigError)
    expect(() => openHealthDb({ file, log })).toThrow(/HEALTH_DB.*newer doi-proxy.*schema version 99/)
    expect(readFileSync(file).equals(before)).toBe(true)
  })

  it('sets aside a file that is not a database (never deleted) and starts a new one, with a warning', () => {
    const file = freshFile()
    open(file).close()
    writeFileSync(file, 'this is not a database, but it is somebody’s file'.repeat(200))
    const db = open(file)
    expect(db.logPosition()).toBe('0-0')
    const aside = readdirSync(join(file, '..')).filter((name) => name.startsWith('health.sqlite.corrupt-'))
    expect(aside).toHaveLength(1)
    expect(readFileSync(join(file, '..', aside[0] ?? '')).toString()).toContain('not a database')
    expect(warnings.at(-1)).toMatch(/set aside/)
  })

  it('copies a file that holds data before migrating it, each step in its own transaction with the version', () => {
    const file = freshFile()
    const db = open(file)
    db.upsertWatched('store', [watched(2)], db.nextGeneration())
    const v2 = [...MIGRATIONS, { version: 2, up: (d: Database.Database) => d.exec('ALTER TABLE dois ADD COLUMN note TEXT') }]
    expect(migrate(db.sqlite, file, v2)).toEqual({ from: 1, to: 2, backup: `${file}.v1.bak` })
    expect(db.sqlite.pragma('user_version', { simple: true })).toBe(2)
    const backup = new Database(`${file}.v1.bak`, { readonly: true })
    expect(backup.pragma('user_version', { simple: true })).toBe(1)
    expect(backup.prepare('SELECT key FROM dois').all()).toEqual([{ key: '10.5555/k2' }])
    backup.close()
  })

  it('leaves the file at its version when a step fails half way', () => {
    const file = freshFile()
    const db = open(file)
    const broken = [
      ...MIGRATIONS,
      {
        version: 2,
        up: (d: Database.Database) => {
          d.exec('CREATE TABLE half (x)')
          throw new Error('step failed')
        }
      }
    ]
    expect(() => migrate(db.sqlite, undefined, broken)).toThrow('step failed')
    expect(db.sqlite.pragma('user_version', { simple: true })).toBe(1)
    expect(db.sqlite.prepare("SELECT name FROM sqlite_schema WHERE name = 'half'").get()).toBeUndefined()
  })

  it('keeps a history in memory when HEALTH_DB is empty', () => {
    const db = open('')
    expect(db.file).toBeUndefined()
    expect(db.applyEvent('1-0', checkEvent(watched(3), AT, 'dead'))).toBe(true)
  })
})

describe('applying the fleet log', () => {
  it('compares stream ids as numbers: 10-0 is after 9-5, 9-10 after 9-9', () => {
    const db = open(freshFile())
    expect(db.applyEvent('9-5', checkEvent(watched(1), AT, 'alive'))).toBe(true)
    expect(db.applyEvent('10-0', checkEvent(watched(1), AT + 1, 'alive'))).toBe(true)
    expect(db.applyEvent('9-10', checkEvent(watched(1), AT + 2, 'alive'))).toBe(false)
    expect(db.logPosition()).toBe('10-0')
    expect(logIdAfter('9-10', '9-9')).toBe(true)
    expect(logIdAfter('1700000000000-0', '999999999999-99')).toBe(true)
    expect(() => db.applyEvent('10', checkEvent(watched(1), AT, 'alive'))).toThrow(/not a log id/)
  })

  it('changes nothing for an event already applied', () => {
    const db = open(freshFile())
    db.applyEvent('3-0', checkEvent(watched(1), AT, 'alive'))
    const count = () => db.sqlite.prepare('SELECT count(*) AS n FROM checks').get()
    const before = count()
    expect(db.applyEvent('3-0', checkEvent(watched(1), AT, 'dead'))).toBe(false)
    expect(db.applyEvent('2-7', checkEvent(watched(1), AT, 'dead'))).toBe(false)
    expect(count()).toEqual(before)
  })

  it('records a check with its DOI state, interned URLs with their registrable domain, and the last good check', () => {
    const db = open(freshFile())
    const doi = watched(4)
    db.upsertWatched('store', [doi], db.nextGeneration())
    db.applyEvent('1-0', checkEvent(doi, AT, 'alive', { result: { finalUrl: 'https://www.journal.co.uk/a' } }))
    db.applyEvent(
      '2-0',
      checkEvent(doi, AT + 10, 'dead', {
        state: stateOf('alive', AT, { streak: 1, streakVerdict: 'dead', streakFirstAt: AT + 10, streakLastAt: AT + 10 })
      })
    )
    const row = db.sqlite.prepare('SELECT verdict, streak, streak_verdict, host, last_check_id, last_good_check_id FROM dois').get()
    expect(row).toEqual({
      verdict: 'alive',
      streak: 1,
      streak_verdict: 'dead',
      host: 'host3.example',
      last_check_id: 2,
      last_good_check_id: 1
    })
    expect(db.sqlite.prepare("SELECT domain FROM urls WHERE url = 'https://www.journal.co.uk/a'").get()).toEqual({
      domain: 'journal.co.uk'
    })
    const [due] = db.due(AT + 604_800_000 + 10, 10)
    expect(due?.lastGood).toEqual({ url: 'https://www.journal.co.uk/a', domain: 'journal.co.uk', at: AT })
    expect(due?.state.streakVerdict).toBe('dead')
  })

  it("keeps the last check that saw the page when ours fails (an error is recorded, it is not the DOI's last check)", () => {
    const db = open(freshFile())
    db.applyEvent('1-0', checkEvent(watched(5), AT, 'dead'))
    db.applyEvent('2-0', checkEvent(watched(5), AT + 1, 'error', { state: stateOf('dead', AT, { retries: 1 }) }))
    expect(db.sqlite.prepare('SELECT last_check_id, retries FROM dois').get()).toEqual({ last_check_id: 1, retries: 1 })
    expect(db.sqlite.prepare('SELECT count(*) AS n FROM checks').get()).toEqual({ n: 2 })
  })

  it('keeps a check of a DOI no source here watches, off the counts', () => {
    const db = open(freshFile())
    db.applyEvent('1-0', checkEvent(watched(6), AT, 'dead'))
    expect(db.watchedCount()).toBe(0)
    expect(db.sqlite.prepare('SELECT sources FROM dois').get()).toEqual({ sources: 0 })
  })

  it('watches a DOI announced as seen, once', () => {
    const db = open(freshFile())
    db.applyEvent('1-0', { v: 1, t: 'watch', ...watched(7), source: 'seen' })
    db.applyEvent('2-0', { v: 1, t: 'watch', ...watched(7), source: 'seen' })
    expect(db.watchedCount()).toBe(1)
    expect(tallies(db).kept).toEqual([{ prefix: '10.6666', verdict: 'unchecked', n: 1 }])
  })

  it('keeps the counts equal to the DOIs counted by prefix and verdict after 1,000 random events and syncs', () => {
    const db = open(freshFile())
    const rnd = random(42)
    for (let i = 1; i <= 1000; i++) {
      if (i % 100 === 0) {
        const generation = db.nextGeneration()
        const source = rnd() < 0.5 ? 'store' : 'list'
        db.upsertWatched(
          source,
          Array.from({ length: 120 }, () => watched(Math.floor(rnd() * 300))),
          generation
        )
        db.sweepSources(source, generation)
      }
      db.applyEvent(`${i}-0`, eventAt(i))
    }
    const { kept, counted } = tallies(db)
    expect(kept).toEqual(counted)
    expect((kept as Array<{ n: number }>).reduce((sum, row) => sum + row.n, 0)).toBeGreaterThan(50)
  })

  it('mends counts that do not match the DOIs when it opens, with a warning', async () => {
    const file = freshFile()
    const db = open(file)
    db.upsertWatched('list', [watched(1), watched(2)], db.nextGeneration())
    db.sqlite.exec("UPDATE tally SET n = 40 WHERE verdict = 'unchecked'")
    await db.close()
    const again = open(file)
    expect(warnings.at(-1)).toMatch(/counts did not match/)
    const { kept, counted } = tallies(again)
    expect(kept).toEqual(counted)
  })
})

describe('the watched DOIs', () => {
  it('are due in time order, a new one within a day, and no longer once their only source drops them', () => {
    const db = open(freshFile(), { intervalMs: 7 * 86_400_000 })
    const g1 = db.nextGeneration()
    expect(db.upsertWatched('list', [watched(1), watched(2), watched(3)], g1)).toEqual({ added: 3, refused: 0 })
    db.upsertWatched('store', [watched(3)], db.nextGeneration())
    const due = db.due(AT + 86_400_000, 10)
    expect(due.map((d) => d.key).sort()).toEqual(['10.5555/k2', '10.6666/k1', '10.6666/k3'])
    expect(due.map((d) => d.state.nextAt)).toEqual([...due.map((d) => d.state.nextAt)].sort((a, b) => a - b))
    expect(db.due(AT + 86_400_000, 2)).toHaveLength(2)
    expect(db.nextDueAt()).toBe(due[0]?.state.nextAt)

    // The list now names only k1: k2 leaves the watch; k3 stays, the store watches it.
    const g2 = db.nextGeneration()
    db.upsertWatched('list', [watched(1)], g2)
    expect(db.sweepSources('list', g2)).toBe(2)
    expect(
      db
        .due(AT + 86_400_000, 10)
        .map((d) => d.key)
        .sort()
    ).toEqual(['10.6666/k1', '10.6666/k3'])
    expect(db.watchedCount()).toBe(2)
    expect(tallies(db).kept).toEqual(tallies(db).counted)
  })

  it('stop at HEALTH_MAX_DOIS: the ones beyond are refused and counted', () => {
    const db = open(freshFile(), { maxDois: 2 })
    expect(db.upsertWatched('list', [watched(1), watched(2), watched(3)], db.nextGeneration())).toEqual({ added: 2, refused: 1 })
    db.applyEvent('1-0', { v: 1, t: 'watch', ...watched(9), source: 'seen' })
    expect(db.watchedCount()).toBe(2)
    expect(db.refused()).toBe(2)
  })

  it('keep their titles for the checker', () => {
    const db = open(freshFile())
    db.upsertWatched('list', [watched(1)], db.nextGeneration())
    db.setTitles('10.6666/k1', ['A title', 'Its subtitle'], AT)
    expect(db.due(AT + 86_400_000, 1)[0]).toMatchObject({ titles: ['A title', 'Its subtitle'], titlesAt: AT })
  })
})

describe('a read-only connection (the other workers of the host)', () => {
  it('sees what the writer committed, and cannot write', () => {
    const file = freshFile()
    const writer = open(file)
    const reader = open(file, { readonly: true })
    writer.upsertWatched('list', [watched(1)], writer.nextGeneration())
    writer.applyEvent('1-0', checkEvent(watched(1), AT, 'alive'))
    expect(reader.logPosition()).toBe('1-0')
    expect(reader.watchedCount()).toBe(1)
    expect(() => reader.applyEvent('2-0', checkEvent(watched(1), AT, 'dead'))).toThrow(/read-only/)
    expect(() => reader.sqlite.exec('DELETE FROM dois')).toThrow(/readonly/)
  })

  it('is refused for a file the writer has not made yet', () => {
    expect(() => openHealthDb({ file: freshFile(), readonly: true, log })).toThrow(/HEALTH_DB/)
  })
})

describe('checkpoints on a thread of their own', () => {
  it('copy the log into the file and truncate it past its limit, while the writer commits without checkpointing', async () => {
    const file = freshFile()
    const db = open(file)
    expect(db.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(1000)
    db.sqlite.pragma('wal_autocheckpoint = 0')
    for (let i = 1; i <= 300; i++) db.applyEvent(`${i}-0`, eventAt(i))
    expect(statSync(`${file}-wal`).size).toBeGreaterThan(0)
    const checkpointer = startCheckpointer(file, { everyMs: 20, truncateBytes: 0 })
    try {
      await expect.poll(() => statSync(`${file}-wal`).size, { timeout: 5000 }).toBe(0)
    } finally {
      await checkpointer.stop()
    }
    // A writer opened with the thread turns SQLite's own off.
    const threaded = open(freshFile(), { checkpointEveryMs: 1000 })
    expect(threaded.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(0)
  })
})
