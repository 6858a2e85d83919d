import { createHash } from 'node:crypto'
import { appendFileSync, closeSync, openSync, readSync } from 'node:fs'
import { join } from 'node:path'
import { READING } from '../../handle/copy/sniff.js'
import type { Agency, ImportProblem } from '../../handle/copy/types.js'
import { cacheKey } from '../../handle/name.js'
import type { CopyStore } from '../../resolve/copy/store.js'
import { createCopyWriter, DiskFull } from '../../resolve/copy/writer.js'
import { unitsOf } from './sources.js'
import type { InputArg, InputFile } from './sources.js'
import { readUnit, StopReading } from './worker.js'
import type { UnitBatch, UnitOptions } from './worker.js'

/**
 * The import itself (plan-43 §1.11): for each input file, unless it was imported whole before (same size,
 * mtime and first MiB; --again reads it anyway), each of its units read in order, each batch of records
 * committed with the file's checkpoint in ONE transaction, so a run killed at any moment resumes where its
 * last commit ended and leaves nothing half-written. The problems of each batch are named in
 * DIR/import-problems.ndjson after it commits. A tar or directory of one agency's data files read whole
 * (none damaged, no --since) moves the agency's coverage forward and marks its prefixes whole.
 */

export interface ImportOptions {
  copy: CopyStore
  inputs: readonly InputArg[]
  /** --prefix, as given; undefined: all. */
  prefixes?: readonly string[]
  /** --since, seconds. */
  since?: number
  again: boolean
  abstracts: boolean
  maxRecordBytes: number
  batchSize: number
  maxBytes: number
  minFreeBytes: number
  nowS: () => number
  /** Aborted: the batch being read is committed, then the run stops (exit 130). */
  signal?: AbortSignal
  onProgress?: (p: ImportProgress) => void
  /** Bytes free on the copy's file system (tests); statfs otherwise. */
  freeBytes?: (dir: string) => number
}

export interface ImportProgress {
  bytesDone: number
  bytesTotal: number
  /** Records read so far this run (imported, unchanged or filtered). */
  records: number
  /** What is being read: file › entry. */
  current: string
}

/** A problem with where it was, as the summary names it. */
export type NamedProblem = ImportProblem

export interface ImportSummary {
  imported: number
  unchanged: number
  /** Of unchanged: the copy held a newer record. */
  older: number
  filtered: number
  malformed: number
  /** The first problems named (at most FIRST_PROBLEMS). */
  problems: NamedProblem[]
  problemsFile: string
  files: number
  /** Files imported whole before, passed over. */
  alreadyImported: number
  /** Agencies whose coverage moved forward (a whole data file): to when. */
  covered: Array<{ agency: Agency; asOf: number; prefixes: number }>
  stopped?: { reason: 'disk_full' | 'interrupted'; message: string }
  /** The copy after the run. */
  records: number
}

/** Where a file stands in the copy's meta (`file:<id>`): the checkpoint written with each batch. */
export interface FileState {
  path: string
  size: number
  mtimeMs: number
  /** SHA-1 of its first MiB: the same file, not one of the same size and time. */
  head: string
  done: boolean
  /** The first N entries (units) are read whole; entries read whole out of order are listed. */
  entriesInOrder: number
  entriesOutOfOrder: string[]
  /** Items read of entries begun: a resumed run passes over that many. */
  partial: Record<string, number>
  /** The formats found, all of them one agency's data files (for coverage). */
  agencies: Agency[]
  allDataFiles: boolean
  damaged: boolean
  newestStamp: number
  /** The file is a tar (its units are entries). */
  tar: boolean
}

export const FIRST_PROBLEMS = 50
const MAX_PROBLEM_LINES = 1_000_000
const HEAD_BYTES = 1024 * 1024

/** The run stopped at the person's request (Ctrl-C), the last batch committed. */
export class Interrupted extends Error {
  override name = 'Interrupted'
}

