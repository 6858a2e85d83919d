/**
 * `doi-proxy mirror`: copy the records of a reading list of DOIs from the upstream into an NDJSON file the
 * local store can load (issue 7 §3). With each DOI come the records the resolver needs to answer for it
 * offline: its prefix record (Which RA?, namespace locations), the handles the prefix's HS_NAMESPACE
 * `<locs>` names (content negotiation), the target of an HS_ALIAS and the handles a 10320/loc refers to.
 *
 * Resumable: the output is read first and every handle already in it is skipped, so an interrupted run
 * is continued by running the same command again.
 */
import { createReadStream } from 'node:fs'
import { mkdir, open, rm } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { dirname } from 'node:path'
import { createInterface } from 'node:readline'
import { namespaceLocHandles, referencedHandles } from '../handle/locations.js'
import { listLines, nameOfLine } from '../handle/batch.js'
import { cacheKey, prefixOf } from '../handle/name.js'
import type { HandleRecord, HandleValue } from '../handle/types.js'
import { isType, valueString } from '../handle/types.js'
import { LASTING_REASONS, UpstreamError } from '../resolve/upstream/errors.js'
import type { UpstreamClient } from '../resolve/upstream/client.js'

export interface MirrorOptions {
  /** Requests in flight at once. */
  concurrency: number
  /** Extra attempts for a failure worth retrying (timeout, connection error, 5xx, 429). */
  retries: number
  /** Politeness: each worker waits this long after each request before its next one. */
  delayMs: number
  /** First retry waits this long, doubling each time (capped at 30 s). Default 1000. */
  retryBaseMs?: number
  /** Stop starting new requests when this fires; what is in flight finishes and is written. */
  signal?: AbortSignal
}

/** Counts for the input DOIs, and separately for the records fetched along with them. */
export interface MirrorProgress {
  /** Distinct DOIs in the input. */
  total: number
  /** Input DOIs finished (fetched, skipped, not found or failed). */
  done: number
  fetched: number
  skipped: number
  notFound: number
  failed: number
  /** Records fetched along with the DOIs: prefixes, <locs> handles, alias targets, 10320/loc references. */
  related: { fetched: number; notFound: number; failed: number }
}

export interface MirrorFailure {
  handle: string
  /** The input line, or the handle that needed it (for a related record). */
  neededBy?: string
  message: string
}

export interface MirrorSummary extends MirrorProgress {
  failures: MirrorFailure[]
  /** Input lines that are not a DOI name (1-based line numbers). */
  invalidLines: Array<{ line: number; text: string; message: string }>
  /** A partial last line left by an interrupted run was cut off before appending. */
  repairedPartialLine: boolean
  /** The run was stopped by the signal before the list was done. */
  interrupted: boolean
}

export interface ReadingList {
  handles: Array<{ handle: string; line: number }>
  invalidLines: MirrorSummary['invalidLines']
}

/** Longest DOI accepted from a reading list (the server's default limit). */
const MAX_HANDLE_LENGTH = 4096
/** Alias chains and include chains longer than this are not followed (behaviour.md §3: 20 alias hops). */
const MAX_RELATED_DEPTH = 20
const MAX_RETRY_WAIT_MS = 30_000

/**
 * A reading list: one DOI per line, read as a batch's lines are (src/handle/batch.ts: blank lines and `#`
 * comments skipped; `doi:`, `https://doi.org/` and the other prefixes the proxy accepts stripped). Repeats
 * are dropped. With `doisOnly` (`record`), a name that is neither a DOI (10.prefix/suffix) nor a shortDOI
 * is an invalid line, never asked for; `mirror` takes any handle (a local store may hold other handles).
 */
export function parseReadingList(text: string, opts: { doisOnly?: boolean } = {}): ReadingList {
  const handles: ReadingList['handles'] = []
  const invalidLines: ReadingList['invalidLines'] = []
  const seen = new Set<string>()
  for (const { line, text: raw } of listLines(text)) {
    const read = nameOfLine(raw, MAX_HANDLE_LENGTH, { anyHandle: opts.doisOnly !== true })
    if (!read.ok) {
      invalidLines.push({ line, text: raw.trim(), message: read.why })
    } else if (!seen.has(cacheKey(read.handle))) {
      seen.add(cacheKey(read.handle))
      handles.push({ handle: read.handle, line })
    }
  }
  return { handles, invalidLines }
}

