import { freshBound } from '../../handle/freshness.js'
import type { FreshnessPolicy } from '../../handle/freshness.js'
import { cacheKey } from '../../handle/name.js'
import { isHandleValue } from '../../handle/types.js'
import type { HandleValue } from '../../handle/types.js'
import type { CachedAnswer } from './entry.js'

/**
 * The compact encoding of one cache entry, shared by the snapshot file and the Redis tier
 * (behaviour.md §11): a JSON array `[version, storedAt, freshUntil, kind, values?]`, times in epoch ms
 * by the app's clock, kind 1 found (with the values as the REST API gives them) or 0 not found.
 * JSON, not msgpack: V8 parses it natively (no dependency), records are mostly strings (msgpack
 * saves little on them), and an operator can read a key with redis-cli.
 *
 * Pure: no I/O. Whatever is read back (a file, a Redis value) may be hostile, so `decodeEntry`
 * checks every field and answers undefined for anything that is not exactly an entry.
 */
export const ENTRY_VERSION = 1

// Bounds for what a decoded entry may hold: no record has more values, no reader needs more.
export const MAX_VALUES = 10_000
// Times must be plausible epoch ms: after 2000-01-01 and before 2200-01-01.
const MIN_TIME = 946_684_800_000
const MAX_TIME = 7_258_118_400_000

/**
 * A found entry whose values are still the JSON text they were stored as (a snapshot line): parsed and
 * checked the first time the record is asked for (`readUnread`, by src/resolve/cache/record-cache.ts), so that a
 * restart with a million records reads their times, not their values, before it answers. The text is
 * exactly what `encodeEntry` wrote for the values.
 */
export interface UnreadEntry {
  kind: 'unread'
  storedAt: number
  freshUntil: number
  text: string
}

/** The entry's text. */
export function encodeEntry(entry: CachedAnswer | UnreadEntry): string {
  if (entry.kind === 'unread') return `[${ENTRY_VERSION},${entry.storedAt},${entry.freshUntil},1,${entry.text}]`
  return entry.kind === 'found'
    ? JSON.stringify([ENTRY_VERSION, entry.storedAt, entry.freshUntil, 1, entry.values])
    : JSON.stringify([ENTRY_VERSION, entry.storedAt, entry.freshUntil, 0])
}

/** The found entry an unread one holds, or undefined when its text is not a well-formed list of values. Never throws. */
export function readUnread(entry: UnreadEntry): CachedAnswer | undefined {
  let values: unknown
  try {
    values = JSON.parse(entry.text)
  } catch {
    return undefined
  }
  if (!areValues(values)) return undefined
  return { kind: 'found', values, storedAt: entry.storedAt, freshUntil: entry.freshUntil }
}

/**
 * A found entry's stored line `["KEY",[1,storedAt,freshUntil,1,VALUES]]` read without parsing VALUES:
 * [key, unread entry], or undefined when the line is not of that plain shape (a key with an escape, a
 * not-found entry, anything else): the caller then parses it whole, as before.
 */
export function readUnreadLine(line: string, maxKeyLength: number): [string, UnreadEntry] | undefined {
  const head = UNREAD_HEAD.exec(line)
  if (head === null || !line.endsWith(']]]')) return undefined
  const [whole, key = '', stored = '', fresh = ''] = head
  const storedAt = Number(stored)
  const freshUntil = Number(fresh)
  if (!isCacheKey(key, maxKeyLength) || !isTime(storedAt) || !isTime(freshUntil) || freshUntil < storedAt) return undefined
  // From the values' opening bracket up to the two that close the entry and the line.
  return [key, { kind: 'unread', storedAt, freshUntil, text: line.slice(whole.length - 1, -2) }]
}

// `["KEY",[1,storedAt,freshUntil,1,[`: a key without quotes, escapes or control characters, times as plain integers.
// eslint-disable-next-line no-control-regex -- JSON forbids them raw in a string
const UNREAD_HEAD = /^\["([^"\\\x00-\x1f]+)",\[1,(\d{1,16}),(\d{1,16}),1,\[/

/** The entry, or undefined when `text` is not a well-formed entry of this version. Never throws. */
export function decodeEntry(text: string): CachedAnswer | undefined {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    return undefined
  }
  return checkEntry(raw)
}

// Replicas' clocks differ a little; an entry stored further in the future than this is not believed.
const MAX_CLOCK_SKEW_MS = 60_000

/**
 * Whether an entry from outside this process (another replica through Redis, a snapshot file) is
 * believable at `at`: stored no later than now (give or take clock skew), and fresh for no longer than
 * this process would keep it fresh itself (freshBound). A hostile or skewed entry must not pin a
 * record for years, nor win every "newer than what we hold" comparison.
 */
export function plausibleEntry(entry: { storedAt: number; freshUntil: number }, at: number, policy: FreshnessPolicy): boolean {
  return entry.storedAt <= at + MAX_CLOCK_SKEW_MS && entry.freshUntil - entry.storedAt <= freshBound(policy)
}

/** The same check on an already-parsed value. */
export function checkEntry(raw: unknown): CachedAnswer | undefined {
  if (!Array.isArray(raw) || raw[0] !== ENTRY_VERSION) return undefined
  const [, storedAt, freshUntil, kind, values] = raw as unknown[]
  if (!isTime(storedAt) || !isTime(freshUntil) || freshUntil < storedAt) return undefined
  if (kind === 0 && raw.length === 4) return { kind: 'not-found', storedAt, freshUntil }
  if (kind !== 1 || raw.length !== 5 || !areValues(values)) return undefined
  return { kind: 'found', values, storedAt, freshUntil }
}

/** A cache key as we make them (ASCII-folded handle), of a length we accept. */
export function isCacheKey(key: unknown, maxLength: number): key is string {
  return typeof key === 'string' && key.length > 0 && key.length <= maxLength && cacheKey(key) === key
}

/** A found entry's values: a list of at most MAX_VALUES handle values. */
function areValues(values: unknown): values is HandleValue[] {
  return Array.isArray(values) && values.length <= MAX_VALUES && values.every(isHandleValue)
}

function isTime(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= MIN_TIME && n <= MAX_TIME
}
