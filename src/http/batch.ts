/**
 * The answer of a batch (POST /api/batch, docs/checking-dois.md): each line resolved as `GET /{doi}`
 * resolves it (the proxy service: local records, cache, fair queue, upstream), reported as one NDJSON
 * object, in input order, streamed. Nothing here contacts a landing page: the URL is the one we would
 * redirect to, never fetched.
 */
import type { BatchLine } from '../handle/batch.js'
import { cacheKey } from '../handle/name.js'
import { negotiate } from '../handle/negotiate.js'
import { parseProxyQuery } from '../handle/query.js'
import type { ProxyService } from '../resolve/lookup/proxy-service.js'
import type { Resolver } from '../resolve/lookup/resolver.js'
import type { Admit } from '../resolve/upstream/fetcher.js'
import type { ClientTicket } from '../resolve/upstream/fair-queue.js'
import type { AnswerOutcome, Metrics } from '../observe/metrics.js'
import { describeError, retryAfterSeconds } from './errors.js'
import { isNotHeld } from '../resolve/upstream/errors.js'
import { mapInOrder } from './in-order.js'
import { plainAnswer } from './routes/proxy.js'
import type { PageContext } from './views/pages.js'

/** One line of the answer. */
export interface BatchResult {
  input: string
  /** The name as the registry holds it: the record's handle, aliases (a shortDOI) followed to their target. */
  doi: string | null
  /** null: we could not find out (an upstream failure, or offline a name not in the local records; `error` says why). */
  registered: boolean | null
  /** Where a plain GET /{doi} redirects to; null when it does not redirect. */
  url: string | null
  /**
   * On a line that could not be checked, 'upstream' says it needed the registry (asked, or refused by a limit first).
   * null: nothing answered (the line is not a DOI name, or only-if-cached and the name is not held).
   */
  source: 'local' | 'cache' | 'upstream' | null
  /** The status a plain GET /{doi} answers (null: not asked, the line is not a DOI name, whatever is wrong with it). */
  status: number | null
  error?: string
  /** Seconds to wait before asking about this line again (a limit's refusal, a registry asking us to wait), as Retry-After says. */
  retryAfter?: number
}

export interface BatchOptions {
  service: ProxyService
  resolver: Resolver
  metrics: Metrics
  /** Lookups one batch runs at once (BATCH_CONCURRENCY, bounded by the client's share of the fair queue). */
  concurrency: number
  /** Each line's own deadline (REQUEST_DEADLINE_MS), from when its lookup starts. */
  deadlineMs: number
}

/** What a batch request brings: its admission gate (who asks), our base URL, and whether the reader is still there. */
export interface BatchRequest {
  ctx: PageContext
  /** The batch's admission gate, passed once for each line that needs the upstream (the rate limit counts each). */
  gate: () => Promise<{ client: ClientTicket }>
  signal: AbortSignal
  /** Log one line's failure (throttled by the caller's logger). */
  onError?: (err: unknown) => void
}

/** One name's line, and the outcome it counts under on /status (doi_proxy_answers_total). */
interface Answered {
  result: Omit<BatchResult, 'input'>
  counted: AnswerOutcome
}

// The plain request a reader's browser sends when following a link (no query, Accept text/html).
const PLAIN_PARAMS = parseProxyQuery('')
const BROWSER = negotiate({ accept: 'text/html' })
const NOT_HELD_OFFLINE =
  "not in this resolver's records: it is offline (OFFLINE=true) and did not ask the DOI System, so the DOI may well be registered"
// Results waiting ahead of the reader, at most: enough to keep the lookups busy behind one slow line.
const WINDOW = 1024

/** The answer of a line whose lookup failed or was refused, and how /status counts it. */
function failedLine(err: unknown, req: BatchRequest): Answered {
  // A line not held under only-if-cached was not looked up: its answer says so, and nothing failed.
  const notHeld = isNotHeld(err)
  if (!notHeld) req.onError?.(err)
  const { status, message } = describeError(err)
  const result: Omit<BatchResult, 'input'> = {
    doi: null,
    registered: null,
    url: null,
    source: notHeld ? null : 'upstream',
    status,
    error: oneLine(message)
  }
  const retryAfter = retryAfterSeconds(err)
  if (retryAfter !== undefined) result.retryAfter = retryAfter
  // As the proxy counts its own: a refusal (a limit's 429) is a 4xx, a failure to find out a 5xx.
  return { result, counted: status >= 500 ? 'error' : 'bad_request' }
}

