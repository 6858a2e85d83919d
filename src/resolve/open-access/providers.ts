/**
 * The open-access providers (docs/institutional.md "Open access first"): Unpaywall's and OpenAlex's
 * APIs over HTTP, and Unpaywall's data feed read from a file. Each says, for one DOI, where its open
 * copy is or that it knows none, and throws when it cannot say. A provider's answer is not trusted:
 * bounded in time and size like the upstream's (the same undici Pool limits and getWhole), read
 * defensively, and its URL is checked by src/handle/linkout.ts before anyone is sent there.
 */
import { createInterface } from 'node:readline'
import { Pool } from 'undici'
import type { Dispatcher } from 'undici'
import { ConfigError } from '../../config/schema.js'
import { cacheKey, encodeHandlePath } from '../../handle/name.js'
import { openAccessLocation } from '../../handle/linkout.js'
import { Cancel, connectionLimits, getWhole } from '../upstream/client.js'
import type { WholeAnswer } from '../upstream/client.js'
import { openMaybeGzipped } from '../files/maybe-gzipped.js'

/** A provider's answer: the open copy's URL (checked), or null when it knows none. */
export type ProviderAnswer = string | null

export interface OpenAccessProviderClient {
  name: 'unpaywall' | 'openalex' | 'file'
  /** Calls to it count against the daily limit (the file's do not). */
  remote: boolean
  find(doi: string): Promise<ProviderAnswer>
  close(): Promise<void>
}

export interface HttpProviderOptions {
  userAgent: string
  timeoutMs: number
  connectTimeoutMs: number
  connections: number
  maxBodyBytes: number
  /** Tests may pass their own undici dispatcher (one getWhole takes: src/resolve/upstream/client.ts). */
  dispatcher?: Dispatcher
}

export class ProviderError extends Error {
  override name = 'ProviderError'
}

/** Unpaywall: GET {base}/{doi}?email=…; the copy is best_oa_location.url when is_oa (404: a DOI it does not know). */
export function unpaywallProvider(baseUrl: string, email: string, opts: HttpProviderOptions): OpenAccessProviderClient {
  const get = httpGetter(baseUrl, opts)
  return {
    name: 'unpaywall',
    remote: true,
    async find(doi) {
      const body = await get(`/${encodeHandlePath(doi)}?email=${encodeURIComponent(email)}`)
      return body === undefined ? null : unpaywallCopy(body)
    },
    close: get.close
  }
}

/** OpenAlex: GET {base}/works/doi:{doi}[?mailto=…]; the copy is open_access.oa_url. */
export function openAlexProvider(baseUrl: string, mailto: string | undefined, opts: HttpProviderOptions): OpenAccessProviderClient {
  const get = httpGetter(baseUrl, opts)
  return {
    name: 'openalex',
    remote: true,
    async find(doi) {
      const body = await get(`/works/doi:${encodeHandlePath(doi)}${mailto === undefined ? '' : `?mailto=${encodeURIComponent(mailto)}`}`)
      return body === undefined ? null : openAlexCopy(body)
    },
    close: get.close
  }
}

/** An Unpaywall work (API answer or feed line): its best open copy, checked, or null. */
export function unpaywallCopy(work: unknown): ProviderAnswer {
  if (!isObject(work) || work.is_oa !== true) return null
  const best = work.best_oa_location
  return isObject(best) ? (openAccessLocation(best.url) ?? null) : null
}

