/**
 * Resolution health put together (issue 42): the history (db.ts) fed only through the fleet log, the watched
 * DOIs from the local store, HEALTH_LIST_FILE and those the resolver found (sources.ts, seen.ts), one checker
 * for the whole fleet (a lease in Redis; this process alone without Redis) running the scheduler, the pruner,
 * and the metrics read from the history. The pages read `reader`; `runOnce` is the command's single pass.
 */
import { getMaxListeners, setMaxListeners } from 'node:events'
import { setTimeout as delay } from 'node:timers/promises'
import type { Config } from '../../config/schema.js'
import { advance } from '../../handle/health/confirm.js'
import { logIdTime } from '../../handle/health/log-id.js'
import { slotOf } from '../../handle/health/schedule.js'
import type { CheckerState, CheckKind, CheckResult, HealthEvent, HealthReport } from '../../handle/health/types.js'
import { FAILURES } from '../../handle/health/types.js'
import { prefixLabel } from '../../handle/health/watch.js'
import type { Metrics } from '../../observe/metrics.js'
import { createLease } from '../fleet/lease.js'
import type { Lease, LeaseState } from '../fleet/lease.js'
import type { RedisClient } from '../fleet/redis.js'
import type { LocalStore } from '../local-store/store.js'
import type { Checker } from './checker.js'
import { openHealthDb } from './db.js'
import type { DueDoi, HealthDb, HealthLog, WatchSource } from './db.js'
import { createFleetLog } from './fleet-log.js'
import type { FleetLog } from './fleet-log.js'
import { createPruner } from './prune.js'
import { createHealthReader } from './reader.js'
import type { HealthReader } from './reader.js'
import { createScheduler } from './scheduler.js'
import type { Scheduler } from './scheduler.js'
import { createSeenDois } from './seen.js'
import { createSources } from './sources.js'
import type { WatchedRow } from './sources.js'

export type HealthSettings = Pick<
  Config,
  | 'healthWatch'
  | 'healthListFile'
  | 'healthIntervalSeconds'
  | 'healthConfirm'
  | 'healthConfirmGapSeconds'
  | 'healthDb'
  | 'healthKeepDays'
  | 'healthConcurrency'
  | 'healthMaxDois'
  | 'healthLogKeepSeconds'
  | 'landingPerHost'
  | 'redisKeyPrefix'
>

export interface HealthServiceOptions {
  settings: HealthSettings
  checker: Pick<Checker, 'check'>
  store?: Pick<LocalStore, 'keys' | 'onReload'> | undefined
  redis?: RedisClient | undefined
  metrics: Pick<Metrics, 'healthChecks' | 'healthDois' | 'healthNewlyBroken' | 'healthChecker' | 'healthOverdue' | 'healthEnabled'>
  log: HealthLog & { error(obj: object, msg: string): void }
  /** Epoch ms. */
  now: () => number
  /** The lease's time to live and renewal (tests shorten them); default 30 s and 10 s. */
  leaseTtlMs?: number
  leaseRenewMs?: number
  /** How often the metrics are read from the history; default 30 s. */
  metricsEveryMs?: number
}

const METRICS_EVERY_MS = 30_000

