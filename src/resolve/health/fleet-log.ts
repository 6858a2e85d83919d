import { setTimeout as sleep } from 'node:timers/promises'
import { Cluster } from 'ioredis'
import type { HealthEvent } from '../../handle/health/types.js'
import { decodeHealthEvent, encodeHealthEvent } from '../../handle/health/log-event.js'
import { compareLogIds, isLogId, laterLogId, LOG_START, nextLogId } from '../../handle/health/log-id.js'
import { reconnectDelayMs, type RedisClient } from '../fleet/redis.js'

/**
 * The health checks' log (issue 42, plan D8): every replica's database is a copy fed by it, so /health reads
 * the same everywhere and a new checker resumes from its own database. With Redis it is a stream,
 * `<prefix>log`: the checker publishes through one script that writes only while the lease's token is its
 * own (a holder that lost the lease can never write), any replica announces a DOI it saw, each entry names
 * the one before it (so a replica that was away longer than the stream is kept sees the gap), and entries
 * older than `keepMs` are trimmed as new ones come (MINID, Redis 6.2 or later). Each replica reads it in
 * order from its database's position (XREAD BLOCK on a connection of its own) and applies every event
 * (`apply`, idempotent: an id at or before the position is skipped). Without Redis the log is this process:
 * ids `<ms>-<seq>` that only grow, applied at once.
 */
export interface FleetLogOptions {
  redis?: RedisClient | undefined
  /** REDIS_KEY_PREFIX, the part, its version and the lease's hash tag: `doi-proxy:health:1:{fleet}:`. */
  prefix: string
  /** The lease a check is published under (its key and token); without it (or not held) no check is published to Redis. */
  lease?: { key: string; token: () => string | undefined } | undefined
  /** HEALTH_LOG_KEEP_SECONDS in ms. */
  keepMs: number
  /** Applies one event in the database (one transaction, the position with it); false when `logId` is not after the position. */
  apply: (logId: string, event: HealthEvent) => boolean
  /** The database's position: the last id applied ('0-0' for a new database). */
  position: () => string
  /** Events this replica never got: the stream had lost them (trimmed) before it read them. Ids of the last one applied and the first read after. */
  onGap?: (gap: { from: string; to: string }) => void
  /** A failed read, publish or apply, and an entry that is not an event (skipped): for the caller's (throttled) log. */
  onError?: (err: Error) => void
  /** The in-process log's clock (epoch ms). */
  now?: () => number
  /** How long one read waits for new entries (100 ms to 5 s, 5 s by default). */
  blockMs?: number
  /** Entries per read (at most 500). */
  count?: number
}

export type PublishOutcome = { ok: true; id: string } | { ok: false; reason: 'not-holder' | 'refused' | 'redis' }

const MAX_BLOCK_MS = 5_000
const MAX_COUNT = 500
// The longest text of a field read back before it is looked at (an event is at most 16 KiB, an id 41 characters).
const MAX_FIELD_CHARS = 64 * 1024
// How long drain() reads at most before it says it is not at the end.
const DRAIN_MS = 60_000
const STOP_MS = 2_000

// KEYS: lease, log. ARGV: token ('' for an unfenced announcement), keep ms, event.
// The new entry's id, or nil when the token is not the lease's. `p` is the id of the entry before (none: '').
const PUBLISH = `
if ARGV[1] ~= '' and redis.call('GET', KEYS[1]) ~= ARGV[1] then return false end
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
local prev = ''
if last[1] then prev = last[1][1] end
local t = redis.call('TIME')
local minid = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - tonumber(ARGV[2])
if minid < 0 then minid = 0 end
return redis.call('XADD', KEYS[2], 'MINID', '~', string.format('%.0f', minid), '*', 'e', ARGV[3], 'p', prev)
`

