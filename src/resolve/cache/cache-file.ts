import { createReadStream } from 'node:fs'
import { mkdir, open, rename, rm, stat } from 'node:fs/promises'
import { dirname } from 'node:path'
import { setImmediate as yieldToLoop } from 'node:timers/promises'
import type { RecordCache } from './record-cache.js'
import type { CachedAnswer } from './entry.js'
import { checkSource, sameSource, sourceId } from './source.js'
import type { CacheSource } from './source.js'
import { checkEntry, encodeEntry, isCacheKey, readUnreadLine } from './entry-codec.js'
import type { OpenAccessCache } from '../open-access/finder.js'

/**
 * The cache on disk (behaviour.md §11, CACHE_FILE): NDJSON, one line per entry, between a header
 * and an end line, so a file cut short is known to be cut short:
 *
 *   {"format":"doi-proxy-cache","version":2,"writtenAt":1700000000000,"source":{"upstream":"https://doi.org/api/handles","offline":false}}
 *   ["10.1000/182",[1,storedAt,freshUntil,1,[…values…]]]
 *   …
 *   {"oa":"10.1000/182","provider":"unpaywall","url":"https://…","until":1700000000000}
 *   …
 *   {"end":true,"entries":N}
 *
 * The `oa` lines are the open-access answers (src/resolve/open-access/finder.ts; `url` null: none known), of a
 * provider asked over the network: loaded only for the same OA_PROVIDER, and checked as one read from
 * Redis is. (A build from before them skips them as bad lines.)
 *
 * Entries are written least recently used first, so loading them in order through the bounded LRU
 * keeps the most recently used ones when the file came from a larger cache (the oldest are evicted
 * as the newer arrive), with their recency order intact. Times are epoch ms by the app's clock, so an
 * entry keeps exactly what was left of its freshness and staleness; what has run out is dropped.
 *
 * Writing is atomic (a temporary file beside it, fsync, rename) and in chunks that yield to the
 * event loop. Reading is streamed, with a bound on the length of a line; every line is checked.
 * A file whose header is wrong is set aside whole (nothing loaded); a file cut short (no end line, a
 * last line without its newline) keeps the entries read before the cut and is set aside too; a bad
 * line in the middle is skipped and counted. Set aside = renamed to `FILE.corrupt-<epoch ms>`, never deleted.
 *
 * The header names the source the records came from (cache-source.ts). A file made from another source
 * (another UPSTREAM_URL, OFFLINE changed, or version 1, which did not say) is not loaded: its records would
 * answer for an upstream that was never asked. It is set aside whole as `FILE.<source id>.set-aside`
 * (`FILE.<source id>-<epoch ms>.set-aside` when that name is taken), never overwritten, never deleted.
 * A process's own file, missing or set aside, is replaced by the one set aside for its source, if any.
 */
export const SNAPSHOT_FORMAT = 'doi-proxy-cache'
export const SNAPSHOT_VERSION = 2
// Version 1 files are read as far as their header: they are set aside, as their source is unknown.
const UNSOURCED_VERSION = 1

// A chunk of lines is written (and the event loop let go) every this many bytes.
const WRITE_CHUNK_BYTES = 256 * 1024

export interface SnapshotLog {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
}

export interface LoadResult {
  /** Entries put in the cache (the cache's own bounds may have evicted some of them since). */
  loaded: number
  /** Entries whose freshness and staleness had both run out. */
  expired: number
  /** Lines that were not entries (skipped). */
  bad: number
  /** Open-access answers put in their cache (when there are any). */
  openAccess?: number
  /** Where the file was moved when it was corrupt, truncated or made from another source. */
  setAside?: string
  /** The file was made from another source and was not loaded. */
  foreign?: boolean
  /** The file set aside earlier for this source, renamed back to the snapshot's name and loaded. */
  takenBack?: string
}

