import { createHash } from 'node:crypto'
import { closeSync, fstatSync, ftruncateSync, openSync, readSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { runCoversScope } from '../../handle/copy/feeds.js'
import { READING } from '../../handle/copy/sniff.js'
import type { Agency, ImportProblem } from '../../handle/copy/types.js'
import { cacheKey } from '../../handle/name.js'
import type { CopyStore } from '../../resolve/copy/store.js'
import { createCopyWriter, DiskFull, diskFullOf, freeBytesOf } from '../../resolve/copy/writer.js'
import type { CopyWriter } from '../../resolve/copy/writer.js'
import { createUnitReaders, ReaderFailed } from './readers.js'
import type { UnitReaders } from './readers.js'
import { unitsOf } from './sources.js'
import type { InputArg, InputFile } from './sources.js'
import { StopReading } from './worker.js'
import type { UnitBatch, UnitOptions } from './worker.js'

/**
 * The import itself (plan-43 §1.11): for each input file, unless it was imported whole before (same size,
 * mtime and first MiB; --again reads it anyway), each of its units (the file, or each entry of its tar) handed
 * in order to one of `jobs` reading threads (readers.ts), several read at once, within a file and across
 * files; each batch of records committed here, as it comes, with the file's checkpoint in ONE transaction, so
 * a run killed at any moment resumes where its last commit ended and leaves nothing half-written. The
 * checkpoint says which entries are read whole (the first N, and those done ahead of one still being read)
 * and how many items of each entry begun, and the filters (--prefix, --since, --no-abstracts) it is read with: a
 * file done is passed over only by a run its filters hold all of (done unfiltered, it covers any filtered run).
 * The problems of each batch are written to DIR/import-problems.ndjson before it commits (so a run stopped
 * between the two names them again, never loses them); the disk full there stops the run as LMDB's does. An
 * entry that holds no records (a README, a report: sniff.ts notRecords) is passed over and said, not named
 * malformed. A tar or directory of one agency's data files read whole (none damaged, no --since, each file
 * read with filters that hold all of this run's) moves the agency's coverage forward and marks its prefixes whole.
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
  /** ALLOWED_SCHEMES: the URL schemes a record may redirect to (the mappers' default: its default). */
  allowedSchemes?: readonly string[]
  /** --jobs: threads reading the units (gunzip, split, parse, map, encode) while this one commits. */
  jobs: number
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
  /** Files or entries that hold no records (a README, a report): passed over, not malformed. */
  passedOver: number
  /** The first of them (at most FIRST_PROBLEMS), `message` saying why. */
  passedOverNamed: NamedProblem[]
  problemsFile: string
  files: number
  /** Files imported whole before, passed over. */
  alreadyImported: number
  /** Agencies whose coverage moved forward (a whole data file): to when. */
  covered: Array<{ agency: Agency; asOf: number; prefixes: number }>
  stopped?: { reason: 'disk_full' | 'interrupted' | 'failed'; message: string }
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
  /** The entries (units) before the Nth are read whole; those read whole ahead of one still being read are listed. */
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
  /** What it is read with; absent in a checkpoint older than them (it covers no run). */
  filters?: ImportFilters
}

/** The filters a file is read with: what its checkpoint vouches for. */
export interface ImportFilters {
  /** --prefix, as cache keys, sorted; absent: every prefix. */
  prefixes?: string[]
  /** --since, seconds. */
  since?: number
  /** false with --no-abstracts. */
  abstracts: boolean
}

export const FIRST_PROBLEMS = 50
const MAX_PROBLEM_LINES = 1_000_000
const HEAD_BYTES = 1024 * 1024

/** The run stopped at the person's request (Ctrl-C), the last batch committed. */
export class Interrupted extends Error {
  override name = 'Interrupted'
}

/** What one run carries from file to file: the writer, the sums, the progress, where the copy stands. */
interface ImportRun {
  readonly opts: ImportOptions
  readonly writer: CopyWriter
  readonly readers: UnitReaders
  readonly summary: ImportSummary
  readonly prefixSet: ReadonlySet<string> | undefined
  readonly progress: ImportProgress
  readonly importedAt: number
  problemLines: number
  /** Lines of the problems file not yet written (a tar's warnings): written before the next commit. */
  pendingLines: string[]
  /** What every file is read with. */
  readonly filters: ImportFilters
  /** Where the copy stands: the last commit's file › entry › item, for "the copy holds everything up to …". */
  lastCommitted: string
}

/** One file being read: its checkpoint's meta name, the state last committed, its units handed out and not yet passed. */
interface FileRun {
  readonly file: InputFile
  readonly fileId: string
  readonly id: string
  state: FileState
  /** Units in the file's order from the first not read whole: the checkpoint's entriesInOrder moves past those done. */
  open: OpenUnit[]
}

