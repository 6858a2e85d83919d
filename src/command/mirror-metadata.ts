/**
 * `doi-proxy mirror --accept TYPES`: after the records, copy each DOI's metadata in the media types asked
 * for into the local store (docs/metadata.md "Offline metadata"), so an offline instance answers content
 * negotiation. The location is the one the server itself would choose for a negotiated request (the
 * record's, or its prefix's namespace `http_role="conneg"` location), fetched under the same rules as
 * METADATA_MODE=fetch: the allow-list at every hop, bounded size and time.
 *
 * Each DOI's metadata goes into its record's line as `metadata` (docs/local-records.md). Resumable: what is
 * fetched is appended at once to a dot-file next to the output (the store never reads dot-files), and merged
 * into the output when the run ends, by writing a new file and renaming it over the old one; an interrupted
 * run keeps what it fetched for the next.
 */
import { createReadStream } from 'node:fs'
import { open, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { chooseLocation } from '../handle/locations.js'
import { allowedMetadataUrl } from '../handle/metadata-hosts.js'
import { acceptsContentType } from '../handle/metadata-types.js'
import { PLAIN_LOOKUP } from '../handle/lookup-params.js'
import { cacheKey } from '../handle/name.js'
import { automaticLocatt } from '../handle/negotiate.js'
import { aliasTarget } from '../handle/record.js'
import { locationFor } from '../handle/redirect.js'
import type { HandleValue } from '../handle/types.js'
import { UpstreamError } from '../resolve/upstream/errors.js'
import { loadLocationContext } from '../resolve/lookup/locations-loader.js'
import type { MetadataFetcher } from '../resolve/metadata/agencies.js'
import type { ReadingList } from './mirror.js'

export interface MetadataMirrorOptions {
  concurrency: number
  retries: number
  delayMs: number
  retryBaseMs?: number
  /** One fetch (redirects included) gives up after this long. */
  timeoutMs: number
  signal?: AbortSignal
}

export interface MetadataMirrorArgs {
  fetcher: Pick<MetadataFetcher, 'fetch'>
  hosts: readonly string[]
  list: ReadingList
  outPath: string
  /** Normalised media types (normaliseMediaType). */
  types: readonly string[]
  options: MetadataMirrorOptions
}

export interface MetadataMirrorSummary {
  /** DOI × type pairs asked for. */
  wanted: number
  fetched: number
  /** Already held (in the output or fetched by an interrupted run). */
  skipped: number
  /** No metadata of that type: the agency answered 404/406, or the DOI does not negotiate, or is not mirrored. */
  unavailable: Array<{ handle: string; type: string; reason: string }>
  failed: Array<{ handle: string; type: string; message: string }>
  interrupted: boolean
}

interface Fetched {
  handle: string
  type: string
  contentType: string
  body: string
}

const MAX_ALIAS_HOPS = 20
const MAX_RETRY_WAIT_MS = 30_000

export async function runMetadataMirror(args: MetadataMirrorArgs): Promise<MetadataMirrorSummary> {
  const { outPath, types, options } = args
  const partialPath = join(dirname(outPath), `.${basename(outPath)}.metadata-partial`)
  const records = await readRecords(outPath)
  const partial = await readPartial(partialPath)
  const summary: MetadataMirrorSummary = { wanted: 0, fetched: 0, skipped: 0, unavailable: [], failed: [], interrupted: false }
  const lookup = async (
    h: string
  ): Promise<{ kind: 'found'; values: HandleValue[]; cache: 'HIT' } | { kind: 'not-found'; cache: 'HIT' }> => {
    const r = records.get(cacheKey(h))
    return r === undefined ? { kind: 'not-found', cache: 'HIT' } : { kind: 'found', values: r.values, cache: 'HIT' }
  }

  const tasks: Array<{ handle: string; type: string; url: URL }> = []
  for (const { handle: asked } of args.list.handles) {
    const handle = followAliases(asked, records)
    const record = handle === undefined ? undefined : records.get(cacheKey(handle))
    for (const type of types) {
      summary.wanted++
      if (handle === undefined || record === undefined) {
        summary.unavailable.push({
          handle: asked,
          type,
          reason: 'its record is not in the output (not found, or the record mirror failed)'
        })
        continue
      }
      const key = `${cacheKey(handle)}\u0000${type}`
      if (record.metadata?.has(type) === true || partial.has(key)) {
        summary.skipped++
        continue
      }
      const context = await loadLocationContext({ lookup }, handle, record.values, { params: PLAIN_LOOKUP })
      const decision = chooseLocation({
        handle,
        values: record.values,
        includes: context.includes,
        namespaceValues: context.namespaceValues,
        locatt: automaticLocatt({ accept: type }),
        random: () => 0
      })
      if (decision.kind !== 'redirect' || !decision.negotiated) {
        summary.unavailable.push({ handle, type, reason: 'no content-negotiation location (its prefix record names none)' })
        continue
      }
      const url = allowedMetadataUrl(locationFor(decision.href, undefined, ['http', 'https']) ?? '', args.hosts)
      if (typeof url === 'string') {
        summary.unavailable.push({ handle, type, reason: url })
        continue
      }
      tasks.push({ handle, type, url })
    }
  }

  const sink = await open(partialPath, 'a')
  let done = 0
  try {
    await runPool(tasks, options, async (task) => {
      done++
      const got = await fetchWithRetries(args.fetcher, task.url, task.type, options)
      if (got.kind === 'failed') {
        summary.failed.push({ handle: task.handle, type: task.type, message: got.message })
      } else if (got.status === 200 && got.contentType !== undefined && acceptsContentType(task.type, got.contentType)) {
        const line: Fetched = { handle: task.handle, type: task.type, contentType: got.contentType, body: got.body.toString('utf8') }
        await sink.write(JSON.stringify(line) + '\n')
        partial.set(`${cacheKey(task.handle)}\u0000${task.type}`, line)
        summary.fetched++
      } else if (got.status === 404 || got.status === 406 || got.status === 204) {
        summary.unavailable.push({ handle: task.handle, type: task.type, reason: `the agency answered ${got.status}` })
      } else {
        summary.failed.push({
          handle: task.handle,
          type: task.type,
          message: `the agency answered ${got.status} ${got.contentType ?? ''}`.trim()
        })
      }
    })
  } finally {
    await sink.close()
  }
  summary.interrupted = options.signal?.aborted === true && done < tasks.length
  if (!summary.interrupted && partial.size > 0) {
    await mergeInto(outPath, partial)
    await rm(partialPath, { force: true })
  } else if (partial.size === 0) {
    await rm(partialPath, { force: true })
  }
  return summary
}

function followAliases(handle: string, records: Map<string, { values: HandleValue[] }>): string | undefined {
  let current = handle
  for (let hops = 0; hops <= MAX_ALIAS_HOPS; hops++) {
    const record = records.get(cacheKey(current))
    if (record === undefined) return undefined
    const target = aliasTarget(record.values)
    if (target === undefined) return current
    current = target
  }
  return undefined
}

/** The records in the output, the later line of a handle winning (as the store reads them). */
async function readRecords(path: string): Promise<Map<string, { values: HandleValue[]; metadata?: Map<string, unknown> }>> {
  const out = new Map<string, { values: HandleValue[]; metadata?: Map<string, unknown> }>()
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity })
  for await (const line of lines) {
    const o = parseObject(line)
    if (o === undefined || typeof o.handle !== 'string' || !Array.isArray(o.values)) continue
    const metadata = o.metadata !== null && typeof o.metadata === 'object' ? new Map(Object.entries(o.metadata as object)) : undefined
    out.set(cacheKey(o.handle), { values: o.values as HandleValue[], ...(metadata === undefined ? {} : { metadata }) })
  }
  return out
}