export interface LoadOptions {
  file: string
  cache: RecordCache
  now: () => number
  /** Longest line accepted (a longer one is a bad line): bounds the memory a hostile file can take. */
  maxLineBytes: number
  /** Longest key accepted. */
  maxKeyLength: number
  /** What this process's records come from: a file made from anything else is set aside. */
  source: CacheSource
  /** Where the open-access lines go (OA_PROVIDER set); without it they are skipped. */
  openAccess?: OpenAccessCache | undefined
  /**
   * This process's own file (not a sibling worker's): when it is missing or was made from another source,
   * the file set aside when this source was last used (`FILE.<our source id>.set-aside`) is taken back.
   */
  takeBack?: boolean
  log: SnapshotLog
}

/** Load the snapshot into the cache. A missing file is an empty cache; nothing here throws. */
export async function loadSnapshot(opts: LoadOptions): Promise<LoadResult> {
  const missing = !(await exists(opts.file))
  const first = await loadFile(opts)
  if (opts.takeBack !== true || (!missing && first.foreign !== true)) return first
  // Switching back (a test fixture, then doi.org, then the fixture again) finds each upstream's records where it left them.
  const ours = `${opts.file}.${sourceId(opts.source)}.set-aside`
  if (!(await exists(ours)) || (await exists(opts.file))) return first
  try {
    await rename(ours, opts.file)
  } catch {
    return first
  }
  opts.log.info({ file: opts.file, from: ours }, 'took back the cache snapshot set aside when this upstream was last used')
  return { ...(await loadFile(opts)), takenBack: ours }
}

async function loadFile(opts: LoadOptions): Promise<LoadResult> {
  const result: LoadResult = { loaded: 0, expired: 0, bad: 0 }
  try {
    await stat(opts.file)
  } catch {
    return result // no snapshot yet: a first start
  }
  let header = false
  let ended = false
  let problem: string | undefined
  let foreign: CacheSource | undefined
  let foreignVersion: number | undefined
  const at = opts.now()
  try {
    for await (const line of readLines(opts.file, opts.maxLineBytes)) {
      if (!header) {
        const read = readHeader(line.text)
        if (read === undefined) {
          problem = 'the first line is not a doi-proxy cache header of a version we read'
          break
        }
        if (read.source === undefined || !sameSource(read.source, opts.source)) {
          foreign = read.source
          foreignVersion = read.version
          break
        }
        header = true
        continue
      }
      if (ended) {
        problem = 'lines after the end line'
        break
      }
      if (!line.complete) {
        // The last line without its newline: the write was cut short there.
        problem = 'the file ends in the middle of a line'
        break
      }
      if (line.text === undefined) {
        result.bad++
        continue
      }
      // Most lines are a found record: its times are read now, its values when it is first asked for.
      const unread = readUnreadLine(line.text, opts.maxKeyLength)
      if (unread !== undefined) {
        if (opts.cache.restoreUnread(unread[0], unread[1], at)) result.loaded++
        else result.expired++
        continue
      }
      const parsed = parseLine(line.text, opts.maxKeyLength)
      if (parsed === 'end') {
        ended = true
        continue
      }
      if (parsed !== undefined && !Array.isArray(parsed)) {
        const oa = opts.openAccess
        if (oa !== undefined && parsed.provider === oa.provider && oa.restore(parsed.key, parsed.url, parsed.until, at)) {
          result.openAccess = (result.openAccess ?? 0) + 1
        }
        continue
      }
      if (parsed === undefined) {
        result.bad++
        continue
      }
      if (opts.cache.restore(parsed[0], parsed[1], at)) result.loaded++
      else result.expired++
    }
  } catch (err) {
    problem = `the file could not be read: ${(err as Error).message}`
  }
  if (foreignVersion !== undefined) return await setAsideForeign(opts, foreign, foreignVersion)
  if (problem === undefined && !header) problem = 'the file is empty'
  if (problem === undefined && !ended) problem = 'the file has no end line (it was cut short)'
  if (problem !== undefined) {
    const aside = `${opts.file}.corrupt-${Date.now()}`
    try {
      await rename(opts.file, aside)
      result.setAside = aside
    } catch {
      /* it could not be moved: it will be overwritten by the next snapshot */
    }
    opts.log.warn(
      { file: opts.file, setAside: aside, problem, loaded: result.loaded, badLines: result.bad },
      'the cache snapshot is corrupt or truncated; it was set aside'
    )
  } else if (result.bad > 0) {
    opts.log.warn({ file: opts.file, badLines: result.bad }, 'skipped bad lines in the cache snapshot')
  }
  return result
}

