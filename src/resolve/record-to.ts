/**
 * RECORD_TO=DIR (docs/testing-with-doi-proxy.md): every record and every metadata answer the server
 * fetches from upstream is written to DIR/recorded.ndjson, a local-record file in the format `mirror`
 * writes and LOCAL_STORE_DIR loads (docs/local-records.md), so a test suite run once online replays
 * offline with the same answers.
 *
 * Off the request path: recording is a Map update; the file is written later, on a timer, by writing the
 * whole set to a dot-file of this writer's own and renaming it over the old one (a reader of the directory
 * sees the old file or the new, never half of one). Deduplicated by handle (ASCII case folded, the later
 * record winning, with every metadata type kept). Bounded: at most `maxRecords` handles; past that a
 * record is not kept and it is said in the log. What was recorded is flushed when the server closes
 * (SIGTERM included).
 *
 * Several servers may record into one directory (a suite's parallel jobs): each write holds a lock file
 * (created exclusively) while it reads what the others wrote since and writes the union, so no server's
 * records are lost. The log says where it records, each write with its count, and the last at close.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { cacheKey } from '../handle/name.js'
import type { HandleValue } from '../handle/types.js'
import type { StoredMetadata } from './local-metadata.js'
import type { LocalRecords, RecordFetcher } from './resolver.js'

export const RECORD_FILE = 'recorded.ndjson'

export interface RecordedMetadata { contentType: string, body: string }

interface Entry {
  handle: string
  values: readonly HandleValue[] | undefined
  metadata: Map<string, RecordedMetadata>
}

export interface RecorderOptions {
  dir: string
  /** How long after a change the file is written (changes meanwhile go in the same write). */
  flushDelayMs?: number
  maxRecords?: number
  log: RecorderLog
  /** How long a write waits for another writer's lock before it fails (and is tried again later). */
  lockWaitMs?: number
}

export interface RecorderLog {
  info: (obj: object, msg: string) => void
  warn: (obj: object, msg: string) => void
  error: (obj: object, msg: string) => void
}

/** A lock older than this was left by a writer that died mid-write (a write takes milliseconds): it is taken over. */
const STALE_LOCK_MS = 30_000

export interface Recorder {
  /** A record as the upstream answered it. */
  record (handle: string, values: readonly HandleValue[]): void
  /** A metadata answer an agency gave for a handle, under the media type (normalised) a replay must ask for. */
  recordMetadata (handle: string, type: string, answer: RecordedMetadata): void
  /** Write what is pending now. */
  flush (): Promise<void>
  close (): Promise<void>
}

