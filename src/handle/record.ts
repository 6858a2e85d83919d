/**
 * Pure rules over a record's values: type/index filters, TTLs and expiry, aliases, the legacy URL choice and
 * the text the values page shows for timestamps, HS_ADMIN and HS_VLIST. No clock: time comes in as ms.
 */
import type { HandleValue } from './types.js'
import { asciiUpperCase, isType, valueString } from './types.js'

/** The reference's default relative TTL ([HNS92] HandleValue, behaviour.md R11). */
export const DEFAULT_TTL_SECONDS = 86400
/** HandleValue.MAX_RECOGNIZED_TTL: caches and Expires ignore anything longer (2 days). */
export const MAX_RECOGNIZED_TTL_SECONDS = 172800

/**
 * type/index filter, union (behaviour.md R4 table, [DOI-HB25] §11.2): a type matches exactly, ASCII
 * case-insensitively, unless it ends in '.', which is a prefix match that also matches the bare type
 * ([HNS92] Util.isParentTypeInArray: 'URL.' matches 'URL' and 'URL.foo'). No filter → all values.
 * Keeps record order.
 */
export function filterValues(
  values: readonly HandleValue[],
  filter: { indexes?: readonly number[] | undefined; types?: readonly string[] }
): HandleValue[] {
  const indexes = filter.indexes ?? []
  const types = (filter.types ?? []).map(asciiUpperCase)
  // No filter: the same array (callers never mutate it), so identity-keyed memos downstream keep working.
  if (indexes.length === 0 && types.length === 0) return values as HandleValue[]
  return values.filter((v) => indexes.includes(v.index) || typeMatchesAny(v.type, types))
}

function typeMatchesAny(type: unknown, upperQueryTypes: readonly string[]): boolean {
  if (typeof type !== 'string' || type === '') return false
  const upper = asciiUpperCase(type)
  return upperQueryTypes.some((q) => {
    if (!q.endsWith('.')) return upper === q
    return upper.startsWith(q) || upper === q.slice(0, -1)
  })
}

/** Handle types fold ASCII only (hdllib Util.equalsCI upper-cases bytes a–z). */

/**
 * Seconds a value may be cached: a relative ttl as is (a negative one counts as 0, already expired);
 * an absolute ISO-8601 ttl counted from nowMs (in the past → 0); anything else → 86400, the default.
 */
export function valueTtlSeconds(v: HandleValue, nowMs: number): number {
  const expiry = absoluteExpiryMs(v.ttl)
  if (expiry !== undefined) return Math.max(0, Math.floor((expiry - nowMs) / 1000))
  if (typeof v.ttl === 'number' && Number.isFinite(v.ttl)) return Math.max(0, Math.floor(v.ttl))
  return DEFAULT_TTL_SECONDS
}

/**
 * Cache lifetime of a whole record, behaviour.md §3: the smallest value TTL, capped at maxSeconds and never
 * below floorSeconds, except that a TTL of 0 (relative 0, or an absolute time already past) means
 * "do not cache" → 0. An empty record → maxSeconds.
 */
export function recordCacheSeconds(
  values: readonly HandleValue[],
  nowMs: number,
  opts: { maxSeconds: number; floorSeconds: number }
): number {
  if (values.length === 0) return opts.maxSeconds
  // A loop, not Math.min(...values): a record of a few hundred thousand values would overflow the call stack.
  let smallest = Infinity
  for (const v of values) smallest = Math.min(smallest, valueTtlSeconds(v, nowMs))
  if (smallest === 0) return 0
  return Math.min(opts.maxSeconds, Math.max(opts.floorSeconds, smallest))
}

/**
 * HTTP Expires for a redirect (behaviour.md §4, [HNS92] expirationDateFor): the earliest of, per value used,
 * nowMs + relative ttl or the absolute expiry time, each capped at nowMs + 2 days. Returns epoch ms.
 * No values used → nowMs + 2 days (the cap), so callers always have a date to send.
 */
export function expiresAt(used: readonly HandleValue[], nowMs: number): number {
  return expiresFrom(expiryRule(used), nowMs)
}

/**
 * expiresAt taken apart, so it can be worked out once per record and applied at each request's time:
 * the shortest relative ttl (capped at 2 days) and the earliest absolute expiry (Infinity when none).
 */
export interface ExpiryRule {
  relativeMs: number
  until: number
}

export function expiryRule(used: readonly HandleValue[]): ExpiryRule {
  let relativeMs = MAX_RECOGNIZED_TTL_SECONDS * 1000
  let until = Infinity
  for (const v of used) {
    const absolute = absoluteExpiryMs(v.ttl)
    if (absolute !== undefined) until = Math.min(until, absolute)
    else relativeMs = Math.min(relativeMs, valueTtlSeconds(v, 0) * 1000)
  }
  return { relativeMs, until }
}

/** The Expires time (epoch ms) of a rule at `nowMs`: an absolute expiry already past counts as now. */
export function expiresFrom(rule: ExpiryRule, nowMs: number): number {
  return Math.min(nowMs + rule.relativeMs, Math.max(nowMs, rule.until))
}

/**
 * Strict ISO-8601 date-time with a zone, as the REST API writes absolute TTLs and timestamps. Strict on
 * purpose: Date.parse alone would read '3600' as the year 3600.
 */
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$/i

function parseIsoMs(s: string): number | undefined {
  if (!ISO_DATE_TIME.test(s)) return undefined
  const ms = Date.parse(s)
  return Number.isNaN(ms) ? undefined : ms
}

function absoluteExpiryMs(ttl: unknown): number | undefined {
  return typeof ttl === 'string' ? parseIsoMs(ttl) : undefined
}

