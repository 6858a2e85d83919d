import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import { ownCopy, unpackBatch } from './reader-messages.js'
import type { FromReader, ReadFault, ToReader } from './reader-messages.js'
import type { UnitBatch, UnitEnd, UnitOptions } from './worker.js'

/**
 * The reading threads of `doi-proxy import --jobs N` (plan-43 §1.11): the main thread reads the files and
 * their tar entries in order and hands each unit's bytes to a thread, which gunzips, splits, parses, maps and
 * encodes them (reader-thread.ts); the batches come back, and the main thread commits each (records and
 * checkpoint in one transaction) as it arrives: a unit's batches in their order, the units' interleaved, which
 * the checkpoint records (pipeline.ts). Bounded: a thread is sent at most CHUNK_CREDIT bytes it has not yet
 * taken and holds at most UNITS_PER_READER units; it sends at most two batches not yet committed. A thread
 * that fails stops the import: every thread ends, every unit not done is refused, the copy keeps what was
 * committed (resumable).
 */

// A thread's bytes sent and not yet taken: a Crossref data file's entry (~10 MiB gzipped) goes over whole, so the
// main thread can go on to the next entry for another thread instead of waiting on this one.
const CHUNK_CREDIT = 16 * 1024 * 1024
// A unit being read and one waiting behind it: no thread waits for the main thread between units.
const UNITS_PER_READER = 2
// A thread's young generation (V8's default is larger): measured on 30,000 generated works, the same speed within
// the machine's noise and 20–25 MiB less memory a thread. Its old generation keeps V8's default: an item may be 64 MiB.
const YOUNG_GENERATION_MB = 12

/** A unit to read: its chunks (read by the caller's stream), how, and who commits its batches (synchronously, in order). */
export interface UnitJob {
  chunks: AsyncIterable<Buffer>
  opts: UnitOptions
  /** Commits a batch; what it throws (the disk full, Ctrl-C) stops the import. */
  onBatch: (batch: UnitBatch) => void
  /** file › entry, for the words of a failure. */
  where: string
}

export interface UnitReaders {
  /**
   * Hands the unit to a thread: resolves once its chunks are all sent (the caller reads on), with `done`,
   * settled once its last batch is committed. Rejects, as do all `done`s not settled, once the import stops.
   */
  read(job: UnitJob): Promise<{ done: Promise<UnitEnd> }>
  /** Stops every thread: the import ends (done), or stops (err: every unit not done is refused with it). */
  close(err?: unknown): Promise<void>
}

/** A thread's failure: the import stops, naming where. */
export class ReaderFailed extends Error {
  override name = 'ReaderFailed'
}

interface Reader {
  readonly worker: Worker
  /** Units handed to it and not done. */
  units: number
  /** Bytes sent and not yet taken. */
  untaken: number
  /** Woken when it takes bytes or ends a unit. */
  wake: (() => void) | undefined
}

interface Pending {
  readonly job: UnitJob
  readonly reader: Reader
  resolve: (end: UnitEnd) => void
  reject: (err: unknown) => void
}

interface ReadersState {
  readonly jobs: number
  readonly readers: Reader[]
  readonly pending: Map<number, Pending>
  nextId: number
  /** Why the import stopped; set once. */
  stopped: { err: unknown } | undefined
  /** Woken when a reader has room for a unit. */
  roomWaiters: Array<() => void>
}

export function createUnitReaders(opts: { jobs: number }): UnitReaders {
  const s: ReadersState = { jobs: opts.jobs, readers: [], pending: new Map(), nextId: 1, stopped: undefined, roomWaiters: [] }
  return {
    read: (job) => read(s, job),
    close: (err) => close(s, err)
  }
}

async function read(s: ReadersState, job: UnitJob): Promise<{ done: Promise<UnitEnd> }> {
  const reader = await readerWithRoom(s)
  const id = s.nextId++
  let settle!: Pick<Pending, 'resolve' | 'reject'>
  const done = new Promise<UnitEnd>((resolve, reject) => {
    settle = { resolve, reject }
  })
  // Whoever awaits `done` learns of a stop; until then its rejection is not unhandled.
  done.catch(() => {})
  s.pending.set(id, { job, reader, ...settle })
  reader.units++
  send(reader, { type: 'unit', id, opts: job.opts })
  let fault: ReadFault | undefined
  try {
    for await (const chunk of job.chunks) {
      while (reader.untaken >= CHUNK_CREDIT && s.stopped === undefined) await wakeOf(reader)
      if (s.stopped !== undefined) throw s.stopped.err
      const bytes = ownCopy(chunk)
      reader.untaken += bytes.length
      send(reader, { type: 'chunk', id, bytes }, [bytes.buffer as ArrayBuffer])
    }
  } catch (err) {
    if (s.stopped !== undefined) throw s.stopped.err
    // The unit's bytes could not be read on (a gzip or tar cut off): the thread names it as a problem of the unit.
    const e = err as { message?: unknown; code?: unknown }
    fault = { message: String(e?.message ?? err), ...(typeof e?.code === 'string' ? { code: e.code } : {}) }
  }
  send(reader, { type: 'end', id, ...(fault === undefined ? {} : { fault }) })
  return { done }
}

