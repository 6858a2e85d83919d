/**
 * Metadata fetched from a registration agency's content-negotiation service (docs/metadata.md): the
 * fetcher (its own undici Agent, the allow-list at every hop, bounded redirects, size and time, retries
 * that honour Retry-After inside the deadline) and the cache in front of it (per DOI, location and Accept;
 * bounded in bytes; fresh and kept by src/handle/freshness.ts metadataEntryFor; stale answers when the agency fails;
 * one fetch per concurrent miss; a fair queue per agency host, so each agency has a concurrency cap and
 * every reader takes its turn).
 */
import { Agent } from 'undici'
import type { Dispatcher } from 'undici'
import { LRUCache } from 'lru-cache'
import { isFresh, metadataEntryFor } from '../../handle/freshness.js'
import type { MetadataFreshnessPolicy } from '../../handle/freshness.js'
import { allowedMetadataUrl } from '../../handle/metadata-hosts.js'
import { acceptsContentType } from '../../handle/metadata-types.js'
import { UpstreamError } from '../upstream/errors.js'
import { createFairQueue } from '../upstream/fair-queue.js'
import type { ClientTicket, FairQueue, FairQueueOptions } from '../upstream/fair-queue.js'
import { ACCEPT_ENCODING, Cancel, connectionLimits, decodeWhole, getWithRetries, isTimeoutError, retryAfterMs } from '../upstream/client.js'
import type { RetryPolicy, WholeAnswer } from '../upstream/client.js'
import { within } from '../upstream/deadline.js'

/** What an agency answered, as we keep it. */
export interface MetadataAnswer {
  status: number
  contentType: string | undefined
  body: Buffer
  /** Epoch ms on the app clock. */
  storedAt: number
  freshUntil: number
  /** Kept until then to stand in when the agency fails (src/handle/freshness.ts metadataEntryFor). */
  staleUntil: number
}

export type MetadataCacheStatus = 'HIT' | 'MISS' | 'STALE'

export interface MetadataFetcherOptions {
  /** METADATA_HOSTS' entries (src/handle/metadata-hosts.ts): where a fetch and each of its redirects may go. */
  hosts: readonly string[]
  userAgent: string
  /** A whole fetch (redirects and retries included) gives up after this long. */
  timeoutMs: number
  connectTimeoutMs: number
  maxBodyBytes: number
  /** Connections per agency origin (the fair queue per host bounds requests the same way). */
  connectionsPerHost: number
  maxRedirects: number
  retry: RetryPolicy
}

/** Raw answer of one fetch, after redirects: the status, the Content-Type, Cache-Control and body. */
export interface FetchedMetadata {
  status: number
  contentType: string | undefined
  cacheControl: string | undefined
  retryAfterMs: number | undefined
  body: Buffer
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])
const TRY_AGAIN = 'This is usually brief: please try again in a minute.'

/** The errors of a metadata fetch: the registry's error types, with the agency's words. */
export const metadataErrors = {
  unreachable: (detail: string, cause?: unknown) =>
    new UpstreamError('DP_METADATA_UNREACHABLE', 502, `We could not reach the registration agency's metadata service. ${TRY_AGAIN}`, true, {
      cause: cause ?? detail,
      fault: true
    }),
  timeout: (ms: number, cause?: unknown) =>
    new UpstreamError(
      'DP_METADATA_TIMEOUT',
      504,
      `The registration agency's metadata service took too long to answer (more than ${Math.round(ms / 100) / 10} s). ${TRY_AGAIN}`,
      true,
      { cause, fault: true }
    ),
  deadline: () =>
    new UpstreamError('DP_DEADLINE', 504, `Fetching this DOI's metadata took longer than we allow a request. ${TRY_AGAIN}`, true),
  status: (status: number, retryAfter: number | undefined) =>
    status === 429 || status === 503
      ? new UpstreamError(
          'DP_METADATA_BUSY',
          503,
          "The registration agency's metadata service asked us to wait before asking again. Please try again later.",
          true,
          { upstreamStatus: status, fault: true, retryAfterMs: retryAfter ?? 5000 }
        )
      : new UpstreamError(
          'DP_METADATA_STATUS',
          502,
          `The registration agency's metadata service is having trouble right now and answered with an error. ${TRY_AGAIN}`,
          true,
          { upstreamStatus: status, fault: true }
        ),
  /** The agency told us to wait (429/503 with Retry-After) and the time is not up: no request is sent. */
  paused: (retryAfter: number) =>
    new UpstreamError(
      'DP_METADATA_BUSY',
      503,
      "The registration agency's metadata service asked us to wait before asking again. Please try again later.",
      true,
      { retryAfterMs: retryAfter }
    ),
  tooLarge: (max: number) =>
    new UpstreamError(
      'DP_METADATA_TOO_LARGE',
      502,
      `The registration agency's metadata for this DOI is larger than we accept (${max} bytes).`,
      false,
      { cause: `over ${max} bytes` }
    ),
  unreadable: (detail: string) =>
    new UpstreamError(
      'DP_METADATA_BAD_RESPONSE',
      502,
      "The registration agency's metadata service sent an answer we could not read. Please try again later.",
      true,
      { cause: detail }
    ),
  wrongType: (contentType: string | undefined) =>
    new UpstreamError(
      'DP_METADATA_BAD_RESPONSE',
      502,
      "The registration agency's metadata service answered with a type of content that was not asked for.",
      false,
      { cause: `Content-Type ${contentType ?? '(none)'}` }
    ),
  redirect: (detail: string) =>
    new UpstreamError(
      'DP_METADATA_REDIRECT',
      502,
      "The registration agency's metadata service sent us on to a site we do not fetch from.",
      false,
      { cause: detail }
    )
}

