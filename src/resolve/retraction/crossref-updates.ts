/**
 * Crossref's REST API as the retraction level asks it (issue 41): `GET {CROSSREF_API_URL}/works/{doi}`
 * with `mailto=CONTACT_EMAIL` (Crossref's polite pool), through its own undici Agent and a queue of its own
 * (CROSSREF_CONCURRENCY at once, this worker's share), bounded in time (CROSSREF_TIMEOUT_MS for the whole
 * answer) and size (CROSSREF_MAX_BODY_BYTES). A 429 or 503 pauses every request for its Retry-After: none
 * is sent before its time, whoever asks. Crossref's answer is not trusted: read defensively, as JSON.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent } from 'undici'
import type { Dispatcher } from 'undici'
import { encodeHandlePath } from '../../handle/name.js'
import { ACCEPT_ENCODING, Cancel, connectionLimits, decodeWhole, getWhole, isTimeoutError, retryAfterMs } from '../upstream/client.js'
import type { WholeAnswer } from '../upstream/client.js'
import { createFairQueue } from '../upstream/fair-queue.js'

export interface CrossrefUpdatesOptions {
  /** CROSSREF_API_URL: the base, a path under it kept (`https://api.crossref.org`). */
  baseUrl: string
  /** CONTACT_EMAIL, sent as `mailto`; undefined: the public pool. */
  mailto: string | undefined
  userAgent: string
  /** Most requests in flight at once: CROSSREF_CONCURRENCY, this worker's share of it. */
  concurrency: number
  /** A whole request (connect, headers, body) gives up after this long: CROSSREF_TIMEOUT_MS. */
  timeoutMs: number
  maxBodyBytes: number
  connectTimeoutMs?: number
  /** Most lookups waiting for a turn; one more is told at once that Crossref is busy. */
  maxWaiting?: number
  /** Tests may pass their own dispatcher; closing then leaves it be. */
  dispatcher?: Dispatcher
}

/** What Crossref said of a DOI: its work (the answer's `message`), or that it does not know it (another agency's DOI). */
export type CrossrefWork = { kind: 'found'; work: Record<string, unknown> } | { kind: 'not-found' }

/** Crossref could not say: its words for why (the retraction verdict is then unknown, and not cached). */
export class CrossrefError extends Error {
  override name = 'CrossrefError'
}

// A Retry-After longer than this is read as this: one bad header must not silence the level for a day.
const MAX_PAUSE_MS = 10 * 60_000
// A 429 or 503 without a Retry-After: a short wait all the same, as Crossref asks of clients it limits.
const DEFAULT_PAUSE_MS = 5_000
// A request told to wait is tried once more after the wait, if its deadline allows.
const TRIES = 2

export function createCrossrefUpdates(opts: CrossrefUpdatesOptions) {
  const base = new URL(opts.baseUrl)
  const agent: Dispatcher =
    opts.dispatcher ??
    new Agent(connectionLimits(opts.concurrency, opts.connectTimeoutMs ?? Math.min(opts.timeoutMs, 5_000), opts.timeoutMs))
  const maxWaiting = opts.maxWaiting ?? 10_000
  const queue = createFairQueue({
    maxActive: opts.concurrency,
    perClient: opts.concurrency,
    perClientQueue: maxWaiting,
    maxWaiting,
    waitTimeoutMs: 10 * opts.timeoutMs,
    retryAfterMs: DEFAULT_PAUSE_MS
  })
  const once = worksGetter(opts, base, agent)
  // performance.now() until which no request is sent (Crossref's Retry-After).
  let pausedUntil = 0

  /** Wait out Crossref's pause, or fail at once when it lasts past the deadline. */
  async function pauseOver(deadline: number): Promise<void> {
    for (let left = pausedUntil - performance.now(); left > 0; left = pausedUntil - performance.now()) {
      if (pausedUntil >= deadline) throw new CrossrefError(`Crossref asked us to wait ${Math.ceil(left / 1000)} s (Retry-After)`)
      await sleep(left)
    }
  }

  /** A turn in the queue, taken only once no pause stands (one may start while waiting in the queue). */
  async function turn(deadline: number): Promise<() => void> {
    for (;;) {
      await pauseOver(deadline)
      let release: () => void
      try {
        release = await queue.acquire(undefined, deadline)
      } catch {
        throw new CrossrefError('Crossref is busy: too many lookups waiting for their turn')
      }
      if (pausedUntil <= performance.now()) return release
      release()
    }
  }

  return {
    /**
     * The work Crossref holds for `doi`, or not-found; a CrossrefError when it could not say by `deadline`
     * (performance.now()). Without one, the wait for a turn and each request are bounded by CROSSREF_TIMEOUT_MS.
     */
    async workOf(doi: string, deadline?: number): Promise<CrossrefWork> {
      const turnBy = deadline ?? performance.now() + opts.timeoutMs
      for (let attempt = 1; ; attempt++) {
        const release = await turn(turnBy)
        let res: WholeAnswer
        try {
          res = await once(doi, deadline)
        } finally {
          release()
        }
        if (res.statusCode === 429 || res.statusCode === 503) {
          const waitMs = Math.min(MAX_PAUSE_MS, retryAfterMs(res.headers['retry-after']) ?? DEFAULT_PAUSE_MS)
          pausedUntil = Math.max(pausedUntil, performance.now() + waitMs)
          if (attempt < TRIES && pausedUntil < turnBy) continue
          throw new CrossrefError(`Crossref asked us to wait ${Math.ceil(waitMs / 1000)} s (HTTP ${res.statusCode}, Retry-After)`)
        }
        return workOfAnswer(res)
      }
    },

    /** Numbers for tests: requests in flight and waiting. */
    stats: () => queue.stats(),

    /** Requests still running are cut (destroy: closing never waits on a stalled Crossref). */
    async close(): Promise<void> {
      if (opts.dispatcher === undefined) await agent.destroy()
    }
  }
}