/** A unit handed to a reading thread (or passed over, read whole by an earlier run). */
interface OpenUnit {
  readonly entry: string
  readonly index: number
  done: boolean
}

export async function runImport(opts: ImportOptions): Promise<ImportSummary> {
  const run = startRun(opts)
  try {
    for (const arg of opts.inputs) await importArg(run, arg)
    writeProblems(run, [])
    await run.readers.close()
  } catch (err) {
    await run.readers.close(err)
    run.summary.stopped = stopOf(err, run.lastCommitted)
  }
  run.summary.records = opts.copy.stats().records
  return run.summary
}

function startRun(opts: ImportOptions): ImportRun {
  const writer = createCopyWriter(opts.copy, {
    maxBytes: opts.maxBytes,
    minFreeBytes: opts.minFreeBytes,
    nowS: opts.nowS,
    ...(opts.freeBytes === undefined ? {} : { freeBytes: opts.freeBytes })
  })
  const summary: ImportSummary = {
    imported: 0,
    unchanged: 0,
    older: 0,
    filtered: 0,
    malformed: 0,
    problems: [],
    passedOver: 0,
    passedOverNamed: [],
    problemsFile: join(opts.copy.dir, 'import-problems.ndjson'),
    files: 0,
    alreadyImported: 0,
    covered: [],
    records: 0
  }
  const bytesTotal = opts.inputs.reduce((n, a) => n + a.files.reduce((m, f) => m + f.size, 0), 0)
  const prefixSet = opts.prefixes === undefined ? undefined : new Set(opts.prefixes.map((p) => cacheKey(p)))
  return {
    opts,
    writer,
    readers: createUnitReaders({ jobs: opts.jobs }),
    summary,
    prefixSet,
    progress: { bytesDone: 0, bytesTotal, records: 0, current: '' },
    importedAt: opts.nowS(),
    problemLines: 0,
    pendingLines: [],
    filters: {
      ...(prefixSet === undefined ? {} : { prefixes: [...prefixSet].sort() }),
      ...(opts.since === undefined ? {} : { since: opts.since }),
      abstracts: opts.abstracts
    },
    lastCommitted: 'nothing of this run yet'
  }
}

/** Why the run stopped early, in words saying where the copy stands; any other error is thrown on. */
function stopOf(err: unknown, lastCommitted: string): NonNullable<ImportSummary['stopped']> {
  const cause = err instanceof StopReading ? err.reason : err
  if (cause instanceof DiskFull) {
    return {
      reason: 'disk_full',
      message: `stopped: ${cause.message}; the copy holds everything up to ${lastCommitted}; free some space and run the same command again`
    }
  }
  if (cause instanceof Interrupted) {
    return {
      reason: 'interrupted',
      message: `interrupted: the copy holds everything up to ${lastCommitted}; run the same command again to go on from there`
    }
  }
  if (cause instanceof ReaderFailed) {
    return {
      reason: 'failed',
      message: `stopped: ${cause.message}; the copy holds everything up to ${lastCommitted}; run the same command again to go on from there`
    }
  }
  throw cause
}

/** A problem counted, the first ones kept for the summary. */
function countProblem(run: ImportRun, problem: NamedProblem): void {
  const { summary } = run
  summary.malformed++
  if (summary.problems.length < FIRST_PROBLEMS) summary.problems.push(problem)
}

/** The problem as a line of the problems file, up to a bound of lines a run. */
function problemLine(run: ImportRun, problem: NamedProblem): string | undefined {
  if (run.problemLines >= MAX_PROBLEM_LINES) return undefined
  run.problemLines++
  return JSON.stringify({ at: new Date(run.opts.nowS() * 1000).toISOString(), ...problem }) + '\n'
}

/**
 * The pending lines and `lines` appended to the problems file, whole or not at all: a write that fails is cut
 * back, so the file never holds half a line; the disk full there is DiskFull, as LMDB's is.
 */