/** Fetches one URL with the reader's Accept (and nothing else of theirs), following allowed redirects. */
export function createMetadataFetcher(opts: MetadataFetcherOptions, dispatcher?: Dispatcher) {
  const agent: Dispatcher = dispatcher ?? new Agent(connectionLimits(opts.connectionsPerHost, opts.connectTimeoutMs, opts.timeoutMs))

  async function fetch(url: URL, accept: string, deadlineAt: number): Promise<FetchedMetadata> {
    const started = performance.now()
    const deadline = Math.min(started + opts.timeoutMs, deadlineAt)
    const budgetMs = Math.floor(deadline - started)
    if (budgetMs <= 0) throw metadataErrors.deadline()
    // One timer for the whole fetch (every redirect and retry), cleared when it ends.
    const cancel = Cancel.after(budgetMs, `metadata fetch over ${budgetMs} ms`)
    const tooLarge = (): UpstreamError => metadataErrors.tooLarge(opts.maxBodyBytes)
    try {
      let current = url
      for (let hop = 0; ; hop++) {
        let res: WholeAnswer
        try {
          // The same retry policy as lookups (src/resolve/upstream/client.ts): Retry-After honoured, never past the deadline.
          res = await getWithRetries(
            agent,
            {
              origin: current.origin,
              path: `${current.pathname}${current.search}`,
              method: 'GET',
              headers: { accept, 'user-agent': opts.userAgent, 'accept-encoding': ACCEPT_ENCODING }
            },
            { maxBytes: opts.maxBodyBytes, tooLarge, cancel },
            current.host,
            deadline,
            opts.retry
          )
        } catch (err) {
          throw err instanceof UpstreamError ? err : classify(err, budgetMs, deadline < started + opts.timeoutMs)
        }
        const header = (name: string): string | undefined => {
          const v = res.headers[name]
          return Array.isArray(v) ? v[0] : v
        }
        if (REDIRECTS.has(res.statusCode)) {
          const location = header('location')
          if (location === undefined) throw metadataErrors.redirect(`HTTP ${res.statusCode} without a Location`)
          if (hop >= opts.maxRedirects) throw metadataErrors.redirect(`more than ${opts.maxRedirects} redirects`)
          let target: URL | string
          try {
            target = allowedMetadataUrl(new URL(location, current).href, opts.hosts)
          } catch {
            target = 'an unreadable Location'
          }
          if (typeof target === 'string') throw metadataErrors.redirect(`${current.host} redirected: ${target}`)
          current = target
          continue
        }
        const body = await decodeWhole(res, opts.maxBodyBytes, { tooLarge, unreadable: metadataErrors.unreadable })
        return {
          status: res.statusCode,
          contentType: header('content-type'),
          cacheControl: header('cache-control'),
          retryAfterMs: retryAfterMs(res.headers['retry-after']),
          body
        }
      }
    } finally {
      cancel.clear()
    }
  }

  return {
    fetch,
    async close() {
      if (dispatcher === undefined) await agent.close()
    }
  }
}

export type MetadataFetcher = ReturnType<typeof createMetadataFetcher>