export function createBatchAnswers(opts: BatchOptions) {
  const counted = {
    registered: opts.metrics.batchLines.labels('registered'),
    unregistered: opts.metrics.batchLines.labels('unregistered'),
    unknown: opts.metrics.batchLines.labels('unknown'),
    invalid: opts.metrics.batchLines.labels('invalid')
  }

  /** One name, as GET /{doi} would answer it, and how /status counts that answer. */
  async function resolve(handle: string, req: BatchRequest): Promise<Answered> {
    let admitted: ReturnType<Admit> | undefined
    // The batch was admitted as a whole; each line gets its own deadline from when it first needs the upstream.
    const admit: Admit = async () =>
      await (admitted ??= req.gate().then(({ client }) => ({ client, deadline: performance.now() + opts.deadlineMs })))
    try {
      const outcome = await opts.service.answer({ handle, params: PLAIN_PARAMS, client: { negotiation: BROWSER }, admit })
      const { status, location } = plainAnswer(req.ctx, outcome)
      const doi = outcome.kind === 'alias' ? outcome.target : outcome.handle
      const source =
        outcome.cache === 'MISS' || outcome.cache === 'BYPASS'
          ? 'upstream'
          : outcome.cache === 'STALE' || opts.resolver.cachedAnswer(handle) !== undefined
            ? 'cache'
            : 'local'
      if (outcome.kind !== 'not-found') {
        return {
          result: { doi, registered: true, url: location, source, status },
          counted: outcome.kind === 'refused' ? 'bad_request' : outcome.from
        }
      }
      if (outcome.message !== undefined) {
        return { result: { doi: null, registered: false, url: location, source, status, error: outcome.message }, counted: 'not_found' }
      }
      // Offline, a name the local records do not hold may well be registered: we cannot say.
      if (!opts.resolver.knowsAbsence(handle)) {
        return { result: { doi: null, registered: null, url: location, source, status, error: NOT_HELD_OFFLINE }, counted: 'not_found' }
      }
      return { result: { doi: null, registered: false, url: location, source, status }, counted: 'not_found' }
    } catch (err) {
      return failedLine(err, req)
    }
  }

  /**
   * The results of a batch, in input order, in chunks of those ready. A name asked twice is looked up
   * once, whatever its record's ttl; at most `concurrency` lookups run at once, and none starts after the reader left.
   */
  async function* answer(lines: readonly BatchLine[], req: BatchRequest): AsyncGenerator<BatchResult[]> {
    // Each name's answer, for the whole batch: a name asked again takes it, whether or not the cache kept
    // the record (a ttl of 0 is not kept, and would otherwise be fetched again). As bounded as the batch
    // (BATCH_MAX_LINES), and a small object a name.
    const once = new Map<string, Promise<Answered>>()
    const lookup = async (line: BatchLine): Promise<{ result: BatchResult; counted: AnswerOutcome }> => {
      if (line.kind === 'invalid') {
        return {
          result: { input: line.input, doi: null, registered: false, url: null, source: null, status: null, error: line.message },
          counted: 'bad_request'
        }
      }
      const key = cacheKey(line.handle)
      let pending = once.get(key)
      if (pending === undefined) once.set(key, (pending = resolve(line.handle, req)))
      const { result, counted } = await pending
      return { result: { input: line.input, ...result }, counted }
    }
    for await (const chunk of mapInOrder(lines, lookup, { concurrency: opts.concurrency, window: WINDOW, signal: req.signal })) {
      const results: BatchResult[] = []
      for (const { result: r, counted: outcome } of chunk) {
        ;(r.registered === true
          ? counted.registered
          : r.registered === false
            ? r.source === null
              ? counted.invalid
              : counted.unregistered
            : counted.unknown
        ).inc()
        // Every line is an answer, a repeated name's too: it shows on /status as the proxy's answers do.
        opts.metrics.otherAnswers[outcome].inc()
        results.push(r)
      }
      yield results
    }
  }

  return { answer }
}

export type BatchAnswers = ReturnType<typeof createBatchAnswers>

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim()
}
