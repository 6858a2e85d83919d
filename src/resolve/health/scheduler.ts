/**
 * The health checker's loop (issue 42, plan D10): the watched DOIs whose time has come, checked at most
 * HEALTH_CONCURRENCY at once and at most LANDING_PER_HOST per landing host (by the host of each DOI's last
 * check; the prober's host slots hold the real limit, this only keeps the queue from filling with one host),
 * each result turned into the DOI's next state (handle/health/confirm.ts) and published to the fleet log. A DOI
 * stays in flight until its event is applied to the database, so it is never picked twice. Runs only while
 * `may()` says this replica is the fleet's checker; stopping aborts the checks under way (nothing recorded).
 */
import { advance } from '../../handle/health/confirm.js'
import type { ConfirmRules } from '../../handle/health/confirm.js'
import { slotOf } from '../../handle/health/schedule.js'
import type { LastGood } from '../../handle/health/takeover.js'
import type { CheckKind, CheckResult, DoiState, FailureVerdict, HealthEvent } from '../../handle/health/types.js'
import type { Checker } from './checker.js'

/** A watched DOI due for a check, as the database gives it. */
export interface DueDoi {
  key: string
  doi: string
  prefix: string
  /** The landing host of its last check (null: never checked). */
  host: string | null
  state: DoiState
  lastGood: LastGood | null
}

export interface SchedulerOptions {
  /** The DOIs due at `now`, the longest due first, at most `limit` (those in flight here among them). */
  due: (now: number, limit: number) => DueDoi[]
  /** When the next DOI falls due (epoch ms), or null when none is watched. */
  nextDueAt: () => number | null
  checker: Pick<Checker, 'check'>
  /** The event written to the fleet log; false when this replica is no longer the checker (the result is dropped). */
  publish: (event: HealthEvent) => Promise<boolean>
  /** Whether this replica may check now (it holds the fleet's lease). */
  may: () => boolean
  rules: Omit<ConfirmRules, 'slot'>
  concurrency: number
  perHost: number
  /** Epoch ms. */
  now: () => number
  /** Told each check made and each DOI newly confirmed broken (metrics). */
  onChecked?: (result: CheckResult, event: HealthEvent) => void
  onNewlyBroken?: (prefix: string, verdict: FailureVerdict) => void
  onError?: (err: unknown) => void
  /** The longest sleep between two looks at the due list. */
  maxSleepMs?: number
}

const MAX_SLEEP_MS = 60_000
// When every due DOI waits for a busy host, look again soon rather than at the next due time.
const BUSY_HOSTS_SLEEP_MS = 1_000

export function createScheduler(opts: SchedulerOptions) {
  const inFlight = new Map<string, { host: string | null; controller: AbortController }>()
  const hosts = hostCounts(opts.perHost)
  // DOIs whose event was published and is not yet applied.
  const published = new Set<string>()
  let running = false
  let timer: NodeJS.Timeout | undefined
  let settled: Promise<void> = Promise.resolve()

  /** Starts what is due now, as far as the limits allow; answers how many were started. */
  function tick(): number {
    if (!running || !opts.may()) return 0
    const free = opts.concurrency - inFlight.size
    if (free <= 0) return 0
    const now = opts.now()
    // More than `free`: some may wait for a busy host.
    const rows = opts.due(now, inFlight.size + Math.min(free * 4, free + 1_000))
    let started = 0
    let waiting = false
    for (const row of rows) {
      if (started >= free) break
      if (inFlight.has(row.key)) continue
      if (hosts.busy(row.host)) {
        waiting = true
        continue
      }
      launch(row)
      started++
    }
    sleep(waiting)
    return started
  }

  function launch(row: DueDoi): void {
    const controller = new AbortController()
    inFlight.set(row.key, { host: row.host, controller })
    hosts.count(row.host, 1)
    // A failure in a streak, not yet confirmed, is checked again as a confirmation (an extra check by design).
    const kind: CheckKind = row.state.streak > 0 ? 'confirm' : 'scheduled'
    const work = checkAndPublish(opts, published, row, kind, controller.signal)
      .catch((err: unknown) => {
        if (!controller.signal.aborted) opts.onError?.(err)
      })
      .finally(() => {
        hosts.count(row.host, -1)
        // Still held until applied (applied()); a result not published frees it now.
        if (!published.has(row.key)) inFlight.delete(row.key)
        if (running) queueMicrotask(() => tick())
      })
    settled = Promise.all([settled, work]).then(() => {})
  }

  function sleep(busyHosts: boolean): void {
    if (!running) return
    clearTimeout(timer)
    timer = setTimeout(() => tick(), sleepMs(opts, busyHosts))
    timer.unref()
  }

  return {
    tick,
    /** The DOI's event reached the database: it may be picked again (when next due). */
    applied(key: string): void {
      if (published.delete(key)) inFlight.delete(key)
    },
    start(): void {
      if (running) return
      running = true
      tick()
    },
    /** Stops checking: the checks under way are aborted and nothing of theirs is published. */
    async stop(): Promise<void> {
      running = false
      clearTimeout(timer)
      for (const { controller } of inFlight.values()) controller.abort(new Error('the health checker stopped'))
      await settled
      inFlight.clear()
      published.clear()
      hosts.clear()
    },
    /** Checks under way (tests, /health). */
    inFlight: (): number => inFlight.size,
    running: (): boolean => running
  }
}

export type Scheduler = ReturnType<typeof createScheduler>

/** Checks in flight per landing host, against LANDING_PER_HOST. */
function hostCounts(limit: number) {
  const perHost = new Map<string, number>()
  return {
    busy: (host: string | null): boolean => host !== null && (perHost.get(host) ?? 0) >= limit,
    count(host: string | null, by: number): void {
      if (host === null) return
      const n = (perHost.get(host) ?? 0) + by
      if (n <= 0) perHost.delete(host)
      else perHost.set(host, n)
    },
    clear: (): void => perHost.clear()
  }
}

/** One check, its DOI's next state, published; `published` holds the key while its event is on the way. */
async function checkAndPublish(
  opts: SchedulerOptions,
  published: Set<string>,
  row: DueDoi,
  kind: CheckKind,
  signal: AbortSignal
): Promise<void> {
  const result = await opts.checker.check({ doi: row.doi, lastGood: row.lastGood }, kind, signal)
  if (signal.aborted) return
  const at = opts.now()
  const next = advance(row.state, { verdict: result.verdict, kind }, { ...opts.rules, slot: slotOf(row.key, opts.rules.intervalMs) }, at)
  const event: HealthEvent = { v: 1, t: 'check', key: row.key, doi: row.doi, prefix: row.prefix, at, kind, state: next.state, ...result }
  published.add(row.key)
  let kept = false
  try {
    kept = await opts.publish(event)
  } finally {
    if (!kept) published.delete(row.key)
  }
  if (!kept) return
  opts.onChecked?.(result, event)
  if (next.newlyBroken !== undefined) opts.onNewlyBroken?.(row.prefix, next.newlyBroken)
}

/** How long until the next look at the due list: the next due time, within the bounds. */
function sleepMs(opts: Pick<SchedulerOptions, 'nextDueAt' | 'now' | 'maxSleepMs'>, busyHosts: boolean): number {
  const next = opts.nextDueAt()
  const maxSleep = opts.maxSleepMs ?? MAX_SLEEP_MS
  let ms = next === null ? maxSleep : Math.max(0, Math.min(maxSleep, next - opts.now()))
  if (busyHosts) ms = Math.min(ms, BUSY_HOSTS_SLEEP_MS)
  return Math.max(10, ms)
}
