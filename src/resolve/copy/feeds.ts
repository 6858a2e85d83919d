/**
 * Fetches the agencies' update pages for the registry copy (issue 43, plan-43 §1.12), politely: one
 * request at a time whoever asks (a queue of one), through its own undici Agent (one connection per
 * agency), with the project's User-Agent (which names CONTACT_EMAIL); each request bounded in time
 * (REGISTRY_COPY_UPDATE_TIMEOUT_MS for the whole answer, headers and body) and size (64 MiB, decoded
 * too). A 429 or 5xx, a dropped connection or a timeout is asked again a bounded number of times, after
 * the agency's Retry-After (capped: one bad header must not stall a run for a day) or a growing wait.
 * The answer is JSON from the outside: read defensively by handle/copy/feeds.ts.
 */
import { Agent } from 'undici'
import type { Dispatcher } from 'undici'
import { ACCEPT_ENCODING, Cancel, connectionLimits, decodeWhole, getWhole, isTimeoutError, retryAfterMs } from '../upstream/client.js'
import type { WholeAnswer } from '../upstream/client.js'

export interface FeedClientOptions {
  userAgent: string
  /** One request, connect to the body's last byte: REGISTRY_COPY_UPDATE_TIMEOUT_MS. */
  timeoutMs: number
  /** Largest answer, before and after decoding; 64 MiB by default (a page of 1,000 works is a few MB). */
  maxBodyBytes?: number
  /** Tries after the first, for a 429, a 5xx, a dropped connection or a timeout. */
  retries?: number
  /** The first wait without a Retry-After; it doubles each time, up to maxPauseMs. */
  baseDelayMs?: number
  /** The longest wait, Retry-After included (10 minutes). */
  maxPauseMs?: number
  /**
   * Least time from one request's start to the next's (1 s): Crossref's rate limits of December 2025 are
   * strictest for list queries (plan-43 §8); a page of 1,000 takes longer than this to come anyway.
   */
  minIntervalMs?: number
  /** Tests may pass their own dispatcher; closing then leaves it be. */
  dispatcher?: Dispatcher
  /** Told of each wait before asking again (the log). */
  onRetry?: (url: string, attempt: number, reason: string, waitMs: number) => void
}

export type FeedErrorKind = 'refused' | 'unavailable' | 'unreadable' | 'interrupted'

/**
 * A page could not be had: `refused` (a 4xx other than 429: an expired cursor, a bad query), `unavailable`
 * (the tries ran out on 429/5xx, timeouts or the network), `unreadable` (not JSON, too large, a coding we
 * did not ask for), `interrupted` (the caller's signal).
 */
export class FeedError extends Error {
  override name = 'FeedError'
  constructor(
    readonly kind: FeedErrorKind,
    message: string,
    readonly status?: number
  ) {
    super(message)
  }
}

export interface FeedClient {
  /** The page at `url`, parsed as JSON; a FeedError when it cannot be had. One request at a time across callers. */
  getJson(url: string, signal?: AbortSignal): Promise<unknown>
  /** Requests in flight (0 or 1) and callers waiting: for tests. */
  stats(): { active: number; waiting: number }
  /** Stops what is in flight (closing never waits on a stalled agency). */
  close(): Promise<void>
}

export const FEED_MAX_BODY_BYTES = 64 * 1024 * 1024
const DEFAULT_RETRIES = 5
const DEFAULT_BASE_DELAY_MS = 2_000
const DEFAULT_MAX_PAUSE_MS = 10 * 60_000
const DEFAULT_MIN_INTERVAL_MS = 1_000

const retryable = (status: number): boolean => status === 429 || (status >= 500 && status <= 599)
const DROPPED = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'ECONNREFUSED'])

/** What every request of one client shares: its agent, headers and bounds, and when the last one started. */
interface FeedRequests {
  readonly agent: Dispatcher
  readonly headers: Record<string, string>
  readonly timeoutMs: number
  readonly maxBytes: number
  readonly retries: number
  readonly baseDelayMs: number
  readonly maxPauseMs: number
  readonly minIntervalMs: number
  readonly onRetry: FeedClientOptions['onRetry']
  /** performance.now() of the last request's start. */
  lastStart: number
}

