import { mkdir, mkdtemp, rm, unlink, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createSources, SOURCE_BIT, SYNC_BATCH } from '../../../src/resolve/health/sources.js'
import type { Sources, SourcesOptions, WatchedRow, WatchedSink, WatchSource } from '../../../src/resolve/health/sources.js'
import { openLocalStore } from '../../../src/resolve/local-store/store.js'
import type { LocalStore } from '../../../src/resolve/local-store/store.js'
import { urlRecord } from '../../support/local-records.js'

// Issue 42, plan D9 (a) and (b): the local store's DOIs of HEALTH_WATCH's prefixes and HEALTH_LIST_FILE's,
// from real files, into a sink that keeps what the health database's `dois` table keeps of them.

interface SinkRow {
  doi: string
  prefix: string
  sources: number
  generation: number
}

/**
 * The sink's contract (src/resolve/health/sources.ts WatchedSink) in memory: a source's bit set with the
 * generation, a sweep clearing the bit of rows stamped before it, and a cap on the DOIs any source holds.
 */
function memorySink(cap = Infinity): WatchedSink & { rows: Map<string, SinkRow>; batches: number[]; watched(): Record<string, string> } {
  const rows = new Map<string, SinkRow>()
  const batches: number[] = []
  let held = 0 // rows with a source
  return {
    rows,
    batches,
    upsertWatched(batch: readonly WatchedRow[], generation: number): number {
      batches.push(batch.length)
      let refused = 0
      for (const r of batch) {
        let row = rows.get(r.key)
        if (row === undefined || row.sources === 0) {
          if (held >= cap) {
            refused++
            continue
          }
          held++
          row ??= { doi: r.doi, prefix: r.prefix, sources: 0, generation }
          rows.set(r.key, row)
        }
        row.sources |= SOURCE_BIT[r.source]
        row.generation = generation
        if (r.source !== 'store') row.doi = r.doi // the store's is the key lower-cased: never over a DOI as written
        row.prefix = r.prefix
      }
      return refused
    },
    sweepSources(source: WatchSource, generation: number): void {
      for (const row of rows.values()) {
        if ((row.sources & SOURCE_BIT[source]) === 0 || row.generation >= generation) continue
        row.sources &= ~SOURCE_BIT[source]
        if (row.sources === 0) held--
      }
    },
    /** The watched DOIs: key → "doi (sources)". */
    watched(): Record<string, string> {
      const out: Record<string, string> = {}
      for (const [key, row] of [...rows].sort(([a], [b]) => a.localeCompare(b))) {
        if (row.sources === 0) continue
        const names = (Object.keys(SOURCE_BIT) as WatchSource[]).filter((s) => (row.sources & SOURCE_BIT[s]) !== 0)
        out[key] = `${row.doi} (${names.join('+')}) ${row.prefix}`
      }
      return out
    }
  }
}

function recordingLog(): SourcesOptions['log'] & { lines: Array<{ level: string; obj: object; msg: string }> } {
  const lines: Array<{ level: string; obj: object; msg: string }> = []
  return {
    lines,
    info: (obj, msg) => lines.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => lines.push({ level: 'warn', obj, msg })
  }
}

/** Poll until check() is true, or fail after the deadline. Never a fixed sleep. */
async function eventually(check: () => boolean, what: string, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** A new modification time that differs even on a coarse clock. */
let bump = 0
async function touch(file: string): Promise<void> {
  bump += 10
  const later = new Date(Date.now() + bump * 1000)
  await utimes(file, later, later)
}

let dir: string
const running: Array<{ stop?: () => Promise<void>; close?: () => Promise<void> }> = []
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'doi-proxy-health-sources-'))
})
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await (r.stop ?? r.close)?.()
  await rm(dir, { recursive: true, force: true })
})

function sources(opts: Partial<SourcesOptions> & Pick<SourcesOptions, 'sink'>): Sources {
  const s = createSources({ prefixes: [], maxDois: 1_000_000, log: recordingLog(), listPollMs: 50, ...opts })
  running.push(s)
  return s
}

async function store(files: Record<string, string>): Promise<LocalStore> {
  await mkdir(join(dir, 'store'))
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, 'store', name), text)
  const s = await openLocalStore({
    dir: join(dir, 'store'),
    authoritativePrefixes: [],
    watch: true,
    poll: true,
    pollIntervalMs: 50,
    log: { info: () => {}, warn: () => {}, error: () => {} }
  })
  running.push(s)
  return s
}