/** Exit status of the command: 1 when anything failed or an input line was not a DOI, else 0. */
export function mirrorExitCode(summary: MirrorSummary): 0 | 1 {
  return summary.failed > 0 || summary.related.failed > 0 || summary.invalidLines.length > 0 ? 1 : 0
}

interface Task {
  handle: string
  /** Input DOIs count in the main numbers; related records in `related`. */
  input: boolean
  neededBy?: string
  depth: number
  /** Fetch its prefix record too (the DOI itself and alias targets: the handles users resolve). */
  wantsPrefix: boolean
}

export interface MirrorArgs {
  upstream: Pick<UpstreamClient, 'fetchRecord'>
  list: ReadingList
  outPath: string
  options: MirrorOptions
  onProgress?: (progress: MirrorProgress) => void
}

/** Fetch every DOI of the list (and what comes with it) into outPath, appending one NDJSON line per record. */
export async function runMirror(args: MirrorArgs): Promise<MirrorSummary> {
  const { upstream, list, outPath, options } = args
  const existing = await readExisting(outPath)
  const summary: MirrorSummary = {
    total: list.handles.length,
    done: 0,
    fetched: 0,
    skipped: 0,
    notFound: 0,
    failed: 0,
    related: { fetched: 0, notFound: 0, failed: 0 },
    failures: [],
    invalidLines: list.invalidLines,
    repairedPartialLine: existing.repairedPartialLine,
    interrupted: false
  }
  const progress = (): void => args.onProgress?.({ ...summary, related: { ...summary.related } })
  const queue: Task[] = []
  /** Handles queued or written, by cache key: each is fetched at most once per run. */
  const planned = new Set<string>(existing.handles.keys())

  for (const { handle, line } of list.handles) {
    if (existing.handles.has(cacheKey(handle))) {
      summary.skipped++
      summary.done++
    } else {
      planned.add(cacheKey(handle))
      queue.push({ handle, input: true, neededBy: `line ${line}`, depth: 0, wantsPrefix: true })
    }
  }
  // Records an interrupted run wrote without their prefix or alias target yet: fetch what they still need.
  for (const need of missingFromExisting(existing, list)) {
    if (!planned.has(cacheKey(need.handle))) {
      planned.add(cacheKey(need.handle))
      queue.push({ ...need, input: false, depth: 1 })
    }
  }
  progress()

  await mkdir(dirname(outPath), { recursive: true })
  const out = await open(outPath, 'a')
  const writer = createLineWriter(out)
  let written = 0
  try {
    await runPool(queue, options, async (task) => {
      const answer = await fetchWithRetries(upstream, task.handle, options)
      if (answer.kind === 'failed') {
        if (task.input) summary.failed++
        else summary.related.failed++
        summary.failures.push({
          handle: task.handle,
          ...(task.neededBy === undefined ? {} : { neededBy: task.neededBy }),
          message: answer.message
        })
      } else if (answer.kind === 'not-found') {
        if (task.input) summary.notFound++
        else summary.related.notFound++
      } else {
        await writer.write(JSON.stringify({ handle: task.handle, values: answer.record.values }) + '\n')
        written++
        if (task.input) summary.fetched++
        else summary.related.fetched++
        for (const need of needsOf(answer.record, task.wantsPrefix)) {
          if (task.depth >= MAX_RELATED_DEPTH || planned.has(cacheKey(need.handle))) continue
          planned.add(cacheKey(need.handle))
          queue.push({ ...need, input: false, neededBy: task.handle, depth: task.depth + 1 })
        }
      }
      if (task.input) summary.done++
      progress()
    })
  } finally {
    await writer.flushed()
    await out.close()
    // A file this run created and wrote nothing into is not left behind: an empty mirror looks like a finished one.
    if (!existing.existed && written === 0) await rm(outPath, { force: true })
  }
  summary.interrupted = options.signal?.aborted === true && queue.length > 0
  return summary
}

