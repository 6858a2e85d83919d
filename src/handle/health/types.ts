/**
 * The shapes of resolution health (issue 42): what one check of a watched DOI found, the state a DOI is in
 * (its confirmed verdict and the failures that may yet confirm another), the events the checker publishes
 * to every replica, and what the reports show. Times are epoch milliseconds (UTC) throughout; the reports'
 * writers turn them into ISO 8601.
 */
import type { LandingVerdict } from '../verify/types.js'

/**
 * What one check found, in the order of their codes in the database (`checks.verdict`, never renumbered):
 * the landing prober's four verdicts, then `takeover` (a page on another registrable domain that no longer
 * names the DOI or its title), `not-found` (the DOI is not registered, or no longer), `no-url` (registered
 * without a URL we may follow), `error` (our side failed: the upstream, a breaker, Redis; not the DOI's fault).
 */
export const CHECK_VERDICTS = ['alive', 'unconfirmed', 'blocked', 'dead', 'takeover', 'not-found', 'no-url', 'error'] as const
export type CheckVerdict = (typeof CHECK_VERDICTS)[number]

// Every landing verdict is a check verdict as it is (a compile-time check: this fails to compile otherwise).
const LANDING_VERDICTS: Record<LandingVerdict, CheckVerdict> = {
  alive: 'alive',
  unconfirmed: 'unconfirmed',
  blocked: 'blocked',
  dead: 'dead'
}

/** A landing verdict as a check verdict. */
export function checkVerdictOf(landing: LandingVerdict): CheckVerdict {
  return LANDING_VERDICTS[landing]
}

/** The code of each verdict in the database. */
export const VERDICT_CODE = Object.fromEntries(CHECK_VERDICTS.map((verdict, code) => [verdict, code])) as Readonly<
  Record<CheckVerdict, number>
>

/** The verdict of a code read from the database; undefined for a code this version does not know. */
export function verdictOf(code: number): CheckVerdict | undefined {
  return CHECK_VERDICTS[code]
}

/** The failures: what a DOI's owner must fix. Only these are confirmed broken, counted in alerts, written to the CSV. */
export const FAILURES = ['dead', 'takeover', 'not-found', 'no-url'] as const
export type FailureVerdict = (typeof FAILURES)[number]

export function isFailure(verdict: CheckVerdict): verdict is FailureVerdict {
  return (FAILURES as readonly string[]).includes(verdict)
}

/** A DOI's confirmed verdict: any check verdict but `error` (our failure says nothing of the DOI). */
export type HealthVerdict = Exclude<CheckVerdict, 'error'>

/** What the reports show of a DOI, in the order of their columns and chart series: `unchecked` before its first check. */
export const SHOWN_VERDICTS = ['alive', 'unconfirmed', 'blocked', 'dead', 'takeover', 'not-found', 'no-url', 'unchecked'] as const
export type ShownVerdict = (typeof SHOWN_VERDICTS)[number]

/**
 * Why a check was made, in the order of their codes in the database (`checks.kind`): `scheduled`, the DOI's
 * once-per-interval check (or a retry of it after an `error`); `confirm`, a re-check of a failure, at least
 * HEALTH_CONFIRM_GAP_SECONDS after the one before; `once`, the `doi-proxy health` command's run.
 */
export const CHECK_KINDS = ['scheduled', 'confirm', 'once'] as const
export type CheckKind = (typeof CHECK_KINDS)[number]

/** What one check of one DOI found. */
export interface CheckResult {
  verdict: CheckVerdict
  /** The last HTTP status of the landing page (or of the resolution, for `not-found`); null when none came. */
  status: number | null
  /** The URL the DOI is registered with (null: not found, none, or the upstream failed). */
  registeredUrl: string | null
  /** The final URL reached, or the one that failed (null when no page was asked). */
  finalUrl: string | null
  /** One line saying why, as the prober wrote it or ours ("landed on casino.example; alive on journal.example until …"). */
  evidence: string
  /** How long the check took. */
  ms: number
}

