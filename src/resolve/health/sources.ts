/**
 * Where resolution health's watched DOIs come from (issue 42, plan D9), but for the seen ones (seen.ts):
 * (a) the local store's records of HEALTH_WATCH's prefixes, synced again after each reload of the store, and
 * (b) every DOI of HEALTH_LIST_FILE, of any prefix, read again when its modification time changes (looked at
 * every minute). Each sync hands its rows to a sink (the health database) stamped with a new generation, then
 * asks it to sweep the source: a DOI no longer in it loses that source (its history stays; the prune takes it
 * once no source holds it). The two sources share HEALTH_MAX_DOIS, the list first; what is beyond is refused,
 * counted and logged once an hour. Prefix records (a handle without '/') are never watched.
 */
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { listLines, nameOfLine } from '../../handle/batch.js'
import { prefixOfKey, watchedBy } from '../../handle/health/watch.js'
import { cacheKey } from '../../handle/name.js'
import { isDoiName } from '../../handle/ra.js'
import type { LocalStore } from '../local-store/store.js'

/** Where a watched DOI comes from: the local store, the list file, or the resolver's answers (seen.ts). */
export type WatchSource = 'store' | 'list' | 'seen'

/** Each source's bit in `dois.sources` (0: no source holds the DOI any more). */
export const SOURCE_BIT: Readonly<Record<WatchSource, number>> = { store: 1, list: 2, seen: 4 }

/** One DOI a source holds: its cacheKey, the DOI as the list gave it (else the key lower-cased), its prefix (lower-cased). */
export interface WatchedRow {
  key: string
  doi: string
  prefix: string
  source: WatchSource
}

/**
 * What the sources write to (the health database, resolve/health/db.ts). Synchronous: one call is one
 * transaction, of at most SYNC_BATCH rows.
 * - `upsertWatched`: each row's DOI gets its source's bit, its `prefix`, and `generation` (a DOI new to the
 *   sink is added, unchecked); its `doi` as given, except that a `store` row's (the key lower-cased: the store
 *   keeps no case) never replaces one held. Returns how many new DOIs it refused (its own HEALTH_MAX_DOIS over
 *   every source, seen ones included), 0 when none. A DOI it holds already is never refused.
 * - `sweepSources`: every DOI with `source`'s bit and a generation below `generation` loses that bit.
 * The seen DOIs' upserts (fleet log `watch` events) must leave `generation` as it is: a sweep of the store
 * or the list then never keeps a bit it should clear.
 */
export interface WatchedSink {
  upsertWatched(rows: readonly WatchedRow[], generation: number): number
  sweepSources(source: WatchSource, generation: number): void
}

export interface SourcesLog {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
}

export interface SourcesOptions {
  sink: WatchedSink
  /** The local store (LOCAL_STORE_DIR); none: no DOI comes from it. */
  store?: Pick<LocalStore, 'keys' | 'onReload'> | undefined
  /** HEALTH_LIST_FILE. */
  listFile?: string | undefined
  /** HEALTH_WATCH: the prefixes whose local records are watched. */
  prefixes: readonly string[]
  /** HEALTH_MAX_DOIS. */
  maxDois: number
  log: SourcesLog
  now?: () => number
  /** How often the list file's modification time is looked at, and a failed sync tried again; default a minute. */
  listPollMs?: number
}

export interface SourcesStats {
  /** DOIs each source holds now (within HEALTH_MAX_DOIS). */
  store: number
  list: number
  /** Lines of the list file that are not a DOI (at its last reading). */
  invalidLines: number
  /** DOIs not watched at the last sync of each source, HEALTH_MAX_DOIS reached (the sink's refusals too). */
  refused: number
}

export interface Sources {
  /** Read the list file if it changed (or was never read) and sync both sources; resolves when the sink has them. */
  sync(): Promise<void>
  /** The first sync, then the store's reloads and the list file's changes. */
  start(): Promise<void>
  /** Stop watching; waits for a sync under way. */
  stop(): Promise<void>
  stats(): SourcesStats
}