export function createFleetLog(opts: FleetLogOptions) {
  const { redis } = opts
  const logKey = `${opts.prefix}log`
  // At least a moment: a read that never waits would ask Redis in a busy loop.
  const blockMs = Math.max(100, Math.min(MAX_BLOCK_MS, opts.blockMs ?? MAX_BLOCK_MS))
  const count = Math.max(1, Math.min(MAX_COUNT, opts.count ?? MAX_COUNT))
  const stopping = new AbortController()
  const report = (err: unknown): void => opts.onError?.(err instanceof Error ? err : new Error(String(err)))
  const publish = logPublisher(opts, logKey, report)
  const readOnce = logReader(opts, logKey, count, report)
  let blocking: RedisClient | undefined
  let loop: Promise<void> | undefined

  async function consume(client: RedisClient): Promise<void> {
    let failures = 0
    while (!stopping.signal.aborted) {
      try {
        await readOnce(client, blockMs)
        failures = 0
      } catch (err) {
        if (stopping.signal.aborted) return
        report(err)
        failures++
        await sleep(reconnectDelayMs(failures), undefined, { signal: stopping.signal }).catch(() => {})
      }
    }
  }

  return {
    /**
     * Publish an event: a check only while the lease is this replica's (else `not-holder`, nothing written), a
     * `watch` always; without Redis, applied before this returns. `refused`: an event the log cannot carry
     * (a key too long); `redis`: Redis failed (the caller drops the check; it is done again).
     */
    publish,

    /** Read the log from the database's position and apply it, until stop(). Nothing to do without Redis. */
    start(): void {
      if (redis === undefined || loop !== undefined || stopping.signal.aborted) return
      blocking = blockingConnection(redis, blockMs)
      loop = waitReady(blocking, stopping.signal).then(async () => {
        if (blocking !== undefined) await consume(blocking)
      })
    },

    /**
     * Read and apply what the log holds now, to its end (before bidding for the lease): true at the end, false when
     * Redis failed or `DRAIN_MS` passed first. Without Redis: at the end at once.
     */
    async drain(signal?: AbortSignal): Promise<boolean> {
      if (redis === undefined) return true
      const until = performance.now() + DRAIN_MS
      try {
        while (performance.now() < until && signal?.aborted !== true && !stopping.signal.aborted) {
          if ((await readOnce(redis, 0)) < count) return true
        }
      } catch (err) {
        report(err)
      }
      return false
    },

    /** Stop reading: the reading connection is closed at once (its waiting read with it). */
    async stop(): Promise<void> {
      if (stopping.signal.aborted) return
      stopping.abort()
      blocking?.disconnect()
      let timer: NodeJS.Timeout | undefined
      await Promise.race([loop?.catch(() => {}), new Promise((resolve) => (timer = setTimeout(resolve, STOP_MS)))])
      clearTimeout(timer)
    }
  }
}

export type FleetLog = ReturnType<typeof createFleetLog>

/** Publishing: to the stream through the fenced script, or without Redis applied here at once. */
function logPublisher(
  opts: FleetLogOptions,
  logKey: string,
  report: (err: unknown) => void
): (event: HealthEvent) => Promise<PublishOutcome> {
  const { redis } = opts
  const now = opts.now ?? Date.now
  let lastLocal = LOG_START

  /** Publish without Redis: the next id after the database's position, applied at once. */
  function publishHere(event: HealthEvent): PublishOutcome {
    if (encodeHealthEvent(event) === undefined) return { ok: false, reason: 'refused' }
    const id = nextLogId(laterLogId(lastLocal, opts.position()), now())
    lastLocal = id
    opts.apply(id, event)
    return { ok: true, id }
  }

  return async (event) => {
    if (redis === undefined) return publishHere(event)
    const text = encodeHealthEvent(event)
    if (text === undefined) return { ok: false, reason: 'refused' }
    // A check only under the lease; a DOI seen is announced by anyone.
    const token = event.t === 'check' ? opts.lease?.token() : ''
    if (token === undefined) return { ok: false, reason: 'not-holder' }
    try {
      const id = await redis.eval(PUBLISH, 2, opts.lease?.key ?? `${opts.prefix}lease`, logKey, token, Math.ceil(opts.keepMs), text)
      if (id === null) return { ok: false, reason: 'not-holder' }
      return typeof id === 'string' && isLogId(id) ? { ok: true, id } : { ok: false, reason: 'redis' }
    } catch (err) {
      report(err)
      return { ok: false, reason: 'redis' }
    }
  }
}

