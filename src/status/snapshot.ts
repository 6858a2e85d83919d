/**
 * What the status page shows (issue 15, behaviour.md §12), as `/status.json` gives it and
 * src/http/views/status.ts draws it. Types only, and the outcomes every answer counts under.
 */
import { ANSWERS } from '../observe/metrics.js'
import type { AnswerOutcome } from '../observe/metrics.js'
import type { UnreachableReason } from '../resolve/upstream/reachability.js'

/** Every answer counts under one of these (doi_proxy_answers_total's outcome label). */
export const OUTCOMES = ANSWERS
export type Outcome = AnswerOutcome

/** A limit or another setting in force (src/status/settings.ts), and how often it refused a request. */
export interface LimitRow {
  /** The reason label of doi_proxy_refusals_total; null for a setting that refuses nothing itself. */
  reason: string | null
  limit: string
  setting: string
  /** Null without a reason. */
  refusedLastHour: number | null
  refusedSinceStart: number | null
}

export interface CountRow {
  labels: Record<string, string>
  lastHour: number
  sinceStart: number
}

export interface UpstreamErrorEntry {
  /** First and last time (ISO) this code was seen in this run of errors. */
  from: string
  to: string
  code: string
  count: number
}

export type BreakerName = 'closed' | 'half-open' | 'open'

/** The upstream's state for operators: `offline` when there is none (OFFLINE). */
export type Reachable =
  | { state: 'offline' | 'unknown' }
  | { state: 'answers'; since: string }
  | { state: 'unreachable'; reason: UnreachableReason; why: string; detail: string; since: string }

export interface StatusSnapshot {
  version: string
  /**
   * Under node:cluster, the worker whose figures these are (of `of` workers): each counts its own answers,
   * cache and breakers, and another request may reach another worker. Null with one process.
   */
  worker: { index: number; of: number } | null
  startedAt: string
  at: string
  uptimeSeconds: number
  /** Length of one point of every series, and the time its first point starts. */
  stepSeconds: number
  seriesStart: string
  requests: {
    /** Per second, one point per step: every answer, by where its record came from or why there was none. */
    perSecond: Record<Outcome, number[]>
    lastHour: Record<Outcome, number>
    /** doi_proxy_answers_total, as /metrics shows it. */
    sinceStart: Record<Outcome, number>
  }
  cache: {
    entries: number
    maxEntries: number
    bytes: number
    maxBytes: number
    /** Cache lookups that hit over all cache lookups (hit, miss, shared, stale, bypass); null before any lookup. */
    hitRatioLastHour: number | null
  }
  upstream: {
    /** Milliseconds per step; null where no upstream request ended. */
    p50Ms: Array<number | null>
    p99Ms: Array<number | null>
    /** Share of upstream requests that failed, per step. */
    errorRate: Array<number | null>
    lastHour: { requests: number; errors: number; retries: number; p50Ms: number | null; p99Ms: number | null }
    inFlight: number
    queued: number
    /** Whether the upstream answers, as the last lookups (or the start-up probe) found it. */
    reachability: Reachable
  }
  breaker: {
    state: BreakerName
    /** 0 closed, 1 half-open, 2 open: the worst state seen in each step. */
    perStep: number[]
    /** When it opened, newest first (at most 10). */
    openings: string[]
    prefixOpeningsLastHour: number
  }
  /** The limits and other settings in force, a row each (src/status/settings.ts). */
  limits: LimitRow[]
  localServices: {
    configured: Array<{ id: string; name: string }>
    diversions: CountRow[]
    bypasses: CountRow[]
    loopGuard: { lastHour: number; sinceStart: number }
  }
  /** Link-out chains: each step's count (docs/institutional.md). */
  linkout: CountRow[]
  /** The open-access source; null without OA_PROVIDER. dailyLimit null: a file, no limit. */
  openAccess: { provider: string; callsToday: number; dailyLimit: number | null; lookups: CountRow[] } | null
  /** Newest first, at most 20. */
  upstreamErrors: UpstreamErrorEntry[]
  /** The registry copy (REGISTRY_COPY, issue 43); null without one. */
  registryCopy: RegistryCopyStatus | null
}

/** What the registry copy holds and how fresh it is, read from the copy itself (every process sharing it sees the same). */
export interface RegistryCopyStatus {
  records: number
  /** Bytes of its file on disk. */
  fileBytes: number
  /** The last batch written (ISO); null if never. */
  updatedAt: string | null
  /** REGISTRY_COPY_UPDATE_HOURS: how often the server updates it; 0 never. */
  updateHours: number
  agencies: RegistryCopyAgency[]
  /** Who updates the copy now (`host:pid`) and until when (ISO) the lease runs; null when nobody. */
  lease: { holder: string; until: string } | null
}

export interface RegistryCopyAgency {
  agency: string
  records: number
  /** The time the copy holds the agency's records complete to (ISO, its coverage); null when not covered. */
  asOf: string | null
  /** The last update run's end; null when none was noted. */
  lastUpdate: {
    outcome: 'done' | 'interrupted' | 'disk_full' | 'failed'
    at: string
    pages: number
    records: number
    error: string | null
  } | null
  /** A run stopped midway (or running now), to be resumed: its pages and records so far; null when none. */
  pending: { pages: number; records: number } | null
}
