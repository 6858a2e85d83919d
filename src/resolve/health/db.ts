import { existsSync, mkdirSync, renameSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { ConfigError } from '../../config/schema.js'
import { uncheckedState } from '../../handle/health/confirm.js'
import { slotOf } from '../../handle/health/schedule.js'
import { CHECK_KINDS, FAILURES, SHOWN_VERDICTS, VERDICT_CODE } from '../../handle/health/types.js'
import type { DoiState, FailureVerdict, HealthEvent, ShownVerdict } from '../../handle/health/types.js'
import { registrableDomain } from '../../handle/landing/domain.js'
import { startCheckpointer } from './checkpointer.js'
import type { Checkpointer } from './checkpointer.js'
import { migrate, NewerSchemaError, SCHEMA_VERSION } from './migrations.js'

/**
 * The health history (issue 42, plan D2–D7): one SQLite file per host (better-sqlite3, synchronous, small
 * statements), written by one process. Every event of the fleet log is applied in one transaction with the log
 * position, so a crash at any instant leaves the check, the DOI's state, the counts and the position all there or
 * all absent, and an event is never applied twice. Other processes of the host open the file read-only.
 */

export interface HealthLog {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
}

/** Why a DOI is watched, one bit each in `dois.sources` (0: no longer watched; its history stays until pruned). */
export const SOURCE_BITS = { store: 1, list: 2, seen: 4 } as const
export type WatchSource = keyof typeof SOURCE_BITS

export interface WatchedDoi {
  /** The cache key (`cacheKey`: ASCII letters folded to upper case). */
  key: string
  /** The DOI as the list or the reader gave it. */
  doi: string
  prefix: string
}

/** A DOI due for a check, with what the checker needs of its past. */
export interface DueDoi extends WatchedDoi {
  /** The host of its last check (the registered URL's), for the per-host cap; null before the first. */
  host: string | null
  /** Its registered title(s) and when they were read (refreshed by the checker); null: never read. */
  titles: string[] | null
  titlesAt: number | null
  state: DoiState
  /** The last `alive` check: its final URL, that URL's registrable domain, and its time. */
  lastGood: { url: string; domain: string; at: number } | null
}

export interface OpenHealthDbOptions {
  /** The file; undefined, '' or ':memory:' keep the history in memory (lost at exit). */
  file: string | undefined
  /** Read-only: the pages of the processes that do not write (the writer made and migrated the file). */
  readonly?: boolean
  log: HealthLog
  /** HEALTH_INTERVAL_SECONDS in ms: a new DOI's first check is spread over a day by its slot in it. */
  intervalMs?: number
  /** HEALTH_MAX_DOIS: beyond it a new DOI is refused (counted in `refused`). */
  maxDois?: number
  /** Checkpoints on a worker thread every this long (0: SQLite's own, in the committing call). Files only. */
  checkpointEveryMs?: number
  now?: () => number
}

export interface HealthDb {
  /** The file, or undefined in memory. */
  readonly file: string | undefined
  readonly readonly: boolean
  /** The connection, for the reader and the pruner of this folder. */
  readonly sqlite: Database.Database
  /**
   * Apply one event of the fleet log (id `ms-seq`) in one transaction with the log position. False, and nothing
   * changed, when the id is not after the position (already applied). Throws on an id or event it cannot read.
   */
  applyEvent(logId: string, event: HealthEvent): boolean
  /** The id of the last event applied; '0-0' for a new file. */
  logPosition(): string
  /** Watched DOIs whose check is due at `now`, the longest due first. */
  due(now: number, limit: number): DueDoi[]
  /** When the next watched DOI is due; null when none is watched. */
  nextDueAt(): number | null
  /** A number larger than any before, for one sync of a source (`upsertWatched` then `sweepSources`). */
  nextGeneration(): number
  /**
   * Mark these DOIs watched by `source` in this sync (one transaction; call in batches). New ones are unchecked,
   * first due within a day; beyond HEALTH_MAX_DOIS they are refused. Syncs of the sources must not interleave.
   */
  upsertWatched(source: WatchSource, dois: Iterable<WatchedDoi>, generation: number): { added: number; refused: number }
  /** After a sync: `source` no longer watches the DOIs it did not name in it; how many lost it. */
  sweepSources(source: WatchSource, generation: number): number
  /** Store the registered titles of a DOI (the checker's, refreshed now and then). */
  setTitles(key: string, titles: string[] | null, at: number): void
  /** Checks this host never received (down longer than the fleet log keeps them): shown on the pages. */
  recordGap(from: number, to: number): void
  /** Where this host's checker is (the writer's lease), for the pages of the host's read-only processes. */
  recordChecker(state: { state: string; reason?: string | undefined }): void
  /** DOIs watched now. */
  watchedCount(): number
  /** New DOIs refused since open (HEALTH_MAX_DOIS). */
  refused(): number
  /** Close the connection; resolves when the checkpointer's thread has stopped too. */
  close(): Promise<void>
}

const DEFAULT_INTERVAL_MS = 604_800_000
const STATE_COLUMNS = `d.verdict, d.since, d.confirmed_at, d.streak, d.streak_verdict, d.streak_first_at, d.streak_last_at,
  d.win, d.retries, d.next_at`

interface StateRow {
  verdict: string
  since: number | null
  confirmed_at: number | null
  streak: number
  streak_verdict: string | null
  streak_first_at: number | null
  streak_last_at: number | null
  win: number
  retries: number
  next_at: number
}

/** A DOI's state from its row (the columns of STATE_COLUMNS). */
export function stateOfRow(row: StateRow): DoiState {
  return {
    verdict: (SHOWN_VERDICTS as readonly string[]).includes(row.verdict) ? (row.verdict as ShownVerdict) : 'unchecked',
    since: row.since,
    confirmedAt: row.confirmed_at,
    streak: row.streak,
    streakVerdict: (FAILURES as readonly string[]).includes(row.streak_verdict ?? '') ? (row.streak_verdict as FailureVerdict) : null,
    streakFirstAt: row.streak_first_at,
    streakLastAt: row.streak_last_at,
    window: row.win,
    retries: row.retries,
    nextAt: row.next_at
  }
}

/** A stream id `ms-seq` as two integers; throws on anything else. */
export function parseLogId(id: string): [bigint, bigint] {
  const match = /^(\d{1,20})-(\d{1,20})$/.exec(id)
  if (match === null) throw new Error(`not a log id: ${JSON.stringify(id.slice(0, 50))}`)
  return [BigInt(match[1] ?? '0'), BigInt(match[2] ?? '0')]
}

/** Whether log id `a` comes after `b` (numerically: '10-0' after '9-5'). */
export function logIdAfter(a: string, b: string): boolean {
  const [am, as] = parseLogId(a)
  const [bm, bs] = parseLogId(b)
  return am > bm || (am === bm && as > bs)
}

/** The host and registrable domain of a URL ('' for one that does not parse). */
function hostOf(url: string): { host: string; domain: string } {
  try {
    const host = new URL(url).hostname
    return { host, domain: host === '' ? '' : registrableDomain(host) }
  } catch {
    return { host: '', domain: '' }
  }
}

const IN_MEMORY = new Set([undefined, '', ':memory:'])

/** Open (and make, and migrate) the history. Throws ConfigError when the file cannot be used (start refused, exit 78). */
export function openHealthDb(opts: OpenHealthDbOptions): HealthDb {
  const file = IN_MEMORY.has(opts.file) ? undefined : opts.file
  const readonly = opts.readonly === true
  if (readonly) return wrap(openReadonly(file), opts, file)
  try {
    return wrap(openWriter(file, opts.log), opts, file)
  } catch (err) {
    if (file === undefined || !isNotADatabase(err)) throw unusable(file, err)
    // Not a database, or damaged past reading: kept for a look, never deleted; a new history starts (the
    // cache file's rule: set aside, never crash).
    const aside = `${file}.corrupt-${new Date(opts.now?.() ?? Date.now()).toISOString().replace(/[:.]/g, '-')}`
    for (const suffix of ['', '-wal', '-shm']) {
      if (existsSync(file + suffix)) renameSync(file + suffix, aside + suffix)
    }
    opts.log.warn(
      { file, setAside: aside, err: (err as Error).message },
      'the health history is not a database or is damaged; it was set aside and a new one started'
    )
    try {
      return wrap(openWriter(file, opts.log), opts, file)
    } catch (again) {
      throw unusable(file, again)
    }
  }
}

function isNotADatabase(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && (code.startsWith('SQLITE_NOTADB') || code.startsWith('SQLITE_CORRUPT'))
}

function unusable(file: string | undefined, err: unknown): Error {
  if (err instanceof NewerSchemaError) {
    return new ConfigError(
      `invalid setting healthDb (HEALTH_DB): ${JSON.stringify(file)} was written by a newer doi-proxy (${err.message}); use that version, or another file`
    )
  }
  if (err instanceof ConfigError) return err
  // better-sqlite3 loads its native code on the first open: an install without scripts has none.
  if ((err as Error).message.startsWith('Could not locate the bindings file')) {
    return new ConfigError(
      `invalid setting healthDb (HEALTH_DB): ${JSON.stringify(file ?? ':memory:')} cannot be opened: better-sqlite3's native code was not built here (installed with --ignore-scripts?); run \`npm rebuild better-sqlite3\``
    )
  }
  return new ConfigError(
    `invalid setting healthDb (HEALTH_DB): ${JSON.stringify(file ?? ':memory:')} cannot be used: ${(err as Error).message}`
  )
}

/** Pragmas of every connection (D2): WAL with NORMAL syncs (never corrupt; an OS crash may lose the last check, re-done). */
function openWriter(file: string | undefined, log: HealthLog): Database.Database {
  if (file !== undefined) mkdirSync(dirname(file), { recursive: true })
  const db = new Database(file ?? ':memory:')
  try {
    const fresh = (db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table'").get() as { n: number }).n === 0
    // Set before the first table, or never: lets the pruner give pages back to the file system.
    if (fresh) db.pragma('auto_vacuum = INCREMENTAL')
    if (file !== undefined) db.pragma('journal_mode = WAL')
    db.pragma('synchronous = NORMAL')
    db.pragma('busy_timeout = 5000')
    db.pragma('foreign_keys = OFF')
    db.pragma('journal_size_limit = 67108864')
    const migrated = migrate(db, file)
    if (migrated.from !== migrated.to) {
      log.info({ file: file ?? ':memory:', ...migrated }, 'the health history was brought to the current schema')
    }
    return db
  } catch (err) {
    db.close()
    throw err
  }
}

function openReadonly(file: string | undefined): Database.Database {
  if (file === undefined) {
    throw new ConfigError('invalid setting healthDb (HEALTH_DB): a history in memory cannot be opened read-only by another process')
  }
  let db: Database.Database
  try {
    db = new Database(file, { readonly: true, fileMustExist: true })
    db.pragma('busy_timeout = 5000')
  } catch (err) {
    throw unusable(file, err)
  }
  const version = db.pragma('user_version', { simple: true }) as number
  if (version === SCHEMA_VERSION) return db
  db.close()
  throw unusable(
    file,
    version > SCHEMA_VERSION
      ? new NewerSchemaError(version, SCHEMA_VERSION)
      : new Error(`schema version ${version}: not yet made by the writer`)
  )
}

function wrap(db: Database.Database, opts: OpenHealthDbOptions, file: string | undefined): HealthDb {
  const refused = { n: 0 }
  const reading = readingSide(db, file, opts.readonly === true, refused)
  return opts.readonly === true ? readonlyDb(db, reading) : writerDb(db, opts, file, reading, refused)
}

type ReadingSide = Pick<HealthDb, 'file' | 'readonly' | 'sqlite' | 'logPosition' | 'due' | 'nextDueAt' | 'watchedCount' | 'refused'>

/** The reads every connection answers, the read-only ones' too. */
function readingSide(db: Database.Database, file: string | undefined, readonly: boolean, refused: { n: number }): ReadingSide {
  const getMeta = db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?')
  const watchedStmt = db.prepare<[], { n: number | null }>('SELECT sum(n) AS n FROM tally')
  const dueStmt = db.prepare(
    `SELECT d.key, d.doi, d.prefix, d.host, d.title, d.title_at, ${STATE_COLUMNS}, gu.url AS good_url, gu.domain AS good_domain, g.at AS good_at
     FROM dois d LEFT JOIN checks g ON g.id = d.last_good_check_id LEFT JOIN urls gu ON gu.id = g.final_url
     WHERE d.sources <> 0 AND d.next_at <= ? ORDER BY d.next_at LIMIT ?`
  )
  const nextDueStmt = db.prepare<[], { next_at: number }>('SELECT next_at FROM dois WHERE sources <> 0 ORDER BY next_at LIMIT 1')
  return {
    file,
    readonly,
    sqlite: db,
    logPosition: (): string => getMeta.get('log_position')?.value ?? '0-0',
    due: (at: number, limit: number): DueDoi[] =>
      (dueStmt.all(at, Math.max(0, Math.trunc(limit))) as Array<Record<string, unknown>>).map(dueOfRow),
    nextDueAt: (): number | null => nextDueStmt.get()?.next_at ?? null,
    watchedCount: (): number => watchedStmt.get()?.n ?? 0,
    refused: () => refused.n
  }
}

/** A due DOI from its row (the columns of `readingSide`'s due statement). */
function dueOfRow(row: Record<string, unknown>): DueDoi {
  return {
    key: row.key as string,
    doi: row.doi as string,
    prefix: row.prefix as string,
    host: row.host as string | null,
    titles: parseTitles(row.title as string | null),
    titlesAt: row.title_at as number | null,
    state: stateOfRow(row as unknown as StateRow),
    lastGood:
      row.good_url === null || row.good_url === undefined
        ? null
        : { url: row.good_url as string, domain: row.good_domain as string, at: row.good_at as number }
  }
}

/** A read-only connection: every write refused. */
function readonlyDb(db: Database.Database, reading: ReadingSide): HealthDb {
  const refuse = (): never => {
    throw new Error('the health history is open read-only here')
  }
  return {
    ...reading,
    applyEvent: refuse,
    nextGeneration: refuse,
    upsertWatched: refuse,
    sweepSources: refuse,
    setTitles: refuse,
    recordGap: refuse,
    recordChecker: refuse,
    close: async () => {
      db.close()
    }
  }
}

/** The writer's connection: its transactions, the counts checked at open, the checkpointer started. */
function writerDb(
  db: Database.Database,
  opts: OpenHealthDbOptions,
  file: string | undefined,
  reading: ReadingSide,
  refused: { n: number }
): HealthDb {
  const stmts = writerStatements(db)
  const tx = writerTransactions(db, stmts, writerRows(stmts, opts), reading.watchedCount, refused)
  rebuildTally(db, opts.log)
  if (stmts.meta('created_at') === undefined) stmts.setMeta.run('created_at', String((opts.now ?? Date.now)()))
  const checkpointer = startCheckpointing(db, file, opts)
  return {
    ...reading,
    applyEvent: (logId, event) => tx.apply.immediate(logId, event),
    nextGeneration: () => tx.generationStep.immediate(),
    upsertWatched: (source, dois, generation) => tx.upsert.immediate(source, dois, generation),
    sweepSources: (source, generation) => tx.sweep.immediate(source, generation),
    setTitles(key, titles, at) {
      stmts.setTitles.run(titles === null ? null : JSON.stringify(titles), at, key)
    },
    recordGap: (from, to) => {
      tx.gapStep.immediate(from, to)
    },
    recordChecker(state) {
      stmts.setMeta.run('checker', JSON.stringify({ state: state.state, ...(state.reason === undefined ? {} : { reason: state.reason }) }))
    },
    async close() {
      const stopped = checkpointer?.stop()
      db.close()
      await stopped
    }
  }
}

/** Checkpoints copy the log into the file: on a thread of their own, never in a committing call on the loop (D3). */
function startCheckpointing(db: Database.Database, file: string | undefined, opts: OpenHealthDbOptions): Checkpointer | undefined {
  const every = opts.checkpointEveryMs ?? 5000
  if (file === undefined || every <= 0) return undefined
  db.pragma('wal_autocheckpoint = 0')
  return startCheckpointer(file, { everyMs: every, truncateBytes: 64 * 1024 * 1024, log: opts.log })
}

/** The writer's prepared statements. */
function writerStatements(db: Database.Database) {
  const getMeta = db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?')
  return {
    meta: (key: string): string | undefined => getMeta.get(key)?.value,
    setMeta: db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value'),
    tallyAdd: db.prepare(
      'INSERT INTO tally (prefix, verdict, n) VALUES (?, ?, ?) ON CONFLICT (prefix, verdict) DO UPDATE SET n = n + excluded.n'
    ),
    tallyClean: db.prepare('DELETE FROM tally WHERE prefix = ? AND verdict = ? AND n <= 0'),
    getDoi: db.prepare<[string], { id: number; prefix: string; sources: number; verdict: string }>(
      'SELECT id, prefix, sources, verdict FROM dois WHERE key = ?'
    ),
    insertDoi: db.prepare(`INSERT INTO dois (key, doi, prefix, sources, generation, added_at, next_at) VALUES (?, ?, ?, ?, ?, ?, ?)`),
    setSources: db.prepare('UPDATE dois SET sources = ?, generation = ? WHERE id = ?'),
    urlId: db.prepare<[string], { id: number }>('SELECT id FROM urls WHERE url = ?'),
    insertUrl: db.prepare('INSERT INTO urls (url, domain) VALUES (?, ?)'),
    textId: db.prepare<[string], { id: number }>('SELECT id FROM texts WHERE text = ?'),
    insertText: db.prepare('INSERT INTO texts (text) VALUES (?)'),
    insertCheck: db.prepare(
      `INSERT INTO checks (doi_id, at, kind, verdict, status, registered_url, final_url, evidence, ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
    ),
    updateState: db.prepare(
      `UPDATE dois SET verdict = ?, since = ?, confirmed_at = ?, streak = ?, streak_verdict = ?, streak_first_at = ?,
         streak_last_at = ?, win = ?, retries = ?, next_at = ?, host = coalesce(?, host),
         last_check_id = coalesce(?, last_check_id), last_good_check_id = coalesce(?, last_good_check_id)
       WHERE id = ?`
    ),
    setTitles: db.prepare('UPDATE dois SET title = ?, title_at = ? WHERE key = ?'),
    leaving: db.prepare<[number, number], { prefix: string; verdict: string; n: number }>(
      'SELECT prefix, verdict, count(*) AS n FROM dois WHERE sources = ? AND generation < ? GROUP BY prefix, verdict'
    ),
    sweep: db.prepare('UPDATE dois SET sources = sources & ~? WHERE (sources & ?) <> 0 AND generation < ?'),
    watchKeepingGeneration: db.prepare('UPDATE dois SET sources = sources | ? WHERE key = ?')
  }
}

type WriterStatements = ReturnType<typeof writerStatements>

/** The writer's row steps: the counts, the interned URLs and texts, a DOI watched, a check applied. */
function writerRows(stmts: WriterStatements, opts: OpenHealthDbOptions) {
  const now = opts.now ?? Date.now
  const intervalMs = opts.intervalMs ?? DEFAULT_INTERVAL_MS
  const maxDois = opts.maxDois ?? 1_000_000
  const tally = (prefix: string, verdict: string, n: number): void => {
    stmts.tallyAdd.run(prefix, verdict, n)
    if (n < 0) stmts.tallyClean.run(prefix, verdict)
  }
  /** Watch one DOI by `bits` (a new row, or a row gaining a bit); 'refused' by HEALTH_MAX_DOIS. */
  const watch = (doi: WatchedDoi, bits: number, generation: number | undefined, watched: { n: number }): 'added' | 'refused' | 'known' => {
    const row = stmts.getDoi.get(doi.key)
    if (row === undefined) {
      if (watched.n >= maxDois) return 'refused'
      const at = now()
      const first = uncheckedState(at, slotOf(doi.key, intervalMs), intervalMs)
      stmts.insertDoi.run(doi.key, doi.doi, doi.prefix, bits, generation ?? 0, at, first.nextAt)
      tally(doi.prefix, 'unchecked', 1)
      watched.n++
      return 'added'
    }
    if (row.sources === 0) {
      if (watched.n >= maxDois) return 'refused'
      tally(row.prefix, row.verdict, 1)
      watched.n++
    }
    stmts.setSources.run(row.sources | bits, generation ?? 0, row.id)
    return 'known'
  }
  return { tally, watch, applyCheck: checkApplier(stmts, tally) }
}

type WriterRows = ReturnType<typeof writerRows>

/** Ids of interned URLs (with their domain) and texts, made when new. */
function interner(stmts: WriterStatements) {
  return {
    url: (url: string | null): number | null => {
      if (url === null) return null
      const known = stmts.urlId.get(url)
      if (known !== undefined) return known.id
      return Number(stmts.insertUrl.run(url, hostOf(url).domain).lastInsertRowid)
    },
    text: (text: string): number | null => {
      if (text === '') return null
      const known = stmts.textId.get(text)
      if (known !== undefined) return known.id
      return Number(stmts.insertText.run(text).lastInsertRowid)
    }
  }
}

/** One check event written: the check, the DOI's state, and the counts when its verdict moved. */
function checkApplier(stmts: WriterStatements, tally: (prefix: string, verdict: string, n: number) => void) {
  const intern = interner(stmts)
  return (event: Extract<HealthEvent, { t: 'check' }>): void => {
    const verdictCode = VERDICT_CODE[event.verdict]
    const kindCode = CHECK_KINDS.indexOf(event.kind)
    if (verdictCode === undefined || kindCode < 0) throw new Error(`not a check this version knows: ${event.verdict}, ${event.kind}`)
    let row = stmts.getDoi.get(event.key)
    if (row === undefined) {
      // Checked by the fleet but not watched by this host's sources: kept (the history), not on its reports.
      const id = Number(stmts.insertDoi.run(event.key, event.doi, event.prefix, 0, 0, event.at, event.state.nextAt).lastInsertRowid)
      row = { id, prefix: event.prefix, sources: 0, verdict: 'unchecked' }
    }
    const registered = intern.url(event.registeredUrl)
    const final = intern.url(event.finalUrl)
    const checkId = Number(
      stmts.insertCheck.run(row.id, event.at, kindCode, verdictCode, event.status, registered, final, intern.text(event.evidence), event.ms)
        .lastInsertRowid
    )
    const s = event.state
    const host =
      event.registeredUrl !== null ? hostOf(event.registeredUrl).host : event.finalUrl !== null ? hostOf(event.finalUrl).host : ''
    stmts.updateState.run(
      s.verdict,
      s.since,
      s.confirmedAt,
      s.streak,
      s.streakVerdict,
      s.streakFirstAt,
      s.streakLastAt,
      s.window,
      s.retries,
      s.nextAt,
      host === '' ? null : host,
      // Our own error says nothing of the page: the DOI's last check stays the last that saw it.
      event.verdict === 'error' ? null : checkId,
      event.verdict === 'alive' ? checkId : null,
      row.id
    )
    if (row.sources !== 0 && row.verdict !== s.verdict) {
      tally(row.prefix, row.verdict, -1)
      tally(row.prefix, s.verdict, 1)
    }
  }
}

/**
 * The writer's transactions. Every one is run BEGIN IMMEDIATE: a deferred one that read first and then writes gets
 * SQLITE_BUSY at once, without the busy timeout, when the checkpointer's connection holds a lock that instant (seen
 * in the crash test).
 */
function writerTransactions(
  db: Database.Database,
  stmts: WriterStatements,
  rows: WriterRows,
  watchedCount: () => number,
  refused: { n: number }
) {
  const apply = db.transaction((logId: string, event: HealthEvent): boolean => {
    if (!logIdAfter(logId, stmts.meta('log_position') ?? '0-0')) return false
    if (event.t === 'check') rows.applyCheck(event)
    else if (event.t === 'watch') {
      const row = stmts.getDoi.get(event.key)
      if (row === undefined || row.sources === 0) {
        if (rows.watch(event, SOURCE_BITS.seen, undefined, { n: watchedCount() }) === 'refused') refused.n++
      } else stmts.watchKeepingGeneration.run(SOURCE_BITS.seen, event.key)
    } else throw new Error(`not an event this version knows: ${JSON.stringify((event as { t?: unknown }).t)}`)
    stmts.setMeta.run('log_position', logId)
    return true
  })
  const upsert = db.transaction((source: WatchSource, dois: Iterable<WatchedDoi>, generation: number) => {
    const counted = { added: 0, refused: 0 }
    const watched = { n: watchedCount() }
    for (const doi of dois) {
      const outcome = rows.watch(doi, SOURCE_BITS[source], generation, watched)
      if (outcome === 'added') counted.added++
      else if (outcome === 'refused') counted.refused++
    }
    refused.n += counted.refused
    return counted
  })
  const sweep = db.transaction((source: WatchSource, generation: number): number => {
    const bit = SOURCE_BITS[source]
    // The DOIs this sweep leaves unwatched leave the counts.
    for (const { prefix, verdict, n } of stmts.leaving.all(bit, generation)) rows.tally(prefix, verdict, -n)
    return stmts.sweep.run(bit, bit, generation).changes
  })
  const generationStep = db.transaction((): number => {
    const next = Number(stmts.meta('generation') ?? '0') + 1
    stmts.setMeta.run('generation', String(next))
    return next
  })
  const gapStep = db.transaction((from: number, to: number) => {
    // The first gap's start is kept: the pages say "from … to …" over everything missed.
    if (stmts.meta('gap_from') === undefined) stmts.setMeta.run('gap_from', String(from))
    stmts.setMeta.run('gap_to', String(to))
  })
  return { apply, upsert, sweep, generationStep, gapStep }
}

function parseTitles(text: string | null): string[] | null {
  if (text === null) return null
  try {
    const value: unknown = JSON.parse(text)
    return Array.isArray(value) ? value.filter((t): t is string => typeof t === 'string') : null
  } catch {
    return null
  }
}

/** The counts by prefix and verdict, made again from the DOIs and compared (D6): a mismatch is said and mended. */
function rebuildTally(db: Database.Database, log: HealthLog): void {
  const actual = db
    .prepare<[], { prefix: string; verdict: string; n: number }>(
      'SELECT prefix, verdict, count(*) AS n FROM dois WHERE sources <> 0 GROUP BY prefix, verdict ORDER BY prefix, verdict'
    )
    .all()
  const kept = db
    .prepare<[], { prefix: string; verdict: string; n: number }>('SELECT prefix, verdict, n FROM tally ORDER BY prefix, verdict')
    .all()
  if (JSON.stringify(actual) === JSON.stringify(kept)) return
  log.warn({ counted: actual.length, kept: kept.length }, 'the health counts did not match the DOIs; made again')
  db.transaction(() => {
    db.exec('DELETE FROM tally')
    const insert = db.prepare('INSERT INTO tally (prefix, verdict, n) VALUES (?, ?, ?)')
    for (const { prefix, verdict, n } of actual) insert.run(prefix, verdict, n)
  }).immediate()
}