export function createHealth(opts: HealthServiceOptions) {
  const { settings: s, log, metrics, now } = opts
  const intervalMs = s.healthIntervalSeconds * 1000
  const rules = { confirm: s.healthConfirm, gapMs: s.healthConfirmGapSeconds * 1000, intervalMs }
  const db: HealthDb = openHealthDb({ file: s.healthDb, log, intervalMs, maxDois: s.healthMaxDois, checkpointEveryMs: 5_000, now })
  const reader: HealthReader = createHealthReader(db, { watched: s.healthWatch, now })
  const fleetPrefix = `${s.redisKeyPrefix}health:1:{fleet}:`
  const label = prefixLabel(s.healthWatch)
  const fleetLog = healthFleetLog(opts, db, fleetPrefix, {
    applied: (key) => scheduler.applied(key),
    leaseToken: () => checker.token()
  })
  const scheduler = healthScheduler(opts, db, rules, {
    publish: async (event) => (await fleetLog.publish(event)).ok,
    may: () => checker.held(),
    label
  })
  const checker = checkerLease(opts, db, fleetPrefix, fleetLog, scheduler)
  const sources = createSources({
    sink: {
      upsertWatched: (rows, generation) => upsertBySource(db, rows, generation),
      sweepSources: (source, generation) => {
        db.sweepSources(source, generation)
      }
    },
    store: opts.store,
    listFile: s.healthListFile,
    prefixes: s.healthWatch,
    maxDois: s.healthMaxDois,
    log
  })
  // A DOI the resolver found is told to the whole fleet (any replica may write a `watch` event).
  const seen = createSeenDois({
    prefixes: s.healthWatch,
    announce: async (batch) => {
      for (const event of batch) await fleetLog.publish(event)
    },
    log
  })
  const pruner = createPruner(db, { keepDays: s.healthKeepDays, log, now })
  const readMetrics = (): void => readHealthMetrics(reader, metrics, label, log)
  let metricsTimer: NodeJS.Timeout | undefined

  return {
    reader,
    seen,
    /** Looks at the due list now (tests move their clock, then tick); answers how many checks started. */
    tick: (): number => scheduler.tick(),
    /** Checks under way. */
    inFlight: (): number => scheduler.inFlight(),
    /** Starts watching, the log, the lease and (when held) the checks. */
    async start(): Promise<void> {
      metrics.healthEnabled.set(1)
      await sources.sync()
      sources.start()
      fleetLog.start()
      checker.start()
      pruner.start()
      readMetrics()
      metricsTimer = setInterval(readMetrics, opts.metricsEveryMs ?? METRICS_EVERY_MS)
      metricsTimer.unref()
    },
    /** Where the checker is, for the pages. */
    checkerState: checker.state,
    /** What the pages read in this process (the writer's own connection). */
    pages: { reader: () => reader, checkerState: checker.state, settings: reportSettings(s) } satisfies HealthPages,
    /**
     * The command's pass (doi-proxy health): every watched DOI checked now, a failure checked again `confirmGapMs`
     * later until HEALTH_CONFIRM in a row confirm it or one does not; each check recorded. Answers the broken count.
     */
    async runOnce(confirmGapMs: number, signal: AbortSignal): Promise<number> {
      // Each check in flight listens to the caller's signal (a resolution, a probe and its tries).
      setMaxListeners(Math.max(getMaxListeners(signal), 8 * s.healthConcurrency + 10), signal)
      await sources.sync()
      return await runOncePass({ opts, db, reader, fleetPrefix, rules: { ...rules, gapMs: confirmGapMs } }, signal)
    },
    async close(): Promise<void> {
      clearInterval(metricsTimer)
      await scheduler.stop()
      await checker.stop()
      await seen.stop()
      await sources.stop()
      await pruner.stop()
      await fleetLog.stop()
      await db.close()
    }
  }
}

export type Health = ReturnType<typeof createHealth>

/** The fleet log feeding this host's history: every event applied to the database, a gap recorded. */
function healthFleetLog(
  opts: HealthServiceOptions,
  db: HealthDb,
  fleetPrefix: string,
  hooks: { applied(key: string): void; leaseToken(): string | undefined }
) {
  return createFleetLog({
    redis: opts.redis,
    prefix: fleetPrefix,
    lease: { key: `${fleetPrefix}lease`, token: hooks.leaseToken },
    keepMs: opts.settings.healthLogKeepSeconds * 1000,
    apply: (id, event) => {
      const applied = db.applyEvent(id, event)
      if (event.t === 'check') hooks.applied(event.key)
      return applied
    },
    position: () => db.logPosition(),
    onGap: ({ from, to }) => {
      db.recordGap(logIdTime(from), logIdTime(to))
    },
    onError: (err) => {
      opts.log.warn({ err }, 'the health log could not be read or written')
    }
  })
}

/** The scheduled checks over the history's due list, while this process holds the lease. */
function healthScheduler(
  opts: HealthServiceOptions,
  db: HealthDb,
  rules: { confirm: number; gapMs: number; intervalMs: number },
  hooks: { publish(event: HealthEvent): Promise<boolean>; may(): boolean; label(prefix: string): string }
) {
  const { settings: s, metrics } = opts
  return createScheduler({
    due: (at, limit) => db.due(at, limit),
    nextDueAt: () => db.nextDueAt(),
    checker: opts.checker,
    publish: hooks.publish,
    may: hooks.may,
    rules,
    concurrency: s.healthConcurrency,
    perHost: s.landingPerHost,
    now: opts.now,
    onChecked: (result) => metrics.healthChecks.inc({ verdict: result.verdict }),
    onNewlyBroken: (prefix, verdict) => metrics.healthNewlyBroken.inc({ prefix: hooks.label(prefix), verdict }),
    onError: (err) => {
      opts.log.error({ err }, 'a health check failed')
    }
  })
}

