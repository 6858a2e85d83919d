/**
 * The local record store: handle records kept in files, consulted before the upstream (behaviour.md §3,
 * issue 7). A directory of `.json` files (one record or an array) and `.ndjson` files (one record per
 * line), in the Handle REST API's own shape `{"handle": …, "values": [...]}`.
 *
 * Loading never throws once the server runs: a bad record is skipped, a bad file is rejected, both are
 * logged with file, line and problem, and the rest loads. A change in the directory reloads it; the new
 * set of records is built off to the side and swapped in with one assignment, so a request sees the old
 * set or the new one, never half of each.
 *
 * This file opens the store, reads and logs its files, and wires together the parts: the format
 * (store-format.ts), the lookup maps (store-snapshot.ts) and change detection (store-watch.ts).
 */
import { createHash } from 'node:crypto'
import { readFile, stat } from 'node:fs/promises'
import { join, resolve as resolvePath } from 'node:path'
import { cacheKey, prefixOf } from '../../handle/name.js'
import type { HandleValue } from '../../handle/types.js'
import type { StoredMetadata } from './metadata.js'
import { describeProblem, parseStoreBytes } from './file-format.js'
import type { ParsedFile } from './file-format.js'
import { buildSnapshot } from './record-set.js'
import type { LocalStoreStats, Snapshot } from './record-set.js'
import { createSerialReloader, directorySignature, startWatching, storeFileNames } from './watch.js'
import type { WatchOptions } from './watch.js'

/** What the resolver asks of records held locally (this store), consulted before the cache and the upstream. */
export interface LocalRecords {
  /** `key` is the handle's cacheKey, when the caller has it already. */
  get(handle: string, key?: string): HandleValue[] | undefined
  isAuthoritative(handle: string, key?: string): boolean
}

export interface StoreLog {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
  error(obj: object, msg: string): void
}

export interface LocalStoreOptions extends WatchOptions {
  dir: string
  authoritativePrefixes: string[]
  watch: boolean
  log: StoreLog
}

export interface LocalStore {
  /** The local record for a handle (ASCII-case-folded match via cacheKey), or undefined. O(1): a Map lookup on the current snapshot. Do not mutate the answer. */
  get(handle: string, key?: string): HandleValue[] | undefined
  /** The record's stored metadata by media type (docs/metadata.md), or undefined when it has none. */
  metadata(handle: string): StoredMetadata | undefined
  /** True when the handle's prefix (prefixOf, compared with cacheKey folding) is served only locally: a miss is a 404, never an upstream call. */
  isAuthoritative(handle: string, key?: string): boolean
  /** Counts for logs and /metrics. */
  stats(): LocalStoreStats
  /**
   * The cacheKey of every record loaded now (prefix records too: a key without '/'), for the health checker's
   * watched DOIs (issue 42). The set loaded when called: a reload swaps in a new one and leaves this one whole.
   */
  keys(): Iterable<string>
  /** Call `listener` after each reload that swapped in a new set of records; returns what stops it. Never before the first load. */
  onReload(listener: () => void): () => void
  /** Stop watching. Safe to call twice. */
  close(): Promise<void>
}

/** Thrown by openLocalStore when the directory cannot be used at start. */
export class LocalStoreError extends Error {
  override name = 'LocalStoreError'
}

/** Logging every problem of a million-line broken file would drown the log; the count is still exact. */
const MAX_LOGGED_PROBLEMS_PER_FILE = 20

interface CachedFile {
  hash: string
  parsed: ParsedFile
}

/**
 * Open the store: load every `.json`/`.ndjson` file directly in `dir` (dot-files are skipped, so an editor's or
 * a writer's temporary file is never half-read), then watch for changes when `watch` is set.
 * A missing directory is an error (LocalStoreError); an empty one is fine.
 */
