/**
 * Upstream failures as typed errors with a stable code and an HTTP status, in the manner of
 * fastify-reply-from's errors. One error handler renders them as HTML or JSON.
 *
 * Messages are for readers: plain words, what happened and what to try. The code and the upstream's
 * own status go to the logs, not to the page.
 */
import type { UnreachableReason } from './reachability.js'

export class UpstreamError extends Error {
  override name = 'UpstreamError'
  constructor(
    readonly code: string,
    readonly statusCode: 400 | 414 | 429 | 502 | 503 | 504,
    message: string,
    /** True when a stale cached record may stand in (connect errors, timeouts, 5xx, 429, unreadable answers, our own queues). */
    readonly staleable: boolean,
    options?: {
      cause?: unknown
      upstreamStatus?: number
      retryAfterMs?: number
      fault?: boolean
      scope?: FaultScope
      reason?: UnreachableReason
    }
  ) {
    super(message, options)
    this.reason = options?.reason
    this.upstreamStatus = options?.upstreamStatus
    this.retryAfterMs = options?.retryAfterMs
    this.fault = options?.fault ?? false
    this.scope = options?.scope ?? 'upstream'
  }

  /** Why no answer came (DNS, refused, TLS, timeout…), when none came. */
  readonly reason: UnreachableReason | undefined
  /** The HTTP status the upstream answered, when it answered. */
  readonly upstreamStatus: number | undefined
  /** How long the client should wait before asking again, in ms, when we know. */
  readonly retryAfterMs: number | undefined
  /**
   * True for upstream faults only (behaviour.md §9): connect errors, timeouts, 5xx and 429. These
   * count against the circuit breaker; an answer about a handle or a client's bad input never does.
   */
  readonly fault: boolean
  /**
   * Whom a fault speaks about: the whole upstream (it cannot be reached, its CDN fails, it rate-limits
   * us) or one prefix's handle server (the API answered a JSON 5xx for a handle, or took too long):
   * a client that asks for DOIs of a broken handle server must not pause lookups for everyone.
   */
  readonly scope: FaultScope
}

export type FaultScope = 'upstream' | 'prefix'

/** What a reader is told for each reason the registry cannot be reached. */
const UNREACHABLE_WORDS: Record<UnreachableReason, string> = {
  dns: 'its host name does not resolve from this server (no network, or DNS failing)',
  refused: 'it refused the connection (nothing listens at the address this resolver is set to use)',
  tls: 'the secure connection to it failed (its certificate was not accepted)',
  'no-route': 'this server has no route to it (no network)',
  'connect-timeout': 'connecting to it took too long',
  timeout: 'it did not answer in time',
  reset: 'the connection was cut before it answered'
}

/** Reasons that last until someone mends the network or the settings: not worth a retry, and the operator can act. */
export const LASTING_REASONS: ReadonlySet<UnreachableReason> = new Set(['dns', 'refused', 'tls', 'no-route'])

const FOR_THE_OPERATOR =
  'If you run this resolver: check its network and UPSTREAM_URL, or run it offline (OFFLINE=true, or npm run start:offline) to answer from its local records only; cached DOIs are still answered.'

/** The reader's sentence for a registry that cannot be reached, for this reason: lasting ones say what to do. */
function unreachableMessage(reason: UnreachableReason | undefined): string {
  const what = `We could not reach the DOI registry to look this DOI up: ${UNREACHABLE_WORDS[reason ?? 'reset']}.`
  return reason !== undefined && LASTING_REASONS.has(reason) ? `${what} ${FOR_THE_OPERATOR}` : `${what} ${TRY_AGAIN}`
}

const TRY_AGAIN = 'This is usually brief: please try again in a minute.'

/** The longest wait a registry's Retry-After imposes on us and our readers: one bad header must not silence lookups for a day. */
export const MAX_RATE_LIMIT_WAIT_MS = 60_000
const DEFAULT_RATE_LIMIT_WAIT_MS = 5000

/** A registry's Retry-After as the wait we keep and pass on: whole seconds, 1 s to MAX_RATE_LIMIT_WAIT_MS. */
export function boundedWait(retryAfterMs: number | undefined): number {
  return Math.min(MAX_RATE_LIMIT_WAIT_MS, Math.max(1000, Math.ceil((retryAfterMs ?? DEFAULT_RATE_LIMIT_WAIT_MS) / 1000) * 1000))
}

