import { locationFor } from '../redirect.js'

/**
 * Shared pieces of the registry copy's mappers (issue 43): CSL-JSON dates and names, markup to plain text
 * for abstracts and titles, and the URL rule every agency's record passes (the same as records': docs/behaviour.md §9).
 * Pure: no I/O, no clock.
 */

/** The schemes a copy's registered URL may have: ALLOWED_SCHEMES' default (config/schema.ts); the resolver checks again at redirect time. */
export const COPY_URL_SCHEMES: readonly string[] = ['http', 'https', 'ftp']

/** Schemes a browser runs: never kept, whatever ALLOWED_SCHEMES says (security.md: no javascript: or data: relayed to readers). */
export const NEVER_SCHEMES: readonly string[] = ['javascript', 'vbscript', 'data']

/** Longest registered URL kept: browsers and servers give up near 8 KiB (RFC 9110 §4.1 recommends ≥ 8,000 octets). */
export const MAX_URL_LENGTH = 8000

/** Longest text kept in one CSL string field; longer is cut (a title of a megabyte is an error in the record, not a title). */
export const MAX_FIELD_LENGTH = 100_000

/** Most names kept per role: CSL processors and citations use a handful; 5,000 covers the largest consortium papers. */
export const MAX_NAMES = 5000

/**
 * A registered URL as the copy keeps it, or why it is refused: the redirect rule (locationFor) with the
 * configured ALLOWED_SCHEMES (`schemes`) less NEVER_SCHEMES, plus a size bound.
 */
export function copyUrlOf(raw: unknown, schemes: readonly string[] = COPY_URL_SCHEMES): { url: string } | { problem: string } {
  if (typeof raw !== 'string' || raw.trim() === '') return { problem: 'the record has no URL' }
  const url = raw.trim()
  if (url.length > MAX_URL_LENGTH) return { problem: `the URL is longer than ${MAX_URL_LENGTH} characters (${url.length})` }
  const allowed = schemes.filter((s) => !NEVER_SCHEMES.includes(s))
  if (locationFor(url, undefined, allowed) === undefined) {
    return {
      problem: `the URL ${JSON.stringify(url.slice(0, 80))} is not one the resolver redirects to (scheme not in ${allowed.join(', ')}, a control character or a bad host)`
    }
  }
  return { url }
}

/** A string field bounded, trimmed; undefined when absent or blank. */
export function text(raw: unknown): string | undefined {
  if (typeof raw === 'number' && Number.isFinite(raw)) return String(raw)
  if (typeof raw !== 'string') return undefined
  const t = raw.trim()
  if (t === '') return undefined
  return t.length > MAX_FIELD_LENGTH ? t.slice(0, MAX_FIELD_LENGTH) : t
}

/** The first usable string of a value that agencies give as a string or an array of strings (Crossref `title`, `ISSN`). */
export function firstText(raw: unknown): string | undefined {
  if (Array.isArray(raw)) {
    for (const x of raw) {
      const t = text(x)
      if (t !== undefined) return t
    }
    return undefined
  }
  return text(raw)
}

const BLOCK_TAG = /<\/?(?:jats:)?(?:p|title|sec|list|list-item|br|div|li|ul|ol|h[1-6]|table|tr|td|th)\b[^>]*>/gi

// A tag or entity, white space other than a space, two spaces, a space at the end (a text cut at its bound).
const NEEDS_CLEANING = /[<&]|[^\S ]| {2}| $/

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' }

/**
 * Markup (JATS `<jats:p>`, HTML `<i>`, MathML) to plain text, for CSL `abstract` and titles: tags dropped,
 * entities decoded, white space collapsed. Citation styles escape what they print, so no markup survives.
 */
