/**
 * Whether the upstream answers, as the lookups (and the start-up probe) find it: known at every moment,
 * so the logs say when it changes, /status shows it, and a reader's error page names the cause.
 * "Answers" is any HTTP answer, an error status included: the network path works.
 */

/** Why the upstream cannot be reached, in the words an operator searches for. */
export type UnreachableReason = 'dns' | 'refused' | 'tls' | 'no-route' | 'connect-timeout' | 'timeout' | 'reset'

export type UpstreamState =
  | { state: 'unknown' }
  | { state: 'answers'; since: number }
  | { state: 'unreachable'; reason: UnreachableReason; detail: string; since: number }

/** What each reason means, for logs, /status and error pages. */
export const REASON_WORDS: Record<UnreachableReason, string> = {
  dns: 'DNS failure: its host name does not resolve (no network, or DNS failing)',
  refused: 'connection refused: nothing listens at its address and port',
  tls: 'TLS error: the secure connection failed (its certificate was not accepted)',
  'no-route': 'no route to its host (no network)',
  'connect-timeout': 'timeout: connecting took longer than UPSTREAM_CONNECT_TIMEOUT_MS',
  timeout: 'timeout: it accepted connections but did not answer in time',
  reset: 'connections cut before an answer'
}

/** Asked at start to learn whether the upstream answers: the prefix record of 10, which any DOI handle server holds; any answer will do. */
export const PROBE_HANDLE = '0.NA/10'

// Failures that say the path is broken, at once; the others (one slow answer, one cut connection) may
// be one prefix's handle server or a passing fault: only this many in a row with no answer between say so.
const AT_ONCE = new Set<UnreachableReason>(['dns', 'refused', 'tls', 'no-route', 'connect-timeout'])
const IN_A_ROW = 3

/** Read a connection error's code as a reason; undefined when it is none of ours to name. */
export function unreachableReason(code: string | undefined): UnreachableReason | undefined {
  if (code === undefined) return undefined
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL' || code === 'EAI_NONAME' || code === 'EAI_NODATA') return 'dns'
  if (code === 'ECONNREFUSED') return 'refused'
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'EADDRNOTAVAIL' || code === 'ENETDOWN' || code === 'EHOSTDOWN') {
    return 'no-route'
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT') return 'connect-timeout'
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED') return 'reset'
  if (/^(?:ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|EPROTO$)/.test(code)) return 'tls'
  return undefined
}

export function createReachability(opts: { now?: () => number; onChange?: (state: UpstreamState, before: UpstreamState) => void } = {}) {
  const now = opts.now ?? Date.now
  let current: UpstreamState = { state: 'unknown' }
  let inARow = 0

  function set(next: UpstreamState): void {
    const before = current
    current = next
    opts.onChange?.(next, before)
  }

  return {
    state: (): UpstreamState => current,
    /** Any HTTP answer came back. */
    answered(): void {
      inARow = 0
      if (current.state !== 'answers') set({ state: 'answers', since: now() })
    },
    /** A lookup got no answer, for this reason. */
    failed(reason: UnreachableReason, detail: string): void {
      inARow++
      if (!AT_ONCE.has(reason) && inARow < IN_A_ROW) return
      if (current.state === 'unreachable' && current.reason === reason) return
      set({ state: 'unreachable', reason, detail, since: now() })
    }
  }
}

export type Reachability = ReturnType<typeof createReachability>
