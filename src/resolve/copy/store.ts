import { closeSync, existsSync, mkdirSync, openSync, readSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { open } from 'lmdb'
import type { Database, RootDatabase, RootDatabaseOptionsWithPath, Transaction } from 'lmdb'
import { prefixKeyOf } from '../../handle/copy/key.js'
import { CSL_DICTIONARIES, CURRENT_DICTIONARY, decodeHead, LAYOUT_VERSION } from '../../handle/copy/record-codec.js'
import { AGENCIES } from '../../handle/copy/types.js'
import type { Agency, AgencyCoverage, CopyHead, Coverage, PrefixMark } from '../../handle/copy/types.js'

/**
 * The registry copy on disk (issue 43): one LMDB environment (lmdb-js) in a directory, `data.mdb` and
 * `lock.mdb`, with three databases: `records` (the copy key → a record's bytes, record-codec.ts),
 * `prefixes` (a prefix's key → its PrefixMark) and `meta` (JSON: the format, coverage, files, updates,
 * the updater's lease, the stats). Why LMDB, and its tuning, in docs/architecture.md and plan-43 §1.1–1.2.
 * A server opens it read-only unless it updates it; LMDB serialises writers across processes.
 */

export interface CopyLog {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
}

/** The copy's format, written when it is created: what a reader must understand to read its records. */
export interface CopyFormat {
  version: number
  dictionaries: number[]
}

/** The figures the writer keeps in `meta` (`stats`) in each batch's transaction. */
export interface CopyStats {
  records: number
  byAgency: Partial<Record<Agency, number>>
  /** Bytes of the records' values (not the file, which is larger: LMDB's pages and free space). */
  bytes: number
  /** Seconds since 1970 of the last batch written; 0 never. */
  updatedAt: number
}

export const EMPTY_STATS: CopyStats = { records: 0, byAgency: {}, bytes: 0, updatedAt: 0 }

/** The databases, for the writer (resolve/copy/writer.ts) alone. */
export interface CopyDatabases {
  root: RootDatabase
  records: Database<Buffer, Buffer>
  prefixes: Database<PrefixMark, Buffer>
  meta: Database<unknown, string>
}

export interface CopyStore {
  readonly dir: string
  readonly writable: boolean
  /** A record's bytes (a copy of them), or undefined when the key is not held. */
  get(key: Uint8Array): Buffer | undefined
  /** A record's head read in place (the redirect path: no copy, no inflating), or why it cannot be read. */
  head(key: Uint8Array): CopyHead | string | undefined
  prefix(prefix: string): PrefixMark | undefined
  meta(name: string): unknown
  coverage(): Coverage
  stats(): CopyStats & { fileBytes: number }
  /** Clears the reader slots of processes gone (they pin pages and make the file grow); how many were cleared. */
  readerCheck(): number
  close(): Promise<void>
  readonly databases: CopyDatabases
}

export type CopyErrorCode = 'absent' | 'not_a_copy' | 'newer_format' | 'unopenable'

/** The copy cannot be opened: the message names the directory and what is wrong, for a start that stops (exit 78). */
export class CopyError extends Error {
  override name = 'CopyError'
  constructor(
    readonly code: CopyErrorCode,
    message: string
  ) {
    super(message)
  }
}

export interface OpenCopyOptions {
  dir: string
  /** Open for writing (the importer, an updating server); created when missing. Read-only otherwise. */
  writable: boolean
  log?: CopyLog
  /** MADV_RANDOM (plan-43 §1.2: without it a store larger than memory thrashed); the importer reads little and may turn it off. */
  noReadAhead?: boolean
  /** How often stale reader slots are cleared; tests shorten it. */
  readerCheckMs?: number
}

const FORMAT_KEY = 'format'
const STATS_KEY = 'stats'
const READER_CHECK_MS = 3_600_000
// How long the redirect path's reads share one snapshot. lmdb-js's own reads renew theirs at each turn of
// the event loop (a native renew and a timer: 8 µs of a copy answer's ~30 µs under load, plan-43); a
// commit is seen by the next read after this long.
const SNAPSHOT_MS = 100
// 1 TiB: Crossref's and DataCite's records (~190 GB) five times over; lmdb-js grows it past that if need be.
const WRITER_MAP_BYTES = 2 ** 40

// lmdb-js's reads take a transaction to read in (read.js), which its types do not say.
type SnapshotReads = { getBinaryFast(key: Buffer, options: { transaction?: Transaction }): Buffer | undefined }

// lmdb-js reads options its types do not list yet (README "Options").
type EnvOptions = RootDatabaseOptionsWithPath & { noReadAhead?: boolean }

export function openCopy(opts: OpenCopyOptions): CopyStore {
  const dataFile = join(opts.dir, 'data.mdb')
  if (opts.writable) mkdirSync(opts.dir, { recursive: true })
  else if (!existsSync(dataFile)) {
    throw new CopyError(
      'absent',
      `${JSON.stringify(opts.dir)} holds no registry copy (no data.mdb): make one with doi-proxy import --to ${opts.dir}`
    )
  }
  // LMDB trusts its file: one that is not LMDB's crashes the process in native code (found in this file's
  // test), so its first meta page's magic is checked before LMDB sees it.
  if (existsSync(dataFile) && !looksLikeLmdb(dataFile)) {
    throw new CopyError('not_a_copy', `${JSON.stringify(opts.dir)} has a data.mdb that is not an LMDB file: it is no registry copy`)
  }
  const options: EnvOptions = {
    path: opts.dir,
    // A directory whatever its name: lmdb-js takes a path with a dot in its last part for a file.
    noSubdir: false,
    readOnly: !opts.writable,
    maxDbs: 8,
    maxReaders: 1024,
    pageSize: 4096,
    noReadAhead: opts.noReadAhead ?? true,
    // A writer reserves its address space at once: lmdb-js otherwise starts at 128 KiB and maps the file anew each
    // time it outgrows the map, keeping the old maps, so the same pages counted in RSS once a map (10 maps and
    // 618 MiB of RssFile for a 230 MiB copy, plan-43 jobs). Address space only: the file grows as it is written.
    ...(opts.writable ? { mapSize: WRITER_MAP_BYTES } : {})
    // Never noSync or useWritemap: lmdb-js #132, a power loss corrupts the file; the default overlappingSync survives.
  }
  let root: RootDatabase
  let databases: CopyDatabases
  try {
    root = open(options)
    databases = {
      root,
      records: root.openDB<Buffer, Buffer>({ name: 'records', keyEncoding: 'binary', encoding: 'binary' }),
      prefixes: root.openDB<PrefixMark, Buffer>({ name: 'prefixes', keyEncoding: 'binary', encoding: 'json' }),
      meta: root.openDB<unknown, string>({ name: 'meta', encoding: 'json' })
    }
  } catch (err) {
    throw new CopyError('unopenable', `the registry copy in ${JSON.stringify(opts.dir)} cannot be opened: ${(err as Error).message}`)
  }
  checkFormat(databases, opts)
  const cleared = root.readerCheck()
  if (cleared > 0) opts.log?.info({ cleared }, 'registry copy: cleared the reader slots of processes gone')
  const timer = setInterval(() => {
    const n = root.readerCheck()
    if (n > 0) opts.log?.info({ cleared: n }, 'registry copy: cleared the reader slots of processes gone')
  }, opts.readerCheckMs ?? READER_CHECK_MS)
  timer.unref()

  // The snapshot the redirect path reads in (head): taken again when older than SNAPSHOT_MS.
  let snapshot: Transaction | undefined
  let snapshotAt = 0
  const inSnapshot: { transaction?: Transaction } = {}
  function headSnapshot(): { transaction?: Transaction } {
    const at = performance.now()
    if (snapshot === undefined || at - snapshotAt >= SNAPSHOT_MS) {
      snapshot?.done()
      snapshot = root.useReadTransaction()
      snapshotAt = at
      inSnapshot.transaction = snapshot
    }
    return inSnapshot
  }

  return {
    dir: opts.dir,
    writable: opts.writable,
    databases,
    get: (key) => databases.records.getBinary(key as Buffer),
    head(key) {
      // getBinaryFast's buffer is reused by the next read: decodeHead copies out what it keeps.
      const bytes = (databases.records as SnapshotReads).getBinaryFast(key as Buffer, headSnapshot())
      return bytes === undefined ? undefined : decodeHead(bytes)
    },
    prefix: (prefix) => databases.prefixes.get(prefixKeyOf(prefix)),
    meta: (name) => databases.meta.get(name),
    coverage: () => coverageOf(databases.meta),
    stats() {
      const stats = (databases.meta.get(STATS_KEY) as CopyStats | undefined) ?? EMPTY_STATS
      let fileBytes = 0
      try {
        fileBytes = statSync(dataFile).size
      } catch {
        // Gone under us: the figures still say what was written.
      }
      return { ...stats, fileBytes }
    },
    readerCheck: () => root.readerCheck(),
    async close() {
      clearInterval(timer)
      snapshot?.done()
      snapshot = undefined
      await root.close()
    }
  }
}

// MDB_meta's mm_magic, after the first page's header: 16 bytes in LMDB 0.9, 24 in lmdb-js's LMDB (its pages carry a txnid).
const LMDB_MAGIC = 0xbeefc0de
const MAGIC_AT = [24, 16]

function looksLikeLmdb(path: string): boolean {
  const head = Buffer.alloc(32)
  let fd: number | undefined
  try {
    fd = openSync(path, 'r')
    if (readSync(fd, head, 0, head.length, 0) < head.length) return false
  } catch {
    // Unreadable: LMDB's own open says why.
    return true
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
  return MAGIC_AT.some((at) => head.readUInt32LE(at) === LMDB_MAGIC)
}

/** The copy's coverage per agency, from `meta` (`coverage:<agency>`). */
function coverageOf(meta: Database<unknown, string>): Coverage {
  const coverage: Coverage = {}
  for (const agency of AGENCIES) {
    const one = meta.get(`coverage:${agency}`) as AgencyCoverage | undefined
    if (one !== undefined) coverage[agency] = one
  }
  return coverage
}

/** A new copy gets this version's format; an existing one must be one this version reads. */
function checkFormat(databases: CopyDatabases, opts: OpenCopyOptions): void {
  const format = databases.meta.get(FORMAT_KEY) as CopyFormat | undefined
  if (format === undefined) {
    if (!opts.writable) {
      throw new CopyError(
        'not_a_copy',
        `${JSON.stringify(opts.dir)} holds an LMDB file that is not a registry copy (no format in its meta)`
      )
    }
    const created: CopyFormat = { version: LAYOUT_VERSION, dictionaries: [CURRENT_DICTIONARY] }
    databases.root.transactionSync(() => {
      databases.meta.putSync(FORMAT_KEY, created)
      databases.meta.putSync(STATS_KEY, EMPTY_STATS)
    })
    return
  }
  const unknownDictionary = (format.dictionaries ?? []).find((id) => !CSL_DICTIONARIES.has(id))
  if (format.version !== LAYOUT_VERSION || unknownDictionary !== undefined) {
    throw new CopyError(
      'newer_format',
      `the registry copy in ${JSON.stringify(opts.dir)} has format ${JSON.stringify(format)}; this version reads layout ${LAYOUT_VERSION} with dictionaries ${[...CSL_DICTIONARIES.keys()].join(', ')}: import it again with this version, or run the version that made it`
    )
  }
}