function writeProblems(run: ImportRun, lines: readonly string[]): void {
  const text = run.pendingLines.join('') + lines.join('')
  run.pendingLines = []
  if (text === '') return
  let fd: number | undefined
  let size = 0
  try {
    fd = openSync(run.summary.problemsFile, 'a')
    size = fstatSync(fd).size
    writeFileSync(fd, text)
  } catch (err) {
    if (fd !== undefined) {
      try {
        ftruncateSync(fd, size)
      } catch {
        // The cut failed too: the next run's lines start after a partial one, which readers of the file skip.
      }
    }
    throw diskFullOf(err, run.opts.copy.dir, run.opts.freeBytes ?? freeBytesOf) ?? err
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** The files of one input argument, read at once; a tar, or a directory, of one agency's data files read whole moves its coverage. */
async function importArg(run: ImportRun, arg: InputArg): Promise<void> {
  const reading: Array<Promise<FileState | undefined>> = []
  for (const file of arg.files) {
    run.summary.files++
    // The next file is read while this one's last units still are: a directory of many small files keeps every thread busy.
    reading.push((await importFile(run, file)).finished)
  }
  const states: FileState[] = []
  let argWhole = run.opts.since === undefined
  for (const state of await Promise.all(reading)) {
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
    states.every((s) => s.done && !s.damaged && s.allDataFiles && covers(s.filters, run.filters))
  ) {
    const asOf = Math.max(...states.map((s) => s.newestStamp))
    if (asOf > 0) {
      const prefixes = run.writer.markWholeAgency(agency, asOf, run.prefixSet)
      run.writer.extendCoverage(agency, { base: asOf, through: asOf })
      run.summary.covered.push({ agency, asOf, prefixes })
    }
  }
}

/**
 * One file: passed over when imported whole before; else its units handed out, resumed from its checkpoint.
 * Resolves once every unit is handed out, with `finished`: the file's state once all are committed (undefined
 * when passed over), or the reason the import stopped.
 */
async function importFile(run: ImportRun, file: InputFile): Promise<{ finished: Promise<FileState | undefined> }> {
  const { opts, progress } = run
  const fileId = createHash('sha1').update(file.path).digest('hex').slice(0, 20)
  const id = `file:${fileId}`
  const head = headOf(file.path)
  const held = opts.copy.meta(id) as FileState | undefined
  // The same file, read (or begun) with filters that hold all this run reads: a file read for 10.1103 does not hold 10.1088.
  const usable = held !== undefined && held.size === file.size && held.mtimeMs === file.mtimeMs && held.head === head
  const same = usable && !opts.again && covers(held.filters, run.filters)
  if (same && held.done) {
    run.summary.alreadyImported++
    progress.bytesDone += file.size
    opts.onProgress?.(progress)
    return { finished: Promise.resolve(held) }
  }
  // Resumed, what was read before is as wide as this run or wider: the state says this run's filters from now on.
  const state = same ? { ...held, filters: run.filters } : newFileState(file, head, run.filters)
  const f: FileRun = { file, fileId, id, state, open: [] }
  const units = unitsOf(file, {
    onBytes: (n) => {
      progress.bytesDone += n
      opts.onProgress?.(progress)
    },
    onWarning: (entry, message) => {
      f.state.damaged = true
      const problem = { file: file.shown, ...(entry === '' ? {} : { entry }), message }
      countProblem(run, problem)
      const line = problemLine(run, problem)
      if (line !== undefined) run.pendingLines.push(line)
    }
  })
  const ends: Array<Promise<void>> = []
  try {
    for (;;) {
      const next = await units.next()
      if (next.done === true) break
      const unit = next.value
      if (unit.index < f.state.entriesInOrder) continue
      if (f.state.entriesOutOfOrder.includes(unit.entry)) {
        f.open.push({ entry: unit.entry, index: unit.index, done: true })
        continue
      }
      const slot: OpenUnit = { entry: unit.entry, index: unit.index, done: false }
      f.open.push(slot)
      progress.current = shownOf(file, unit.entry)
      const { done } = await run.readers.read({
        chunks: unit.chunks,
        opts: unitOptionsOf(run, unit.entry === '' ? basename(file.path) : unit.entry, f.state.partial[unit.entry] ?? 0),
        onBatch: (batch) => commit(run, f, slot, batch),
        where: shownOf(file, unit.entry)
      })
      // Said in the file's next checkpoint: a damaged file moves no coverage.
      ends.push(
        done.then((end) => {
          if (end.damaged) f.state.damaged = true
        })
      )
    }
  } catch (err) {
    await units.return({ tar: false }).catch(() => {})
    await Promise.allSettled(ends)
    throw err
  }
  const finished = Promise.all(ends).then(() => {
    f.state = { ...f.state, done: true }
    run.writer.finishFile(fileId, f.state)
    return f.state
  })
  // Awaited by importArg; until then a stop's rejection is not unhandled.
  finished.catch(() => {})
  return { finished }
}

function shownOf(file: InputFile, entry: string): string {
  return entry === '' ? file.shown : `${file.shown} › ${entry}`
}

/** A file read with `held` filters holds all a run with `wanted` reads: each of held's is the same or wider. */
function covers(held: ImportFilters | undefined, wanted: ImportFilters): boolean {
  if (held === undefined) return false
  // Prefixes read (undefined: all) that take in every prefix wanted: the rule an update's prefixes and a copy's scope follow.
  if (!runCoversScope(held.prefixes, wanted.prefixes)) return false
  if (held.since !== undefined && (wanted.since === undefined || wanted.since < held.since)) return false
  return held.abstracts || !wanted.abstracts
}

function newFileState(file: InputFile, head: string, filters: ImportFilters): FileState {
  return {
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
    tar: false,
    filters
  }
}

function unitOptionsOf(run: ImportRun, name: string, skipItems: number): UnitOptions {
  const { opts } = run
  return {
    name,
    maxRecordBytes: opts.maxRecordBytes,
    map: { abstracts: opts.abstracts, ...(opts.allowedSchemes === undefined ? {} : { schemes: opts.allowedSchemes }) },
    ...(run.prefixSet === undefined ? {} : { prefixes: run.prefixSet }),
    ...(opts.since === undefined ? {} : { since: opts.since }),
    skipItems,
    importedAt: run.importedAt,
    inWhole: true,
    batchSize: opts.batchSize
  }
}

/**
 * The commit step: the batch's problems written to the problems file, then the batch with the file's next
 * checkpoint in one transaction, then counted. Problems first: a run stopped between the two names them again
 * when resumed (at worst twice in the file), where the other order could lose them.
 */
function commit(run: ImportRun, f: FileRun, slot: OpenUnit, batch: UnitBatch): void {
  const { opts, summary, progress } = run
  const problems: NamedProblem[] = batch.problems.map((p) => ({
    file: f.file.shown,
    ...(slot.entry === '' ? {} : { entry: slot.entry }),
    ...(p.item === undefined ? {} : { item: p.item }),
    ...(p.offset === undefined ? {} : { offset: p.offset }),
    message: p.message
  }))
  writeProblems(
    run,
    problems.map((p) => problemLine(run, p)).filter((l): l is string => l !== undefined)
  )
  const next = checkpointAfter(f, slot, batch)
  const counts = run.writer.putBatch(batch.entries, { name: f.id, value: next })
  f.state = next
  if (batch.final) {
    slot.done = true
    while (f.open[0]?.done === true) f.open.shift()
  }
  run.lastCommitted = `${shownOf(f.file, slot.entry)}${batch.itemsDone === 0 ? '' : ` item ${batch.itemsDone}`}`
  summary.imported += counts.written
  summary.unchanged += counts.unchanged + counts.older
  summary.older += counts.older
  summary.filtered += batch.filtered
  progress.records += counts.written + counts.unchanged + counts.older + batch.filtered
  for (const p of problems) countProblem(run, p)
  if (batch.passedOver !== undefined) {
    summary.passedOver++
    if (summary.passedOverNamed.length < FIRST_PROBLEMS) {
      summary.passedOverNamed.push({ file: f.file.shown, ...(slot.entry === '' ? {} : { entry: slot.entry }), message: batch.passedOver })
    }
  }
  opts.onProgress?.(progress)
  if (opts.signal?.aborted === true) throw new Interrupted('interrupted')
}

/**
 * The file's state once `batch` of `slot` is written: items read; when the unit ends, its format and agency,
 * and the entries read whole: entriesInOrder moves past the first units all done, the others done are listed.
 */
function checkpointAfter(f: FileRun, slot: OpenUnit, batch: UnitBatch): FileState {
  const state = f.state
  const next: FileState = { ...state, partial: { ...state.partial }, entriesOutOfOrder: state.entriesOutOfOrder }
  next.partial[slot.entry] = batch.itemsDone
  if (slot.entry !== '') next.tar = true
  next.newestStamp = Math.max(next.newestStamp, batch.newestStamp)
  if (!batch.final) return next
  delete next.partial[slot.entry]
  let front = 0
  while (front < f.open.length && (f.open[front]!.done || f.open[front] === slot)) front++
  const passed = f.open.slice(0, front)
  const last = passed[passed.length - 1]
  if (last !== undefined) next.entriesInOrder = Math.max(next.entriesInOrder, last.index + 1)
  const passedNames = new Set(passed.map((u) => u.entry))
  next.entriesOutOfOrder = state.entriesOutOfOrder.filter((e) => !passedNames.has(e))
  if (!passed.includes(slot)) next.entriesOutOfOrder.push(slot.entry)
  // An entry that holds no records (a README) leaves the file as whole as its data files make it.
  if (batch.passedOver !== undefined) return next
  if (batch.format === undefined) next.allDataFiles = false
  else {
    const reading = READING[batch.format]
    if (!next.agencies.includes(reading.agency)) next.agencies = [...next.agencies, reading.agency]
    if (!reading.dataFile) next.allDataFiles = false
  }
  return next
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
