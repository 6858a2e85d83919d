/**
 * The local record store: handle records kept in files, consulted before the upstream (behaviour.md §3,
 * issue 7). A directory of `.json` files (one record or an array) and `.ndjson` files (one record per
 * line), in the Handle REST API's own shape `{"handle": …, "values": [...]}`.
 *
 * Loading never throws once the server runs: a bad record is skipped, a bad file is rejected, both are
 * logged with file, line and problem, and the rest loads. A change in the directory reloads it; the new
 * set of records is built off to the side and swapped in with one assignment, so a request sees the old
 * set or the new one, never half of each.
 */
import { createHash } from 'node:crypto'
import { watch } from 'node:fs'
import type { FSWatcher } from 'node:fs'
import { readdir, readFile, stat } from 'node:fs/promises'
import { join, resolve as resolvePath } from 'node:path'
import { cacheKey, hasControlChar, prefixOf } from '../handle/name.js'
import type { HandleRecord, HandleValue } from '../handle/types.js'
import { checkMetadata } from './local-metadata.js'
import type { StoredMetadata } from './local-metadata.js'

export interface StoreLog {
  info (obj: object, msg: string): void
  warn (obj: object, msg: string): void
  error (obj: object, msg: string): void
}

export interface LocalStoreOptions {
  dir: string
  authoritativePrefixes: string[]
  watch: boolean
  log: StoreLog
  /** Look for changes by polling instead of fs.watch (network or container mounts where fs.watch hears nothing): LOCAL_STORE_POLL_MS. Default false. */
  poll?: boolean
  /** How often to look for changes when polling (also the fallback when fs.watch fails). Default 2000 ms. */
  pollIntervalMs?: number
}

export interface LocalStoreStats {
  /** Distinct handles held. */
  records: number
  /** Files read and used (possibly with some records skipped). */
  files: number
  /** Files that could not be used at all (unreadable, not JSON, wrong shape). */
  rejectedFiles: number
  /** Every problem found: skipped records, rejected files, duplicate handles. */
  problems: number
}

export interface LocalStore {
  /** The local record for a handle (ASCII-case-folded match via cacheKey), or undefined. O(1): a Map lookup on the current snapshot. Do not mutate the answer. */
  get (handle: string): HandleValue[] | undefined
  /** The record's stored metadata by media type (docs/metadata.md), or undefined when it has none. */
  metadata (handle: string): StoredMetadata | undefined
  /** True when the handle's prefix (prefixOf, compared with cacheKey folding) is served only locally: a miss is a 404, never an upstream call. */
  isAuthoritative (handle: string): boolean
  /** Counts for logs and /metrics. */
  stats (): LocalStoreStats
  /** Stop watching. Safe to call twice. */
  close (): Promise<void>
}

/** One thing wrong in a store file. `line` is the 1-based line (ndjson, or a JSON syntax error); `item` the 0-based array position (json). */
export interface StoreProblem {
  file: string
  line?: number
  item?: number
  message: string
}

/** A problem as one human line: `records.ndjson line 3: values[0].index must be an integer`. */
export function describeProblem (p: StoreProblem): string {
  const where = p.line !== undefined ? ` line ${p.line}` : p.item !== undefined ? ` record [${p.item}]` : ''
  return `${p.file}${where}: ${p.message}`
}

/** Thrown by openLocalStore when the directory cannot be used at start. */
export class LocalStoreError extends Error {
  override name = 'LocalStoreError'
}

/** A value without a ttl gets the handle system's usual default (one day). */
export const DEFAULT_TTL_SECONDS = 86400

/** Logging every problem of a million-line broken file would drown the log; the count is still exact. */
const MAX_LOGGED_PROBLEMS_PER_FILE = 20

const STORE_EXTENSIONS = ['.json', '.ndjson']

// ---------------------------------------------------------------------------------------------------------
// Parsing and validation (pure)

/**
 * Parse one store file's text. `.ndjson`: one record per line, blank lines allowed. `.json`: one record or an
 * array of records. Bad records are skipped and described; this never throws.
 */
export function parseStoreFile (name: string, text: string): { records: HandleRecord[], problems: StoreProblem[] } {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text // an editor's byte-order mark is not content
  if (name.endsWith('.ndjson')) return parseNdjson(name, body)
  if (name.endsWith('.json')) return parseJson(name, body)
  return { records: [], problems: [{ file: name, message: 'not a .json or .ndjson file' }] }
}

