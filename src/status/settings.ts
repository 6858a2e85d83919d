/**
 * The settings /status shows (behaviour.md §12), each named once here: the collector takes these and no
 * other part of the configuration, and the limits in force are the rows of LIMITS, which the page draws
 * as they come. To show one more setting: its name in StatusSettings and a row (or a word of one) below.
 */
import type { Config } from '../config/schema.js'
import type { LimitRow } from './snapshot.js'

export type StatusSettings = Pick<
  Config,
  // Beside the figures they bound, or what the page says of the process and its upstream.
  | 'cacheMaxEntries'
  | 'cacheMaxBytes'
  | 'workers'
  | 'offline'
  | 'localServices'
  | 'oaProvider'
  | 'oaDailyLimit'
  | 'registryCopy'
  | 'registryCopyMaxAgeSeconds'
  // The limits (LIMITS).
  | 'maxEventLoopDelayMs'
  | 'rateLimitMax'
  | 'rateLimitWindowMs'
  | 'authRateLimitMax'
  | 'upstreamPerClient'
  | 'upstreamClientQueue'
  | 'upstreamMaxConcurrent'
  | 'upstreamQueueSize'
  | 'upstreamQueueTimeoutMs'
>

/** One row of "Limits in force": what it protects and the settings in force, in words. */
interface Limit {
  /** The reason label of doi_proxy_refusals_total it refuses under; null for a setting that refuses nothing itself. */
  reason: string | null
  limit: string
  setting: (s: StatusSettings) => string
}

/** The limits a request can meet, in the order shown. */
const LIMITS: readonly Limit[] = [
  {
    reason: 'load_shed',
    limit: 'Load shedding (event-loop delay)',
    setting: (s) =>
      s.maxEventLoopDelayMs === 0 ? 'off (MAX_EVENT_LOOP_DELAY_MS=0)' : `above ${ms(s.maxEventLoopDelayMs)} (MAX_EVENT_LOOP_DELAY_MS)`
  },
  {
    reason: 'rate_limit',
    limit: 'Lookups per client',
    setting: (s) =>
      s.rateLimitMax === 0
        ? 'off (RATE_LIMIT_MAX=0)'
        : `${s.rateLimitMax} per ${ms(s.rateLimitWindowMs)} (RATE_LIMIT_MAX, RATE_LIMIT_WINDOW_MS)`
  },
  {
    reason: 'auth_rate_limit',
    limit: 'Cache-bypassing lookups (auth, cert) per client',
    setting: (s) =>
      s.authRateLimitMax === 0
        ? 'off (AUTH_RATE_LIMIT_MAX=0)'
        : `${s.authRateLimitMax} per ${ms(s.rateLimitWindowMs)} (AUTH_RATE_LIMIT_MAX)`
  },
  {
    reason: 'client_share',
    limit: "One client's share of the upstream",
    setting: (s) => `${s.upstreamPerClient} in flight, ${s.upstreamClientQueue} waiting (UPSTREAM_PER_CLIENT, UPSTREAM_CLIENT_QUEUE)`
  },
  {
    reason: 'queue_full',
    limit: 'Lookups waiting for the upstream',
    setting: (s) =>
      `${s.upstreamMaxConcurrent} in flight` +
      (s.workers > 1 ? ` in this worker (its share of UPSTREAM_MAX_CONCURRENT over ${s.workers} workers)` : '') +
      `, ${s.upstreamQueueSize} waiting, at most ${ms(s.upstreamQueueTimeoutMs)}` +
      ' (UPSTREAM_MAX_CONCURRENT, UPSTREAM_QUEUE_SIZE, UPSTREAM_QUEUE_TIMEOUT_MS)'
  }
]

/**
 * The rows of "Limits in force": every limit above with its refusals, then any other reason a request was
 * refused under (`seen`), named by its label alone.
 */
export function limitRows(
  settings: StatusSettings,
  seen: Iterable<string>,
  refused: (reason: string) => { lastHour: number; sinceStart: number }
): LimitRow[] {
  const known = new Set(LIMITS.map((l) => l.reason))
  const others = [...new Set(seen)].filter((reason) => !known.has(reason)).map((reason) => ({ reason, limit: reason, setting: () => '' }))
  const copy = settings.registryCopy === undefined ? [] : [COPY_ROW]
  return [...LIMITS, ...copy, ...others].map(({ reason, limit, setting }) => {
    const counts = reason === null ? null : refused(reason)
    const refusedLastHour = counts?.lastHour ?? null
    return { reason, limit, setting: setting(settings), refusedLastHour, refusedSinceStart: counts?.sinceStart ?? null }
  })
}

/** With REGISTRY_COPY (issue 43): how old a copy record may be and still answer before the upstream. */
const COPY_ROW: Limit = {
  reason: null,
  limit: 'Registry copy answers before the upstream',
  setting: (s) =>
    s.offline
      ? 'always (OFFLINE: the copy answers alone)'
      : s.registryCopyMaxAgeSeconds === 0
        ? 'never first; it stands in when the upstream fails (REGISTRY_COPY_MAX_AGE_SECONDS=0)'
        : `while its data is younger than ${ms(s.registryCopyMaxAgeSeconds * 1000)} (REGISTRY_COPY_MAX_AGE_SECONDS)`
}

function ms(n: number): string {
  return n % 1000 === 0 ? `${n / 1000} s` : `${n} ms`
}