/** A thread with room for one more unit: an idle one, else one started if fewer than `jobs` run, else the least loaded once one has room. */
async function readerWithRoom(s: ReadersState): Promise<Reader> {
  for (;;) {
    if (s.stopped !== undefined) throw s.stopped.err
    const idle = s.readers.find((r) => r.units === 0)
    if (idle !== undefined) return idle
    if (s.readers.length < s.jobs) return startReader(s)
    let best: Reader | undefined
    for (const r of s.readers) {
      if (r.units >= UNITS_PER_READER || r.untaken >= CHUNK_CREDIT) continue
      if (best === undefined || r.units < best.units || (r.units === best.units && r.untaken < best.untaken)) best = r
    }
    if (best !== undefined) return best
    await new Promise<void>((resolve) => s.roomWaiters.push(resolve))
  }
}

function wakeOf(reader: Reader): Promise<void> {
  return new Promise<void>((resolve) => {
    reader.wake = resolve
  })
}

function poke(s: ReadersState, reader: Reader): void {
  const wake = reader.wake
  reader.wake = undefined
  wake?.()
  for (const w of s.roomWaiters.splice(0)) w()
}

function send(reader: Reader, message: ToReader, transfer: ArrayBuffer[] = []): void {
  reader.worker.postMessage(message, transfer)
}

function startReader(s: ReadersState): Reader {
  const { url, source } = threadCode()
  const worker = new Worker(source ?? url, {
    eval: source !== undefined,
    stdout: false,
    stderr: false,
    resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB }
  })
  const reader: Reader = { worker, units: 0, untaken: 0, wake: undefined }
  s.readers.push(reader)
  worker.on('message', (m: FromReader) => received(s, reader, m))
  worker.on('error', (err) => stop(s, new ReaderFailed(`a reading thread failed: ${err.message}`)))
  worker.on('exit', (code) => {
    if (s.stopped === undefined) stop(s, new ReaderFailed(`a reading thread ended (exit code ${code}) before the import did`))
  })
  return reader
}

function received(s: ReadersState, reader: Reader, m: FromReader): void {
  if (s.stopped !== undefined) return
  const p = s.pending.get(m.id)
  if (p === undefined) return
  switch (m.type) {
    case 'took':
      reader.untaken -= m.bytes
      poke(s, reader)
      return
    case 'batch':
      try {
        p.job.onBatch(unpackBatch(m.batch))
      } catch (err) {
        stop(s, err)
        return
      }
      send(reader, { type: 'ack' })
      return
    case 'done':
      s.pending.delete(m.id)
      reader.units--
      p.resolve(m.end)
      poke(s, reader)
      return
    case 'failed':
      stop(s, new ReaderFailed(`reading ${p.job.where} failed: ${m.message.slice(0, 2000)}`))
  }
}

/** The import stops: every unit not done refused with `err`, every waiter woken to see it, the threads ended. */
function stop(s: ReadersState, err: unknown): void {
  if (s.stopped !== undefined) return
  s.stopped = { err }
  for (const p of s.pending.values()) p.reject(err)
  s.pending.clear()
  for (const r of s.readers) {
    poke(s, r)
    r.worker.terminate().catch(() => {})
  }
  for (const w of s.roomWaiters.splice(0)) w()
}

async function close(s: ReadersState, err?: unknown): Promise<void> {
  if (s.stopped === undefined) stop(s, err ?? new Error('the import ended'))
  await Promise.all(s.readers.map((r) => r.worker.terminate()))
}

/** Where the thread's code is: beside this file (dist/, .js), or the sources run by tsx (tests), which the thread registers first. */
function threadCode(): { url: URL; source: string | undefined } {
  const here = import.meta.url
  const fromSource = here.endsWith('.ts')
  const url = new URL(fromSource ? './reader-thread.ts' : './reader-thread.js', here)
  if (!fromSource) return { url, source: undefined }
  // tsx's `--import` registers its hooks on the main thread only.
  const tsxApi = pathToFileURL(
    createRequire(here)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs')
  ).href
  return { url, source: `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(url.href)}) })` }
}