async function readPartial(path: string): Promise<Map<string, Fetched>> {
  const out = new Map<string, Fetched>()
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch {
    return out
  }
  for (const line of text.split('\n')) {
    const o = parseObject(line) as Partial<Fetched> | undefined
    if (typeof o?.handle === 'string' && typeof o.type === 'string' && typeof o.contentType === 'string' && typeof o.body === 'string') {
      out.set(`${cacheKey(o.handle)}\u0000${o.type}`, o as Fetched)
    }
  }
  return out
}

/**
 * Put the fetched metadata into the last line of each handle (the one the store keeps), write the result
 * to a dot-file and rename it over the output: the store sees the old file or the new, never half of one.
 */
async function mergeInto(outPath: string, fetched: Map<string, Fetched>): Promise<void> {
  const byHandle = new Map<string, Fetched[]>()
  for (const f of fetched.values()) {
    const key = cacheKey(f.handle)
    byHandle.set(key, [...(byHandle.get(key) ?? []), f])
  }
  const lines = (await readFile(outPath, 'utf8')).split('\n')
  const last = new Map<string, number>()
  lines.forEach((line, i) => {
    const o = parseObject(line)
    if (typeof o?.handle === 'string') last.set(cacheKey(o.handle), i)
  })
  for (const [key, items] of byHandle) {
    const i = last.get(key)
    if (i === undefined) continue
    const o = parseObject(lines[i] ?? '')!
    const metadata = { ...(o.metadata !== null && typeof o.metadata === 'object' ? (o.metadata as object) : {}) } as Record<string, unknown>
    for (const f of items) metadata[f.type] = { contentType: f.contentType, body: f.body }
    lines[i] = JSON.stringify({ ...o, metadata })
  }
  const tmp = join(dirname(outPath), `.${basename(outPath)}.tmp`)
  await writeFile(tmp, lines.join('\n'))
  await rename(tmp, outPath)
}