function parseNdjson (file: string, text: string): { records: HandleRecord[], problems: StoreProblem[] } {
  const records: HandleRecord[] = []
  const problems: StoreProblem[] = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').trim()
    if (line === '') continue
    const where = { file, line: i + 1 }
    let parsed: unknown
    try {
      parsed = JSON.parse(line)
    } catch (err) {
      problems.push({ ...where, message: `not valid JSON (${jsonErrorDetail(err)})` })
      continue
    }
    const checked = checkRecord(parsed)
    if (typeof checked === 'string') problems.push({ ...where, message: checked })
    else records.push(checked)
  }
  return { records, problems }
}

function parseJson (file: string, text: string): { records: HandleRecord[], problems: StoreProblem[] } {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    const line = lineOfJsonError(text)
    return { records: [], problems: [{ file, ...(line === undefined ? {} : { line }), message: `not valid JSON (${jsonErrorDetail(err)})` }] }
  }
  if (!Array.isArray(parsed)) {
    const checked = checkRecord(parsed)
    return typeof checked === 'string'
      ? { records: [], problems: [{ file, message: checked }] }
      : { records: [checked], problems: [] }
  }
  const records: HandleRecord[] = []
  const problems: StoreProblem[] = []
  parsed.forEach((item: unknown, i) => {
    const checked = checkRecord(item)
    if (typeof checked === 'string') problems.push({ file, item: i, message: checked })
    else records.push(checked)
  })
  return { records, problems }
}

function jsonErrorDetail (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** The 1-based line of the first JSON syntax error (V8's message does not always say where it is). */
function lineOfJsonError (text: string): number | undefined {
  const position = jsonErrorOffset(text)
  if (position === undefined) return undefined
  let line = 1
  for (let i = 0; i < position && i < text.length; i++) if (text.charCodeAt(i) === 0x0a) line++
  return line
}

/**
 * Where JSON text first goes wrong: a small recursive scanner, run only after JSON.parse has failed.
 * Returns the offset of the offending character (text.length for a truncated document).
 */
export function jsonErrorOffset (text: string): number | undefined {
  let i = 0
  const fail = (at: number): never => { throw new JsonSyntaxAt(at) }
  const skipSpace = (): void => { while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++ }
  const literal = (word: string): void => {
    if (text.startsWith(word, i)) i += word.length
    else fail(i)
  }
  const string = (): void => {
    i++ // opening quote
    while (i < text.length) {
      const c = text.charCodeAt(i)
      if (c === 0x22) { i++; return }
      if (c < 0x20) fail(i)
      if (c === 0x5c) {
        const e = text[i + 1] ?? ''
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail(i)
          i += 6
        } else if ('"\\/bfnrt'.includes(e) && e !== '') {
          i += 2
        } else {
          fail(i)
        }
      } else {
        i++
      }
    }
    fail(i)
  }
  const number = (): void => {
    const m = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i, i + 400))
    if (m === null) fail(i)
    else i += m[0].length
  }
  const sequence = (close: string, item: () => void): void => {
    i++ // opening bracket
    skipSpace()
    if (text[i] === close) { i++; return }
    for (;;) {
      item()
      skipSpace()
      if (text[i] === ',') { i++; continue }
      if (text[i] === close) { i++; return }
      fail(i)
    }
  }
  const value = (): void => {
    skipSpace()
    const c = text[i]
    if (c === '{') {
      sequence('}', () => {
        skipSpace()
        if (text[i] !== '"') fail(i)
        string()
        skipSpace()
        if (text[i] !== ':') fail(i)
        i++
        value()
      })
    } else if (c === '[') sequence(']', value)
    else if (c === '"') string()
    else if (c === 't') literal('true')
    else if (c === 'f') literal('false')
    else if (c === 'n') literal('null')
    else number()
  }
  try {
    value()
    skipSpace()
    return i < text.length ? i : undefined
  } catch (err) {
    return err instanceof JsonSyntaxAt ? err.offset : undefined // nesting too deep to scan: no line, still no throw
  }
}

class JsonSyntaxAt extends Error {
  constructor (readonly offset: number) { super(`JSON syntax error at ${offset}`) }
}

/** A record of the store: a handle record, and optionally its metadata by media type (docs/metadata.md). */
export type LocalRecord = HandleRecord & { metadata?: StoredMetadata }

