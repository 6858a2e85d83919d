import { pipeline } from 'node:stream'
import { Readable } from 'node:stream'
import { createGunzip } from 'node:zlib'
import { parse as parseCsv } from 'csv-parse/sync'
import { crossrefRecordOf } from '../../handle/copy/crossref-record.js'
import { dataciteRecordOf, dataciteStateOf } from '../../handle/copy/datacite-record.js'
import { createItemSplitter, createLineSplitter } from '../../handle/copy/item-splitter.js'
import type { SplitItem, SplitProblem, Splitter } from '../../handle/copy/item-splitter.js'
import { mirrorRecordOf } from '../../handle/copy/mirror-record.js'
import { encodeEntry } from '../../handle/copy/record-codec.js'
import { notRecords, READING, sniff, SNIFF_BYTES } from '../../handle/copy/sniff.js'
import type { Format, FormatReading, ItemFormat } from '../../handle/copy/sniff.js'
import type { EncodedRecord, MapOptions, Mapped } from '../../handle/copy/types.js'
import { cacheKey, prefixOf } from '../../handle/name.js'

/**
 * One unit of an import (a file, or an entry of a tar): gunzipped if it is gzip, its format sniffed, its
 * items cut out one at a time (item-splitter.ts), parsed, mapped to records by the agency's mapper, filtered
 * (--prefix, --since) and encoded, handed on in batches. The batches' consumer commits them; while it does,
 * no more is read (back-pressure all the way to the file). Pure of the store: it runs in the reading
 * threads of `--jobs` (reader-thread.ts).
 */

export interface UnitOptions {
  /** The unit's name (the entry's path in its tar, or the file's): with its first bytes, it tells a README from a data file. */
  name: string
  /** REGISTRY_COPY_MAX_RECORD_BYTES: a larger item is named and never held. */
  maxRecordBytes: number
  map: MapOptions
  /** --prefix, as cache keys; undefined: every prefix. */
  prefixes?: ReadonlySet<string>
  /** --since, seconds: a record whose agency stamp is older is filtered out. */
  since?: number
  /** Items (lines) already committed by an earlier run: not read again. */
  skipItems: number
  /** Seconds since 1970, written in each record. */
  importedAt: number
  /** The unit is part of a whole agency file (a tar or directory): its records are vouched for by its coverage. */
  inWhole: boolean
  /** Records a batch holds before it is handed on (one transaction). */
  batchSize: number
}

/** Something in the unit skipped and named. */
export interface UnitProblem {
  item?: number
  offset?: number
  message: string
}

export interface UnitBatch {
  entries: EncodedRecord[]
  problems: UnitProblem[]
  filtered: number
  /** Things skipped and named (problems.length): items that are no record, a cut-off end. */
  malformed: number
  /** Items (lines) of the unit read through, whatever became of them: where a resumed run starts. */
  itemsDone: number
  /** The newest agency stamp among the batch's records (0 none). */
  newestStamp: number
  /** The last batch of the unit. */
  final: boolean
  /** The unit's format, once sniffed. */
  format?: ItemFormat
  /** The unit holds no records (a README, a report): why. Passed over, not malformed; its file may still be whole. */
  passedOver?: string
}

export interface UnitEnd {
  format?: ItemFormat
  /** Why the unit was not read at all (not a format import reads). */
  unknown?: string
  /** Why it holds no records (notRecords): passed over, not malformed. */
  passedOver?: string
  /** The unit ended early: cut off, or its structure broken (named in the last batch's problems). */
  damaged: boolean
}

const MAX_PROBLEMS_PER_BATCH = 1000
// zlib's default output chunk is 16 KiB: each chunk costs a turn of the async iteration and the splitter; fewer, larger ones cost less.
const GUNZIP_CHUNK = 128 * 1024
const QUOTE_BYTE = 0x22
const MAX_MESSAGE = 300

type Sniffed = { format: Format } | { unknown: string; passedOver?: string }

/** A unit being read: its format's reading, the batch being filled, the CSV header once read. */
interface UnitRead {
  readonly opts: UnitOptions
  readonly format: ItemFormat
  readonly reading: FormatReading
  /** Its records are vouched for by a whole agency file's coverage. */
  readonly covered: boolean
  readonly mapOne: (value: unknown) => Mapped | undefined
  batch: UnitBatch
  header: string[] | undefined
  /** The splitter met a fatal problem: the unit is damaged. */
  fatal: boolean
}