/** A file made from another source: renamed whole, never over another file, and nothing loaded. */
async function setAsideForeign(opts: LoadOptions, theirs: CacheSource | undefined, version: number): Promise<LoadResult> {
  const id = theirs === undefined ? `v${version}` : sourceId(theirs)
  let aside = `${opts.file}.${id}.set-aside`
  if (await exists(aside)) aside = `${opts.file}.${id}-${Date.now()}.set-aside`
  let moved = true
  try {
    await rename(opts.file, aside)
  } catch {
    moved = false
  }
  opts.log.warn(
    {
      file: opts.file,
      setAside: moved ? aside : undefined,
      snapshotSource: theirs ?? `unknown (a version ${version} file)`,
      source: opts.source
    },
    moved
      ? 'the cache snapshot was made from another upstream; it was set aside and not loaded'
      : 'the cache snapshot was made from another upstream and could not be set aside; it was not loaded'
  )
  return { loaded: 0, expired: 0, bad: 0, foreign: true, ...(moved ? { setAside: aside } : {}) }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file)
    return true
  } catch {
    return false
  }
}

export interface WriteOptions {
  file: string
  cache: RecordCache
  /** Named in the header: what the records were made from. */
  source: CacheSource
  now: () => number
  /** Its answers are written too (those of a provider asked over the network). */
  openAccess?: OpenAccessCache | undefined
}

/** Write the cache to `file` atomically; resolves with the number of entries written. */
export async function writeSnapshot(opts: WriteOptions): Promise<number> {
  // Taken at once (references only), so the file is one consistent picture of the cache.
  const entries = opts.cache.entries()
  const answers = opts.openAccess?.entries() ?? []
  const tmp = `${opts.file}.tmp`
  await mkdir(dirname(opts.file), { recursive: true })
  const handle = await open(tmp, 'w', 0o600)
  let written = 0
  try {
    let chunk = JSON.stringify({ format: SNAPSHOT_FORMAT, version: SNAPSHOT_VERSION, writtenAt: opts.now(), source: opts.source }) + '\n'
    for (const [key, entry] of entries) {
      chunk += `[${JSON.stringify(key)},${encodeEntry(entry)}]\n`
      written++
      if (chunk.length >= WRITE_CHUNK_BYTES) {
        await handle.write(chunk)
        chunk = ''
        await yieldToLoop()
      }
    }
    const at = opts.now()
    for (const [key, { url, until }] of answers) {
      if (until <= at) continue
      chunk += JSON.stringify({ oa: key, provider: opts.openAccess?.provider, url, until }) + '\n'
      if (chunk.length >= WRITE_CHUNK_BYTES) {
        await handle.write(chunk)
        chunk = ''
        await yieldToLoop()
      }
    }
    chunk += JSON.stringify({ end: true, entries: written }) + '\n'
    await handle.write(chunk)
    await handle.sync()
  } catch (err) {
    await handle.close().catch(() => {})
    await rm(tmp, { force: true }).catch(() => {})
    throw err
  }
  await handle.close()
  await rename(tmp, opts.file)
  return written
}

/** The header's version and source (undefined for a version 1 file or a source that is not one); undefined when it is no header of ours. */
function readHeader(text: string | undefined): { version: number; source: CacheSource | undefined } | undefined {
  if (text === undefined) return undefined
  let h: { format?: unknown; version?: unknown; source?: unknown } | null
  try {
    h = JSON.parse(text) as typeof h
  } catch {
    return undefined
  }
  if (h === null || typeof h !== 'object' || h.format !== SNAPSHOT_FORMAT) return undefined
  if (h.version === UNSOURCED_VERSION) return { version: UNSOURCED_VERSION, source: undefined }
  if (h.version !== SNAPSHOT_VERSION) return undefined
  return { version: SNAPSHOT_VERSION, source: checkSource(h.source) }
}

