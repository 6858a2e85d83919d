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
 * (src/resolve/recording/file-lock.ts) while it reads what the others wrote and writes it with what this server
 * changed since its last write on top (not all it holds: that would put back answers another server has
 * fetched again since), so no server's records are lost. When the lock cannot be had at close, what is
 * pending goes to a file of this server's own. The log says where it records, each write with its
 * count, and the last at close.
 */
import { mkdir } from 'node:fs/promises'
import { cacheKey } from '../../handle/name.js'
import type { HandleValue } from '../../handle/types.js'
import { withLock } from './file-lock.js'
import { readRecorded, recordFiles, writeAside, writeOver } from './record-file.js'
import type { Change, Entry, RecordedMetadata, RecordFiles } from './record-file.js'
import type { StoredMetadata } from '../local-store/metadata.js'
import type { LocalRecords } from '../local-store/store.js'
import type { RecordFetcher } from '../upstream/fetcher.js'

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

export interface Recorder {
  /** A record as the upstream answered it. */
  record(handle: string, values: readonly HandleValue[]): void
  /** A metadata answer an agency gave for a handle, under the media type (normalised) a replay must ask for. */
  recordMetadata(handle: string, type: string, answer: RecordedMetadata): void
  /** Write what is pending now. */
  flush(): Promise<void>
  close(): Promise<void>
}

/** Open DIR (created when missing) and read what an earlier run recorded, so it is kept. */
export async function openRecorder(opts: RecorderOptions): Promise<Recorder> {
  const files = recordFiles(opts.dir)
  const maxRecords = opts.maxRecords ?? 100_000
  await mkdir(opts.dir, { recursive: true })
  const entries = await readRecorded(files.path)
  opts.log.info(
    { dir: opts.dir, file: files.path, records: entries.size },
    `RECORD_TO: recording what is fetched into ${files.path} (${entries.size} records there already)`
  )
  const writes = scheduleWrites(files, entries, opts)
  let refused = 0

  function entryOf(handle: string): Entry | undefined {
    const key = cacheKey(handle)
    let entry = entries.get(key)
    if (entry === undefined) {
      if (entries.size >= maxRecords) {
        if (refused++ === 0) {
          opts.log.warn({ dir: opts.dir, maxRecords }, 'RECORD_TO holds as many records as it may: later ones are not recorded')
        }
        return undefined
      }
      entry = { handle, values: undefined, metadata: new Map() }
      entries.set(key, entry)
    }
    return entry
  }

  return {
    record(handle, values) {
      const entry = entryOf(handle)
      if (entry === undefined || sameValues(entry.values, values)) return
      entry.values = values
      writes.changed(cacheKey(handle), { values: true })
    },
    recordMetadata(handle, type, answer) {
      const entry = entryOf(handle)
      const held = entry?.metadata.get(type)
      if (entry === undefined || (held?.contentType === answer.contentType && held.body === answer.body)) return
      entry.metadata.set(type, answer)
      writes.changed(cacheKey(handle), { type })
    },
    flush: writes.flush,
    close: writes.close
  }
}

/**
 * What changed in `entries` since the last write, written `flushDelayMs` after a change, one write at a
 * time, under the directory's lock. At close: what is left, or, when the lock cannot be had, aside.
 */
function scheduleWrites(files: RecordFiles, entries: ReadonlyMap<string, Entry>, opts: RecorderOptions) {
  const { path } = files
  const delay = opts.flushDelayMs ?? 200
  let written = entries.size
  let timer: NodeJS.Timeout | undefined
  let writing: Promise<void> = Promise.resolve()
  // Changed since the last write, by handle key. The rest of `entries` may be older than the file
  // (another server fetched the handle again since): putting it back would undo the other's update.
  let pending = new Map<string, Change>()

  function changed(key: string, what: { values: true } | { type: string }): void {
    let change = pending.get(key)
    if (change === undefined) pending.set(key, (change = { values: false, types: new Set() }))
    if ('values' in what) change.values = true
    else change.types.add(what.type)
    if (timer !== undefined) return
    timer = setTimeout(() => {
      timer = undefined
      flush().catch((err: unknown) => opts.log.error({ err, path }, 'RECORD_TO: could not write the recorded records'))
    }, delay)
    timer.unref()
  }

  async function flush(): Promise<void> {
    if (timer !== undefined) {
      clearTimeout(timer)
      timer = undefined
    }
    // One write at a time, in a chain: a change during a write is written by the next.
    const next = writing.then(async () => {
      if (pending.size === 0) return
      const changes = pending
      pending = new Map()
      try {
        await write(changes)
      } catch (err) {
        restore(changes) // written again with the next change or at close: nothing recorded is dropped
        throw err
      }
    })
    writing = next.catch(() => {})
    await next
  }

  /** Changes not written are pending again (with any made since). */
  function restore(changes: Map<string, Change>): void {
    for (const [key, c] of changes) {
      const now = pending.get(key)
      pending.set(key, now === undefined ? c : { values: c.values || now.values, types: new Set([...c.types, ...now.types]) })
    }
  }

  async function write(changes: Map<string, Change>): Promise<void> {
    await withLock(files.lock, { waitMs: opts.lockWaitMs ?? 10_000 }, async () => {
      const { union, records } = await writeOver(files, entries, changes)
      opts.log.info({ file: path, records, new: records - written }, `RECORD_TO: wrote ${records} records to ${path}`)
      written = records
      // Metadata whose record is not written yet (it came from the cache) waits for the record.
      restore(new Map([...changes].filter(([key]) => union.get(key)?.values === undefined)))
    })
  }

  async function close(): Promise<void> {
    try {
      await flush()
    } catch (err) {
      let aside
      try {
        aside = await writeAside(files, entries, pending)
        pending = new Map()
      } catch (asideErr) {
        opts.log.error(
          { err, asideErr, file: path, lost: pending.size },
          `RECORD_TO: stopped recording; ${pending.size} recorded handles could not be written to ${path} nor to a file of their own, and are lost`
        )
        throw err
      }
      const where =
        aside.records === 0
          ? 'nothing recorded since was lost'
          : `${aside.records} records recorded since are in ${aside.file} (LOCAL_STORE_DIR reads it too)`
      opts.log.error(
        { err, file: path, records: written, aside: aside.records === 0 ? undefined : aside.file, asideRecords: aside.records },
        `RECORD_TO: stopped recording; ${written} records in ${path}, which could not be written at shutdown: ${where}`
      )
      return
    }
    opts.log.info({ file: path, records: written }, `RECORD_TO: stopped recording; ${written} records in ${path}`)
  }

  return { changed, flush, close }
}

/** The upstream as the resolver takes it, recording every record it answers (from another replica's share too). */
export function recordingFetcher(fetcher: RecordFetcher, recorder: Pick<Recorder, 'record'>): RecordFetcher {
  const { fromShared, assertOpen } = fetcher
  return {
    ...(assertOpen === undefined
      ? {}
      : {
          assertOpen: (handle: string) => {
            assertOpen.call(fetcher, handle)
          }
        }),
    async fetchRecord(handle, params, deadline) {
      const answer = await fetcher.fetchRecord(handle, params, deadline)
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
export function recordingLocal<L extends LocalRecords & { metadata: (handle: string) => StoredMetadata | undefined }>(
  local: L,
  recorder: Pick<Recorder, 'record' | 'recordMetadata'>
): LocalRecords {
  return {
    get(handle, key) {
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

function sameValues(a: readonly HandleValue[] | undefined, b: readonly HandleValue[]): boolean {
  return a !== undefined && (a === b || JSON.stringify(a) === JSON.stringify(b))
}