/** Rows per sink call (one transaction), the event loop let go between two. */
export const SYNC_BATCH = 1000
/** Longest DOI read from the list (the server's default limit), and longest line (a percent-encoded URL of one). */
const MAX_HANDLE_LENGTH = 4096
const MAX_LINE_LENGTH = 4 * MAX_HANDLE_LENGTH
/** Lines of the list named in the log at each reading, then a count. */
const MAX_LOGGED_LINES = 20
const REFUSED_WARN_MS = 3_600_000

interface ListRead {
  /** By key: the DOI as the list gives it, in the list's order, at most maxDois. */
  dois: Map<string, string>
  invalid: number
  refused: number
}

export function createSources(opts: SourcesOptions): Sources {
  const { sink, log, maxDois } = opts
  const now = opts.now ?? Date.now
  const listPollMs = opts.listPollMs ?? 60_000
  const watched = watchedBy(opts.prefixes)
  const listFile: ListFileState = { signature: undefined, missing: false }
  let list: ListRead = { dois: new Map(), invalid: 0, refused: 0 }
  let storeCount = 0
  let storeRefused = 0
  let sinkRefused = { store: 0, list: 0 }
  let lastGeneration = 0
  let timer: NodeJS.Timeout | undefined
  let stopReloads = (): void => {}
  const refusedNow = (): number => list.refused + storeRefused + sinkRefused.list + sinkRefused.store
  const warnRefused = refusedWarner(log, maxDois, now)
  const syncs = syncChain({ list: syncList, store: syncStore, after: () => warnRefused(refusedNow()) }, log, listPollMs)

  /** Generations grow across restarts too (a clock), and strictly within one. */
  function nextGeneration(): number {
    lastGeneration = Math.max(lastGeneration + 1, now())
    return lastGeneration
  }

  async function upsert(source: 'store' | 'list', rows: Iterable<WatchedRow>): Promise<void> {
    const refused = await upsertAll(sink, source, rows, nextGeneration())
    sinkRefused = { ...sinkRefused, [source]: refused }
  }

  /** Read the list file when it changed; false when it did not (or cannot be read: the DOIs read before stay). */
  async function syncList(): Promise<boolean> {
    const file = opts.listFile
    if (file === undefined) return false
    const changed = await readListIfChanged(file, listFile, list.dois.size, maxDois, log)
    if (changed === undefined) return false
    const { read } = changed
    list = read
    log.info({ file, dois: read.dois.size, invalidLines: read.invalid, refused: read.refused }, 'health: HEALTH_LIST_FILE read')
    const rows = function* (): Generator<WatchedRow> {
      for (const [key, doi] of read.dois) yield { key, doi, prefix: prefixOfKey(key)!, source: 'list' }
    }
    await upsert('list', rows())
    listFile.signature = changed.signature // only once the sink has it all: a failure reads the file again
    return true
  }

  async function syncStore(): Promise<void> {
    if (opts.store === undefined || opts.prefixes.length === 0) return
    const { rows, refused } = storeRows(opts.store.keys(), watched, list.dois, maxDois)
    storeCount = rows.length
    storeRefused = refused
    await upsert('store', rows)
  }

  return {
    async sync() {
      listFile.signature = undefined // read the list again even if its time did not change (a coarse clock)
      await Promise.all([syncs.request('list'), syncs.request('store')])
    },
    async start() {
      syncs.reset()
      if (opts.store !== undefined && opts.prefixes.length > 0) stopReloads = opts.store.onReload(syncs.later('store'))
      if (opts.listFile !== undefined) {
        timer = setInterval(syncs.later('list'), listPollMs)
        timer.unref()
      }
      await Promise.all([syncs.request('list'), syncs.request('store')])
    },
    async stop() {
      const done = syncs.stop()
      clearInterval(timer)
      stopReloads()
      await done
    },
    stats() {
      return { store: storeCount, list: list.dois.size, invalidLines: list.invalid, refused: refusedNow() }
    }
  }
}

