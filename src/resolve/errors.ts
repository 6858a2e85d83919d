/**
 * Upstream failures as typed errors with a stable code and an HTTP status, in the manner of
 * fastify-reply-from's errors. One error handler renders them as HTML or JSON.
 */
export class UpstreamError extends Error {
  override name = 'UpstreamError'
  constructor (
    readonly code: string,
    readonly statusCode: 502 | 503 | 504,
    message: string,
    /** True when a stale cached record may stand in (connect errors, timeouts, 5xx, 429). */
    readonly staleable: boolean,
    options?: { cause?: unknown, upstreamStatus?: number, retryAfterMs?: number }
  ) {
    super(message, options)
    this.upstreamStatus = options?.upstreamStatus
    this.retryAfterMs = options?.retryAfterMs
  }

  /** The HTTP status the upstream answered, when it answered. */
  readonly upstreamStatus: number | undefined
  /** The upstream's Retry-After, in ms, when it sent one. */
  readonly retryAfterMs: number | undefined
}

export const upstreamErrors = {
  unreachable: (detail: string, cause?: unknown) =>
    new UpstreamError('DP_UPSTREAM_UNREACHABLE', 502, `The upstream DOI registry could not be reached (${detail}).`, true, { cause }),
  timeout: (ms: number, cause?: unknown) =>
    new UpstreamError('DP_UPSTREAM_TIMEOUT', 504, `The upstream DOI registry did not answer within ${ms} ms.`, true, { cause }),
  status: (status: number, retryAfterMs?: number) =>
    new UpstreamError('DP_UPSTREAM_STATUS', 502, `The upstream DOI registry answered with HTTP ${status}.`, status >= 500 || status === 429,
      retryAfterMs === undefined ? { upstreamStatus: status } : { upstreamStatus: status, retryAfterMs }),
  badResponse: (detail: string) =>
    new UpstreamError('DP_UPSTREAM_BAD_RESPONSE', 502, `The upstream DOI registry sent an answer we cannot use (${detail}).`, false),
  overloaded: () =>
    new UpstreamError('DP_UPSTREAM_OVERLOADED', 503, 'Too many lookups are waiting for the upstream DOI registry; try again shortly.', true),
  circuitOpen: () =>
    new UpstreamError('DP_UPSTREAM_CIRCUIT_OPEN', 503, 'The upstream DOI registry is failing; lookups are paused for a few seconds.', true)
}