export async function openLocalStore(opts: LocalStoreOptions): Promise<LocalStore> {
  const dir = resolvePath(opts.dir)
  await assertDirectory(dir, opts.dir)
  const authoritative = new Set(opts.authoritativePrefixes.map((p) => cacheKey(p.trim())).filter((p) => p !== ''))
  const parsedByName = new Map<string, CachedFile>()
  let snapshot: Snapshot = {
    records: new Map(),
    metadata: new Map(),
    stats: { records: 0, files: 0, rejectedFiles: 0, problems: 0 },
    duplicates: []
  }
  let closed = false
  const reloadListeners = new Set<() => void>()

  /** Read the directory and swap in the new snapshot. Never throws: on failure the old snapshot stays. */
  async function reload(reason: string): Promise<void> {
    try {
      await swapIn(reason)
    } catch (err) {
      opts.log.error({ err, dir }, 'local store: reload failed; keeping the records already loaded')
    }
  }

  async function swapIn(reason: string): Promise<void> {
    // Taken before the files are read: polling compares the directory with what was loaded.
    loadedSignature = await directorySignature(dir)
    let names: string[]
    try {
      names = await storeFileNames(dir)
    } catch (err) {
      opts.log.error({ err, dir }, 'local store: cannot read the directory; keeping the records already loaded')
      return
    }
    const files: ParsedFile[] = []
    for (const name of names) files.push(await loadFile(dir, name, parsedByName, opts.log))
    for (const name of [...parsedByName.keys()]) if (!names.includes(name)) parsedByName.delete(name)
    const next = buildSnapshot(files)
    if (closed) return
    snapshot = next // the one assignment that makes the new set visible
    for (const d of next.duplicates) {
      opts.log.warn({ handle: d.handle, kept: d.kept, dropped: d.dropped }, 'local store: a handle is defined twice; the later one wins')
    }
    opts.log.info({ dir, reason, ...next.stats }, 'local store loaded')
    for (const listener of reloadListeners) {
      try {
        listener()
      } catch (err) {
        opts.log.error({ err, dir }, 'local store: a listener of reloads failed')
      }
    }
  }

  // Watch first, then load: a change made while the first load runs is seen and reloaded after it.
  let loadedSignature: string | undefined
  const reloader = createSerialReloader(reload)
  const stopWatching = opts.watch ? startWatching(dir, opts, reloader, () => loadedSignature) : () => {}
  reloader.request('start')
  await reloader.idle()

  return {
    get(handle, key = cacheKey(handle)) {
      return snapshot.records.get(key)
    },
    metadata(handle) {
      return snapshot.metadata.get(cacheKey(handle))
    },
    isAuthoritative(handle, key) {
      // Folding and cutting at the first '/' commute: the key's prefix is the prefix's key.
      // Most deployments name none: then no prefix is cut out of every cached DOI's key to look it up.
      if (authoritative.size === 0) return false
      return authoritative.has(key === undefined ? cacheKey(prefixOf(handle)) : prefixOf(key))
    },
    stats() {
      return { ...snapshot.stats }
    },
    keys() {
      // The snapshot's map is never changed once built: iterating it while a reload runs is safe.
      return snapshot.records.keys()
    },
    onReload(listener) {
      const own = (): void => {
        listener()
      }
      reloadListeners.add(own)
      return () => {
        reloadListeners.delete(own)
      }
    },
    async close() {
      closed = true
      reloadListeners.clear()
      stopWatching()
      await reloader.idle()
    }
  }
}

async function assertDirectory(dir: string, asGiven: string): Promise<void> {
  let isDir: boolean
  try {
    isDir = (await stat(dir)).isDirectory()
  } catch (err) {
    const code = (err as { code?: string }).code
    throw new LocalStoreError(
      `localStoreDir: the local record directory "${asGiven}" (${dir}) ${code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? String(err)})`}; ` +
        'create it or set LOCAL_STORE_DIR (localStoreDir) to an existing directory'
    )
  }
  if (!isDir) {
    throw new LocalStoreError(
      `localStoreDir: "${asGiven}" (${dir}) is not a directory; set LOCAL_STORE_DIR (localStoreDir) to a directory of .json/.ndjson files`
    )
  }
}

/** Read and parse one file, reusing the last parse when its bytes have not changed. Never throws. */
async function loadFile(dir: string, name: string, cache: Map<string, CachedFile>, log: StoreLog): Promise<ParsedFile> {
  let bytes: Buffer
  try {
    bytes = await readFile(join(dir, name))
  } catch (err) {
    const code = (err as { code?: string }).code ?? String(err)
    const parsed: ParsedFile = { name, records: [], problems: [{ file: name, message: `cannot be read (${code})` }], rejected: true }
    logProblems(parsed, log)
    return parsed
  }
  const hash = createHash('sha1').update(bytes).digest('hex')
  const cached = cache.get(name)
  if (cached?.hash === hash) return cached.parsed
  const parsed = parseStoreBytes(name, bytes)
  cache.set(name, { hash, parsed })
  logProblems(parsed, log)
  return parsed
}

function logProblems(parsed: ParsedFile, log: StoreLog): void {
  for (const p of parsed.problems.slice(0, MAX_LOGGED_PROBLEMS_PER_FILE)) {
    log.warn({ file: p.file, line: p.line, item: p.item, problem: p.message }, `local store: skipped ${describeProblem(p)}`)
  }
  const more = parsed.problems.length - MAX_LOGGED_PROBLEMS_PER_FILE
  if (more > 0) log.warn({ file: parsed.name, more }, `local store: ${more} more problems in ${parsed.name} not shown`)
  if (parsed.rejected) log.error({ file: parsed.name }, `local store: rejected ${parsed.name}; its records are not served`)
}