type FetchResult = { kind: 'found'; record: HandleRecord } | { kind: 'not-found' } | { kind: 'failed'; message: string }

/** An operator reads the summary: the reader's sentence plus what the upstream actually said. */
function operatorMessage(err: unknown): string {
  if (!(err instanceof UpstreamError)) return err instanceof Error ? err.message : String(err)
  return `${err.message} (${err.upstreamStatus === undefined ? err.code : `HTTP ${err.upstreamStatus}`})`
}

async function fetchWithRetries(upstream: MirrorArgs['upstream'], handle: string, options: MirrorOptions): Promise<FetchResult> {
  const base = options.retryBaseMs ?? 1000
  for (let attempt = 0; ; attempt++) {
    try {
      return await upstream.fetchRecord(handle)
    } catch (err) {
      // A host name that does not resolve or a refused connection lasts: asking again only takes longer.
      const retryable = err instanceof UpstreamError && err.staleable && (err.reason === undefined || !LASTING_REASONS.has(err.reason))
      if (!retryable || attempt >= options.retries || options.signal?.aborted === true) {
        return { kind: 'failed', message: operatorMessage(err) }
      }
      await sleep(Math.min(MAX_RETRY_WAIT_MS, base * 2 ** attempt))
    }
  }
}

/**
 * The records the resolver reads besides this one: for a DOI its prefix record; for a prefix record the
 * handles its HS_NAMESPACE <locs> names; the target of an HS_ALIAS (and that target's prefix); the
 * include/nshdl handles and override prefix of a 10320/loc.
 */
export function needsOf(record: HandleRecord, wantsPrefix: boolean): Array<{ handle: string; wantsPrefix: boolean }> {
  const needs: Array<{ handle: string; wantsPrefix: boolean }> = []
  const isPrefix = !record.handle.includes('/')
  if (wantsPrefix && !isPrefix) needs.push({ handle: prefixOf(record.handle), wantsPrefix: false })
  if (isPrefix) for (const h of namespaceLocHandles(record.values)) needs.push({ handle: h, wantsPrefix: false })
  for (const target of aliasTargets(record.values)) needs.push({ handle: target, wantsPrefix: true })
  const refs = referencedHandles(record.values)
  for (const h of [...refs.includes, ...refs.nshdl]) needs.push({ handle: h, wantsPrefix: false })
  for (const p of refs.includeNamespaces) needs.push({ handle: prefixOf(p), wantsPrefix: false })
  if (refs.overridePrefix !== undefined) needs.push({ handle: prefixOf(refs.overridePrefix), wantsPrefix: false })
  return needs.filter((n) => n.handle !== '' && cacheKey(n.handle) !== cacheKey(record.handle))
}

function aliasTargets(values: readonly HandleValue[]): string[] {
  return values
    .filter((v) => isType(v, 'HS_ALIAS'))
    .map((v) => valueString(v)?.trim() ?? '')
    .filter((t) => t !== '')
}

interface Existing {
  /** Cache key → handle, for every record already in the file. */
  handles: Map<string, string>
  /** What the records need besides their prefixes (<locs> handles, alias targets, loc references). */
  needs: Array<{ handle: string; wantsPrefix: boolean }>
  /** Alias targets named in the file: they want their prefix record like an input DOI. */
  aliasTargets: Set<string>
  repairedPartialLine: boolean
  /** The file was there before this run. */
  existed: boolean
}

/** What an earlier run already wrote (after mending a last line cut short by an interrupted run). */
async function readExisting(outPath: string): Promise<Existing> {
  const existing: Existing = { handles: new Map(), needs: [], aliasTargets: new Set(), repairedPartialLine: false, existed: false }
  try {
    existing.repairedPartialLine = await mendLastLine(outPath)
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return existing
    throw err
  }
  existing.existed = true
  const lines = createInterface({ input: createReadStream(outPath), crlfDelay: Infinity })
  for await (const line of lines) {
    const record = parseLine(line)
    if (record === undefined) continue
    existing.handles.set(cacheKey(record.handle), record.handle)
    for (const need of needsOf(record, false)) {
      existing.needs.push(need)
      if (need.wantsPrefix) existing.aliasTargets.add(cacheKey(need.handle))
    }
  }
  return existing
}