export const upstreamErrors = {
  unreachable: (reason: UnreachableReason | undefined, detail: string, cause?: unknown) =>
    new UpstreamError('DP_UPSTREAM_UNREACHABLE', 502, unreachableMessage(reason), true, {
      cause: cause ?? detail,
      fault: true,
      ...(reason === undefined ? {} : { reason })
    }),
  /** No answer in time: while connecting (the whole upstream) or after (perhaps one prefix's handle server). */
  timeout: (ms: number, cause?: unknown, connecting = false) =>
    connecting
      ? new UpstreamError('DP_UPSTREAM_TIMEOUT', 504, `We could not connect to the DOI registry in time. ${TRY_AGAIN}`, true, {
          cause,
          fault: true,
          reason: 'connect-timeout'
        })
      : new UpstreamError(
          'DP_UPSTREAM_TIMEOUT',
          504,
          `The DOI registry took too long to answer (more than ${Math.round(ms / 100) / 10} s). ${TRY_AGAIN}`,
          true,
          { cause, fault: true, scope: 'prefix', reason: 'timeout' }
        ),
  /** The request's own deadline ran out (alias hops, queue waits and retries included). */
  deadline: () => new UpstreamError('DP_DEADLINE', 504, `Looking this DOI up took longer than we allow a request. ${TRY_AGAIN}`, true),
  status: (status: number, retryAfterMs?: number, scope: FaultScope = 'upstream') =>
    status === 429
      ? upstreamErrors.rateLimited(retryAfterMs)
      : new UpstreamError(
          'DP_UPSTREAM_STATUS',
          502,
          `The DOI registry is having trouble right now and answered with an error. ${TRY_AGAIN}`,
          status >= 500,
          { upstreamStatus: status, fault: status >= 500, scope }
        ),
  /**
   * The registry rate-limits us (429): a 503 that passes its Retry-After on, bounded to
   * MAX_RATE_LIMIT_WAIT_MS (5 s when it gave none), so a reader's script knows when to come back.
   * `asked: false` when no request was sent because its wait is not up yet (not a fault then).
   */
  rateLimited: (retryAfterMs?: number, asked = true) => {
    const wait = boundedWait(retryAfterMs)
    return new UpstreamError(
      'DP_UPSTREAM_RATE_LIMITED',
      503,
      `The DOI registry is limiting how often we may ask it and told us to wait. Please try again in ${Math.ceil(wait / 1000)} s.`,
      true,
      { upstreamStatus: 429, fault: asked, retryAfterMs: wait }
    )
  },
  /**
   * The upstream refused the request itself (a 4xx other than 404 and 429, often a CDN's HTML page):
   * a handle it judges malformed or too long. That request's problem, never a fault of the upstream.
   */
  rejected: (status: number) =>
    status === 414 || status === 431
      ? new UpstreamError(
          'DP_UPSTREAM_REJECTED',
          414,
          'This DOI name is too long for the DOI registry to look up. Check that the link was copied whole and nothing else.',
          false,
          { upstreamStatus: status }
        )
      : status === 400
        ? new UpstreamError(
            'DP_UPSTREAM_REJECTED',
            400,
            'The DOI registry refused this DOI name as malformed. Check the DOI for stray characters or a broken link.',
            false,
            { upstreamStatus: status }
          )
        : new UpstreamError('DP_UPSTREAM_REJECTED', 502, 'The DOI registry refused to look this DOI name up.', false, {
            upstreamStatus: status
          }),
  /**
   * An answer that is not the Handle API's (a captive portal's or a CDN's HTML 200, broken JSON, an
   * unknown code, too large): the registry, or something in front of it, is failing, so a stale copy
   * stands in. Not a fault for the breaker: a record of one handle may be what we cannot read.
   */
  badResponse: (detail: string) =>
    new UpstreamError('DP_UPSTREAM_BAD_RESPONSE', 502, 'The DOI registry sent an answer we could not read. Please try again later.', true, {
      cause: detail
    }),
  overloaded: () =>
    new UpstreamError(
      'DP_UPSTREAM_OVERLOADED',
      503,
      'This resolver has too many lookups waiting for the DOI registry. Please try again in a few seconds.',
      true,
      { retryAfterMs: 5000 }
    ),
  /** One client has more lookups in flight and waiting than its fair share (behaviour.md §9). */
  clientOverShare: (retryAfterMs: number) =>
    new UpstreamError(
      'DP_CLIENT_OVER_SHARE',
      429,
      'You have too many DOI lookups in progress. Please wait for them to finish, then try again.',
      false,
      { retryAfterMs }
    ),
  /** `Cache-Control: only-if-cached` and we do not hold the answer: 504 at once, nothing asked (RFC 9111 §5.2.1.7). */
  notHeld: () =>
    new UpstreamError(
      'DP_ONLY_IF_CACHED',
      504,
      'This answer is not held here, and the request asked for held answers only (Cache-Control: only-if-cached), so nothing was looked up.',
      false
    ),
  /** The breaker is open; `reason` when the registry is known to be unreachable, so the page still names the cause. */
  circuitOpen: (reason?: UnreachableReason) =>
    new UpstreamError(
      'DP_UPSTREAM_CIRCUIT_OPEN',
      503,
      reason !== undefined && LASTING_REASONS.has(reason)
        ? `${unreachableMessage(reason)} We have paused lookups for a few seconds.`
        : 'The DOI registry is failing right now, so we have paused lookups for a few seconds. Please try again shortly.',
      true,
      { retryAfterMs: 5000, ...(reason === undefined ? {} : { reason }) }
    ),
  prefixCircuitOpen: () =>
    new UpstreamError(
      'DP_PREFIX_CIRCUIT_OPEN',
      503,
      'The registry server for DOIs with this prefix is failing right now, so we have paused lookups for them for a few seconds. Please try again shortly.',
      true,
      { retryAfterMs: 5000 }
    )
}

/** The only-if-cached refusal (upstreamErrors.notHeld): nothing was looked up, so nothing failed. */
export function isNotHeld(err: unknown): boolean {
  return err instanceof UpstreamError && err.code === 'DP_ONLY_IF_CACHED'
}