export async function readUnit(
  source: AsyncIterable<Buffer>,
  opts: UnitOptions,
  onBatch: (batch: UnitBatch) => Promise<void> | void
): Promise<UnitEnd> {
  const opened = await openUnit(source, opts)
  if ('damaged' in opened) return await damagedAtStart(onBatch, opened.damaged)
  const { stream, sniffed } = opened
  if ('unknown' in sniffed) {
    const batch = emptyBatch(0, true)
    if (sniffed.passedOver !== undefined) {
      batch.passedOver = sniffed.passedOver
      await onBatch(batch)
      return { passedOver: sniffed.passedOver, damaged: false }
    }
    batch.problems.push({ message: `skipped: ${sniffed.unknown}` })
    batch.malformed = 1
    await onBatch(batch)
    return { unknown: sniffed.unknown, damaged: false }
  }
  const format = sniffed.format as ItemFormat
  const reading = READING[format]
  const u: UnitRead = {
    opts,
    format,
    reading,
    covered: opts.inWhole && reading.dataFile,
    mapOne: mapperOf(format, opts.map),
    batch: emptyBatch(0, false),
    header: undefined,
    fatal: false
  }
  const onItem = (item: SplitItem): void => readItem(u, item)
  const onProblem = (p: SplitProblem): void => splitProblem(u, p)
  const splitter: Splitter =
    reading.split === 'array'
      ? createItemSplitter({
          path: reading.path,
          maxBytes: opts.maxRecordBytes,
          onItem,
          onProblem,
          ...(reading.dropKeys === undefined ? {} : { dropKeys: reading.dropKeys })
        })
      : createLineSplitter({ maxBytes: opts.maxRecordBytes, onItem, onProblem })
  let damaged = false
  try {
    for await (const chunk of stream) {
      splitter.write(chunk)
      if (splitter.stopped) break
      const full = u.batch.entries.length >= opts.batchSize || u.batch.problems.length >= MAX_PROBLEMS_PER_BATCH
      if (full) await flush(u, splitter, onBatch, false)
    }
    splitter.end()
  } catch (err) {
    if (err instanceof StopReading) throw err
    damaged = true
    problem(u, { offset: undefined, message: readError(err) })
  }
  if (u.fatal) damaged = true
  await flush(u, splitter, onBatch, true)
  return { format, damaged }
}

/** The unit's bytes, gunzipped when gzip, and what they are; a gzip or tar within refused; or why gzip cannot be read. */
async function openUnit(
  source: AsyncIterable<Buffer>,
  opts: UnitOptions
): Promise<{ stream: AsyncIterable<Buffer>; sniffed: Sniffed } | { damaged: string }> {
  let peeked: Awaited<ReturnType<typeof peek>>
  try {
    peeked = await peek(source)
  } catch (err) {
    // The unit's bytes failed before their first 64 KiB (a tar entry cut off): named as the unit's problem.
    return { damaged: readError(err) }
  }
  let sniffed: Sniffed = sniff(peeked.head)
  if ('format' in sniffed && sniffed.format === 'gzip') {
    const gunzip = createGunzip({ chunkSize: GUNZIP_CHUNK })
    pipeline(Readable.from(peeked.stream), gunzip, () => {})
    try {
      peeked = await peek(gunzip)
    } catch (err) {
      return { damaged: `the gzip data cannot be read (${(err as Error).message})` }
    }
    sniffed = withPassOver(sniff(peeked.head), opts.name, peeked.head)
    if ('format' in sniffed && (sniffed.format === 'gzip' || sniffed.format === 'tar')) {
      sniffed = {
        unknown: `a ${sniffed.format === 'gzip' ? 'gzip' : 'tar'} inside a gzip inside ${opts.inWhole ? 'a tar' : 'this file'}: unpack it first`
      }
    }
  } else if ('format' in sniffed && sniffed.format === 'tar') {
    sniffed = { unknown: 'a tar inside a tar: unpack the outer one first' }
  } else sniffed = withPassOver(sniffed, opts.name, peeked.head)
  return { stream: peeked.stream, sniffed }
}

/** A unit in no format import reads, with why it holds no records when it is no data at all (a README, a report). */
function withPassOver(sniffed: Sniffed, name: string, head: Buffer): Sniffed {
  if (!('unknown' in sniffed)) return sniffed
  const why = notRecords(name, head)
  return why === undefined ? sniffed : { ...sniffed, passedOver: why }
}

function problem(u: UnitRead, p: UnitProblem): void {
  u.batch.problems.push({ ...p, message: p.message.length > MAX_MESSAGE ? p.message.slice(0, MAX_MESSAGE) + '…' : p.message })
}

function splitProblem(u: UnitRead, p: SplitProblem): void {
  if (p.fatal) u.fatal = true
  if (p.item !== undefined && p.item <= u.opts.skipItems && !p.fatal) return
  problem(u, { ...(p.item === undefined ? {} : { item: p.item }), offset: p.offset, message: p.message })
}

/** One item: the CSV header, or parsed, mapped, filtered (--prefix, --since) and encoded into the batch. */
function readItem(u: UnitRead, item: SplitItem): void {
  const { opts, batch } = u
  if (u.reading.split === 'csv' && u.header === undefined) {
    u.header = csvHeader(u, item)
    return
  }
  if (item.index <= opts.skipItems) return
  const value = valueOf(u, item)
  if (value === NOT_READ) return
  const mapped = u.mapOne(value)
  if (mapped === undefined) return
  if (typeof mapped === 'string') return problem(u, { item: item.index, offset: item.offset, message: mapped })
  if (opts.prefixes !== undefined && !opts.prefixes.has(cacheKey(prefixOf(mapped.doi)))) {
    batch.filtered++
    return
  }
  if (opts.since !== undefined && mapped.stamp < opts.since) {
    batch.filtered++
    return
  }
  batch.entries.push(encodeEntry(mapped, { importedAt: opts.importedAt, covered: u.covered }))
  if (mapped.stamp > batch.newestStamp) batch.newestStamp = mapped.stamp
}