function classify(err: unknown, budgetMs: number, byDeadline: boolean): UpstreamError {
  const e = err as { name?: string; code?: string; message?: string }
  if (isTimeoutError(err)) {
    return byDeadline ? metadataErrors.deadline() : metadataErrors.timeout(budgetMs, err)
  }
  return metadataErrors.unreachable(e?.code ?? e?.message ?? 'unknown error', err)
}

export interface MetadataServiceOptions {
  fetcher: Pick<MetadataFetcher, 'fetch'>
  now: () => number
  /** Bytes of answers kept; 0: none. */
  cacheMaxBytes: number
  /** How long an answer is fresh and kept to stand in when the agency fails (src/handle/freshness.ts). */
  freshness: MetadataFreshnessPolicy
  /** The fair queue of each agency host: maxActive is the agency's concurrency cap. */
  queue: Omit<FairQueueOptions, 'onChange' | 'onRefuse'>
}

// How long a finished fetch's outcome is kept for the readers who were waiting for it.
const SETTLED_KEEP_MS = 30_000
// A Retry-After longer than this is read as this: one bad header must not silence an agency for a day.
const MAX_PAUSE_MS = 10 * 60_000

export interface MetadataQuery {
  /** The cache key's parts: the record's handle folded, the location and the normalised Accept. */
  key: string
  url: URL
  /** The Accept header sent to the agency, as the reader wrote it. */
  accept: string
  ticket: ClientTicket | undefined
  /** performance.now() clock. */
  deadline: number
}

/** The cache and the per-agency queues in front of the fetcher. */
export function createMetadataService(opts: MetadataServiceOptions) {
  const { now } = opts
  const cache =
    opts.cacheMaxBytes > 0
      ? new LRUCache<string, MetadataAnswer>({
          maxSize: opts.cacheMaxBytes,
          sizeCalculation: (a, key) => Math.max(1, a.body.length + key.length * 2 + 128)
        })
      : undefined
  const turns = agencyTurns(opts.queue, now)
  const shared = sharedFetches(turns, peek, fetchAndStore)

  /** A fresh answer at hand, synchronously (the hot path); undefined otherwise. */
  function peek(key: string): MetadataAnswer | undefined {
    const entry = cache?.get(key)
    return entry !== undefined && isFresh(entry, now()) ? entry : undefined
  }

  async function get(q: MetadataQuery): Promise<{ answer: MetadataAnswer; cache: MetadataCacheStatus }> {
    const fresh = peek(q.key)
    if (fresh !== undefined) return { answer: fresh, cache: 'HIT' }
    const old = cache?.peek(q.key, { allowStale: true })
    try {
      return { answer: await within(shared.joinOrQueue(q), q.deadline, metadataErrors.deadline), cache: 'MISS' }
    } catch (err) {
      const standIn = old ?? cache?.peek(q.key, { allowStale: true })
      if (err instanceof UpstreamError && err.staleable && standIn !== undefined && now() <= standIn.staleUntil) {
        return { answer: standIn, cache: 'STALE' }
      }
      throw err
    }
  }

  async function fetchAndStore(q: MetadataQuery): Promise<MetadataAnswer> {
    const got = await opts.fetcher.fetch(q.url, q.accept, q.deadline)
    if (got.status === 429 || got.status >= 500) {
      if (got.retryAfterMs !== undefined && (got.status === 429 || got.status === 503)) turns.pause(q.url.host, got.retryAfterMs)
      throw metadataErrors.status(got.status, got.retryAfterMs)
    }
    // A 2xx of a type the reader did not ask for (an HTML page, a JSON error) is not passed on under our name.
    if (got.status >= 200 && got.status < 300 && got.status !== 204 && !acceptsContentType(q.accept, got.contentType)) {
      throw metadataErrors.wrongType(got.contentType)
    }
    const storedAt = now()
    const life = metadataEntryFor(got, storedAt, opts.freshness)
    const answer: MetadataAnswer = {
      status: got.status,
      contentType: got.contentType,
      body: got.body,
      storedAt,
      freshUntil: life.freshUntil,
      staleUntil: life.staleUntil
    }
    if (cache !== undefined && life.kept) {
      cache.set(q.key, answer, { ttl: life.staleUntil - storedAt })
    } else {
      cache?.delete(q.key)
    }
    return answer
  }

  /**
   * A purge (DELETE /api/cache/{doi}): every answer held for this record's handle (folded, the keys' first
   * part), whatever its location and Accept, a not-found (404, 406) included; true when one was held.
   * Goes through the keys: a purge is rare and the cache bounded in bytes.
   */
  function forget(handleKey: string): boolean {
    const prefix = `${handleKey}\u0000`
    let held = false
    for (const key of [...(cache?.keys() ?? [])]) {
      if (key.startsWith(prefix)) held = cache!.delete(key) || held
    }
    shared.forget(prefix)
    return held
  }

  return {
    peek,
    get,
    forget,
    stats: () => ({ entries: cache?.size ?? 0, bytes: cache?.calculatedSize ?? 0 })
  }
}