/** A checked record, or a message saying what is wrong with it. Extra fields (responseCode from a saved API answer) are ignored. */
export function checkRecord (raw: unknown): LocalRecord | string {
  if (!isPlainObject(raw)) return 'a record must be an object {"handle": …, "values": [...]}'
  const handle = raw.handle
  if (typeof handle !== 'string') return '"handle" must be a string'
  if (handle === '') return '"handle" must not be empty'
  if (hasControlChar(handle)) return `"handle" ${JSON.stringify(handle)} contains a control character`
  if (handle.trim() !== handle) return `"handle" ${JSON.stringify(handle)} starts or ends with whitespace, so no request can reach it`
  if (!Array.isArray(raw.values)) return `"values" of ${handle} must be an array`
  const values: HandleValue[] = []
  const indexes = new Set<number>()
  for (let i = 0; i < raw.values.length; i++) {
    const checked = checkValue(raw.values[i])
    if (typeof checked === 'string') return `${handle}: values[${i}]${checked}`
    if (indexes.has(checked.index)) return `${handle}: values[${i}].index ${checked.index} is used twice (an index is unique within a record)`
    indexes.add(checked.index)
    values.push(checked)
  }
  const metadata = checkMetadata(raw.metadata, handle)
  if (typeof metadata === 'string') return metadata
  return metadata === undefined ? { handle, values } : { handle, values, metadata }
}

/** A checked value (ttl defaulted), or a message starting with the field that is wrong (`.index must …`). */
function checkValue (raw: unknown): HandleValue | string {
  if (!isPlainObject(raw)) return ' must be an object'
  if (!Number.isSafeInteger(raw.index)) return '.index must be an integer'
  if (typeof raw.type !== 'string') return '.type must be a string'
  const data = raw.data
  if (!isPlainObject(data)) return '.data must be an object {"format": …, "value": …}'
  if (typeof data.format !== 'string') return '.data.format must be a string'
  if (!('value' in data) || data.value === undefined) return '.data.value is missing'
  if (['string', 'base64', 'hex'].includes(data.format) && typeof data.value !== 'string') {
    return `.data.value must be a string when the format is "${data.format}"`
  }
  const ttl = raw.ttl ?? DEFAULT_TTL_SECONDS
  if (typeof ttl === 'number' && !(Number.isSafeInteger(ttl) && ttl >= 0)) return '.ttl must be a whole number of seconds, 0 or more'
  if (typeof ttl === 'string' && Number.isNaN(Date.parse(ttl))) return '.ttl must be seconds or an ISO-8601 date'
  if (typeof ttl !== 'number' && typeof ttl !== 'string') return '.ttl must be seconds or an ISO-8601 date'
  if (raw.timestamp !== undefined && (typeof raw.timestamp !== 'string' || Number.isNaN(Date.parse(raw.timestamp)))) {
    return '.timestamp must be an ISO-8601 date'
  }
  return { ...raw, ttl } as HandleValue
}