// An item that is no value (not a CSV row, not JSON): named already.
const NOT_READ = Symbol('not read')

function valueOf(u: UnitRead, item: SplitItem): unknown {
  if (u.reading.split === 'csv') {
    const cells = csvRow(item.bytes)
    if (cells !== undefined) return Object.fromEntries((u.header ?? []).map((h, i) => [h, cells[i]]))
    problem(u, { item: item.index, offset: item.offset, message: 'not a CSV row' })
    return NOT_READ
  }
  try {
    return JSON.parse(item.bytes.toString('utf8'))
  } catch (err) {
    problem(u, { item: item.index, offset: item.offset, message: `not JSON (${(err as Error).message})` })
    return NOT_READ
  }
}

/** The CSV's first row, lower case; [] (and named) when it names no doi and state. */
function csvHeader(u: UnitRead, item: SplitItem): string[] {
  const header = csvRow(item.bytes)?.map((h) => h.trim().toLowerCase())
  if (header !== undefined && header.includes('doi') && header.includes('state')) return header
  problem(u, { item: item.index, offset: item.offset, message: 'the CSV has no header naming doi and state' })
  return []
}

/** The batch handed on, a new one begun; the consumer's error stops the unit (StopReading). */
async function flush(u: UnitRead, splitter: Splitter, onBatch: (batch: UnitBatch) => Promise<void> | void, final: boolean): Promise<void> {
  const out = u.batch
  out.itemsDone = Math.max(splitter.done, u.opts.skipItems)
  out.final = final
  out.format = u.format
  out.malformed = out.problems.length
  u.batch = emptyBatch(0, false)
  try {
    await onBatch(out)
  } catch (err) {
    throw err instanceof StopReading ? err : new StopReading(err)
  }
}

/** An error the consumer threw (disk full, interrupted): it stops the unit, it is not the input's fault. */
export class StopReading extends Error {
  override name = 'StopReading'
  constructor(readonly reason: unknown) {
    super((reason as Error)?.message ?? String(reason))
  }
}

function readError(err: unknown): string {
  const e = err as { code?: string; message?: string }
  if (e?.code === 'Z_BUF_ERROR' || /unexpected end of file/i.test(e?.message ?? '')) {
    return 'the gzip data is cut off (a download not finished?): the items before it were read'
  }
  if (typeof e?.code === 'string' && e.code.startsWith('Z_')) {
    return `the gzip data is damaged (${e.message ?? e.code}): the items before it were read`
  }
  return `reading stopped: ${e?.message ?? String(err)}`
}

async function damagedAtStart(onBatch: (batch: UnitBatch) => Promise<void> | void, message: string): Promise<UnitEnd> {
  const batch = emptyBatch(0, true)
  batch.problems.push({ message })
  batch.malformed = 1
  await onBatch(batch)
  return { damaged: true }
}

function emptyBatch(itemsDone: number, final: boolean): UnitBatch {
  return { entries: [], problems: [], filtered: 0, malformed: 0, itemsDone, newestStamp: 0, final }
}

function mapperOf(format: ItemFormat, map: MapOptions): (value: unknown) => Mapped | undefined {
  switch (READING[format].mapper) {
    case 'crossref':
      return (v) => crossrefRecordOf(v, map)
    case 'datacite':
      return (v) => dataciteRecordOf(v, map)
    case 'datacite-state':
      return (v) => dataciteStateOf(v as Record<string, string | undefined>)
    case 'mirror':
      return (v) => mirrorRecordOf(v, map)
  }
}

function csvRow(bytes: Buffer): string[] | undefined {
  // Most rows quote nothing (DOIs, states, client ids, times): split at once; csv-parse costs ~100 µs a call.
  if (!bytes.includes(QUOTE_BYTE)) return bytes.toString('utf8').split(',')
  try {
    const rows = parseCsv(bytes, { relax_column_count: true }) as string[][]
    return rows.length === 1 ? rows[0] : undefined
  } catch {
    return undefined
  }
}

/** The first SNIFF_BYTES of a stream, and the stream again from its start. */
export async function peek(stream: AsyncIterable<Buffer>): Promise<{ head: Buffer; stream: AsyncIterable<Buffer> }> {
  const it = stream[Symbol.asyncIterator]()
  const first: Buffer[] = []
  let size = 0
  let ended = false
  while (size < SNIFF_BYTES) {
    const next = await it.next()
    if (next.done === true) {
      ended = true
      break
    }
    const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value as Uint8Array)
    first.push(chunk)
    size += chunk.length
  }
  const head = Buffer.concat(first).subarray(0, SNIFF_BYTES)
  async function* again(): AsyncGenerator<Buffer> {
    yield* first
    if (ended) return
    for (;;) {
      const next = await it.next()
      if (next.done === true) return
      yield Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value as Uint8Array)
    }
  }
  return { head, stream: again() }
}