export type CrossrefUpdates = ReturnType<typeof createCrossrefUpdates>

/** One GET of a DOI's work, whole, within the deadline and CROSSREF_TIMEOUT_MS; what goes wrong said as a CrossrefError. */
function worksGetter(opts: CrossrefUpdatesOptions, base: URL, agent: Dispatcher): (doi: string, deadline?: number) => Promise<WholeAnswer> {
  const basePath = base.pathname.replace(/\/+$/, '')
  const headers = { 'user-agent': opts.userAgent, accept: 'application/json', 'accept-encoding': ACCEPT_ENCODING }
  return async function once(doi, deadline) {
    // The message names the bound that applies: the setting, or what is left of the caller's deadline.
    const budgetMs = deadline === undefined ? opts.timeoutMs : Math.round(Math.min(opts.timeoutMs, deadline - performance.now()))
    if (budgetMs <= 0) throw new CrossrefError('no time left to ask Crossref')
    const query = opts.mailto === undefined ? '' : `?mailto=${encodeURIComponent(opts.mailto)}`
    const cancel = Cancel.after(budgetMs, `Crossref took over ${budgetMs} ms`)
    const tooLarge = (): Error => new CrossrefError(`Crossref's answer is larger than ${opts.maxBodyBytes} bytes`)
    try {
      const res = await getWhole(
        agent,
        { origin: base.origin, path: `${basePath}/works/${encodeHandlePath(doi)}${query}`, method: 'GET', headers },
        { maxBytes: opts.maxBodyBytes, tooLarge, cancel }
      )
      const body = await decodeWhole(res, opts.maxBodyBytes, {
        tooLarge,
        unreadable: (detail) => new CrossrefError(`Crossref's answer could not be read: ${detail}`)
      })
      return { ...res, body }
    } catch (err) {
      if (err instanceof CrossrefError) throw err
      if (isTimeoutError(err)) throw new CrossrefError(`Crossref did not answer within ${budgetMs} ms`)
      const e = err as { code?: string; name?: string }
      throw new CrossrefError(`Crossref could not be reached: ${e.code ?? e.name ?? 'unknown error'}`)
    } finally {
      cancel.clear()
    }
  }
}

/** Crossref's answer read defensively: its work, not-found (404), or a CrossrefError. */
function workOfAnswer(res: WholeAnswer): CrossrefWork {
  if (res.statusCode === 404) return { kind: 'not-found' }
  if (res.statusCode !== 200) throw new CrossrefError(`Crossref answered HTTP ${res.statusCode}`)
  let json: unknown
  try {
    json = JSON.parse(res.body.toString('utf8'))
  } catch {
    throw new CrossrefError("Crossref's answer is not JSON")
  }
  const message = (json as { message?: unknown } | null)?.message
  if (message === null || typeof message !== 'object' || Array.isArray(message)) {
    throw new CrossrefError("Crossref's answer holds no work")
  }
  return { kind: 'found', work: message as Record<string, unknown> }
}
