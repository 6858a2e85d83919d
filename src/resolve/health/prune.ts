import { setImmediate as turn } from 'node:timers/promises'
import type { HealthDb, HealthLog } from './db.js'
import { dayOf } from './reader.js'

/**
 * Keeps the health history bounded (issue 42, plan D3, D6): every hour, today's point of the chart (`daily`, from
 * the live counts), then checks older than HEALTH_KEEP_DAYS, DOIs no source watches that have no check left, and
 * chart days beyond the keep; then some free pages back to the file system. Deletes go `batch` rows to a
 * transaction with a turn of the event loop between (each well under 100 ms on 10 M rows); a DOI's last good check
 * is kept while it is watched (the pages show "last good URL" of a DOI broken for longer than the keep).
 */

export interface PrunerOptions {
  /** HEALTH_KEEP_DAYS. */
  keepDays: number
  log?: HealthLog
  now?: () => number
  /** Rows deleted per transaction (500). */
  batch?: number
  /** Between two runs (an hour). */
  everyMs?: number
}

export interface PruneResult {
  checks: number
  dois: number
  days: number
  /** Transactions run, and the longest of them (ms on the loop). */
  batches: number
  worstBatchMs: number
}

export interface Pruner {
  /** Today's chart point from the counts now (also the first step of each run). */
  rollup(): void
  runOnce(): Promise<PruneResult>
  /** Runs now and then every `everyMs`. */
  start(): void
  /** Stops the timer; resolves when a run under way has finished its batch. */
  stop(): Promise<void>
}

const DAY_MS = 86_400_000

export function createPruner(db: HealthDb, opts: PrunerOptions): Pruner {
  const now = opts.now ?? Date.now
  const batch = Math.max(1, Math.trunc(opts.batch ?? 500))
  const everyMs = opts.everyMs ?? 3_600_000
  const steps = pruneSteps(db.sqlite, now, batch)
  let timer: NodeJS.Timeout | undefined
  let running: Promise<PruneResult> | undefined
  let stopping = false

  const runOnce = (): Promise<PruneResult> => {
    // One run at a time: a second call joins the one under way.
    running ??= prunePass(steps, { keepDays: opts.keepDays, batch, now }, () => stopping).finally(() => {
      running = undefined
    })
    return running
  }

  const scheduled = (): void => {
    runOnce()
      .then((result) => {
        if (result.checks + result.dois > 0) opts.log?.info({ ...result }, 'pruned the health history')
      })
      .catch((err: unknown) => {
        opts.log?.warn({ err: (err as Error).message }, 'pruning the health history failed; tried again next hour')
      })
  }

  return {
    rollup: () => steps.rollup.immediate(),
    runOnce,
    start() {
      if (timer !== undefined) return
      stopping = false
      scheduled()
      timer = setInterval(scheduled, everyMs)
      timer.unref()
    },
    async stop() {
      stopping = true
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      await running?.catch(() => undefined)
      stopping = false
    }
  }
}

/** The pruner's statements and transactions, each one batch of at most `batch` rows. */
function pruneSteps(sql: HealthDb['sqlite'], now: () => number, batch: number) {
  const clearDay = sql.prepare('DELETE FROM daily WHERE day = ?')
  const fillDay = sql.prepare('INSERT INTO daily (day, prefix, verdict, n) SELECT ?, prefix, verdict, n FROM tally WHERE n > 0')
  // Old checks in time order after a cursor (a kept last-good check is passed over, not met again each batch).
  const oldChecks = sql.prepare<[number, number, number, number], { id: number; at: number }>(
    `SELECT c.id, c.at FROM checks c
     WHERE c.at < ? AND (c.at, c.id) > (?, ?)
       AND NOT EXISTS (SELECT 1 FROM dois d WHERE d.sources <> 0 AND d.last_good_check_id = c.id)
     ORDER BY c.at, c.id LIMIT ?`
  )
  const deleteCheck = sql.prepare('DELETE FROM checks WHERE id = ?')
  const deleteDois = sql.prepare(
    `DELETE FROM dois WHERE id IN (SELECT d.id FROM dois d INDEXED BY dois_gone WHERE d.sources = 0
       AND NOT EXISTS (SELECT 1 FROM checks c WHERE c.doi_id = d.id) LIMIT ?)`
  )
  const deleteDays = sql.prepare('DELETE FROM daily WHERE day < ?')
  let after: [number, number] = [Number.MIN_SAFE_INTEGER, 0]
  return {
    rollup: sql.transaction(() => {
      const today = dayOf(now())
      clearDay.run(today)
      fillDay.run(today)
    }),
    /** The old checks are met from the start again. */
    restartChecks(): void {
      after = [Number.MIN_SAFE_INTEGER, 0]
    },
    deleteOld: sql.transaction((cutoff: number): number => {
      const rows = oldChecks.all(cutoff, after[0], after[1], batch)
      for (const { id } of rows) deleteCheck.run(id)
      const last = rows.at(-1)
      if (last !== undefined) after = [last.at, last.id]
      return rows.length
    }),
    deleteDois: (): number => deleteDois.run(batch).changes,
    deleteDays: (before: string): number => deleteDays.run(before).changes,
    // Free pages back to the file system, a bounded number each run (auto_vacuum = INCREMENTAL).
    vacuum: (): unknown => sql.pragma('incremental_vacuum(1000)')
  }
}

/** One run: today's chart point, the old checks, the DOIs gone, the old days, some pages freed; each batch timed. */
async function prunePass(
  steps: ReturnType<typeof pruneSteps>,
  opts: { keepDays: number; batch: number; now: () => number },
  stopping: () => boolean
): Promise<PruneResult> {
  const result: PruneResult = { checks: 0, dois: 0, days: 0, batches: 0, worstBatchMs: 0 }
  const timed = <T>(fn: () => T): T => {
    const start = performance.now()
    try {
      return fn()
    } finally {
      result.batches++
      result.worstBatchMs = Math.max(result.worstBatchMs, performance.now() - start)
    }
  }
  timed(() => steps.rollup.immediate())
  const cutoff = opts.now() - opts.keepDays * DAY_MS
  steps.restartChecks()
  for (;;) {
    if (stopping()) return result
    const deleted = timed(() => steps.deleteOld.immediate(cutoff))
    result.checks += deleted
    if (deleted < opts.batch) break
    await turn()
  }
  for (;;) {
    if (stopping()) return result
    const deleted = timed(() => steps.deleteDois())
    result.dois += deleted
    if (deleted < opts.batch) break
    await turn()
  }
  result.days = timed(() => steps.deleteDays(dayOf(cutoff)))
  timed(() => steps.vacuum())
  return result
}
