/**
 * The answer of a batch (POST /api/batch, docs/checking-dois.md): each line resolved as `GET /{doi}`
 * resolves it (the proxy service: local records, cache, fair queue, upstream), reported as one NDJSON
 * object, in input order, streamed. Nothing here contacts a landing page: the URL is the one we would
 * redirect to, fetched only by the verifier when `?verify=landing` asks (resolve/verify/).
 */
import { setMaxListeners } from 'node:events'
import type { BatchLine } from '../handle/batch.js'
import type { CitedWork, Verification, VerifyLevel } from '../handle/verify/types.js'
import type { Verifier } from '../resolve/verify/verifier.js'
import { cacheKey } from '../handle/name.js'
import { negotiate } from '../handle/negotiate.js'
import { parseProxyQuery } from '../handle/query.js'
import type { ProxyOutcome, ProxyService } from '../resolve/lookup/proxy-service.js'
import type { Resolver } from '../resolve/lookup/resolver.js'
import type { Admit } from '../resolve/upstream/fetcher.js'
import type { ClientTicket } from '../resolve/upstream/fair-queue.js'
import type { AnswerOutcome, Metrics } from '../observe/metrics.js'
import { describeError, retryAfterSeconds } from './errors.js'
import { isNotHeld } from '../resolve/upstream/errors.js'
import { mapInOrder } from './in-order.js'
import { plainAnswer } from './routes/proxy.js'
import type { PageContext } from './views/pages.js'

/** Abort listeners one line of a batch may hold at once: its lookup, and each level's waits (metadata, notices, landing page). */
const LISTENERS_PER_LINE = 8

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
   * Where the answer came from: the local records, the registry copy (REGISTRY_COPY, issue 43; offline, its
   * absence too), the cache, the upstream. On a line that could not be checked, 'upstream' says it needed the
   * registry (asked, or refused by a limit first). null: nothing answered (the line is not a DOI name, or
   * only-if-cached and the name is not held).
   */
  source: 'local' | 'copy' | 'cache' | 'upstream' | null
  /** The status a plain GET /{doi} answers (null: not asked, the line is not a DOI name, whatever is wrong with it). */
  status: number | null
  error?: string
  /** Seconds to wait before asking about this line again (a limit's refusal, a registry asking us to wait), as Retry-After says. */
  retryAfter?: number
  /** `?verify=` (issue 41): each level asked, an object on a registered line, null on any other. */
  metadata?: Verification['metadata']
  retraction?: Verification['retraction']
  landing?: Verification['landing']
}

export interface BatchOptions {
  service: ProxyService
  resolver: Resolver
  metrics: Metrics
  /** Lookups one batch runs at once (BATCH_CONCURRENCY, bounded by the client's share of the fair queue). */
  concurrency: number
  /** Each line's own deadline (REQUEST_DEADLINE_MS), from when its lookup starts. */
  deadlineMs: number
  /** `?verify=`'s levels run on registered lines; undefined: VERIFY_LEVELS is empty. */
  verifier?: Pick<Verifier, 'verify'> | undefined
  /** VERIFY_LEVELS: what `?verify=` may ask. */
  verifyLevels?: readonly VerifyLevel[]
  /** Lines of a verifying batch in flight at once (VERIFY_CONCURRENCY); their lookups still take `concurrency`'s turns. */
  verifyConcurrency?: number
  /** A verifying batch's answer silent this long gets a newline (the reader's timeouts); default 10 s. */
  heartbeatMs?: number | undefined
}