/** Open DIR (created when missing) and read what an earlier run recorded, so it is kept. */
export async function openRecorder (opts: RecorderOptions): Promise<Recorder> {
  const path = join(opts.dir, RECORD_FILE)
  // This writer's own temporary name: two servers' writes never meet in one file.
  const tmp = join(opts.dir, `.${RECORD_FILE}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
  const lock = join(opts.dir, `.${RECORD_FILE}.lock`)
  const maxRecords = opts.maxRecords ?? 100_000
  const delay = opts.flushDelayMs ?? 200
  await mkdir(opts.dir, { recursive: true })
  const entries = await readRecorded(path)
  opts.log.info({ dir: opts.dir, file: path, records: entries.size }, `RECORD_TO: recording what is fetched into ${path} (${entries.size} records there already)`)
  let written = entries.size
  let timer: NodeJS.Timeout | undefined
  let writing: Promise<void> = Promise.resolve()
  let dirty = false
  let refused = 0

  function entryOf (handle: string): Entry | undefined {
    const key = cacheKey(handle)
    let entry = entries.get(key)
    if (entry === undefined) {
      if (entries.size >= maxRecords) {
        if (refused++ === 0) opts.log.warn({ dir: opts.dir, maxRecords }, 'RECORD_TO holds as many records as it may: later ones are not recorded')
        return undefined
      }
      entry = { handle, values: undefined, metadata: new Map() }
      entries.set(key, entry)
    }
    return entry
  }

  function changed (): void {
    dirty = true
    if (timer !== undefined) return
    timer = setTimeout(() => {
      timer = undefined
      flush().catch((err: unknown) => opts.log.error({ err, path }, 'RECORD_TO: could not write the recorded records'))
    }, delay)
    timer.unref()
  }

  async function flush (): Promise<void> {
    if (timer !== undefined) {
      clearTimeout(timer)
      timer = undefined
    }
    // One write at a time, in a chain: a change during a write is written by the next.
    const next = writing.then(async () => {
      if (!dirty) return
      dirty = false
      try {
        await write()
      } catch (err) {
        dirty = true // written again with the next change or at close: nothing recorded is dropped
        throw err
      }
    })
    writing = next.catch(() => {})
    await next
  }

  async function write (): Promise<void> {
    await withLock(lock, opts.lockWaitMs ?? 10_000, async () => {
      // What other servers recorded into the directory since: kept, with ours on top.
      const union = merged(await readRecorded(path), entries)
      const lines = linesOf(union.values())
      await writeFile(tmp, lines.length === 0 ? '' : lines.join('\n') + '\n')
      await rename(tmp, path)
      opts.log.info({ file: path, records: lines.length, new: lines.length - written }, `RECORD_TO: wrote ${lines.length} records to ${path}`)
      written = lines.length
    })
  }

  return {
    record (handle, values) {
      const entry = entryOf(handle)
      if (entry === undefined || sameValues(entry.values, values)) return
      entry.values = values
      changed()
    },
    recordMetadata (handle, type, answer) {
      const entry = entryOf(handle)
      const held = entry?.metadata.get(type)
      if (entry === undefined || (held?.contentType === answer.contentType && held.body === answer.body)) return
      entry.metadata.set(type, answer)
      changed()
    },
    flush,
    async close () {
      try {
        await flush()
      } finally {
        opts.log.info({ file: path, records: written }, `RECORD_TO: stopped recording; ${written} records in ${path}`)
      }
    }
  }
}

/** The records on disk with ours over them: a handle's values ours when we have them, its metadata types from both. */
function merged (onDisk: Map<string, Entry>, ours: ReadonlyMap<string, Entry>): Map<string, Entry> {
  for (const [key, e] of ours) {
    const theirs = onDisk.get(key)
    if (theirs === undefined) {
      onDisk.set(key, e)
      continue
    }
    onDisk.set(key, { handle: e.values === undefined ? theirs.handle : e.handle, values: e.values ?? theirs.values, metadata: new Map([...theirs.metadata, ...e.metadata]) })
  }
  return onDisk
}

function linesOf (entries: Iterable<Entry>): string[] {
  const lines: string[] = []
  for (const e of entries) {
    // Metadata alone (its record came from the cache) is no local record: kept until it has one.
    if (e.values === undefined) continue
    const line: { handle: string, values: readonly HandleValue[], metadata?: Record<string, RecordedMetadata> } = { handle: e.handle, values: e.values }
    if (e.metadata.size > 0) line.metadata = Object.fromEntries(e.metadata)
    lines.push(JSON.stringify(line))
  }
  return lines
}

/**
 * Run `fn` holding `lock`, a file created exclusively (O_EXCL, atomic on local file systems): another
 * writer waits, polling, up to `waitMs`. A lock older than STALE_LOCK_MS (its writer died) is removed.
 */
async function withLock (lock: string, waitMs: number, fn: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + waitMs
  for (;;) {
    try {
      const handle = await open(lock, 'wx')
      await handle.close()
      break
    } catch (err) {
      if ((err as { code?: string }).code !== 'EEXIST') throw err
    }
    const age = await stat(lock).then((s) => Date.now() - s.mtimeMs, () => 0)
    if (age > STALE_LOCK_MS) {
      await rm(lock, { force: true })
      continue
    }
    if (Date.now() > deadline) throw new Error(`RECORD_TO: another writer has held ${lock} for over ${Math.round(waitMs / 1000)} s; if no other doi-proxy records here, remove it`)
    await sleep(10 + Math.random() * 40)
  }
  try {
    await fn()
  } finally {
    await rm(lock, { force: true })
  }
}

/** The upstream as the resolver takes it, recording every record it answers (from another replica's share too). */
export function recordingFetcher (fetcher: RecordFetcher, recorder: Pick<Recorder, 'record'>): RecordFetcher {
  const { fromShared, assertOpen } = fetcher
  return {
    ...(assertOpen === undefined ? {} : { assertOpen: (handle: string) => { assertOpen.call(fetcher, handle) } }),
    async fetchRecord (handle, opts) {
      const answer = await fetcher.fetchRecord(handle, opts)
      if (answer.kind === 'found') recorder.record(handle, answer.record.values)
      return answer
    },
    ...(fromShared === undefined
      ? {}
      : {
          fromShared: async (handle: string) => {
            const answer = await fromShared.call(fetcher, handle)
            if (answer?.kind === 'found') recorder.record(handle, answer.record.values)
            return answer
          }
        })
  }
}

/**
 * The local store as the resolver takes it, recording every record it answers, with the metadata it
 * holds: a replay from RECORD_TO alone then answers what the local store (the shipped samples, by
 * default) answered while recording.
 */
export function recordingLocal<L extends LocalRecords & { metadata: (handle: string) => StoredMetadata | undefined }> (local: L, recorder: Pick<Recorder, 'record' | 'recordMetadata'>): LocalRecords {
  return {
    get (handle, key) {
      const values = local.get(handle, key)
      if (values !== undefined) {
        recorder.record(handle, values)
        for (const [type, answer] of local.metadata(handle) ?? []) recorder.recordMetadata(handle, type, answer)
      }
      return values
    },
    isAuthoritative: (handle, key) => local.isAuthoritative(handle, key)
  }
}

function sameValues (a: readonly HandleValue[] | undefined, b: readonly HandleValue[]): boolean {
  return a !== undefined && (a === b || JSON.stringify(a) === JSON.stringify(b))
}

/** The lines an earlier run wrote (a missing file is an empty one). */
async function readRecorded (path: string): Promise<Map<string, Entry>> {
  const out = new Map<string, Entry>()
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return out
    throw err
  }
  // The file is rewritten whole from what is read here: a line that cannot be read stops the start rather than being lost.
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return
    let o: { handle?: unknown, values?: unknown, metadata?: unknown } | undefined
    try {
      o = JSON.parse(line) as typeof o
    } catch {}
    if (o === null || typeof o !== 'object' || typeof o.handle !== 'string' || !Array.isArray(o.values)) {
      throw new Error(`RECORD_TO: line ${i + 1} of ${path} is not a record {"handle": …, "values": […]}; mend or remove it, or record into another directory`)
    }
    const metadata = new Map<string, RecordedMetadata>(o.metadata !== null && typeof o.metadata === 'object' ? Object.entries(o.metadata as Record<string, RecordedMetadata>) : [])
    out.set(cacheKey(o.handle), { handle: o.handle, values: o.values as HandleValue[], metadata })
  })
  return out
}