/** First HS_ALIAS target in record order (type compared ASCII case-insensitively), or undefined. */
export function aliasTarget(values: readonly HandleValue[]): string | undefined {
  for (const v of values) {
    if (!isType(v, 'HS_ALIAS')) continue
    const target = valueString(v)
    if (target !== undefined && target !== '') return target
  }
  return undefined
}

/**
 * Legacy URL choice (behaviour.md R2 "Choosing among several URL values", case A, [HNS92]
 * Location.legacyOnlyUrlTypesDoRedirect): the first value whose type is exactly URL or 0.TYPE/URL
 * (case-insensitive) in record order, else the first subtype (URL.xxx or 0.TYPE/URL.xxx). Only values with
 * non-blank string data count: an empty URL can never be redirected to, so the next one is used.
 */
export function firstUrlValue(values: readonly HandleValue[]): HandleValue | undefined {
  const usable = values.filter((v) => (valueString(v) ?? '').trim() !== '')
  return usable.find((v) => isType(v, 'URL') || isType(v, '0.TYPE/URL')) ?? usable.find((v) => isUrlSubtype(v.type))
}

function isUrlSubtype(type: unknown): boolean {
  if (typeof type !== 'string') return false
  const upper = asciiUpperCase(type)
  return (upper.startsWith('URL.') && upper.length > 4) || (upper.startsWith('0.TYPE/URL.') && upper.length > 11)
}

/**
 * The values-page timestamp 'YYYY-MM-DD HH:MM:SSZ' in UTC ([HNS92] HandleValue.getNicerTimestampAsString,
 * e.g. doi.org's '2015-04-03 21:20:03Z'); 'NA' when missing or not an ISO date-time.
 */
export function nicerTimestamp(iso: string | undefined): string {
  const ms = iso === undefined ? undefined : parseIsoMs(iso)
  if (ms === undefined) return 'NA'
  // toISOString is 'YYYY-MM-DDTHH:MM:SS.sssZ' for years 0000–9999 (longer, with a sign, outside them)
  const full = new Date(ms).toISOString()
  if (full.length !== 24) return 'NA'
  return `${full.slice(0, 10)} ${full.slice(11, 19)}Z`
}

/**
 * The permission names in AdminRecord.toString order, each with its bit number. The JSON string is written
 * most significant bit first: character j (from the left) of a 12-character string is bit 11 - j
 * ([HNS92] GsonUtility.permsArrayToString), so '011111111111' grants everything but 'list'.
 */
const ADMIN_PERMISSIONS: ReadonlyArray<readonly [bit: number, name: string]> = [
  [0, 'create hdl'],
  [1, 'delete hdl'],
  [2, 'create derived prefix'],
  [3, 'delete derived prefix'],
  [10, 'read val'],
  [4, 'modify val'],
  [5, 'del val'],
  [6, 'add val'],
  [7, 'modify admin'],
  [8, 'del admin'],
  [9, 'add admin'],
  [11, 'list']
]

/**
 * HS_ADMIN as AdminRecord.toString (behaviour.md R5 table): 'handle=0.NA/10.5555; index=300; [create hdl,...]'
 * listing only the granted permissions. Undefined if the data is not an admin value.
 */
export function adminText(v: HandleValue): string | undefined {
  if (typeof v.data?.format !== 'string' || v.data.format.toLowerCase() !== 'admin') return undefined
  const admin = v.data.value
  if (typeof admin !== 'object' || admin === null) return undefined
  const { handle, index, permissions } = admin as { handle?: unknown; index?: unknown; permissions?: unknown }
  if (typeof handle !== 'string' || typeof index !== 'number') return undefined
  const bits = permissionBits(permissions)
  const granted = ADMIN_PERMISSIONS.filter(([bit]) => bits[bit] === true).map(([, name]) => name)
  return `handle=${handle}; index=${index}; [${granted.join(',')}]`
}

/**
 * Permission bits (index = bit number) from any form [HNS92] GsonUtility.permsElementToArray accepts:
 * a binary string read from the right, '*' (all), a boolean, a number, or an array of truthy flags.
 */
function permissionBits(permissions: unknown): boolean[] {
  if (permissions === '*' || permissions === true) return new Array<boolean>(12).fill(true)
  if (typeof permissions === 'number' && Number.isInteger(permissions) && permissions >= 0) {
    return permissionBits(permissions.toString(2))
  }
  if (typeof permissions === 'string') {
    return Array.from({ length: 12 }, (_, bit) => permissions.charAt(permissions.length - 1 - bit) === '1')
  }
  if (Array.isArray(permissions)) {
    return Array.from({ length: 12 }, (_, bit) => isTruthy(permissions[bit]))
  }
  return new Array<boolean>(12).fill(false)
}

function isTruthy(x: unknown): boolean {
  if (x === undefined || x === null || x === false || x === '' || x === 0) return false
  return !(typeof x === 'number' && Number.isNaN(x))
}

/** HS_VLIST entries [{handle,index}] → 'index:handle' strings (behaviour.md R5 table); undefined if not a vlist. */
export function vlistEntries(v: HandleValue): string[] | undefined {
  const list = v.data?.value
  if (!Array.isArray(list)) return undefined
  const isVlist = (typeof v.data.format === 'string' && v.data.format.toLowerCase() === 'vlist') || isType(v, 'HS_VLIST')
  if (!isVlist) return undefined
  const entries: string[] = []
  for (const entry of list) {
    if (typeof entry !== 'object' || entry === null) continue
    const { handle, index } = entry as { handle?: unknown; index?: unknown }
    if (typeof handle === 'string' && typeof index === 'number') entries.push(`${index}:${handle}`)
  }
  return entries
}