/** An OpenAlex work: open_access.oa_url, checked, or null. */
export function openAlexCopy(work: unknown): ProviderAnswer {
  if (!isObject(work) || !isObject(work.open_access)) return null
  return openAccessLocation(work.open_access.oa_url) ?? null
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

/**
 * GET a path under the base as JSON: the parsed body, undefined for a 404 (the provider does not know
 * the DOI), a ProviderError for anything else that is not a 200 with JSON in time and within bounds.
 */
function httpGetter(baseUrl: string, opts: HttpProviderOptions): ((path: string) => Promise<unknown>) & { close: () => Promise<void> } {
  const base = new URL(baseUrl)
  const basePath = base.pathname.replace(/\/+$/, '')
  const pool: Dispatcher =
    opts.dispatcher ?? new Pool(base.origin, connectionLimits(opts.connections, opts.connectTimeoutMs, opts.timeoutMs))
  const headers = { 'user-agent': opts.userAgent, accept: 'application/json' }
  async function get(path: string): Promise<unknown> {
    // Read whole (bounded) even what we ignore, so the connection is reused; the whole call stays within timeoutMs.
    const cancel = Cancel.after(opts.timeoutMs, `over ${opts.timeoutMs} ms`)
    let res: WholeAnswer
    try {
      res = await getWhole(
        pool,
        { origin: base.origin, path: `${basePath}${path}`, method: 'GET', headers },
        { maxBytes: opts.maxBodyBytes, tooLarge: () => new ProviderError(`answer larger than ${opts.maxBodyBytes} bytes`), cancel }
      )
    } catch (err) {
      throw err instanceof ProviderError
        ? err
        : new ProviderError(`the provider did not answer: ${(err as { code?: string; name?: string }).code ?? (err as Error).name}`)
    } finally {
      cancel.clear()
    }
    const text = res.body.toString('utf8')
    if (res.statusCode === 404) return undefined
    if (res.statusCode !== 200) throw new ProviderError(`HTTP ${res.statusCode}`)
    try {
      return JSON.parse(text)
    } catch {
      throw new ProviderError('an answer that is not JSON')
    }
  }
  // Closing cuts calls still running short (destroy, not close: close would wait for a stalled provider).
  return Object.assign(get, {
    close: async () => {
      if (opts.dispatcher === undefined) await pool.destroy()
    }
  })
}

// A feed line longer than this is not a work we can use: skipped (Unpaywall's longest are tens of KB).
const MAX_FEED_LINE = 1024 * 1024

/**
 * Unpaywall's data feed read into memory: only the works with an open copy are kept (DOI → URL), at
 * most maxEntries of them; every other DOI has none. Gzip is recognised by its magic bytes.
 */
export async function fileProvider(
  path: string,
  maxEntries: number,
  log: (fields: object, message: string) => void
): Promise<OpenAccessProviderClient> {
  const copies = new Map<string, string>()
  const counts = { lines: 0, open: 0, bad: 0, dropped: 0 }
  const started = performance.now()
  const input = await openMaybeGzipped(path)
  try {
    const lines = createInterface({ input, crlfDelay: Infinity })
    for await (const line of lines) {
      if (line.trim() === '') continue
      counts.lines++
      if (line.length > MAX_FEED_LINE) {
        counts.bad++
        continue
      }
      let work: unknown
      try {
        work = JSON.parse(line)
      } catch {
        counts.bad++
        continue
      }
      const doi = isObject(work) && typeof work.doi === 'string' ? work.doi : undefined
      const copy = unpaywallCopy(work)
      if (doi === undefined) counts.bad++
      else if (copy !== null) {
        if (copies.size >= maxEntries) counts.dropped++
        else copies.set(cacheKey(doi), copy)
      }
    }
  } catch (err) {
    // A feed that cannot be read through (a truncated or corrupt gzip): the setting's mistake, said as one line at start.
    throw new ConfigError(
      `invalid setting oaSnapshotFile (OA_SNAPSHOT_FILE): ${JSON.stringify(path)} cannot be read as Unpaywall's data feed (JSON Lines, gzip or not): ${(err as Error).message}`
    )
  } finally {
    input.destroy()
  }
  counts.open = copies.size
  log({ file: path, ...counts, ms: Math.round(performance.now() - started) }, 'read the open-access data feed')
  return {
    name: 'file',
    remote: false,
    async find(doi) {
      return copies.get(cacheKey(doi)) ?? null
    },
    async close() {
      copies.clear()
    }
  }
}