describe('HEALTH_LIST_FILE: one DOI a line', () => {
  it('watches every DOI of the list in the forms a reader pastes, of any prefix, once each', async () => {
    const file = join(dir, 'watch.txt')
    await writeFile(
      file,
      '\uFEFF# our journal\r\n10.5555/Plain\r\n\r\ndoi:10.1234/with-doi\nhttps://doi.org/10.9999/from-url?x=1#top\n  10.5555/plain  \n# 10.5555/commented\n'
    )
    const sink = memorySink()
    await sources({ sink, listFile: file }).start()
    expect(sink.watched()).toEqual({
      '10.1234/WITH-DOI': '10.1234/with-doi (list) 10.1234',
      '10.5555/PLAIN': '10.5555/Plain (list) 10.5555',
      '10.9999/FROM-URL': '10.9999/from-url (list) 10.9999'
    })
  })

  it('a prefix, a shortDOI or a line that is no DOI is skipped, logged with its line number, and the rest is watched', async () => {
    const file = join(dir, 'watch.txt')
    await writeFile(file, '10.5555\n10/abc\nnot a doi\n10.5555/ok\n')
    const sink = memorySink()
    const log = recordingLog()
    const s = sources({ sink, listFile: file, log })
    await s.start()
    expect(Object.keys(sink.watched())).toEqual(['10.5555/OK'])
    expect(s.stats()).toMatchObject({ list: 1, invalidLines: 3 })
    const skipped = log.lines
      .filter((l) => l.msg === 'health: HEALTH_LIST_FILE: skipped a line')
      .map((l) => (l.obj as { line: number }).line)
    expect(skipped).toEqual([1, 2, 3])
  })

  it('a line longer than any DOI is skipped whole, and the next line is read', async () => {
    const file = join(dir, 'watch.txt')
    await writeFile(file, `10.5555/before\n10.5555/${'x'.repeat(200_000)}\n10.5555/after\n`)
    const sink = memorySink()
    const s = sources({ sink, listFile: file })
    await s.start()
    expect(Object.keys(sink.watched())).toEqual(['10.5555/AFTER', '10.5555/BEFORE'])
    expect(s.stats().invalidLines).toBe(1)
  })

  it('an edit is read within the poll: a DOI taken out loses the list, a new one is watched', async () => {
    const file = join(dir, 'watch.txt')
    await writeFile(file, '10.5555/stays\n10.5555/goes\n')
    const sink = memorySink()
    await sources({ sink, listFile: file }).start()
    expect(Object.keys(sink.watched())).toEqual(['10.5555/GOES', '10.5555/STAYS'])
    await writeFile(file, '10.5555/stays\n10.5555/new\n')
    await touch(file)
    await eventually(() => sink.watched()['10.5555/NEW'] !== undefined, 'the new DOI is watched')
    expect(Object.keys(sink.watched())).toEqual(['10.5555/NEW', '10.5555/STAYS'])
    // Its row stays (its history), with no source: the prune's to take.
    expect(sink.rows.get('10.5555/GOES')?.sources).toBe(0)
  })

  it('an unchanged file is not read again', async () => {
    const file = join(dir, 'watch.txt')
    await writeFile(file, '10.5555/a\n')
    const sink = memorySink()
    const log = recordingLog()
    await sources({ sink, listFile: file, log }).start()
    await new Promise((resolve) => setTimeout(resolve, 300)) // six polls
    expect(log.lines.filter((l) => l.msg === 'health: HEALTH_LIST_FILE read')).toHaveLength(1)
    expect(sink.batches).toHaveLength(1)
  })

  it('a list file gone (being replaced) keeps its DOIs watched, warned once, and is read again when back', async () => {
    const file = join(dir, 'watch.txt')
    await writeFile(file, '10.5555/a\n')
    const sink = memorySink()
    const log = recordingLog()
    await sources({ sink, listFile: file, log }).start()
    await unlink(file)
    const cannot = (): number => log.lines.filter((l) => l.msg.startsWith('health: HEALTH_LIST_FILE cannot be read')).length
    await eventually(() => cannot() === 1, 'the missing file is warned about')
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(cannot()).toBe(1)
    expect(Object.keys(sink.watched())).toEqual(['10.5555/A'])
    await writeFile(file, '10.5555/b\n')
    await eventually(() => sink.watched()['10.5555/B'] !== undefined, 'the file back is read')
    expect(Object.keys(sink.watched())).toEqual(['10.5555/B'])
  })

  it('a sink that fails (a busy database) sweeps nothing, and the same sync is tried again a poll later', async () => {
    const file = join(dir, 'watch.txt')
    await writeFile(file, '10.5555/old\n')
    const sink = memorySink()
    let failures = 0
    const failing: WatchedSink = {
      upsertWatched: (rows, generation) => {
        if (failures > 0 && failures-- > 0) throw new Error('SQLITE_BUSY')
        return sink.upsertWatched(rows, generation)
      },
      sweepSources: (source, generation) => sink.sweepSources(source, generation)
    }
    const log = recordingLog()
    await sources({ sink: failing, listFile: file, log }).start()
    failures = 1
    await writeFile(file, '10.5555/new\n')
    await touch(file)
    await eventually(() => log.lines.some((l) => l.msg.startsWith('health: syncing the watched DOIs failed')), 'the failure is logged')
    await eventually(() => sink.watched()['10.5555/NEW'] !== undefined, 'the sync is tried again')
    expect(Object.keys(sink.watched())).toEqual(['10.5555/NEW'])
  })

  it(`a list of 25,000 DOIs reaches the sink in transactions of at most ${SYNC_BATCH} rows`, async () => {
    const file = join(dir, 'watch.txt')
    await writeFile(file, Array.from({ length: 25_000 }, (_, i) => `10.5555/n${i}`).join('\n'))
    const sink = memorySink()
    const s = sources({ sink, listFile: file })
    await s.start()
    expect(s.stats().list).toBe(25_000)
    expect(sink.rows.size).toBe(25_000)
    expect(Math.max(...sink.batches)).toBeLessThanOrEqual(SYNC_BATCH)
  })
})