/**
 * One sync at a time; a request made while one runs is done once after it (more requests coalesce). A list that
 * changed changes what the store may add (HEALTH_MAX_DOIS, the list first): both are synced then.
 */
function syncChain(sync: { list(): Promise<boolean>; store(): Promise<void>; after(): void }, log: SourcesLog, retryMs: number) {
  let chain: Promise<void> = Promise.resolve()
  let stopped = false
  const queued = { list: false, store: false }
  function request(what: 'list' | 'store'): Promise<void> {
    if (queued[what]) return chain
    queued[what] = true
    chain = chain.then(async () => {
      if (!queued[what] || stopped) return
      queued[what] = false
      try {
        if (what === 'list' && (await sync.list())) {
          queued.store = false
          await sync.store()
        }
        if (what === 'store') await sync.store()
        sync.after()
      } catch (err) {
        // The sink failed (a busy database): nothing was swept; the same sync is tried again a poll later.
        log.warn({ err, source: what }, 'health: syncing the watched DOIs failed; trying again later')
        if (!stopped) setTimeout(later(what), retryMs).unref()
      }
    })
    return chain
  }
  /** A request from a timer or a listener: its promise never rejects (failures are logged in the chain). */
  const later = (what: 'list' | 'store') => (): void => {
    request(what).catch(() => {})
  }
  return {
    request,
    later,
    reset(): void {
      stopped = false
      queued.list = false
      queued.store = false
    },
    /** No more syncs; resolves when the one under way is done. */
    stop(): Promise<void> {
      stopped = true
      return chain
    }
  }
}

/** A warning of the DOIs HEALTH_MAX_DOIS leaves unwatched, at most once an hour. */
function refusedWarner(log: SourcesLog, maxDois: number, now: () => number): (refused: number) => void {
  let lastRefusedWarning = -Infinity
  return (refused) => {
    if (refused === 0 || now() - lastRefusedWarning < REFUSED_WARN_MS) return
    lastRefusedWarning = now()
    log.warn({ refused, maxDois }, `health: ${refused} DOIs are not watched: HEALTH_MAX_DOIS (${maxDois}) reached`)
  }
}

/** The rows to the sink in batches of SYNC_BATCH (the loop let go between two), then the sweep: how many it refused. */
async function upsertAll(sink: WatchedSink, source: 'store' | 'list', rows: Iterable<WatchedRow>, generation: number): Promise<number> {
  let refused = 0
  let batch: WatchedRow[] = []
  for (const row of rows) {
    batch.push(row)
    if (batch.length < SYNC_BATCH) continue
    refused += sink.upsertWatched(batch, generation)
    batch = []
    await yieldToLoop()
  }
  if (batch.length > 0) refused += sink.upsertWatched(batch, generation)
  sink.sweepSources(source, generation)
  return refused
}

/**
 * The store's DOIs of the watched prefixes, within the room the list leaves under HEALTH_MAX_DOIS. The key set is
 * collected at once: a reload meanwhile swaps in another set, this one stays whole.
 */
function storeRows(
  keys: Iterable<string>,
  watched: (key: string) => boolean,
  listed: ReadonlyMap<string, string>,
  maxDois: number
): { rows: WatchedRow[]; refused: number } {
  const rows: WatchedRow[] = []
  const room = maxDois - listed.size
  let own = 0
  let refused = 0
  for (const key of keys) {
    if (!watched(key)) continue
    const doi = listed.get(key)
    if (doi === undefined) {
      if (own >= room) {
        refused++
        continue
      }
      own++
    }
    rows.push({ key, doi: doi ?? key.toLowerCase(), prefix: prefixOfKey(key)!, source: 'store' })
  }
  return { rows, refused }
}