/**
 * The records an interrupted run wrote without what they need: their missing related records, and the
 * missing prefix records of input DOIs and alias targets already in the file.
 */
function missingFromExisting(existing: Existing, list: ReadingList): Array<{ handle: string; wantsPrefix: boolean }> {
  const wantsPrefix = new Set([...existing.aliasTargets, ...list.handles.map((h) => cacheKey(h.handle))])
  const prefixes = [...existing.handles]
    .filter(([key, handle]) => wantsPrefix.has(key) && handle.includes('/'))
    .map(([, handle]) => ({ handle: prefixOf(handle), wantsPrefix: false }))
  return [...existing.needs, ...prefixes].filter((n) => !existing.handles.has(cacheKey(n.handle)))
}

/**
 * Make the file end with a newline so the next append starts a line of its own. A last line without one is
 * either a whole record (a hand-written file: a newline is added) or a fragment left by a run killed
 * mid-write (cut off: that record is fetched again). Returns true when the file was changed.
 */
async function mendLastLine(path: string): Promise<boolean> {
  const file = await open(path, 'r+')
  try {
    const { size } = await file.stat()
    if (size === 0 || (await readAt(file, size - 1, 1))[0] === 0x0a) return false
    let start = size
    let lastLineStart = 0
    while (start > 0) {
      // search backwards for the last newline, a chunk at a time
      const from = Math.max(0, start - 65536)
      const chunk = await readAt(file, from, start - from)
      const nl = chunk.lastIndexOf(0x0a)
      if (nl >= 0) {
        lastLineStart = from + nl + 1
        break
      }
      start = from
    }
    const lastLine = (await readAt(file, lastLineStart, size - lastLineStart)).toString('utf8')
    if (parseLine(lastLine) !== undefined) await file.write('\n', size)
    else await file.truncate(lastLineStart)
    return true
  } finally {
    await file.close()
  }
}

async function readAt(file: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length)
  const { bytesRead } = await file.read(buffer, 0, length, position)
  return buffer.subarray(0, bytesRead)
}

function parseLine(line: string): HandleRecord | undefined {
  try {
    const o = JSON.parse(line) as { handle?: unknown; values?: unknown }
    return typeof o?.handle === 'string' && Array.isArray(o.values) ? { handle: o.handle, values: o.values as HandleValue[] } : undefined
  } catch {
    return undefined
  }
}

/** Appends lines one after another (never interleaved), in completion order. */
function createLineWriter(out: FileHandle): { write(line: string): Promise<void>; flushed(): Promise<void> } {
  let tail: Promise<unknown> = Promise.resolve()
  return {
    async write(line) {
      const next = tail.then(async () => {
        await out.write(line)
      })
      tail = next.catch(() => {})
      await next
    },
    async flushed() {
      await tail
    }
  }
}

/**
 * Run `work` over a queue that may grow while it runs, with at most `concurrency` tasks at once; each worker
 * pauses `delayMs` after each task. Stops taking tasks when the signal fires.
 */
async function runPool(queue: Task[], options: MirrorOptions, work: (task: Task) => Promise<void>): Promise<void> {
  let active = 0
  await new Promise<void>((resolve, reject) => {
    const pump = (): void => {
      while (active < options.concurrency && queue.length > 0 && options.signal?.aborted !== true) {
        const task = queue.shift() as Task
        active++
        work(task)
          .then(async () => {
            if (options.delayMs > 0 && queue.length > 0) await sleep(options.delayMs)
          })
          .then(() => {
            active--
            pump()
          }, reject)
      }
      if (active === 0) resolve()
    }
    options.signal?.addEventListener(
      'abort',
      () => {
        if (active === 0) resolve()
      },
      { once: true }
    )
    pump()
  })
}

async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms))
}