export function createFeedClient(opts: FeedClientOptions): FeedClient {
  const agent: Dispatcher = opts.dispatcher ?? new Agent(connectionLimits(1, Math.min(opts.timeoutMs, 10_000), opts.timeoutMs))
  const requests: FeedRequests = {
    agent,
    headers: { 'user-agent': opts.userAgent, accept: 'application/json', 'accept-encoding': ACCEPT_ENCODING },
    timeoutMs: opts.timeoutMs,
    maxBytes: opts.maxBodyBytes ?? FEED_MAX_BODY_BYTES,
    retries: opts.retries ?? DEFAULT_RETRIES,
    baseDelayMs: opts.baseDelayMs ?? DEFAULT_BASE_DELAY_MS,
    maxPauseMs: opts.maxPauseMs ?? DEFAULT_MAX_PAUSE_MS,
    minIntervalMs: opts.minIntervalMs ?? DEFAULT_MIN_INTERVAL_MS,
    onRetry: opts.onRetry,
    lastStart: -Infinity
  }
  // The queue of one: each request starts when the one before has ended, however many callers.
  let tail: Promise<unknown> = Promise.resolve()
  let active = 0
  let waiting = 0
  return {
    async getJson(url, signal) {
      const before = tail
      let done!: () => void
      tail = new Promise<void>((resolve) => (done = resolve))
      waiting++
      try {
        await before
      } finally {
        waiting--
      }
      active++
      try {
        return await fetchJson(requests, url, signal)
      } finally {
        active--
        done()
      }
    },
    stats: () => ({ active, waiting }),
    async close() {
      if (opts.dispatcher === undefined) await agent.destroy()
    }
  }
}

/** One GET, whole and decoded, or the failure as it came (undici's, a timeout, ours). */
async function once(r: FeedRequests, url: URL, signal: AbortSignal | undefined): Promise<WholeAnswer> {
  const cancel = Cancel.after(r.timeoutMs, `the agency took over ${r.timeoutMs} ms (REGISTRY_COPY_UPDATE_TIMEOUT_MS)`)
  const onAbort = (): void => cancel.end(new FeedError('interrupted', 'the update was interrupted'))
  signal?.addEventListener('abort', onAbort)
  if (signal?.aborted === true) onAbort()
  const tooLarge = (): Error => new FeedError('unreadable', `the answer of ${url.origin} is larger than ${r.maxBytes} bytes`)
  try {
    const res = await getWhole(
      r.agent,
      { origin: url.origin, path: url.pathname + url.search, method: 'GET', headers: r.headers },
      { maxBytes: r.maxBytes, tooLarge, cancel }
    )
    const body = await decodeWhole(res, r.maxBytes, {
      tooLarge,
      unreadable: (detail) => new FeedError('unreadable', `the answer of ${url.origin} could not be read: ${detail}`)
    })
    return { ...res, body }
  } finally {
    cancel.clear()
    signal?.removeEventListener('abort', onAbort)
  }
}

/** Wait `ms`, or until the signal ends it. */
async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(new FeedError('interrupted', 'the update was interrupted'))
      return
    }
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(new FeedError('interrupted', 'the update was interrupted'))
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** The page as JSON, asked again after a 429, a 5xx, a dropped connection or a timeout, at most `retries` times. */
async function fetchJson(r: FeedRequests, href: string, signal: AbortSignal | undefined): Promise<unknown> {
  const url = new URL(href)
  for (let attempt = 1; ; attempt++) {
    const early = r.lastStart + r.minIntervalMs - performance.now()
    if (early > 0) await pause(early, signal)
    r.lastStart = performance.now()
    let res: WholeAnswer | undefined
    let reason: string
    let waitMs: number | undefined
    try {
      res = await once(r, url, signal)
    } catch (err) {
      reason = retryReason(err, url, r.timeoutMs)
    }
    if (res !== undefined) {
      if (res.statusCode === 200) return parsed(res, url)
      if (!retryable(res.statusCode)) {
        throw new FeedError('refused', `${url.origin} answered HTTP ${res.statusCode}: ${snippet(res.body)}`, res.statusCode)
      }
      reason = `HTTP ${res.statusCode}`
      const asked = retryAfterMs(res.headers['retry-after'])
      if (asked !== undefined) waitMs = Math.min(r.maxPauseMs, asked)
    }
    if (attempt > r.retries) {
      throw new FeedError('unavailable', `${url.origin} gave no page after ${attempt} tries: ${reason!}`, res?.statusCode)
    }
    waitMs ??= Math.min(r.maxPauseMs, r.baseDelayMs * 2 ** (attempt - 1))
    r.onRetry?.(href, attempt, reason!, waitMs)
    await pause(waitMs, signal)
  }
}

/** Why a request that failed is asked again (a timeout, a dropped connection); any other failure is thrown. */
function retryReason(err: unknown, url: URL, timeoutMs: number): string {
  if (err instanceof FeedError) throw err
  const code = (err as { code?: unknown }).code
  if (isTimeoutError(err)) return `no whole answer within ${timeoutMs} ms`
  if (typeof code === 'string' && DROPPED.has(code)) return `the connection failed (${code})`
  throw new FeedError('unavailable', `${url.origin} could not be reached: ${String(code ?? (err as Error).message)}`)
}

function parsed(res: WholeAnswer, url: URL): unknown {
  try {
    return JSON.parse(res.body.toString('utf8'))
  } catch {
    throw new FeedError('unreadable', `the answer of ${url.origin} is not JSON`)
  }
}

/** The start of an error body, for the message: printable, short. */
function snippet(body: Buffer): string {
  const text = body
    .subarray(0, 200)
    .toString('utf8')
    .replace(/[^\x20-\x7e]+/g, ' ')
    .trim()
  return text === '' ? '(no body)' : JSON.stringify(text)
}