/** Each agency host's fair queue, made at its first fetch, and the wait it asked for (429 or 503 with Retry-After). */
function agencyTurns(queue: MetadataServiceOptions['queue'], now: () => number) {
  const queues = new Map<string, FairQueue>()
  const pausedUntil = new Map<string, number>()
  return {
    /** The reader's turn at this host (its release), or the agency's wait when it asked for one and the time is not up. */
    async take(host: string, ticket: ClientTicket | undefined, deadline: number): Promise<() => void> {
      const paused = pausedUntil.get(host)
      if (paused !== undefined) {
        if (paused > now()) throw metadataErrors.paused(paused - now())
        pausedUntil.delete(host)
      }
      let hostQueue = queues.get(host)
      if (hostQueue === undefined) queues.set(host, (hostQueue = createFairQueue(queue)))
      return await hostQueue.acquire(ticket, deadline)
    },
    pause(host: string, retryAfterMs: number): void {
      pausedUntil.set(host, now() + Math.min(MAX_PAUSE_MS, retryAfterMs))
    }
  }
}

/**
 * Fairness before sharing (docs/architecture.md): a reader joins a fetch of its key already running, else
 * waits for its own turn at the agency, then takes what arrived meanwhile (a fetch started, a fresh answer,
 * the outcome of one that ended while it waited) before fetching itself.
 */
function sharedFetches(
  turns: ReturnType<typeof agencyTurns>,
  peek: (key: string) => MetadataAnswer | undefined,
  fetchAndStore: (q: MetadataQuery) => Promise<MetadataAnswer>
) {
  const fetching = new Map<string, Promise<MetadataAnswer>>()
  // The last fetch of each key, kept briefly with its end time: a reader who was already waiting for
  // its turn when it ended takes its outcome (an error or an answer not to be cached included), so
  // concurrent misses make one request even when the agency's concurrency cap makes them queue.
  const settled = new LRUCache<string, { at: number; outcome: Promise<MetadataAnswer> }>({ max: 10_000, ttl: SETTLED_KEEP_MS })
  const waiting = new Map<string, Promise<MetadataAnswer>>()

  function joinOrQueue(q: MetadataQuery): Promise<MetadataAnswer> {
    const running = fetching.get(q.key)
    if (running !== undefined) return running
    const mine = `${q.key}\u0000${q.ticket?.key ?? ''}`
    let pending = waiting.get(mine)
    if (pending !== undefined) return pending
    pending = takeTurn(q).finally(() => waiting.delete(mine))
    pending.catch(() => {})
    waiting.set(mine, pending)
    return pending
  }

  async function takeTurn(q: MetadataQuery): Promise<MetadataAnswer> {
    const askedAt = performance.now()
    const release = await turns.take(q.url.host, q.ticket, q.deadline)
    const running = fetching.get(q.key)
    const fresh = running === undefined ? peek(q.key) : undefined
    const last = settled.get(q.key)
    const endedWhileWaiting = last !== undefined && last.at >= askedAt ? last.outcome : undefined
    if (running !== undefined || fresh !== undefined || endedWhileWaiting !== undefined) {
      release()
      return await (running ?? endedWhileWaiting ?? Promise.resolve(fresh!))
    }
    const fetch = fetchAndStore(q).finally(() => {
      if (fetching.get(q.key) === fetch) fetching.delete(q.key)
      settled.set(q.key, { at: performance.now(), outcome: fetch })
      release()
    })
    fetch.catch(() => {})
    fetching.set(q.key, fetch)
    return await fetch
  }

  return {
    joinOrQueue,
    /** A purge: the outcomes kept for the keys starting with `prefix` are dropped. */
    forget(prefix: string): void {
      for (const key of [...settled.keys()]) if (key.startsWith(prefix)) settled.delete(key)
    }
  }
}

export type MetadataService = ReturnType<typeof createMetadataService>