/**
 * A watched DOI's state, computed by the checker after each check and applied as it is by every replica
 * (the columns of `dois` of the same names): its confirmed verdict, the failures in a row that may confirm
 * another, the window of its last scheduled check and when it is next due.
 */
export interface DoiState {
  verdict: ShownVerdict
  /** Since when the confirmed verdict holds (for a failure: its first failed check); null while unchecked. */
  since: number | null
  /** When the verdict was confirmed (the last failure of the streak, or the first check of a recovery). */
  confirmedAt: number | null
  /** Failed checks in a row not yet confirmed (0: none), of `streakVerdict`, the first and last at these times. */
  streak: number
  streakVerdict: FailureVerdict | null
  streakFirstAt: number | null
  streakLastAt: number | null
  /** The interval window of the last recorded scheduled check (-1: none yet): never two in one window. */
  window: number
  /** Errors (ours) in a row since the last check that counted: each retry waits longer. */
  retries: number
  nextAt: number
}

/** The fleet log's events (JSON, one a Redis stream entry), checked field by field when read. */
export type HealthEvent =
  | ({
      v: 1
      t: 'check'
      /** The cache key (`cacheKey`: the handle with ASCII letters folded to upper case); `doi` is the DOI as the list or the reader gave it. */
      key: string
      doi: string
      prefix: string
      at: number
      kind: CheckKind
      state: DoiState
    } & CheckResult)
  | { v: 1; t: 'watch'; key: string; doi: string; prefix: string; source: 'seen' }

/** One confirmed-broken DOI as the reports list it. */
export interface BrokenRow {
  doi: string
  prefix: string
  verdict: FailureVerdict
  since: number
  confirmedAt: number
  /** The final URL reached (the failing one) at the last check, its status and evidence. */
  url: string | null
  status: number | null
  evidence: string
  registeredUrl: string | null
  /** The final URL of the last `alive` check, and its time; null when the DOI was never seen alive. */
  lastGoodUrl: string | null
  lastGoodAt: number | null
  checkedAt: number
}

/** DOIs by shown verdict. */
export type VerdictCounts = Record<ShownVerdict, number>

/** One prefix on the reports: its DOIs by verdict now and one point a day. */
export interface PrefixSummary {
  prefix: string
  /** Whether HEALTH_WATCH names it (else its DOIs come from HEALTH_LIST_FILE). */
  watched: boolean
  counts: VerdictCounts
  /** DOIs confirmed broken in the last seven days. */
  newlyBroken: number
  /** DOIs whose check is due and not yet made (a host's limits, the checker paused). */
  overdue: number
  /** `day` is YYYY-MM-DD (UTC), oldest first. */
  history: Array<{ day: string; counts: VerdictCounts }>
}

/**
 * Where the fleet's checker is: `running` here, `elsewhere` (another replica holds the lease), `paused`
 * (Redis configured but unreachable: no lease can be proven; `reason` says why), `off` (health not on).
 */
export type CheckerState = 'running' | 'elsewhere' | 'paused' | 'off'

/** Everything `/health` and `/health.json` show. */
export interface HealthReport {
  generatedAt: number
  settings: { intervalSeconds: number; confirm: number; confirmGapSeconds: number; keepDays: number }
  checker: {
    state: CheckerState
    reason?: string
    lastCheckAt: number | null
    overdue: number
    /** Checks this replica never received (it was down longer than HEALTH_LOG_KEEP_SECONDS). */
    historyGap?: { from: number; to: number }
  }
  prefixes: PrefixSummary[]
  broken: BrokenRow[]
}

/** One check as the pages show it (the history of a DOI, `?doi=`), newest first. */
export interface CheckRow {
  at: number
  kind: CheckKind
  verdict: CheckVerdict
  status: number | null
  registeredUrl: string | null
  finalUrl: string | null
  /** The registrable domain of the final URL. */
  domain: string | null
  evidence: string
  ms: number | null
}

/** One DOI as its page shows it: its state now and its last checks, newest first. */
export interface DoiHistory {
  key: string
  doi: string
  prefix: string
  /** Whether a source watches it now (else it left them; its history stays until pruned). */
  watched: boolean
  state: DoiState
  checks: CheckRow[]
}
