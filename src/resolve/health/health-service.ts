/**
 * Resolution health put together (issue 42): the history (db.ts) fed only through the fleet log, the watched
 * DOIs from the local store, HEALTH_LIST_FILE and those the resolver found (sources.ts, seen.ts), one checker
 * for the whole fleet (a lease in Redis; this process alone without Redis) running the scheduler, the pruner,
 * and the metrics read from the history. The pages read `reader`; `runOnce` is the command's single pass.
 */
import { setTimeout as delay } from 'node:timers/promises'
import type { Config } from '../../config/schema.js'
import { advance } from '../../handle/health/confirm.js'
import { logIdTime } from '../../handle/health/log-id.js'
import { slotOf } from '../../handle/health/schedule.js'
import type { CheckerState, CheckKind, CheckResult } from '../../handle/health/types.js'
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
import { createPruner } from './prune.js'
import { createHealthReader } from './reader.js'
import type { HealthReader } from './reader.js'
import { createScheduler } from './scheduler.js'
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
  let lease: Lease | undefined
  let leaseState: LeaseState = 'stopped'

  const fleetLog = createFleetLog({
    redis: opts.redis,
    prefix: fleetPrefix,
    lease: { key: `${fleetPrefix}lease`, token: () => lease?.token() },
    keepMs: s.healthLogKeepSeconds * 1000,
    apply: (id, event) => {
      const applied = db.applyEvent(id, event)
      if (event.t === 'check') scheduler.applied(event.key)
      return applied
    },
    position: () => db.logPosition(),
    onGap: ({ from, to }) => {
      db.recordGap(logIdTime(from), logIdTime(to))
    },
    onError: (err) => {
      log.warn({ err }, 'the health log could not be read or written')
    }
  })

  const scheduler = createScheduler({
    due: (at, limit) => db.due(at, limit),
    nextDueAt: () => db.nextDueAt(),
    checker: opts.checker,
    publish: async (event) => (await fleetLog.publish(event)).ok,
    may: () => leaseState === 'held',
    rules,
    concurrency: s.healthConcurrency,
    perHost: s.landingPerHost,
    now,
    onChecked: (result) => metrics.healthChecks.inc({ verdict: result.verdict }),
    onNewlyBroken: (prefix, verdict) => metrics.healthNewlyBroken.inc({ prefix: label(prefix), verdict }),
    onError: (err) => {
      log.error({ err }, 'a health check failed')
    }
  })

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
  let metricsTimer: NodeJS.Timeout | undefined

  function readMetrics(): void {
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

  function onLease(state: LeaseState): void {
    leaseState = state
    metrics.healthChecker.set(state === 'held' ? 1 : 0)
    if (state === 'held') scheduler.start()
    else scheduler.stop().catch((err: unknown) => log.warn({ err }, 'the health checker did not stop cleanly'))
  }

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
        onLease(change.state)
      })
      pruner.start()
      readMetrics()
      metricsTimer = setInterval(readMetrics, opts.metricsEveryMs ?? METRICS_EVERY_MS)
      metricsTimer.unref()
    },
    /** Where the checker is, for the pages. */
    checkerState(): { state: CheckerState; reason?: string } {
      if (leaseState === 'held') return { state: 'running' }
      if (leaseState === 'elsewhere') return { state: 'elsewhere' }
      if (leaseState === 'paused') return { state: 'paused', reason: 'Redis does not answer: no replica can prove it is the only checker' }
      return { state: 'off' }
    },
    /**
     * The command's pass (doi-proxy health): every watched DOI checked now, a failure checked again `confirmGapMs`
     * later until HEALTH_CONFIRM in a row confirm it or one does not; each check recorded. Answers the broken count.
     */
    async runOnce(confirmGapMs: number, signal: AbortSignal): Promise<number> {
      await sources.sync()
      const onceRules = { ...rules, gapMs: confirmGapMs }
      const checkOne = async (d: DueDoi, kind: CheckKind): Promise<void> => {
        const result: CheckResult = await opts.checker.check({ doi: d.doi, lastGood: d.lastGood }, kind, signal)
        const at = now()
        const next = advance(d.state, { verdict: result.verdict, kind }, { ...onceRules, slot: slotOf(d.key, intervalMs) }, at)
        await fleetLog.publish({ v: 1, t: 'check', key: d.key, doi: d.doi, prefix: d.prefix, at, kind, state: next.state, ...result })
        metrics.healthChecks.inc({ verdict: result.verdict })
      }
      const everyWatched = (): DueDoi[] => db.due(Number.MAX_SAFE_INTEGER, s.healthMaxDois)
      await eachAtMost(s.healthConcurrency, everyWatched(), async (d) => await checkOne(d, 'once'))
      for (let round = 1; round < s.healthConfirm; round++) {
        const failing = everyWatched().filter((d) => d.state.streak > 0)
        if (failing.length === 0) break
        await delay(confirmGapMs, undefined, { signal })
        await eachAtMost(s.healthConcurrency, failing, async (d) => await checkOne(d, 'confirm'))
      }
      return reader.summary({ days: 1 }).reduce((n, p) => n + FAILURES.reduce((m, f) => m + p.counts[f], 0), 0)
    },
    async close(): Promise<void> {
      clearInterval(metricsTimer)
      await scheduler.stop()
      await lease?.stop()
      await seen.stop()
      await sources.stop()
      await pruner.stop()
      await fleetLog.stop()
      await db.close()
    }
  }
}

export type Health = ReturnType<typeof createHealth>

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
