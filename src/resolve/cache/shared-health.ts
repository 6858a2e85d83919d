import { Cluster } from 'ioredis'
import { createChangeLog, createLogThrottle } from '../../observe/log-throttle.js'
import type { Metrics } from '../../observe/metrics.js'
import type { RedisClient } from '../fleet/redis.js'

/**
 * Whether the shared tier (shared-tier.ts) may use its Redis now, and what a failure costs. Redis down,
 * stuck (no answer for STUCK_AFTER_MS) or full (OOM): every call of the tier gives up and the lookup goes
 * on as if there were no Redis, counted in `doi_proxy_shared_cache_errors_total{reason}`, logged at most
 * once per LOG_INTERVAL_MS per reason; ioredis reconnects by itself. One command past its timeout is
 * counted too, but its lookup looks again and sharing stays on.
 */
const LOG_INTERVAL_MS = 10_000
// After Redis fails (unreachable, stuck, an error), lookups leave it alone this long: a stuck Redis then
// costs a second of command timeouts, not one per call of every miss, and the process works as if it had none.
const PAUSE_AFTER_FAILURE_MS = 5_000
// One command past its timeout is a slow command (a busy event loop here, a slow one there), not a Redis
// gone: sharing stays on, and that lookup looks again. Only commands failing with no answer between them
// for this long set Redis aside (PAUSE_AFTER_FAILURE_MS); otherwise one timeout would switch sharing off
// for every lookup at once, and each replica would fetch every DOI of a storm itself (issue 25).
const STUCK_AFTER_MS = 1_000
// How often a Cluster is asked whether it is up (CLUSTER INFO on each master).
const CLUSTER_PROBE_MS = 1_000

export type SharedErrorReason = 'unavailable' | 'timeout' | 'full' | 'error' | 'bad_value'

interface SharedLog {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
}

export interface SharedHealth {
  /** Up: connected, not paused after a failure, and a Cluster not reporting itself down. */
  healthy(): boolean
  /** Healthy; when not for want of a connection, that call counts as given up ('unavailable'). */
  usable(): boolean
  /** Redis answered a command: the failures in a row end. */
  answered(): void
  /** A command given up: counted, logged (throttled), and Redis set aside for a while when it is gone or stuck. */
  fail(reason: SharedErrorReason, err?: unknown): void
  reasonOf(err: unknown): SharedErrorReason
  /** Tell what the connection's log holds back (the process is closing). */
  flushLog(): void
  /** Stops the Cluster's probe (the client is closed by its owner). */
  close(): void
}

export function watchSharedHealth(redis: RedisClient, errors: Metrics['sharedCache']['errors'], log: SharedLog): SharedHealth {
  let pausedUntil = 0
  // When the first command failed since Redis last answered (performance.now()); undefined while it answers.
  let failingSince: number | undefined
  const throttle = createLogThrottle(LOG_INTERVAL_MS)
  // A new connection ends the pause: it is for a Redis that stays connected but answers too slowly.
  const connection = watchConnection(redis, log, () => {
    pausedUntil = 0
  })
  const cluster = redis instanceof Cluster ? watchCluster(redis, log) : undefined

  const healthy = (): boolean => redis.status === 'ready' && cluster?.down() !== true && performance.now() >= pausedUntil

  function fail(reason: SharedErrorReason, err?: unknown): void {
    errors.inc({ reason })
    const at = performance.now()
    if (reason === 'timeout') {
      failingSince ??= at
      if (at - failingSince >= STUCK_AFTER_MS) pausedUntil = at + PAUSE_AFTER_FAILURE_MS
    } else if (reason === 'unavailable' || reason === 'error') {
      pausedUntil = at + PAUSE_AFTER_FAILURE_MS
    }
    throttle(reason, (suppressed) =>
      log.warn(
        { reason, err: err === undefined ? undefined : (err as Error).message, suppressed },
        reason === 'bad_value'
          ? 'ignored a value in the shared cache (Redis) that is not a cache entry'
          : 'the shared cache (Redis) failed; working with the local cache only'
      )
    )
  }

  return {
    healthy,
    usable() {
      if (healthy()) return true
      if (redis.status !== 'ready' || cluster?.down() === true) errors.inc({ reason: 'unavailable' })
      return false
    },
    answered() {
      failingSince = undefined
    },
    fail,
    reasonOf(err) {
      const message = (err as Error)?.message ?? ''
      if (/timed out/i.test(message)) return 'timeout'
      if (/^OOM\b/.test(message)) return 'full'
      if (redis.status !== 'ready' || /closed|writeable|connect/i.test(message)) return 'unavailable'
      return 'error'
    },
    flushLog: connection.flush,
    close() {
      cluster?.stop()
    }
  }
}