export function plainText(raw: unknown): string | undefined {
  const t = text(raw)
  if (t === undefined) return undefined
  // Most titles hold no tag, no entity and no white space but single spaces: nothing to do (4 to 5 calls a work).
  if (!NEEDS_CLEANING.test(t)) return t
  const out = t
    .replace(/<jats:title>[^<]*<\/jats:title>/g, ' ') // "Abstract" headings are not the abstract
    .replace(BLOCK_TAG, ' ') // a paragraph's end separates words…
    .replace(/<[^>]*>/g, '') // …an inline tag does not: CO<sub>2</sub> is CO2
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
      if (e[0] === '#') {
        const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10)
        return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : m
      }
      return ENTITIES[e.toLowerCase()] ?? m
    })
    .replace(/\s+/g, ' ')
    .trim()
  return out === '' ? undefined : out
}

export type CslDate = { 'date-parts': number[][] } | { literal: string }

/** A date as CSL wants it from date-parts `[[y, m?, d?]]` (Crossref's shape), or undefined when the year is missing. */
export function cslDate(raw: unknown): { 'date-parts': number[][] } | undefined {
  const parts = (raw as { 'date-parts'?: unknown } | null)?.['date-parts']
  const first = Array.isArray(parts) ? parts[0] : undefined
  if (!Array.isArray(first)) return undefined
  const out: number[] = []
  for (const [i, max] of [9999, 12, 31].entries()) {
    const n = typeof first[i] === 'string' ? Number(first[i]) : first[i]
    if (typeof n !== 'number' || !Number.isInteger(n) || n < (i === 0 ? -9999 : 1) || n > max) break
    out.push(n)
  }
  return out.length === 0 ? undefined : { 'date-parts': [out] }
}

/** An ISO date (`2021`, `2021-03`, `2021-03-04`, or a date-time) as CSL date-parts, or undefined. */
export function cslDateOfIso(raw: unknown): { 'date-parts': number[][] } | undefined {
  if (typeof raw === 'number') raw = String(raw)
  if (typeof raw !== 'string') return undefined
  const m = /^\s*(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?/.exec(raw)
  if (m === null) return undefined
  return cslDate({ 'date-parts': [[m[1], m[2], m[3]].filter((x) => x !== undefined).map(Number)] })
}

export interface CslName {
  family?: string
  given?: string
  suffix?: string
  literal?: string
}

/** A person or organisation as a CSL name: family/given when the agency has them, else the name as a literal. */
export function cslName(family: unknown, given: unknown, literal: unknown, suffix?: unknown): CslName | undefined {
  const f = text(family)
  const g = text(given)
  if (f !== undefined) {
    const out: CslName = { family: f }
    if (g !== undefined) out.given = g
    const s = text(suffix)
    if (s !== undefined) out.suffix = s
    return out
  }
  const l = text(literal) ?? g
  return l === undefined ? undefined : { literal: l }
}

/** Names of a list mapped and bounded (MAX_NAMES); undefined when none is usable. */
export function cslNames<T>(raw: unknown, map: (x: T) => CslName | undefined): CslName[] | undefined {
  if (!Array.isArray(raw)) return undefined
  const out: CslName[] = []
  for (const x of raw as T[]) {
    if (out.length >= MAX_NAMES) break
    const n = x !== null && typeof x === 'object' ? map(x) : undefined
    if (n !== undefined) out.push(n)
  }
  return out.length === 0 ? undefined : out
}

/** Fields with a value only: CSL processors treat `""` and `[]` as present. */
export function compact(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v
  return out
}

/** The latest stamp a record may have: the store keeps u32 seconds (2106); a later one is a broken date, not the newest record. */
export const MAX_STAMP = 0xffffffff

/** Milliseconds since 1970 as a stamp (seconds), or undefined outside 1970–2106. */
export function stampOfMs(ms: unknown): number | undefined {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) return undefined
  const s = Math.floor(ms / 1000)
  return s > MAX_STAMP ? undefined : s
}

/** An ISO date-time as a stamp (seconds since 1970), or undefined. */
export function secondsOfIso(raw: unknown): number | undefined {
  return typeof raw === 'string' ? stampOfMs(Date.parse(raw)) : undefined
}
