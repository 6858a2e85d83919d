import { LRUCache } from 'lru-cache'
import type { HandleValue } from '../handle/types.js'
import { plausibleEntry } from './entry-codec.js'
import type { PreparedAnswer, PreparedAnswers } from './prepared.js'
import { MAX_PREPARED_BYTES, MAX_VARIANTS } from './prepared.js'

/**
 * One cached upstream answer. `freshUntil` is epoch ms by the injected clock. `answers` are the prepared
 * HTTP answers of common requests for it (src/resolve/prepared.ts), added as they are first given.
 */
export type CachedAnswer =
  | { kind: 'found', values: HandleValue[], storedAt: number, freshUntil: number, answers?: PreparedAnswers }
  | { kind: 'not-found', storedAt: number, freshUntil: number, answers?: PreparedAnswers }

export interface RecordCacheOptions {
  maxEntries: number
  maxBytes: number
  /** How long past freshness a found record is kept for serving when the upstream fails. */
  maxStaleMs: number
  /** The longest freshness this process gives an entry: a restored one promising more is refused. */
  maxFreshMs: number
}

// A not-found entry is small; count it as this many bytes.
const NOT_FOUND_SIZE = 64

/**
 * The record cache: bounded by entries and by bytes (estimated from the record's JSON size).
 * Found records stay past their freshness for up to maxStaleMs so they can stand in when the
 * upstream fails; lru-cache's own TTL purges them after that.
 */
export function createRecordCache (opts: RecordCacheOptions) {
  const lru = new LRUCache<string, CachedAnswer>({
    max: opts.maxEntries,
    maxSize: opts.maxBytes,
    sizeCalculation: (entry) => (entry.kind === 'found' ? estimateSize(entry.values) : NOT_FOUND_SIZE) + answersSize(entry.answers),
    ttlAutopurge: false
  })

  return {
    /** The entry, fresh or stale, or undefined. Callers decide what stale means for them. */
    peek (key: string): CachedAnswer | undefined {
      return lru.get(key)
    },
    set (key: string, entry: CachedAnswer): void {
      const freshMs = Math.max(0, entry.freshUntil - entry.storedAt)
      const keepMs = entry.kind === 'found' ? freshMs + opts.maxStaleMs : freshMs
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
    restore (key: string, entry: CachedAnswer, at: number): boolean {
      if (!plausibleEntry(entry, at, opts.maxFreshMs)) return false
      const keepMs = (entry.kind === 'found' ? entry.freshUntil + opts.maxStaleMs : entry.freshUntil) - at
      if (keepMs <= 0) return false
      lru.set(key, entry, { ttl: keepMs })
      return lru.has(key)
    },
    /**
     * Keep a prepared answer with the entry, if that entry is still the one cached (not refetched
     * meanwhile) and it has room for another variant. Its bytes count against the cache's budget; its
     * freshness stays as it was.
     */
    keep (key: string, entry: CachedAnswer, variant: string, answer: PreparedAnswer): boolean {
      const current = lru.peek(key)
      if (current === undefined || !sameRecord(current, entry) || answer.bytes > MAX_PREPARED_BYTES) return false
      const answers = new Map(current.answers)
      if (!answers.has(variant) && answers.size >= MAX_VARIANTS) return false
      answers.set(variant, answer)
      // A new object: lru-cache sizes an entry again only when its value changes.
      lru.set(key, { ...current, answers }, { noUpdateTTL: true })
      return lru.has(key)
    },
    delete (key: string): void {
      lru.delete(key)
    },
    /** Every live entry, least recently used first, without touching recency (for the snapshot). */
    entries (): Array<[string, CachedAnswer]> {
      const out: Array<[string, CachedAnswer]> = []
      // rentries() is typed loosely ((K | V)[]); its pairs are [key, value].
      for (const pair of lru.rentries()) out.push(pair as [string, CachedAnswer])
      return out
    },
    get size (): number {
      return lru.size
    },
    get bytes (): number {
      return lru.calculatedSize
    }
  }
}

export type RecordCache = ReturnType<typeof createRecordCache>

/** The same stored record (the entry object itself is replaced whenever an answer is kept with it). */
function sameRecord (a: CachedAnswer, b: CachedAnswer): boolean {
  return a.storedAt === b.storedAt && (a.kind === 'found' ? b.kind === 'found' && a.values === b.values : b.kind === 'not-found')
}

function answersSize (answers: PreparedAnswers | undefined): number {
  if (answers === undefined) return 0
  let bytes = 0
  for (const [variant, answer] of answers) bytes += answer.bytes + 2 * variant.length
  return bytes
}

/** Rough in-memory size: the values' JSON length, times two for object overhead. */
function estimateSize (values: readonly HandleValue[]): number {
  return Math.max(1, 2 * JSON.stringify(values).length)
}