/**
 * The connection's own story, whether or not a command was in flight: an idle replica whose Redis went
 * away says so. Each outage's start and end is logged, at once or, when another came within
 * LOG_INTERVAL_MS, counted in one line at that interval's end: back-to-back outages are never lost from
 * the log, and a Redis that flaps costs a few lines per interval. A start without Redis is already said
 * by services/cache-tiers.ts, so its first connection is a reconnection too. `onReady` on every new connection.
 */
function watchConnection(redis: RedisClient, log: SharedLog, onReady: () => void): { flush: () => void } {
  let connected = redis.status === 'ready'
  const connection = createChangeLog<'lost' | 'regained'>(LOG_INTERVAL_MS, (held) => {
    log.warn(
      { lost: held.lost ?? 0, regained: held.regained ?? 0, connected },
      `the connection to the shared cache (Redis) was lost ${held.lost ?? 0} more times and regained ${held.regained ?? 0} more times in the last ${LOG_INTERVAL_MS / 1000} s; ${connected ? 'connected now' : 'not connected now'}`
    )
  })
  redis.on('ready', () => {
    onReady()
    if (connected) return
    connected = true
    connection.change('regained', () => log.info({}, 'reconnected to the shared cache (Redis)'))
  })
  // Emitted when a connection that was not closed by us is lost and a reconnection is planned.
  redis.on('reconnecting', () => {
    if (!connected) return
    connected = false
    connection.change('lost', () =>
      log.warn({}, 'lost the connection to the shared cache (Redis); working with the local cache until it is back')
    )
  })
  return { flush: connection.flush }
}

/**
 * A Cluster with a master gone (its slots served by no one) says `cluster_state:fail` on the masters
 * left, while its client stays 'ready': asked each CLUSTER_PROBE_MS, so the gauge says so even with no
 * lookup under way, and lookups leave it alone until it reports `ok` again.
 */
function watchCluster(cluster: Cluster, log: SharedLog): { down: () => boolean; stop: () => void } {
  let down = false
  let probing = false
  async function probe(): Promise<void> {
    if (probing || cluster.status !== 'ready') return
    probing = true
    try {
      const asked = await Promise.allSettled(cluster.nodes('master').map(async (node) => String(await node.cluster('INFO'))))
      const answers = asked.flatMap((one) => (one.status === 'fulfilled' ? [one.value] : []))
      // A master that does not answer says nothing: the others tell whether the cluster counts it lost.
      if (answers.length === 0) return
      const fails = answers.some((info) => /^cluster_state:fail\b/m.test(info))
      if (fails === down) return
      down = fails
      if (down) {
        log.warn(
          {},
          'the shared cache (Redis Cluster) reports itself down (cluster_state:fail); working with the local cache until it is ok'
        )
      } else log.info({}, 'the shared cache (Redis Cluster) reports itself ok again')
    } finally {
      probing = false
    }
  }
  const timer = setInterval(() => {
    probe().catch(() => {})
  }, CLUSTER_PROBE_MS).unref()
  return {
    down: () => down,
    stop: () => {
      clearInterval(timer)
    }
  }
}
