/**
 * Resolution health's third source (issue 42, plan D9 (c)): every DOI of a HEALTH_WATCH prefix that the
 * upstream found for a reader. `onFound` is called on an upstream miss answered `found`
 * (src/resolve/lookup/upstream-turns.ts), never on a hit: one prefix cut and a Set lookup, then, for a
 * watched DOI, a lookup in a bounded LRU of those already told. New ones are announced in batches, once a
 * second, as the fleet log's `watch` events (the wiring sends them: to the fleet log with Redis, to worker 1
 * as a `health-seen` host message, or straight to the database). At start `fromCache` passes over the record
 * cache's entries once, so the DOIs answered before a restart are watched too.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { LRUCache } from 'lru-cache'
import type { HealthEvent } from '../../handle/health/types.js'
import { prefixOfKey } from '../../handle/health/watch.js'
import { cacheKey } from '../../handle/name.js'
import { MAX_SEEN_PER_MESSAGE } from '../fleet/messages.js'

/** A fleet log `watch` event: a DOI the resolver answered, to be watched. */
export type WatchEvent = Extract<HealthEvent, { t: 'watch' }>

export interface SeenOptions {
  /** HEALTH_WATCH (none: nothing is ever announced). */
  prefixes: readonly string[]
  /** Told each batch of DOIs not told before (at most SEEN_BATCH); a rejection forgets them, so the next sighting tells them again. */
  announce: (batch: WatchEvent[]) => void | Promise<void>
  /** DOIs remembered as told already; default 100,000 (one forgotten may be told again: harmless, the sink is idempotent). */
  max?: number
  /** How long a DOI waits to be told with others; default a second. */
  batchMs?: number
  log?: { warn(obj: object, msg: string): void }
}

export interface SeenDois {
  /** The upstream found `handle` (its cacheKey `key`) for a reader: watched when its prefix is. Cheap, never throws. */
  onFound(handle: string, key: string): void
  /** The record cache's entries at start (RecordCache.entries()): each found one (not `not-found`) as if just found. */
  fromCache(entries: Iterable<readonly [string, { readonly kind: string }]>): Promise<void>
  /** Tell what waits now; resolves when every batch so far is told. */
  flush(): Promise<void>
  /** Tell what waits, then take no more. */
  stop(): Promise<void>
}

/** Most DOIs in one announcement (one `health-seen` host message at most). */
export const SEEN_BATCH = MAX_SEEN_PER_MESSAGE
/** Announcements waiting for the one before them (a slow Redis) before new batches are dropped: a bound on memory. */
const MAX_WAITING_BATCHES = 10
/** Cache entries looked at between two turns of the event loop in `fromCache`. */
const CACHE_PASS_SLICE = 10_000

export function createSeenDois(opts: SeenOptions): SeenDois {
  const watched = new Set(opts.prefixes.map((prefix) => prefix.toLowerCase()))
  const told = new LRUCache<string, true>({ max: opts.max ?? 100_000 })
  const batchMs = opts.batchMs ?? 1000
  let pending: WatchEvent[] = []
  let timer: NodeJS.Timeout | undefined
  let telling: Promise<void> = Promise.resolve()
  let waiting = 0
  let dropped = 0
  let stopped = false

  function onFound(handle: string, key: string): void {
    if (stopped) return
    const prefix = prefixOfKey(key)
    if (prefix === null || !watched.has(prefix) || told.has(key)) return
    told.set(key, true)
    pending.push({ v: 1, t: 'watch', key, doi: handle, prefix, source: 'seen' })
    if (pending.length >= SEEN_BATCH) tellPending()
    else if (timer === undefined) {
      timer = setTimeout(tellPending, batchMs)
      timer.unref()
    }
  }

  /** Hand what waits to `announce`, after the announcements before it. */
  function tellPending(): void {
    clearTimeout(timer)
    timer = undefined
    if (pending.length === 0) return
    const batch = pending
    pending = []
    if (waiting >= MAX_WAITING_BATCHES) {
      forget(batch)
      dropped += batch.length
      opts.log?.warn({ dropped }, 'health: seen DOIs dropped, the announcements before them are still waiting')
      return
    }
    waiting++
    telling = telling
      .then(async () => {
        await opts.announce(batch)
      })
      .catch((err: unknown) => {
        forget(batch)
        opts.log?.warn({ err, dois: batch.length }, 'health: seen DOIs could not be announced; they are told again when next found')
      })
      .finally(() => {
        waiting--
      })
  }

  function forget(batch: WatchEvent[]): void {
    for (const event of batch) told.delete(event.key)
  }

  return {
    onFound,
    async fromCache(entries) {
      if (watched.size === 0) return
      let looked = 0
      for (const [key, entry] of entries) {
        if (stopped) return
        if (entry.kind !== 'not-found') onFound(key.toLowerCase(), key)
        // A slow announcer is waited for here, never dropped; and a pass over a million entries lets the loop go.
        if (waiting >= MAX_WAITING_BATCHES - 1) await telling
        if (++looked % CACHE_PASS_SLICE === 0) await yieldToLoop()
      }
    },
    async flush() {
      tellPending()
      await telling
    },
    async stop() {
      tellPending()
      stopped = true
      await telling
    }
  }
}

/** The `watch` event of a DOI told by a `health-seen` host message (as the reader gave it); undefined for a prefix record. */
export function watchEventOf(doi: string): WatchEvent | undefined {
  const key = cacheKey(doi)
  const prefix = prefixOfKey(key)
  return prefix === null ? undefined : { v: 1, t: 'watch', key, doi, prefix, source: 'seen' }
}
