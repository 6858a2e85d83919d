/**
 * The shapes of handle records, as the Handle REST API returns them
 * (behaviour.md R7). Unknown fields the upstream sends are kept untouched.
 */

export interface HandleValueData {
  format: string
  value: unknown
}

export interface HandleValue {
  index: number
  type: string
  data: HandleValueData
  /** Relative seconds (number) or an absolute ISO-8601 expiry (string). */
  ttl: number | string
  timestamp?: string
  permissions?: string
  references?: unknown[]
  [extra: string]: unknown
}

/** A whole handle record: every value, no filter applied. */
export interface HandleRecord {
  handle: string
  values: HandleValue[]
}

/**
 * Handle names and types fold ASCII letters only ([HNS92] hdllib Util.equalsCI upper-cases bytes a–z):
 * 'ı' (dotless i) or 'ſ' (long s) never match 'I' or 'S', as JavaScript's toUpperCase would make them.
 * The one folding every module uses for types (the cache key has its own, the same rule: name.ts cacheKey).
 */
export function asciiUpperCase(s: string): string {
  // Most types (URL, HS_ADMIN, EMAIL) have no lower-case letter: found so, the string itself is the answer.
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 97 && c <= 122) return s.replace(LOWER_RUNS, upperRun)
  }
  return s
}

const LOWER_RUNS = /[a-z]+/g
const upperRun = (run: string): string => run.toUpperCase()

/**
 * Exactly this type, ASCII case-insensitively (Util.equalsCI). Folding keeps a string's length, so a
 * type of another length is told apart without folding either (most values, on every miss).
 */
export function isType(v: HandleValue, type: string): boolean {
  return typeof v.type === 'string' && v.type.length === type.length && asciiUpperCase(v.type) === asciiUpperCase(type)
}

/**
 * [HNS92] HandleValue.hasType: the type equals `type`, or is a subtype of it (`type.xxx`), ASCII
 * case-insensitively. So `10320/LOC` (b2handle) counts as 10320/loc, and `URL.METADATA` as URL. A type
 * shorter than `type` is neither (folding keeps lengths).
 */
export function hasType(v: HandleValue, type: string): boolean {
  if (typeof v.type !== 'string' || v.type.length < type.length) return false
  const mine = asciiUpperCase(v.type)
  const wanted = asciiUpperCase(type)
  return mine === wanted || (mine.startsWith(wanted) && mine[wanted.length] === '.')
}

/** The string form of a value's data, when it has one (format "string"). */
export function valueString(value: HandleValue): string | undefined {
  const v = value.data?.value
  return typeof v === 'string' ? v : undefined
}

/**
 * The shape of a handle value as the REST API gives it (index, type, data with a format, ttl a number or
 * a string): checked on every value the upstream answers and every cache entry read back from Redis or a file.
 */
export function isHandleValue(v: unknown): v is HandleValue {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false
  const o = v as Record<string, unknown>
  const data = o.data as Record<string, unknown> | null | undefined
  return (
    Number.isInteger(o.index) &&
    typeof o.type === 'string' &&
    data !== null &&
    typeof data === 'object' &&
    typeof data.format === 'string' &&
    (typeof o.ttl === 'number' || typeof o.ttl === 'string' || o.ttl === undefined)
  )
}
