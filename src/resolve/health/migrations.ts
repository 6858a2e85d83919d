import type Database from 'better-sqlite3'

/**
 * The health history's schema (issue 42, plan §4 and D7), in steps: `PRAGMA user_version` is the version of the
 * file; each step runs in its own transaction that also sets it, so a step that fails leaves the file as it was.
 * Before a file that holds data is migrated it is copied whole (`VACUUM INTO '<file>.v<N>.bak'`). A file newer
 * than this code is refused: what it holds cannot be read safely.
 *
 * Times are epoch ms (UTC); `daily.day` is `YYYY-MM-DD` UTC. Verdicts are text in `dois` (the shown verdict,
 * `unchecked` included) and codes in `checks` (types.ts `VERDICT_CODE`, 10 M rows of them). URLs with their
 * registrable domain and evidence lines are interned: 75 bytes a check instead of 170. Departures from the plan's §4,
 * measured on 1 M checks: `dois_overdue` counts the overdue DOIs of a prefix from the index alone (after an outage most
 * DOIs are overdue: 100 k table reads otherwise), `dois_gone` finds the unwatched DOIs for the pruner without reading
 * every DOI, `dois_good` keeps a watched DOI's last good check from the pruner, and `daily` is keyed by prefix first,
 * as the chart reads one prefix's days.
 */

export interface Migration {
  version: number
  up(db: Database.Database): void
}

const V1 = `
CREATE TABLE meta  (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE urls  (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, domain TEXT NOT NULL);
CREATE TABLE texts (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);
CREATE TABLE dois (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, doi TEXT NOT NULL, prefix TEXT NOT NULL,
  sources INTEGER NOT NULL, generation INTEGER NOT NULL, added_at INTEGER NOT NULL, title TEXT, title_at INTEGER,
  host TEXT, next_at INTEGER NOT NULL, win INTEGER NOT NULL DEFAULT -1, retries INTEGER NOT NULL DEFAULT 0,
  verdict TEXT NOT NULL DEFAULT 'unchecked', since INTEGER, confirmed_at INTEGER,
  streak INTEGER NOT NULL DEFAULT 0, streak_verdict TEXT, streak_first_at INTEGER, streak_last_at INTEGER,
  last_check_id INTEGER, last_good_check_id INTEGER);
CREATE INDEX dois_due    ON dois(next_at) WHERE sources <> 0;
CREATE INDEX dois_overdue ON dois(prefix, next_at, sources) WHERE sources <> 0;
CREATE INDEX dois_report ON dois(prefix, verdict, confirmed_at) WHERE sources <> 0;
CREATE INDEX dois_good   ON dois(last_good_check_id) WHERE sources <> 0;
CREATE INDEX dois_gone   ON dois(id) WHERE sources = 0;
CREATE TABLE checks (id INTEGER PRIMARY KEY, doi_id INTEGER NOT NULL, at INTEGER NOT NULL, kind INTEGER NOT NULL,
  verdict INTEGER NOT NULL, status INTEGER, registered_url INTEGER, final_url INTEGER, evidence INTEGER, ms INTEGER);
CREATE INDEX checks_doi_at ON checks(doi_id, at);
CREATE INDEX checks_at     ON checks(at);
CREATE TABLE tally (prefix TEXT, verdict TEXT, n INTEGER NOT NULL, PRIMARY KEY (prefix, verdict)) WITHOUT ROWID;
CREATE TABLE daily (prefix TEXT, day TEXT, verdict TEXT, n INTEGER NOT NULL, PRIMARY KEY (prefix, day, verdict)) WITHOUT ROWID;
`

/** Every step, oldest first; the last one's version is the version this code reads and writes. */
export const MIGRATIONS: readonly Migration[] = [{ version: 1, up: (db) => db.exec(V1) }]

/** The version this code makes (the last step's). */
export const SCHEMA_VERSION = MIGRATIONS.at(-1)?.version ?? 0

/** The file was written by a newer version of doi-proxy: refused, never read or changed. */
export class NewerSchemaError extends Error {
  override name = 'NewerSchemaError'
  constructor(
    readonly found: number,
    readonly known: number
  ) {
    super(`schema version ${found} is newer than this version of doi-proxy reads (${known})`)
  }
}

export interface Migrated {
  from: number
  to: number
  /** The copy made before migrating a file that held data; undefined when none was needed. */
  backup?: string
}

/**
 * Bring the file up to the last step of `migrations`. `backupPath` is the file's own path (the copy is
 * `<backupPath>.v<from>.bak`), or undefined for a database in memory. Throws NewerSchemaError for a newer file.
 */
export function migrate(db: Database.Database, backupPath: string | undefined, migrations: readonly Migration[] = MIGRATIONS): Migrated {
  const from = db.pragma('user_version', { simple: true }) as number
  const to = migrations.at(-1)?.version ?? 0
  if (from > to) throw new NewerSchemaError(from, to)
  const result: Migrated = { from, to }
  if (from === to) return result
  if (from > 0 && backupPath !== undefined) {
    // A copy of the data as it was: a step that turns out wrong can be undone by hand.
    const backup = `${backupPath}.v${from}.bak`
    db.prepare('VACUUM INTO ?').run(backup)
    result.backup = backup
  }
  for (const step of migrations) {
    if (step.version <= from) continue
    db.transaction(() => {
      step.up(db)
      // PRAGMA takes no parameters; the version is an integer of ours.
      db.pragma(`user_version = ${Math.trunc(step.version)}`)
    })()
  }
  return result
}