function isPlainObject (v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

// ---------------------------------------------------------------------------------------------------------
// Building a snapshot from parsed files (pure)

export interface ParsedFile {
  name: string
  records: HandleRecord[]
  problems: StoreProblem[]
  /** The file could not be used at all. */
  rejected: boolean
}

export interface Duplicate {
  handle: string
  /** The file whose record is kept (the later one). */
  kept: string
  /** The file whose record is dropped. */
  dropped: string
}

export interface Snapshot {
  records: Map<string, HandleValue[]>
  metadata: Map<string, StoredMetadata>
  stats: LocalStoreStats
  duplicates: Duplicate[]
}

/**
 * One complete set of records from parsed files, in file-name order: for a handle found twice the later one
 * wins (a later file, or a later line of the same file), and the duplicate is reported.
 */
export function buildSnapshot (files: readonly ParsedFile[]): Snapshot {
  const sorted = [...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const records = new Map<string, HandleValue[]>()
  const metadata = new Map<string, StoredMetadata>()
  const source = new Map<string, string>()
  const duplicates: Duplicate[] = []
  let problems = 0
  for (const file of sorted) {
    problems += file.problems.length
    for (const record of file.records) {
      const key = cacheKey(record.handle)
      const earlier = source.get(key)
      if (earlier !== undefined) duplicates.push({ handle: record.handle, kept: file.name, dropped: earlier })
      records.set(key, record.values)
      const stored = (record as LocalRecord).metadata
      if (stored !== undefined) metadata.set(key, stored)
      else metadata.delete(key)
      source.set(key, file.name)
    }
  }
  const rejectedFiles = sorted.filter((f) => f.rejected).length
  return {
    records,
    metadata,
    duplicates,
    stats: { records: records.size, files: sorted.length - rejectedFiles, rejectedFiles, problems: problems + duplicates.length }
  }
}

// ---------------------------------------------------------------------------------------------------------
// The running store (I/O)

interface CachedFile {
  hash: string
  parsed: ParsedFile
}

/**
 * Open the store: load every `.json`/`.ndjson` file directly in `dir` (dot-files are skipped, so an editor's or
 * a writer's temporary file is never half-read), then watch for changes when `watch` is set.
 * A missing directory is an error (LocalStoreError); an empty one is fine.
 */
export async function openLocalStore (opts: LocalStoreOptions): Promise<LocalStore> {
  const dir = resolvePath(opts.dir)
  await assertDirectory(dir, opts.dir)
  const authoritative = new Set(opts.authoritativePrefixes.map((p) => cacheKey(p.trim())).filter((p) => p !== ''))
  const parsedByName = new Map<string, CachedFile>()
  let snapshot: Snapshot = { records: new Map(), metadata: new Map(), stats: { records: 0, files: 0, rejectedFiles: 0, problems: 0 }, duplicates: [] }
  let closed = false

  /** Read the directory and swap in the new snapshot. Never throws: on failure the old snapshot stays. */
  async function reload (reason: string): Promise<void> {
    try {
      await swapIn(reason)
    } catch (err) {
      opts.log.error({ err, dir }, 'local store: reload failed; keeping the records already loaded')
    }
  }

  async function swapIn (reason: string): Promise<void> {
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
  }

  // Watch first, then load: a change made while the first load runs is seen and reloaded after it.
  let loadedSignature: string | undefined
  const reloader = createSerialReloader(reload)
  const stopWatching = opts.watch ? startWatching(dir, opts, reloader, () => loadedSignature) : () => {}
  reloader.request('start')
  await reloader.idle()

  return {
    get (handle) {
      return snapshot.records.get(cacheKey(handle))
    },
    metadata (handle) {
      return snapshot.metadata.get(cacheKey(handle))
    },
    isAuthoritative (handle) {
      return authoritative.has(cacheKey(prefixOf(handle)))
    },
    stats () {
      return { ...snapshot.stats }
    },
    async close () {
      closed = true
      stopWatching()
      await reloader.idle()
    }
  }
}

async function assertDirectory (dir: string, asGiven: string): Promise<void> {
  let isDir: boolean
  try {
    isDir = (await stat(dir)).isDirectory()
  } catch (err) {
    const code = (err as { code?: string }).code
    throw new LocalStoreError(`localStoreDir: the local record directory "${asGiven}" (${dir}) ${code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? String(err)})`}; ` +
      'create it or set LOCAL_STORE_DIR (localStoreDir) to an existing directory')
  }
  if (!isDir) {
    throw new LocalStoreError(`localStoreDir: "${asGiven}" (${dir}) is not a directory; set LOCAL_STORE_DIR (localStoreDir) to a directory of .json/.ndjson files`)
  }
}

async function storeFileNames (dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true })
  return entries
    .filter((e) => (e.isFile() || e.isSymbolicLink()) && !e.name.startsWith('.') && STORE_EXTENSIONS.some((ext) => e.name.endsWith(ext)))
    .map((e) => e.name)
    .sort()
}

/** Read and parse one file, reusing the last parse when its bytes have not changed. Never throws. */
async function loadFile (dir: string, name: string, cache: Map<string, CachedFile>, log: StoreLog): Promise<ParsedFile> {
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
  const parsed = parseBytes(name, bytes)
  cache.set(name, { hash, parsed })
  logProblems(parsed, log)
  return parsed
}

function parseBytes (name: string, bytes: Buffer): ParsedFile {
  let text: string
  try {
    text = bytes.toString('utf8')
  } catch {
    return { name, records: [], problems: [{ file: name, message: `too large to read (${bytes.length} bytes); split it into several files` }], rejected: true }
  }
  const { records, problems } = parseStoreFile(name, text)
  // A file-level problem (bad JSON, not a record, not an array) makes the whole file unusable; a bad ndjson line
  // or array item only costs that record.
  const rejected = !name.endsWith('.ndjson') && records.length === 0 && problems.some((p) => p.item === undefined)
  return { name, records, problems, rejected }
}

function logProblems (parsed: ParsedFile, log: StoreLog): void {
  for (const p of parsed.problems.slice(0, MAX_LOGGED_PROBLEMS_PER_FILE)) {
    log.warn({ file: p.file, line: p.line, item: p.item, problem: p.message }, `local store: skipped ${describeProblem(p)}`)
  }
  const more = parsed.problems.length - MAX_LOGGED_PROBLEMS_PER_FILE
  if (more > 0) log.warn({ file: parsed.name, more }, `local store: ${more} more problems in ${parsed.name} not shown`)
  if (parsed.rejected) log.error({ file: parsed.name }, `local store: rejected ${parsed.name}; its records are not served`)
}

interface SerialReloader {
  /** Ask for a reload; a request made while one runs is served by one more reload after it. */
  request (reason: string): void
  /** Resolves when no reload is running or pending. */
  idle (): Promise<void>
}

function createSerialReloader (reload: (reason: string) => Promise<void>): SerialReloader {
  let running: Promise<void> | undefined
  let pendingReason: string | undefined
  function run (reason: string): void {
    running = reload(reason).finally(() => {
      running = undefined
      if (pendingReason !== undefined) {
        const next = pendingReason
        pendingReason = undefined
        run(next)
      }
    })
  }
  return {
    request (reason) {
      if (running !== undefined) pendingReason = reason
      else run(reason)
    },
    async idle () {
      for (let current = running; current !== undefined; current = running) await current
    }
  }
}

const DEBOUNCE_MS = 100
/** A file written continuously (a mirror appending) must still be picked up now and then. */
const MAX_DEBOUNCE_MS = 1000

/**
 * Watch the directory with fs.watch; when that is impossible or fails, poll. Returns the stop function.
 * Known limits of fs.watch (docs/local-records.md, "How changes are noticed"): it hears nothing, and reports
 * no error, for changes made by another machine on NFS/SMB or from the host into some container mounts
 * (Docker Desktop); nor for the target of a symlink, nor once the directory itself is replaced. Not
 * recursive, which suits a store read from the top level only; rename-saves are seen (we watch the directory).
 * chokidar would be one more dependency with the same limits: it uses fs.watch too, unless told to poll.
 */
function startWatching (dir: string, opts: LocalStoreOptions, reloader: SerialReloader, loaded: () => string | undefined): () => void {
  let timer: NodeJS.Timeout | undefined
  let firstEventAt: number | undefined
  let watcher: FSWatcher | undefined
  let stopPolling: (() => void) | undefined
  let stopped = false

  const fire = (): void => {
    timer = undefined
    firstEventAt = undefined
    if (!stopped) reloader.request('change')
  }
  const onEvent = (): void => {
    const now = Date.now()
    firstEventAt ??= now
    if (timer !== undefined) clearTimeout(timer)
    timer = setTimeout(fire, Math.max(0, Math.min(DEBOUNCE_MS, firstEventAt + MAX_DEBOUNCE_MS - now)))
    timer.unref()
  }
  const intervalMs = opts.pollIntervalMs ?? 2000
  const fallBackToPolling = (err: unknown): void => {
    watcher?.close()
    watcher = undefined
    if (stopped || stopPolling !== undefined) return
    opts.log.warn({ err, dir, intervalMs }, 'local store: cannot watch the directory; checking it for changes every few seconds instead')
    stopPolling = startPolling(dir, intervalMs, onEvent, loaded)
  }

  if (opts.poll === true) {
    stopPolling = startPolling(dir, intervalMs, onEvent, loaded)
  } else {
    try {
      watcher = watch(dir, { persistent: false }, onEvent)
      watcher.on('error', fallBackToPolling)
    } catch (err) {
      fallBackToPolling(err)
    }
  }

  return () => {
    stopped = true
    if (timer !== undefined) clearTimeout(timer)
    watcher?.close()
    stopPolling?.()
  }
}

/** Every intervalMs, compare the directory with what was last loaded; a difference asks for a reload. */
function startPolling (dir: string, intervalMs: number, onChange: () => void, loaded: () => string | undefined): () => void {
  let busy = false
  const look = async (): Promise<void> => {
    if (busy) return
    busy = true
    try {
      const signature = await directorySignature(dir)
      const known = loaded()
      if (known !== undefined && signature !== known) onChange()
    } finally {
      busy = false
    }
  }
  const lookQuietly = (): void => { look().catch(() => {}) } // look() handles its own errors
  const interval = setInterval(lookQuietly, intervalMs)
  interval.unref()
  return () => clearInterval(interval)
}

async function directorySignature (dir: string): Promise<string> {
  try {
    const names = await storeFileNames(dir)
    const parts = await Promise.all(names.map(async (name) => {
      try {
        const s = await stat(join(dir, name))
        return `${name}:${s.size}:${s.mtimeMs}:${s.ino}`
      } catch {
        return `${name}:gone`
      }
    }))
    return parts.join('\n')
  } catch (err) {
    return `unreadable:${(err as { code?: string }).code ?? ''}`
  }
}