interface OpenAccessLine {
  key: string
  provider: unknown
  url: unknown
  until: number
}

/** An entry line as [key, entry], an open-access line, 'end' for the end line, undefined for anything else. */
function parseLine(text: string, maxKeyLength: number): [string, CachedAnswer] | OpenAccessLine | 'end' | undefined {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    return undefined
  }
  if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
    const line = raw as { end?: unknown; oa?: unknown; provider?: unknown; url?: unknown; until?: unknown }
    if (line.end === true) return 'end'
    if (!isCacheKey(line.oa, maxKeyLength) || typeof line.until !== 'number') return undefined
    return { key: line.oa, provider: line.provider, url: line.url, until: line.until }
  }
  if (!Array.isArray(raw) || raw.length !== 2 || !isCacheKey(raw[0], maxKeyLength)) return undefined
  const entry = checkEntry(raw[1])
  return entry === undefined ? undefined : [raw[0], entry]
}

interface Line {
  /** Undefined when the line was longer than the bound (its bytes were dropped). */
  text: string | undefined
  /** False for a last line that had no newline. */
  complete: boolean
}

/** The file's lines, streamed; a line longer than maxLineBytes is given as undefined text, never held whole. */
async function* readLines(file: string, maxLineBytes: number): AsyncGenerator<Line> {
  const stream = createReadStream(file, { highWaterMark: 64 * 1024 })
  let parts: Buffer[] = []
  let size = 0
  let tooLong = false
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let start = 0
      for (;;) {
        const nl = chunk.indexOf(10, start)
        const end = nl === -1 ? chunk.length : nl
        if (!tooLong) {
          if (size + (end - start) > maxLineBytes) {
            tooLong = true
            parts = []
            size = 0
          } else if (end > start) {
            parts.push(chunk.subarray(start, end))
            size += end - start
          }
        }
        if (nl === -1) break
        yield { text: tooLong ? undefined : Buffer.concat(parts, size).toString('utf8'), complete: true }
        parts = []
        size = 0
        tooLong = false
        start = nl + 1
      }
    }
    if (size > 0 || tooLong) yield { text: tooLong ? undefined : Buffer.concat(parts, size).toString('utf8'), complete: false }
  } finally {
    stream.destroy()
  }
}

/** Writes the snapshot every `intervalMs` (0: never on a timer) and once more at `close()`; one write at a time. */
export function scheduleSnapshots(opts: WriteOptions & { intervalMs: number; log: SnapshotLog }) {
  let running: Promise<void> | undefined
  let next: Promise<void> | undefined
  const once = async (why: string): Promise<void> => {
    if (running !== undefined) return await running
    const started = performance.now()
    running = writeSnapshot(opts)
      .then(
        (entries) =>
          opts.log.info({ file: opts.file, entries, why, ms: Math.round(performance.now() - started) }, 'wrote the cache snapshot'),
        (err: unknown) => opts.log.warn({ file: opts.file, err, why }, 'could not write the cache snapshot')
      )
      .finally(() => {
        running = undefined
      })
    return await running
  }
  const timer =
    opts.intervalMs > 0
      ? setInterval(() => {
          once('periodic').catch(() => {})
        }, opts.intervalMs)
      : undefined
  timer?.unref()
  return {
    writeNow: once,
    /**
     * Written again after something was dropped from the cache: after a write under way, which may hold
     * it. Drops asked for while that write waits share the next one (a run of purges is one write, not one each).
     */
    async rewrite(why: string): Promise<void> {
      next ??= (async () => {
        // Always a wait (a microtask at least), so `next` is set before it is cleared here.
        await (running ?? Promise.resolve())
        next = undefined
        await once(why)
      })()
      await next
    },
    async close(): Promise<void> {
      if (timer !== undefined) clearInterval(timer)
      if (running !== undefined) await running
      await once('shutdown')
    }
  }
}