/** The fleet's one checker: the lease, the scheduler started while held, the state the pages show. */
function checkerLease(
  opts: HealthServiceOptions,
  db: HealthDb,
  fleetPrefix: string,
  fleetLog: Pick<FleetLog, 'drain'>,
  scheduler: Pick<Scheduler, 'start' | 'stop'>
) {
  const { log, metrics } = opts
  let lease: Lease | undefined
  let leaseState: LeaseState = 'stopped'
  let leaseReason: string | undefined

  function checkerState(): CheckerStatus {
    if (leaseState === 'held') return { state: 'running' }
    if (leaseState === 'elsewhere') return { state: 'elsewhere' }
    if (leaseState === 'paused') {
      return { state: 'paused', reason: leaseReason ?? 'Redis does not answer: no replica can prove it is the only checker' }
    }
    // Not started: a process that does not listen (`doi-proxy health`, tests) checks nothing on a schedule.
    if (lease === undefined) return { state: 'paused', reason: 'the scheduled checks start when the server listens' }
    return { state: 'off' }
  }

  function onLease(state: LeaseState, reason: string | undefined): void {
    leaseState = state
    leaseReason = reason
    metrics.healthChecker.set(state === 'held' ? 1 : 0)
    try {
      // The host's read-only processes show the checker as this writer knows it.
      if (state !== 'stopped') db.recordChecker(checkerState())
    } catch (err) {
      log.warn({ err }, 'the health checker state could not be recorded')
    }
    if (state === 'held') scheduler.start()
    else scheduler.stop().catch((err: unknown) => log.warn({ err }, 'the health checker did not stop cleanly'))
  }

  return {
    state: checkerState,
    held: (): boolean => leaseState === 'held',
    token: (): string | undefined => lease?.token(),
    start(): void {
      lease = createLease({
        redis: opts.redis,
        prefix: fleetPrefix,
        ttlMs: opts.leaseTtlMs ?? 30_000,
        renewMs: opts.leaseRenewMs ?? 10_000,
        beforeBid: async (signal) => {
          await fleetLog.drain(signal)
        },
        onError: (err) => {
          log.warn({ err }, 'the health lease could not be taken or renewed')
        }
      })
      lease.start((change) => {
        onLease(change.state, change.reason)
      })
    },
    stop: async (): Promise<void> => {
      await lease?.stop()
    }
  }
}

/** The counts by prefix and verdict, and the overdue checks, read from the history into the metrics. */
function readHealthMetrics(
  reader: HealthReader,
  metrics: HealthServiceOptions['metrics'],
  label: (prefix: string) => string,
  log: HealthLog
): void {
  try {
    const summary = reader.summary({ days: 1 })
    // Prefixes past the labels' bound share `other`: their counts add up.
    const byLabel = new Map<string, number>()
    for (const p of summary) {
      for (const [verdict, n] of Object.entries(p.counts)) {
        const key = `${label(p.prefix)}\n${verdict}`
        byLabel.set(key, (byLabel.get(key) ?? 0) + n)
      }
    }
    metrics.healthDois.reset()
    for (const [key, n] of byLabel) {
      const [prefix = '', verdict = ''] = key.split('\n')
      metrics.healthDois.set({ prefix, verdict }, n)
    }
    metrics.healthOverdue.set(reader.checkerStatus().overdue)
  } catch (err) {
    log.warn({ err }, 'the health metrics could not be read')
  }
}

/**
 * The command's pass after the sources' sync: every watched DOI checked, failures confirmed `rules.gapMs` apart;
 * answers the broken count.
 */
async function runOncePass(
  ctx: {
    opts: HealthServiceOptions
    db: HealthDb
    reader: HealthReader
    fleetPrefix: string
    rules: { confirm: number; gapMs: number; intervalMs: number }
  },
  signal: AbortSignal
): Promise<number> {
  const { opts, db, rules } = ctx
  const { settings: s, now } = opts
  // Written to this database alone, never to a fleet's log in Redis (a lease the command does not hold would refuse it).
  const onceLog = createFleetLog({
    prefix: ctx.fleetPrefix,
    keepMs: s.healthLogKeepSeconds * 1000,
    apply: (id, event) => db.applyEvent(id, event),
    position: () => db.logPosition(),
    now
  })
  const checkOne = async (d: DueDoi, kind: CheckKind): Promise<void> => {
    const result: CheckResult = await opts.checker.check({ doi: d.doi, lastGood: d.lastGood }, kind, signal)
    const at = now()
    const next = advance(d.state, { verdict: result.verdict, kind }, { ...rules, slot: slotOf(d.key, rules.intervalMs) }, at)
    await onceLog.publish({ v: 1, t: 'check', key: d.key, doi: d.doi, prefix: d.prefix, at, kind, state: next.state, ...result })
    opts.metrics.healthChecks.inc({ verdict: result.verdict })
  }
  const everyWatched = (): DueDoi[] => db.due(Number.MAX_SAFE_INTEGER, s.healthMaxDois)
  await eachAtMost(s.healthConcurrency, everyWatched(), async (d) => await checkOne(d, 'once'))
  for (let round = 1; round < s.healthConfirm; round++) {
    const failing = everyWatched().filter((d) => d.state.streak > 0)
    if (failing.length === 0) break
    await delay(rules.gapMs, undefined, { signal })
    await eachAtMost(s.healthConcurrency, failing, async (d) => await checkOne(d, 'confirm'))
  }
  return ctx.reader.summary({ days: 1 }).reduce((n, p) => n + FAILURES.reduce((m, f) => m + p.counts[f], 0), 0)
}