interface ListFileState {
  /** Of the file as last read and handed to the sink whole. */
  signature: string | undefined
  /** Whether it could not be looked at last time (said once). */
  missing: boolean
}

/** The list file read again when its signature changed; undefined when it did not, or cannot be read. */
async function readListIfChanged(
  file: string,
  state: ListFileState,
  kept: number,
  maxDois: number,
  log: SourcesLog
): Promise<{ read: ListRead; signature: string } | undefined> {
  let signature: string
  try {
    const info = await stat(file)
    signature = `${info.mtimeMs}:${info.size}:${info.ino}`
  } catch (err) {
    if (!state.missing) log.warn({ err, file, kept }, 'health: HEALTH_LIST_FILE cannot be read; its DOIs read before stay watched')
    state.missing = true
    return undefined
  }
  state.missing = false
  if (signature === state.signature) return undefined
  try {
    return { read: await readList(file, maxDois, log), signature }
  } catch (err) {
    log.warn({ err, file, kept }, 'health: HEALTH_LIST_FILE cannot be read; its DOIs read before stay watched')
    return undefined
  }
}

/**
 * The DOIs of a list file, one a line (src/handle/batch.ts: blank lines and `#` comments skipped; `doi:`
 * and resolver URLs stripped), read as a stream: a file of millions of lines is never one string. Repeats
 * are dropped; a name that is not a DOI with a suffix (a prefix record, a shortDOI, anything else) is an
 * invalid line, logged with its number (the first few); beyond `max` DOIs the rest are counted as refused.
 */
export async function readList(file: string, max: number, log: Pick<SourcesLog, 'warn'>): Promise<ListRead> {
  const dois = new Map<string, string>()
  let invalid = 0
  let refused = 0
  let lineNumber = 0
  const invalidLine = (text: string, why: string): void => {
    invalid++
    if (invalid <= MAX_LOGGED_LINES) {
      log.warn({ file, line: lineNumber, text: text.slice(0, 200), problem: why }, 'health: HEALTH_LIST_FILE: skipped a line')
    }
  }
  const take = (raw: string): void => {
    lineNumber++
    for (const { text } of listLines(raw)) {
      const read = nameOfLine(text, MAX_HANDLE_LENGTH)
      if (!read.ok) return invalidLine(text, read.why)
      const key = cacheKey(read.handle)
      if (prefixOfKey(key) === null || !isDoiName(read.handle)) {
        return invalidLine(text, 'not a DOI with a prefix and a suffix (10.1000/x): a prefix or a shortDOI is never watched')
      }
      if (dois.has(key)) return
      if (dois.size >= max) {
        refused++
        return
      }
      dois.set(key, read.handle)
    }
  }
  const takeOverlong = (start: string): void => {
    lineNumber++
    invalidLine(start, `longer than ${MAX_LINE_LENGTH} characters`)
  }
  let partial = ''
  let overlong: string | undefined // the start of a line too long already: the rest of it is dropped
  let first = true
  for await (const chunk of createReadStream(file, { encoding: 'utf8', highWaterMark: 64 * 1024 }) as AsyncIterable<string>) {
    let from = first && chunk.startsWith('\uFEFF') ? 1 : 0 // a byte order mark is not part of the first DOI
    first = false
    for (let newline = chunk.indexOf('\n', from); newline >= 0; newline = chunk.indexOf('\n', from)) {
      if (overlong === undefined) take(partial + chunk.slice(from, newline))
      else takeOverlong(overlong)
      partial = ''
      overlong = undefined
      from = newline + 1
    }
    if (overlong !== undefined) continue
    partial += chunk.slice(from)
    if (partial.length > MAX_LINE_LENGTH) {
      overlong = partial.slice(0, 200)
      partial = ''
    }
  }
  if (overlong !== undefined) takeOverlong(overlong)
  else if (partial !== '') take(partial)
  return { dois, invalid, refused }
}