describe('the local store: DOIs of HEALTH_WATCH prefixes', () => {
  it('watches the records of the watched prefixes, never a prefix record or another prefix', async () => {
    const local = await store({
      'r.ndjson': [
        urlRecord('10.5555/Mine', 'https://example.org/mine'),
        urlRecord('10.5555', 'https://example.org/prefix'),
        urlRecord('10.9999/theirs', 'https://example.org/theirs')
      ].join('\n')
    })
    const sink = memorySink()
    const s = sources({ sink, store: local, prefixes: ['10.5555'] })
    await s.start()
    // The store keeps no original case: the key lower-cased is the DOI shown.
    expect(sink.watched()).toEqual({ '10.5555/MINE': '10.5555/mine (store) 10.5555' })
    expect(s.stats().store).toBe(1)
  })

  it('a reload of the store is synced: a record removed loses the store, a new one is watched', async () => {
    const local = await store({ 'r.ndjson': `${urlRecord('10.5555/old', 'https://example.org/old')}\n` })
    const sink = memorySink()
    await sources({ sink, store: local, prefixes: ['10.5555'] }).start()
    expect(Object.keys(sink.watched())).toEqual(['10.5555/OLD'])
    await writeFile(join(dir, 'store', 'r.ndjson'), `${urlRecord('10.5555/new', 'https://example.org/new')}\n`)
    await eventually(() => sink.watched()['10.5555/NEW'] !== undefined, 'the reloaded record is watched')
    expect(Object.keys(sink.watched())).toEqual(['10.5555/NEW'])
  })

  it('a DOI in both keeps the list form, and taken out of the list stays watched by the store', async () => {
    const local = await store({ 'r.ndjson': `${urlRecord('10.5555/Both', 'https://example.org/both')}\n` })
    const file = join(dir, 'watch.txt')
    await writeFile(file, '10.5555/Both\n10.7777/listed\n')
    const sink = memorySink()
    await sources({ sink, store: local, listFile: file, prefixes: ['10.5555'] }).start()
    expect(sink.watched()).toEqual({
      '10.5555/BOTH': '10.5555/Both (store+list) 10.5555',
      '10.7777/LISTED': '10.7777/listed (list) 10.7777'
    })
    await writeFile(file, '10.7777/listed\n')
    await touch(file)
    await eventually(() => sink.watched()['10.5555/BOTH']?.includes('(store)') === true, 'the list bit is swept')
    // A store reload later keeps it too (the store's sync is newer than the list's).
    const synced = sink.batches.length
    await writeFile(join(dir, 'store', 'r.ndjson'), `${urlRecord('10.5555/Both', 'https://example.org/both-2')}\n`)
    await touch(join(dir, 'store', 'r.ndjson'))
    await eventually(() => sink.batches.length > synced, 'the reload is synced')
    expect(sink.watched()).toEqual({
      '10.5555/BOTH': '10.5555/Both (store) 10.5555',
      '10.7777/LISTED': '10.7777/listed (list) 10.7777'
    })
  })
})

describe('HEALTH_MAX_DOIS', () => {
  it('the list comes first, the store fills what is left; the rest is refused, counted and warned once an hour', async () => {
    const local = await store({
      'r.ndjson': ['a', 'b', 'c'].map((s) => urlRecord(`10.5555/store-${s}`, 'https://example.org/')).join('\n')
    })
    const file = join(dir, 'watch.txt')
    await writeFile(file, '10.7777/l1\n10.7777/l2\n10.7777/l3\n')
    const sink = memorySink()
    const log = recordingLog()
    let clock = 1_000_000
    const s = sources({ sink, store: local, listFile: file, prefixes: ['10.5555'], maxDois: 4, log, now: () => clock })
    await s.start()
    expect(Object.keys(sink.watched())).toEqual(['10.5555/STORE-A', '10.7777/L1', '10.7777/L2', '10.7777/L3'])
    expect(s.stats()).toEqual({ store: 1, list: 3, invalidLines: 0, refused: 2 })
    const warnings = (): number => log.lines.filter((l) => l.msg.includes('HEALTH_MAX_DOIS (4) reached')).length
    expect(warnings()).toBe(1)
    await s.sync()
    expect(warnings()).toBe(1)
    clock += 3_600_000
    await s.sync()
    expect(warnings()).toBe(2)
  })

  it("the sink's own refusals (seen DOIs fill it) are counted too", async () => {
    const file = join(dir, 'watch.txt')
    await writeFile(file, '10.7777/l1\n10.7777/l2\n10.7777/l3\n')
    const sink = memorySink(2)
    const s = sources({ sink, listFile: file })
    await s.start()
    expect(Object.keys(sink.watched())).toHaveLength(2)
    expect(s.stats().refused).toBe(1)
  })
})