/** Where the fleet's checker is, as the pages say it. */
export interface CheckerStatus {
  state: CheckerState
  reason?: string
}

/** What the pages (`/health`, `/health.json`, `/health.csv`) read, in the writer and in the host's read-only processes alike. */
export interface HealthPages {
  /** The history; undefined while a read-only process waits for the writer to make the file. */
  reader(): HealthReader | undefined
  checkerState(): CheckerStatus
  settings: HealthReport['settings']
}

function reportSettings(s: Pick<HealthSettings, 'healthIntervalSeconds' | 'healthConfirm' | 'healthConfirmGapSeconds' | 'healthKeepDays'>) {
  return {
    intervalSeconds: s.healthIntervalSeconds,
    confirm: s.healthConfirm,
    confirmGapSeconds: s.healthConfirmGapSeconds,
    keepDays: s.healthKeepDays
  }
}

const CHECKER_STATES: readonly string[] = ['running', 'elsewhere', 'paused', 'off']
// How often a read-only process tries to open the writer's file again while it is not there yet.
const REOPEN_MS = 1_000

/**
 * The pages of a process that does not write (WORKERS > 1: every worker but the first): the host's file opened
 * read-only once the writer has made it (tried again at most once a second until then), the checker's state as
 * the writer recorded it.
 */
export function openHealthPages(opts: {
  settings: Pick<
    HealthSettings,
    'healthDb' | 'healthWatch' | 'healthIntervalSeconds' | 'healthConfirm' | 'healthConfirmGapSeconds' | 'healthKeepDays'
  >
  log: HealthLog
  now: () => number
}): HealthPages & { close(): Promise<void> } {
  const { settings: s, log, now } = opts
  let db: HealthDb | undefined
  let reader: HealthReader | undefined
  let triedAt = Number.NEGATIVE_INFINITY
  let closed = false
  const open = (): HealthReader | undefined => {
    if (reader !== undefined || closed || performance.now() - triedAt < REOPEN_MS) return reader
    triedAt = performance.now()
    try {
      db = openHealthDb({ file: s.healthDb, readonly: true, log, now })
      reader = createHealthReader(db, { watched: s.healthWatch, now })
    } catch {
      // The writer (worker 1) has not made or migrated the file yet: the pages say so, and ask again later.
    }
    return reader
  }
  return {
    reader: open,
    checkerState(): CheckerStatus {
      const recorded = open()?.checkerStatus().recorded
      if (recorded !== undefined && CHECKER_STATES.includes(recorded.state)) {
        return { state: recorded.state as CheckerState, ...(recorded.reason === undefined ? {} : { reason: recorded.reason }) }
      }
      return { state: 'paused', reason: "this host's writer (worker 1) has not started yet" }
    },
    settings: reportSettings(s),
    async close() {
      closed = true
      await db?.close()
    }
  }
}

/** What one `/health` page shows: the report (a page of the broken list from `after`) and where the next page starts. */
export function healthReport(
  pages: Pick<HealthPages, 'checkerState' | 'settings'>,
  reader: HealthReader,
  query: { prefix?: string | undefined; after?: string | undefined; limit?: number; now: number }
): { report: HealthReport; next: string | null } {
  const status = reader.checkerStatus()
  const page = reader.broken({ prefix: query.prefix, after: query.after, limit: query.limit ?? 200 })
  const days = Math.min(90, pages.settings.keepDays)
  const prefixes = reader.summary({ days }).filter((p) => query.prefix === undefined || p.prefix === query.prefix)
  const checker: HealthReport['checker'] = {
    ...pages.checkerState(),
    lastCheckAt: status.lastCheckAt,
    overdue: status.overdue,
    ...(status.historyGap === undefined ? {} : { historyGap: status.historyGap })
  }
  return { report: { generatedAt: query.now, settings: pages.settings, checker, prefixes, broken: page.rows }, next: page.next }
}

/** `work` for each item, at most `n` at once. */
async function eachAtMost<T>(n: number, items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const runners = Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) await work(items[next++] as T)
  })
  await Promise.all(runners)
}

/** The sources' rows written by source, one transaction each: how many new DOIs HEALTH_MAX_DOIS refused. */
function upsertBySource(db: HealthDb, rows: readonly WatchedRow[], generation: number): number {
  const bySource = new Map<WatchSource, WatchedRow[]>()
  for (const row of rows) {
    const list = bySource.get(row.source) ?? []
    list.push(row)
    bySource.set(row.source, list)
  }
  let refused = 0
  for (const [source, list] of bySource) refused += db.upsertWatched(source, list, generation).refused
  return refused
}