/** Reading: one XREAD from the cursor, its entries applied in order; how many entries the read held. */
function logReader(
  opts: FleetLogOptions,
  logKey: string,
  count: number,
  report: (err: unknown) => void
): (client: RedisClient, block: number) => Promise<number> {
  // Read up to here: the database's position, or past it by entries that were no events (skipped, never applied).
  let cursor = LOG_START

  function gap(from: string, to: string): void {
    try {
      opts.onGap?.({ from, to })
    } catch (err) {
      report(err)
    }
  }

  /**
   * Applies the entries of one read in order; how many the read held. A field that is not an event is skipped
   * (said once per entry); an entry whose predecessor is after the cursor says a gap.
   */
  function applyAll(reply: unknown): number {
    const entries = entriesOf(reply)
    for (const entry of entries) {
      if (compareLogIds(entry.id, cursor) <= 0) continue
      if (entry.prev !== undefined && compareLogIds(entry.prev, cursor) > 0) gap(cursor, entry.id)
      const event = decodeHealthEvent(entry.event)
      if (event === undefined) report(new Error(`health log entry ${entry.id} is not an event: skipped`))
      // An apply that throws (the disk) stops the read here: the entry is read again next time.
      else opts.apply(entry.id, event)
      cursor = entry.id
    }
    return entries.length
  }

  /** One read from the cursor (no later than the database's position). */
  return async (client, block) => {
    cursor = laterLogId(cursor, opts.position())
    const args: Array<string | number> = ['COUNT', count]
    if (block > 0) args.push('BLOCK', block)
    const reply = await client.call('XREAD', ...args, 'STREAMS', logKey, cursor)
    return applyAll(reply)
  }
}

interface Entry {
  id: string
  event: unknown
  prev: string | undefined
}

/**
 * The entries of an XREAD reply, each checked: ids in order after each other, fields bounded; what is not an
 * entry is left out. The reply is null, or a map of one stream to `[[id, [field, value, …]], …]`: flat
 * (`[key, entries]`, RESP3 as ioredis gives it by default) or as pairs (`[[key, entries]]`, RESP2).
 */
function entriesOf(reply: unknown): Entry[] {
  if (!Array.isArray(reply)) return []
  const lists: unknown[] = typeof reply[0] === 'string' ? [reply[1]] : reply.map((pair) => (Array.isArray(pair) ? pair[1] : undefined))
  const out: Entry[] = []
  for (const list of lists) {
    if (!Array.isArray(list)) continue
    for (const item of list as unknown[]) {
      if (!Array.isArray(item) || !isLogId(item[0]) || !Array.isArray(item[1])) continue
      const last = out.at(-1)
      if (last !== undefined && compareLogIds(item[0], last.id) <= 0) continue
      const fields = item[1] as unknown[]
      let event: unknown
      let prev: string | undefined
      for (let i = 0; i + 1 < fields.length; i += 2) {
        const [name, value] = [fields[i], fields[i + 1]]
        if (typeof value !== 'string' || value.length > MAX_FIELD_CHARS) continue
        if (name === 'e' && event === undefined) event = value
        else if (name === 'p' && isLogId(value)) prev = value
      }
      out.push({ id: item[0], event, prev })
    }
  }
  return out
}

/**
 * A connection of the log's own for its blocking reads (a blocked connection serves nothing else): the
 * client's settings, with time for the read's wait on top of REDIS_COMMAND_TIMEOUT_MS.
 */
function blockingConnection(redis: RedisClient, blockMs: number): RedisClient {
  const plus = (timeout: number | undefined): number | undefined => (timeout === undefined ? undefined : timeout + blockMs)
  const client =
    redis instanceof Cluster
      ? redis.duplicate([], {
          ...redis.options,
          redisOptions: {
            ...redis.options.redisOptions,
            commandTimeout: plus(redis.options.redisOptions?.commandTimeout),
            connectionName: 'doi-proxy:health-log'
          }
        })
      : redis.duplicate({ commandTimeout: plus(redis.options.commandTimeout), connectionName: 'doi-proxy:health-log' })
  client.on('error', () => {})
  return client
}

/** Until the connection is ready (a read sent before fails at once: nothing queues), or the log stops. */
async function waitReady(client: RedisClient, signal: AbortSignal): Promise<void> {
  if (client.status === 'ready' || signal.aborted) return
  await new Promise<void>((resolve) => {
    const done = (): void => {
      client.off('ready', done)
      signal.removeEventListener('abort', done)
      resolve()
    }
    client.on('ready', done)
    signal.addEventListener('abort', done)
  })
}