/** What a batch request brings: its admission gate (who asks), our base URL, and whether the reader is still there. */
export interface BatchRequest {
  ctx: PageContext
  /** The batch's admission gate, passed once for each line that needs the upstream (the rate limit counts each). */
  gate: () => Promise<{ client: ClientTicket }>
  signal: AbortSignal
  /** Log one line's failure (throttled by the caller's logger). */
  onError?: (err: unknown) => void
  /** `?verify=`: the levels to run on each registered line (at least one; allowed by VERIFY_LEVELS). */
  levels?: readonly VerifyLevel[]
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
const COPY_OFFLINE = 'the resolver is offline (OFFLINE=true) and did not ask the DOI System'
// Results waiting ahead of the reader, at most: enough to keep the lookups busy behind one slow line.
const WINDOW = 1024
// A verifying batch's answer silent this long gets a newline: REQUEST_TIMEOUT_MS and the reader's body timeout see it alive.
const HEARTBEAT_MS = 10_000

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

  /**
   * The results of a batch, in input order, in chunks of those ready. A name asked twice is looked up
   * once, whatever its record's ttl; at most `concurrency` lookups run at once, and none starts after the reader left.
   */
  async function* answer(lines: readonly BatchLine[], req: BatchRequest): AsyncGenerator<BatchResult[]> {
    const levels = req.levels ?? []
    const verifier = levels.length > 0 ? opts.verifier : undefined
    const lookup = lineAnswers(opts, req, levels, verifier)
    const concurrency = verifier === undefined ? opts.concurrency : Math.max(opts.concurrency, opts.verifyConcurrency ?? opts.concurrency)
    // Each line in flight listens for the reader leaving, once per level and wait: so many listeners are
    // the batch's bound at work, not a leak (Node warns past 10).
    setMaxListeners(LISTENERS_PER_LINE * concurrency, req.signal)
    for await (const chunk of mapInOrder(lines, lookup, { concurrency, window: WINDOW, signal: req.signal })) {
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

  /** Whether `?verify=` may ask these levels here: undefined when it may, else the first refused. */
  function refusedLevel(levels: readonly VerifyLevel[]): VerifyLevel | undefined {
    if (opts.verifier === undefined) return levels[0]
    return levels.find((level) => !(opts.verifyLevels ?? []).includes(level))
  }

  return { answer, refusedLevel, heartbeatMs: opts.heartbeatMs ?? HEARTBEAT_MS }
}

/** The answer of each line of one batch; `verifier` undefined when the batch verifies nothing. */
function lineAnswers(
  opts: BatchOptions,
  req: BatchRequest,
  levels: readonly VerifyLevel[],
  verifier: Pick<Verifier, 'verify'> | undefined
): (line: BatchLine) => Promise<{ result: BatchResult; counted: AnswerOutcome }> {
  // Each name's answer, for the whole batch: a name asked again takes it, whether or not the cache kept
  // the record (a ttl of 0 is not kept, and would otherwise be fetched again). As bounded as the batch
  // (BATCH_MAX_LINES), and a small object a name.
  const once = new Map<string, { answered: Promise<Answered>; admit: Admit }>()
  // A verifying batch has more lines in flight than lookups: most wait on a landing page's host.
  const lookups = verifier === undefined ? undefined : limiter(opts.concurrency)
  // Each work cited (a DOI and what its reference says of it) is verified once per batch.
  const verified = new Map<string, Promise<Verification>>()
  return async (line) => {
    if (line.kind === 'invalid') {
      const result: BatchResult = {
        input: line.input,
        doi: null,
        registered: false,
        url: null,
        source: null,
        status: null,
        error: line.message
      }
      return { result: withoutVerification(result, levels), counted: 'bad_request' }
    }
    const key = cacheKey(line.handle)
    let pending = once.get(key)
    if (pending === undefined) {
      let admitted: ReturnType<Admit> | undefined
      // The batch was admitted as a whole; each name gets its own deadline from when it first needs the upstream,
      // and passes the gate at most once, for its lookup and its verification together.
      const admit: Admit = async () =>
        await (admitted ??= req.gate().then(({ client }) => ({ client, deadline: performance.now() + opts.deadlineMs })))
      const answered =
        lookups === undefined
          ? resolveLine(opts, line.handle, admit, req)
          : lookups(async () => await resolveLine(opts, line.handle, admit, req))
      once.set(key, (pending = { answered, admit }))
    }
    const { result, counted } = await pending.answered
    const full: BatchResult = { input: line.input, ...result }
    if (verifier === undefined) return { result: withoutVerification(full, levels), counted }
    if (result.registered !== true || result.doi === null) return { result: withoutVerification(full, levels), counted }
    const workKey = `${key}\n${JSON.stringify([line.cited?.title, line.cited?.year, line.cited?.author])}`
    let verification = verified.get(workKey)
    if (verification === undefined) {
      const request = { doi: result.doi, url: result.url, cited: line.cited as CitedWork | undefined }
      verification = verifier.verify(request, levels, { admit: pending.admit, signal: req.signal })
      verified.set(workKey, verification)
    }
    return { result: { ...full, ...(await verification) }, counted }
  }
}

/** One name, as GET /{doi} would answer it, and how /status counts that answer. */
async function resolveLine(opts: BatchOptions, handle: string, admit: Admit, req: BatchRequest): Promise<Answered> {
  try {
    const outcome = await opts.service.answer({ handle, params: PLAIN_PARAMS, client: { negotiation: BROWSER }, admit })
    const { status, location } = plainAnswer(req.ctx, outcome)
    const doi = outcome.kind === 'alias' ? outcome.target : outcome.handle
    const source = sourceOf(opts.resolver, handle, outcome)
    if (outcome.kind !== 'not-found') {
      return {
        result: { doi, registered: true, url: location, source, status },
        counted: outcome.kind === 'refused' ? 'bad_request' : outcome.from
      }
    }
    if (outcome.message !== undefined) {
      return { result: { doi: null, registered: false, url: location, source, status, error: outcome.message }, counted: 'not_found' }
    }
    // Offline, a name the local records do not hold may well be registered: we cannot say (the copy says why).
    if (!opts.resolver.knowsAbsence(handle)) {
      const error = outcome.absence === undefined ? NOT_HELD_OFFLINE : `${outcome.absence}; ${COPY_OFFLINE}`
      return { result: { doi: null, registered: null, url: location, source, status, error }, counted: 'not_found' }
    }
    return { result: { doi: null, registered: false, url: location, source, status }, counted: 'not_found' }
  } catch (err) {
    return failedLine(err, req)
  }
}

/** Where a line's answer came from; the registry copy's answers are COPY, or, offline, an absence in its words. */
function sourceOf(resolver: Resolver, handle: string, outcome: ProxyOutcome): BatchResult['source'] {
  switch (outcome.cache) {
    case 'MISS':
    case 'BYPASS':
      return 'upstream'
    case 'COPY':
      return 'copy'
    case 'STALE':
      return 'cache'
    default: {
      if (outcome.kind === 'not-found' && outcome.absence !== undefined) return 'copy'
      // A cache entry, unless a local record stands in front of it (the copy answered COPY above).
      const atHand = resolver.atTheDoor(handle)
      return atHand !== undefined && atHand.kind !== 'copy' ? 'cache' : 'local'
    }
  }
}

/** A line not registered, or not a DOI name, under `?verify=`: null for each level asked. */
function withoutVerification(result: BatchResult, levels: readonly VerifyLevel[]): BatchResult {
  if (levels.length === 0) return result
  const out: BatchResult = { ...result }
  for (const level of levels) out[level] = null
  return out
}

/** At most `n` calls of the returned function run at once; the others wait their turn in order. */
function limiter(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let running = 0
  const waiting: Array<() => void> = []
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (running >= n) await new Promise<void>((resolve) => waiting.push(resolve))
    else running++
    try {
      return await fn()
    } finally {
      const next = waiting.shift()
      if (next === undefined) running--
      else next()
    }
  }
}

export type BatchAnswers = ReturnType<typeof createBatchAnswers>

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim()
}