export async function runImport(opts: ImportOptions): Promise<ImportSummary> {
  const { copy } = opts
  const writer = createCopyWriter(copy, {
    maxBytes: opts.maxBytes,
    minFreeBytes: opts.minFreeBytes,
    nowS: opts.nowS,
    ...(opts.freeBytes === undefined ? {} : { freeBytes: opts.freeBytes })
  })
  const problemsFile = join(copy.dir, 'import-problems.ndjson')
  const summary: ImportSummary = {
    imported: 0,
    unchanged: 0,
    older: 0,
    filtered: 0,
    malformed: 0,
    problems: [],
    problemsFile,
    files: 0,
    alreadyImported: 0,
    covered: [],
    records: 0
  }
  const prefixSet = opts.prefixes === undefined ? undefined : new Set(opts.prefixes.map((p) => cacheKey(p)))
  const bytesTotal = opts.inputs.reduce((n, a) => n + a.files.reduce((m, f) => m + f.size, 0), 0)
  const progress: ImportProgress = { bytesDone: 0, bytesTotal, records: 0, current: '' }
  const importedAt = opts.nowS()
  let problemLines = 0
  // Where the copy stands: the last commit's file › entry › item, for "the copy holds everything up to …".
  let lastCommitted = 'nothing of this run yet'

  const name = (problem: NamedProblem): void => {
    summary.malformed++
    if (summary.problems.length < FIRST_PROBLEMS) summary.problems.push(problem)
    if (problemLines < MAX_PROBLEM_LINES) {
      problemLines++
      appendFileSync(problemsFile, JSON.stringify({ at: new Date(opts.nowS() * 1000).toISOString(), ...problem }) + '\n')
    }
  }

  try {
    for (const arg of opts.inputs) {
      const states: FileState[] = []
      let argWhole = opts.since === undefined
      for (const file of arg.files) {
        summary.files++
        const state = await importFile(file)
        if (state === undefined) argWhole = false
        else states.push(state)
      }
      // A tar, or a directory, of one agency's data files, read whole: the agency's coverage moves to its newest record.
      const tar = arg.files.length === 1 && states[0]?.tar === true
      const agencies = new Set(states.flatMap((s) => s.agencies))
      const agency = [...agencies][0]
      if (
        argWhole &&
        (arg.directory || tar) &&
        agency !== undefined &&
        agencies.size === 1 &&
        states.every((s) => s.done && !s.damaged && s.allDataFiles)
      ) {
        const asOf = Math.max(...states.map((s) => s.newestStamp))
        if (asOf > 0) {
          const prefixes = writer.markWholeAgency(agency, asOf, prefixSet)
          writer.extendCoverage(agency, { base: asOf, through: asOf })
          summary.covered.push({ agency, asOf, prefixes })
        }
      }
    }
  } catch (err) {
    const cause = err instanceof StopReading ? err.reason : err
    if (cause instanceof DiskFull) {
      summary.stopped = {
        reason: 'disk_full',
        message: `stopped: ${cause.message}; the copy holds everything up to ${lastCommitted}; free some space and run the same command again`
      }
    } else if (cause instanceof Interrupted) {
      summary.stopped = {
        reason: 'interrupted',
        message: `interrupted: the copy holds everything up to ${lastCommitted}; run the same command again to go on from there`
      }
    } else throw cause
  }
  summary.records = copy.stats().records
  return summary

  /** One file: passed over when imported whole before; else its units, resumed from its checkpoint. The file's state, or undefined when passed over. */
  async function importFile(file: InputFile): Promise<FileState | undefined> {
    const fileId = createHash('sha1').update(file.path).digest('hex').slice(0, 20)
    const id = `file:${fileId}`
    const head = headOf(file.path)
    const held = copy.meta(id) as FileState | undefined
    const same = held !== undefined && held.size === file.size && held.mtimeMs === file.mtimeMs && held.head === head
    if (same && held.done && !opts.again) {
      summary.alreadyImported++
      progress.bytesDone += file.size
      opts.onProgress?.(progress)
      return held
    }
    let state: FileState =
      same && !held.done && !opts.again
        ? held
        : {
            path: file.path,
            size: file.size,
            mtimeMs: file.mtimeMs,
            head,
            done: false,
            entriesInOrder: 0,
            entriesOutOfOrder: [],
            partial: {},
            agencies: [],
            allDataFiles: true,
            damaged: false,
            newestStamp: 0,
            tar: false
          }
    const warn = (entry: string, message: string): void => {
      state.damaged = true
      name({ file: file.shown, ...(entry === '' ? {} : { entry }), message })
    }
    const units = unitsOf(file, {
      onBytes: (n) => {
        progress.bytesDone += n
        opts.onProgress?.(progress)
      },
      onWarning: warn
    })
    for (;;) {
      const next = await units.next()
      if (next.done === true) break
      const unit = next.value
      if (unit.index < state.entriesInOrder || state.entriesOutOfOrder.includes(unit.entry)) continue
      progress.current = unit.entry === '' ? file.shown : `${file.shown} › ${unit.entry}`
      const where = (item?: number): string => `${progress.current}${item === undefined ? '' : ` item ${item}`}`
      const unitOptions: UnitOptions = {
        maxRecordBytes: opts.maxRecordBytes,
        map: { abstracts: opts.abstracts },
        ...(prefixSet === undefined ? {} : { prefixes: prefixSet }),
        ...(opts.since === undefined ? {} : { since: opts.since }),
        skipItems: state.partial[unit.entry] ?? 0,
        importedAt,
        inWhole: true,
        batchSize: opts.batchSize
      }
      const commit = (batch: UnitBatch): void => {
        const next: FileState = { ...state, partial: { ...state.partial }, entriesOutOfOrder: state.entriesOutOfOrder }
        next.partial[unit.entry] = batch.itemsDone
        if (unit.entry !== '') next.tar = true
        next.newestStamp = Math.max(next.newestStamp, batch.newestStamp)
        if (batch.final) {
          delete next.partial[unit.entry]
          if (unit.index === next.entriesInOrder) next.entriesInOrder = unit.index + 1
          else next.entriesOutOfOrder = [...next.entriesOutOfOrder, unit.entry]
          if (batch.format === undefined) next.allDataFiles = false
          else {
            const reading = READING[batch.format]
            if (!next.agencies.includes(reading.agency)) next.agencies = [...next.agencies, reading.agency]
            if (!reading.dataFile) next.allDataFiles = false
          }
        }
        const counts = writer.putBatch(batch.entries, { name: id, value: next })
        state = next
        lastCommitted = where(batch.itemsDone === 0 ? undefined : batch.itemsDone)
        summary.imported += counts.written
        summary.unchanged += counts.unchanged + counts.older
        summary.older += counts.older
        summary.filtered += batch.filtered
        progress.records += counts.written + counts.unchanged + counts.older + batch.filtered
        for (const p of batch.problems) {
          name({
            file: file.shown,
            ...(unit.entry === '' ? {} : { entry: unit.entry }),
            ...(p.item === undefined ? {} : { item: p.item }),
            ...(p.offset === undefined ? {} : { offset: p.offset }),
            message: p.message
          })
        }
        opts.onProgress?.(progress)
        if (opts.signal?.aborted === true) throw new Interrupted('interrupted')
      }
      const end = await readUnit(unit.chunks, unitOptions, commit).catch(async (err: unknown) => {
        await units.return({ tar: false }).catch(() => {})
        throw err
      })
      // Said in the file's last checkpoint (finishFile): a damaged file moves no coverage.
      if (end.damaged) state.damaged = true
    }
    state = { ...state, done: true }
    writer.finishFile(fileId, state)
    return state
  }
}

/** SHA-1 of a file's first MiB: with its size and mtime, it tells a file imported before from another. */
function headOf(path: string): string {
  const buf = Buffer.alloc(HEAD_BYTES)
  const fd = openSync(path, 'r')
  try {
    const n = readSync(fd, buf, 0, HEAD_BYTES, 0)
    return createHash('sha1').update(buf.subarray(0, n)).digest('hex')
  } finally {
    closeSync(fd)
  }
}
