import { statfsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { prefixKeyOf } from '../../handle/copy/key.js'
import { decodeHead } from '../../handle/copy/record-codec.js'
import type { Agency, AgencyCoverage, EncodedRecord, PrefixMark } from '../../handle/copy/types.js'
import { prefixOf } from '../../handle/name.js'
import { EMPTY_STATS } from './store.js'
import type { CopyDatabases, CopyStats, CopyStore } from './store.js'

/**
 * Writes into the registry copy (issue 43, plan-43 §1.11–1.13): a batch of records and the run's
 * checkpoint in ONE transaction, so a killed import resumes from a checkpoint whose records are all
 * there; newer wins (the agency's stamp), an equal stamp changes nothing (importing twice is a no-op).
 * Before each batch it checks the file system's free space and REGISTRY_COPY_MAX_BYTES, and stops
 * cleanly (DiskFull) rather than let LMDB fail mid-write; when LMDB fails anyway (code 5, "Input/output
 * error", on a full tmpfs or ext4 in the plan's tests) the transaction is not committed and the copy
 * holds the last checkpoint whole.
 */

export interface CopyWriterOptions {
  /** REGISTRY_COPY_MAX_BYTES: the file may not pass it; 0, no cap. */
  maxBytes: number
  /** REGISTRY_COPY_MIN_FREE_BYTES: stop when the file system would have less free. */
  minFreeBytes: number
  /** Seconds since 1970 (the stats' `updatedAt`). */
  nowS: () => number
  /** Bytes free for us on the copy's file system; tests give their own. */
  freeBytes?: (dir: string) => number
}

/** What one batch did: written (new, or newer than what was held), unchanged (same stamp), older (what was held is newer). */
export interface BatchCounts {
  written: number
  unchanged: number
  older: number
  /** Values that could not be read back (a bug of the encoder): named, not written. */
  unreadable: number
}

/** A run's state saved with the batch (meta `name` = `value`): where a killed run takes up again. */
export interface Checkpoint {
  name: string
  value: unknown
}

export type DiskFullReason = 'min_free' | 'max_bytes' | 'write_failed'

/** The batch was not written: the disk (or the cap) is full. The copy holds every batch before it. */
export class DiskFull extends Error {
  override name = 'DiskFull'
  constructor(
    readonly reason: DiskFullReason,
    readonly dir: string,
    readonly freeBytes: number | undefined,
    message: string
  ) {
    super(message)
  }
}

export interface CopyWriter {
  /** Writes the batch and the checkpoint in one transaction; throws DiskFull before writing when there is no room. */
  putBatch(entries: readonly EncodedRecord[], checkpoint?: Checkpoint): BatchCounts
  /** Records a finished input file (`file:<id>`), so the next run skips it. */
  finishFile(id: string, info: unknown): void
  /** A whole agency file held every DOI of `prefix` registered by `asOf`. */
  markWhole(prefix: string, agency: Agency, asOf: number): void
  /**
   * Every prefix the copy holds of `agency` (or only those of `only`, cache keys) marked whole by `asOf`, in one
   * transaction: a whole agency file was imported (doi-proxy import of a tar or directory of its data files).
   */
  markWholeAgency(agency: Agency, asOf: number, only?: ReadonlySet<string>): number
  /** Moves an agency's coverage forward (never back: `through` is the newest of the two). */
  extendCoverage(agency: Agency, coverage: AgencyCoverage): void
  /** Any other meta entry (an update's state), in a transaction of its own. */
  putMeta(name: string, value: unknown): void
}

const STATS_KEY = 'stats'
// A page written twice (copy-on-write) before the old one is freed, and pages a reader still holds cannot be
// reused: a batch may take twice its bytes, plus the branch and meta pages it touches (the slack; measured
// in test/resolve/copy/store-writer.test.ts).
const WRITE_AMPLIFICATION = 2
const PER_ENTRY_OVERHEAD = 64
const SLACK_BYTES = 16 * 4096

export function createCopyWriter(copy: CopyStore, opts: CopyWriterOptions): CopyWriter {
  if (!copy.writable) throw new Error(`the registry copy in ${copy.dir} was opened read-only`)
  const { root, prefixes, meta } = copy.databases
  const freeBytes = opts.freeBytes ?? freeBytesOf

  function inTransaction<T>(write: () => T): T {
    try {
      return root.transactionSync(write)
    } catch (err) {
      throw diskFullOf(err, copy.dir, freeBytes) ?? err
    }
  }

  return {
    putBatch(entries, checkpoint) {
      checkRoom(copy, opts, entries)
      return inTransaction(() => writeBatch(copy.databases, entries, checkpoint, opts.nowS))
    },
    finishFile(id, info) {
      inTransaction(() => meta.putSync(`file:${id}`, info))
    },
    markWhole(prefix, agency, asOf) {
      inTransaction(() => {
        const key = prefixKeyOf(prefix)
        const mark = prefixes.get(key) ?? { agency, records: 0, whole: false, asOf: 0 }
        prefixes.putSync(key, { ...mark, whole: true, asOf: Math.max(mark.asOf, asOf) })
      })
    },
    markWholeAgency(agency, asOf, only) {
      return inTransaction(() => {
        const marked: Array<[Buffer, PrefixMark]> = []
        for (const { key, value } of prefixes.getRange()) {
          if (value.agency !== agency) continue
          if (only !== undefined && !only.has(Buffer.from(key).toString('utf8'))) continue
          marked.push([key, { ...value, whole: true, asOf: Math.max(value.asOf, asOf) }])
        }
        for (const [key, mark] of marked) prefixes.putSync(key, mark)
        return marked.length
      })
    },
    extendCoverage(agency, coverage) {
      inTransaction(() => {
        const name = `coverage:${agency}`
        const held = meta.get(name) as AgencyCoverage | undefined
        const next =
          held === undefined ? coverage : { base: Math.max(held.base, coverage.base), through: Math.max(held.through, coverage.through) }
        meta.putSync(name, next)
      })
    },
    putMeta(name, value) {
      inTransaction(() => meta.putSync(name, value))
    }
  }
}

/** Throws DiskFull when the batch would leave the file system less than REGISTRY_COPY_MIN_FREE_BYTES, or the copy past REGISTRY_COPY_MAX_BYTES. */
function checkRoom(copy: CopyStore, opts: CopyWriterOptions, entries: readonly EncodedRecord[]): void {
  let bytes = 0
  for (const e of entries) bytes += e.key.length + e.value.length + PER_ENTRY_OVERHEAD
  const needed = bytes * WRITE_AMPLIFICATION + SLACK_BYTES
  const free = (opts.freeBytes ?? freeBytesOf)(copy.dir)
  if (opts.minFreeBytes > 0 && free - needed < opts.minFreeBytes) {
    throw new DiskFull(
      'min_free',
      copy.dir,
      free,
      `the disk of ${copy.dir} is full: ${free} bytes free, and REGISTRY_COPY_MIN_FREE_BYTES keeps ${opts.minFreeBytes}`
    )
  }
  if (opts.maxBytes > 0) {
    const size = fileSize(join(copy.dir, 'data.mdb'))
    if (size + needed > opts.maxBytes) {
      throw new DiskFull(
        'max_bytes',
        copy.dir,
        free,
        `the registry copy in ${copy.dir} is ${size} bytes, and the next batch would take it past REGISTRY_COPY_MAX_BYTES ${opts.maxBytes}`
      )
    }
  }
}

/** A batch and its checkpoint, inside the writer's transaction: newer wins, the stats and prefix marks follow. */
function writeBatch(
  dbs: CopyDatabases,
  entries: readonly EncodedRecord[],
  checkpoint: Checkpoint | undefined,
  nowS: () => number
): BatchCounts {
  const counts: BatchCounts = { written: 0, unchanged: 0, older: 0, unreadable: 0 }
  const stats = structuredClone((dbs.meta.get(STATS_KEY) as CopyStats | undefined) ?? EMPTY_STATS)
  const marks = new Map<string, PrefixMark>()
  for (const entry of entries) writeRecord(dbs, entry, counts, stats, marks)
  for (const [prefix, mark] of marks) dbs.prefixes.putSync(prefixKeyOf(prefix), mark)
  // Nothing new (a file imported twice): the figures stay as they were, and no page is rewritten.
  if (counts.written > 0) {
    stats.updatedAt = nowS()
    dbs.meta.putSync(STATS_KEY, stats)
  }
  if (checkpoint !== undefined) dbs.meta.putSync(checkpoint.name, checkpoint.value)
  return counts
}

/** One record, unless what is held is as new or newer; counted, and its prefix's mark counted in `marks`. */
function writeRecord(
  dbs: CopyDatabases,
  entry: EncodedRecord,
  counts: BatchCounts,
  stats: CopyStats,
  marks: Map<string, PrefixMark>
): void {
  const head = decodeHead(entry.value)
  if (typeof head === 'string') {
    counts.unreadable++
    return
  }
  // getBinaryFast: no copy of what is held (read here only, before the next read reuses its buffer).
  const held = dbs.records.getBinaryFast(entry.key)
  const heldLength = held?.length ?? 0
  const heldHead = held === undefined ? undefined : decodeHead(held)
  if (heldHead !== undefined && typeof heldHead !== 'string') {
    if (heldHead.stamp > head.stamp) {
      counts.older++
      return
    }
    // The same record: unchanged, unless it brings the abstract an import with --no-abstracts left out.
    if (heldHead.stamp === head.stamp && !(heldHead.abstractDropped && !head.abstractDropped)) {
      counts.unchanged++
      return
    }
  }
  dbs.records.putSync(entry.key, entry.value)
  counts.written++
  stats.bytes += entry.value.length - heldLength
  if (heldHead !== undefined && typeof heldHead !== 'string') {
    stats.byAgency[heldHead.agency] = (stats.byAgency[heldHead.agency] ?? 1) - 1
  } else {
    stats.records++
    const prefix = prefixOf(head.doi)
    const mark = marks.get(prefix) ?? dbs.prefixes.get(prefixKeyOf(prefix)) ?? { agency: head.agency, records: 0, whole: false, asOf: 0 }
    marks.set(prefix, { ...mark, records: mark.records + 1 })
  }
  stats.byAgency[head.agency] = (stats.byAgency[head.agency] ?? 0) + 1
}

/**
 * A write in the copy's directory `dir` that failed for want of room (LMDB's, or the import's problems file) as
 * DiskFull, in the same words; undefined for any other error.
 */
export function diskFullOf(err: unknown, dir: string, freeBytes: (dir: string) => number = freeBytesOf): DiskFull | undefined {
  if (!isDiskError(err)) return undefined
  const free = safeFree(freeBytes, dir)
  return new DiskFull(
    'write_failed',
    dir,
    free,
    `the disk of ${dir} is full: writing failed (${(err as Error).message})${free === undefined ? '' : `, ${free} bytes free`}`
  )
}

/** Bytes an unprivileged process may still write on the file system holding `dir`. */
export function freeBytesOf(dir: string): number {
  const fs = statfsSync(dir)
  return fs.bavail * fs.bsize
}

function safeFree(freeBytes: (dir: string) => number, dir: string): number | undefined {
  try {
    return freeBytes(dir)
  } catch {
    return undefined
  }
}

function fileSize(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0
  }
}

// LMDB's errors when the disk is full: EIO (5, seen on a full tmpfs and ext4), ENOSPC (28), MDB_MAP_FULL (-30792);
// Node's for a file: the codes ENOSPC, and EDQUOT (a quota reached: no room for us either).
const DISK_ERRORS = new Set([5, 28, 122, -30792, 'EIO', 'ENOSPC', 'EDQUOT'])

function isDiskError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  if (DISK_ERRORS.has(code as number | string)) return true
  const message = err instanceof Error ? err.message : ''
  return /No space left|Input\/output error|MDB_MAP_FULL|Disk quota exceeded/i.test(message)
}
