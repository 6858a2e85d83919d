import { LRUCache } from 'lru-cache'
import { staleUntil } from '../../handle/freshness.js'
import type { FreshnessPolicy } from '../../handle/freshness.js'
import type { HandleValue } from '../../handle/types.js'
import { plausibleEntry, readUnread } from './entry-codec.js'
import type { UnreadEntry } from './entry-codec.js'
import type { EntryWork } from './entry-work.js'
import { emptyWork } from './entry-work.js'
import type { CachedAnswer } from './entry.js'

export interface RecordCacheOptions {
  maxEntries: number
  maxBytes: number
  /** How long entries stay fresh and are kept (src/handle/freshness.ts); a restored one promising more is refused. */
  freshness: FreshnessPolicy
}

// A not-found entry is small; count it as this many bytes.
const NOT_FOUND_SIZE = 64

/**
 * The record cache: bounded by entries and by bytes (estimated from the record's JSON size).
 * Found records stay past their freshness until staleUntil (src/handle/freshness.ts) so they can stand
 * in when the upstream fails; lru-cache's own TTL purges them after that.
 */
export function createRecordCache(opts: RecordCacheOptions) {
  // An entry restored from a snapshot may be held unread (src/resolve/cache/entry-codec.ts UnreadEntry) until first asked for.
  const lru = new LRUCache<string, CachedAnswer | UnreadEntry>({
    max: opts.maxEntries,
    maxSize: opts.maxBytes,
    sizeCalculation: (entry) =>
      entry.kind === 'unread'
        ? unreadSize(entry)
        : (entry.kind === 'found' ? estimateSize(entry) : NOT_FOUND_SIZE) + (entry.work?.bytes ?? 0),
    ttlAutopurge: false
  })

  /** An unread entry's values, parsed once and kept in its place; one that does not read is dropped (a miss). */
  function read(key: string, held: UnreadEntry): CachedAnswer | undefined {
    const entry = readUnread(held)
    if (entry === undefined) lru.delete(key)
    // The same size: the text is the values' JSON, which estimateSize would measure again.
    else lru.set(key, entry, { noUpdateTTL: true, size: unreadSize(held) })
    return entry
  }

  return {
    /** The entry, fresh or stale, or undefined. Callers decide what stale means for them. */
    peek(key: string): CachedAnswer | undefined {
      const held = lru.get(key)
      return held?.kind === 'unread' ? read(key, held) : held
    },
    set(key: string, entry: CachedAnswer): void {
      const keepMs = staleUntil(entry, opts.freshness) - entry.storedAt
      if (keepMs <= 0) {
        lru.delete(key)
        return
      }
      lru.set(key, entry, { ttl: keepMs })
    },
    /**
     * An entry stored earlier (a snapshot, another replica through Redis): it keeps only what is left
     * of its freshness and staleness at `at` (epoch ms by the app's clock). False when nothing is left.
     */
    restore(key: string, entry: CachedAnswer, at: number): boolean {
      if (!plausibleEntry(entry, at, opts.freshness)) return false
      const keepMs = staleUntil(entry, opts.freshness) - at
      if (keepMs <= 0) return false
      lru.set(key, entry, { ttl: keepMs })
      return lru.has(key)
    },
    /**
     * `restore` for a found entry whose values are read when first asked for (a snapshot's line). One
     * already held as recent or more is kept as it is: with WORKERS>1 every worker's file holds much the
     * same records, and each worker reads them all (src/services/cache-tiers.ts).
     */
    restoreUnread(key: string, entry: UnreadEntry, at: number): boolean {
      if (!plausibleEntry(entry, at, opts.freshness)) return false
      if ((lru.peek(key)?.storedAt ?? -1) >= entry.storedAt) return true
      const keepMs = staleUntil({ kind: 'found', freshUntil: entry.freshUntil }, opts.freshness) - at
      if (keepMs <= 0) return false
      lru.set(key, entry, { ttl: keepMs, size: unreadSize(entry) })
      return lru.has(key)
    },
    /**
     * Add to the work kept with an entry, if that entry is still the one cached (not fetched again
     * meanwhile). `add` changes the work and says how many bytes it added, or undefined when it added
     * nothing. The bytes count against the cache's budget; the entry's freshness stays as it was.
     */
    attach(key: string, entry: CachedAnswer, add: (work: EntryWork) => number | undefined): boolean {
      const current = lru.peek(key)
      if (current === undefined || current.kind === 'unread' || !sameRecord(current, entry)) return false
      const work = current.work ?? emptyWork()
      const added = add(work)
      if (added === undefined) return false
      work.bytes += added
      // A new object: lru-cache sizes an entry again only when its value changes.
      lru.set(key, { ...current, work }, { noUpdateTTL: true })
      return lru.has(key)
    },
    delete(key: string): void {
      lru.delete(key)
    },
    /** Every live entry, least recently used first, without touching recency (for the snapshot): unread ones as they are. */
    entries(): Array<[string, CachedAnswer | UnreadEntry]> {
      const out: Array<[string, CachedAnswer | UnreadEntry]> = []
      // rentries() is typed loosely ((K | V)[]); its pairs are [key, value].
      for (const pair of lru.rentries()) out.push(pair as [string, CachedAnswer | UnreadEntry])
      return out
    },
    get size(): number {
      return lru.size
    },
    get bytes(): number {
      return lru.calculatedSize
    }
  }
}

export type RecordCache = ReturnType<typeof createRecordCache>

/** The same stored record (the entry object itself is replaced whenever an answer is kept with it). */
function sameRecord(a: CachedAnswer, b: CachedAnswer): boolean {
  return a.storedAt === b.storedAt && (a.kind === 'found' ? b.kind === 'found' && a.values === b.values : b.kind === 'not-found')
}

/** An unread entry counts as its values will once read: their JSON's length, times two. */
function unreadSize(entry: UnreadEntry): number {
  return Math.max(1, 2 * entry.text.length)
}

/** Rough in-memory size: the values' JSON length (the upstream's whole answer when known), times two for object overhead. */
function estimateSize(entry: { values: readonly HandleValue[]; textLength?: number | undefined }): number {
  return Math.max(1, 2 * (entry.textLength ?? JSON.stringify(entry.values).length))
}