function parseObject(line: string): Record<string, unknown> | undefined {
  if (line.trim() === '') return undefined
  try {
    const o = JSON.parse(line) as unknown
    return o !== null && typeof o === 'object' && !Array.isArray(o) ? (o as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

type FetchResult = { kind: 'answer'; status: number; contentType: string | undefined; body: Buffer } | { kind: 'failed'; message: string }

async function fetchWithRetries(
  fetcher: MetadataMirrorArgs['fetcher'],
  url: URL,
  type: string,
  options: MetadataMirrorOptions
): Promise<FetchResult> {
  const base = options.retryBaseMs ?? 1000
  for (let attempt = 0; ; attempt++) {
    let failure: string
    let retryable: boolean
    let wait: number | undefined
    try {
      const got = await fetcher.fetch(url, type, performance.now() + options.timeoutMs)
      if (got.status !== 429 && got.status < 500) {
        return { kind: 'answer', status: got.status, contentType: got.contentType, body: got.body }
      }
      failure = `the agency answered ${got.status}`
      retryable = true
      wait = got.retryAfterMs
    } catch (err) {
      failure = err instanceof UpstreamError ? `${err.message} (${err.code})` : String(err)
      retryable = err instanceof UpstreamError && err.staleable
    }
    if (!retryable || attempt >= options.retries || options.signal?.aborted === true) return { kind: 'failed', message: failure }
    await new Promise((resolve) => setTimeout(resolve, Math.min(MAX_RETRY_WAIT_MS, wait ?? base * 2 ** attempt)))
  }
}

async function runPool<T>(tasks: T[], options: MetadataMirrorOptions, work: (task: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < tasks.length && options.signal?.aborted !== true) {
      const task = tasks[next++] as T
      await work(task)
      if (options.delayMs > 0 && next < tasks.length) await new Promise((resolve) => setTimeout(resolve, options.delayMs))
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker))
}
