/**
 * Media types for metadata answers (docs/metadata.md): the cache key of a negotiated request, whether an
 * agency's answer is of a type the reader asked for, and which stored metadata a request gets. Pure.
 */

interface AcceptEntry {
  /** `type/subtype`, lower-cased. */
  type: string
  /** The entry without q, normalised: `text/x-bibliography;style=apa`. */
  full: string
  q: number
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/i
const MEDIA = /^([!#$%&'*+.^_`|~0-9a-z-]+)\/([!#$%&'*+.^_`|~0-9a-z-]+)$/i

/**
 * A media type with optional parameters (`text/x-bibliography; style=apa`), normalised: type lower-cased,
 * no spaces around `;` and `=`, parameters kept in order with their values as written (a CSL style or a
 * locale is the agency's to read). Undefined when it is not one, or holds a wildcard or a q.
 */
export function normaliseMediaType(text: string): string | undefined {
  const [first = '', ...params] = text.split(';')
  const m = MEDIA.exec(first.trim())
  if (m === null || first.includes('*')) return undefined
  const parts = [`${(m[1] ?? '').toLowerCase()}/${(m[2] ?? '').toLowerCase()}`]
  for (const p of params) {
    const eq = p.indexOf('=')
    if (eq <= 0) return undefined
    const name = p.slice(0, eq).trim().toLowerCase()
    const value = p.slice(eq + 1).trim()
    if (!TOKEN.test(name) || name === 'q' || value === '' || /[\s",;\\]/.test(value)) return undefined
    parts.push(`${name}=${value}`)
  }
  return parts.join(';')
}

function parseAccept(accept: string | readonly string[] | undefined): AcceptEntry[] {
  if (accept === undefined) return []
  const out: AcceptEntry[] = []
  for (const field of typeof accept === 'string' ? [accept] : accept) {
    for (const entry of field.split(',')) {
      const [first = '', ...params] = entry.split(';')
      const type = first.trim().toLowerCase()
      if (type === '' || !/^[^/\s]+\/[^/\s]+$/.test(type)) continue
      let q = 1
      const kept: string[] = [type]
      for (const p of params) {
        const eq = p.indexOf('=')
        const name = (eq < 0 ? p : p.slice(0, eq)).trim().toLowerCase()
        const value = eq < 0 ? '' : p.slice(eq + 1).trim()
        if (name === '') continue
        if (name === 'q') {
          const n = Number(value)
          if (/^\d*\.?\d+$/.test(value) && n >= 0 && n <= 1) q = n
        } else {
          kept.push(`${name}=${value}`)
        }
      }
      out.push({ type, full: kept.join(';'), q })
    }
  }
  return out
}

/**
 * The cache key of a negotiated request's Accept: its entries normalised (the same header written with
 * other spacing or case of the type shares the entry), or undefined when it is longer than `maxLength`
 * (such a request is fetched, never cached).
 */
export function acceptCacheKey(accept: string | readonly string[] | undefined, maxLength = 512): string | undefined {
  const key = parseAccept(accept)
    .map((e) => (e.q === 1 ? e.full : `${e.full};q=${e.q}`))
    .join(',')
  return key.length > maxLength ? undefined : key
}

/** `type/subtype` of a Content-Type, lower-cased; '' when there is none. */
export function baseType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
}

// Web pages: never relayed as metadata.
const PAGE_TYPES = new Set(['text/html', 'application/xhtml+xml'])

/**
 * True when an answer of `contentType` is something the request accepts (q above 0): its type exactly,
 * `type/*` or `*\/*`. An agency answering a type nobody asked for (a JSON error) is not passed on under
 * our name, and a web page never is, whatever the Accept: a browser is sent to pages, and an agency's
 * HTML relayed from our origin would make us a relay of its markup.
 */
export function acceptsContentType(accept: string | readonly string[] | undefined, contentType: string | undefined): boolean {
  const type = baseType(contentType)
  if (!MEDIA.test(type) || PAGE_TYPES.has(type)) return false
  const major = type.split('/')[0] ?? ''
  // RFC 9110 §12.5.1: the most specific range that matches decides (`application/x-bibtex;q=0, *\/*` excludes BibTeX).
  let specificity = -1
  let q = 0
  for (const e of parseAccept(accept)) {
    const s = e.type === type ? 2 : e.type === `${major}/*` ? 1 : e.type === '*/*' ? 0 : -1
    if (s > specificity) [specificity, q] = [s, e.q]
    else if (s === specificity && s >= 0) q = Math.max(q, e.q)
  }
  return q > 0
}

/**
 * Which stored media type a request gets (docs/metadata.md, "Offline metadata"), as RFC 9110 §12.5.1 says:
 * each stored type takes the q of the most specific Accept entry that matches it (the type with the same
 * parameters, then the type alone, then `type/*`, then `*\/*`); q=0 excludes it (§12.4.2); the highest q
 * wins, ties going to the more specific match, then the earlier entry, then the record's order.
 * Parameters are compared as a set (names case-insensitive, values as written, quotes dropped): a styled
 * request (`text/x-bibliography; style=apa`) never gets another style nor an unstyled bibliography.
 * Undefined when nothing fits (the answer is then 406, as an agency's).
 */
export function chooseStoredType(accept: string | readonly string[] | undefined, stored: readonly string[]): string | undefined {
  const entries = parseAccept(accept).map((e, i) => ({ ...e, order: i, params: paramKey(e.full) }))
  let best: { key: string; q: number; specificity: number; order: number } | undefined
  for (const key of stored) {
    const type = baseType(key)
    const params = paramKey(key)
    let match: { q: number; specificity: number; order: number } | undefined
    for (const e of entries) {
      const specificity =
        e.type === type
          ? e.params === params
            ? 3
            : e.params === ''
              ? 2
              : -1
          : e.type === `${type.split('/')[0] ?? ''}/*`
            ? 1
            : e.type === '*/*'
              ? 0
              : -1
      if (specificity < 0 || (match !== undefined && match.specificity >= specificity)) continue
      match = { q: e.q, specificity, order: e.order }
    }
    if (match === undefined || match.q <= 0) continue
    if (
      best === undefined ||
      match.q > best.q ||
      (match.q === best.q && (match.specificity > best.specificity || (match.specificity === best.specificity && match.order < best.order)))
    ) {
      best = { key, ...match }
    }
  }
  return best?.key
}

/** A media type's parameters as a comparable set: `name=value` sorted, names lower-cased, quotes dropped; q left out. */
function paramKey(type: string): string {
  return type
    .split(';')
    .slice(1)
    .map((p) => {
      const eq = p.indexOf('=')
      const name = (eq < 0 ? p : p.slice(0, eq)).trim().toLowerCase()
      const value =
        eq < 0
          ? ''
          : p
              .slice(eq + 1)
              .trim()
              .replace(/^"(.*)"$/, '$1')
      return `${name}=${value}`
    })
    .filter((p) => !p.startsWith('q=') && p !== '=')
    .sort()
    .join(';')
}

/**
 * The types to ask for one by one when an agency answered the whole Accept with nothing (406, 204 or an
 * empty body) though it lists several (datacite/datacite#2448: DataCite answers nothing when the first
 * type is one it cannot write, instead of falling through to the next): the acceptable (q above 0)
 * types after the first, by q (stable), parameters kept, at most `max`. Empty when there is one type.
 */
export function fallbackTypes(accept: string | readonly string[] | undefined, max = 3): string[] {
  const concrete = parseAccept(accept)
    .filter((e) => e.q > 0 && !e.type.includes('*'))
    .sort((a, b) => b.q - a.q)
  return concrete.slice(1, 1 + max).map((e) => e.full)
}

/**
 * The stored key under which an agency's answer to `accept` is recorded (RECORD_TO), so that the same
 * Accept replayed offline chooses it (chooseStoredType): the Accept entry of the answer's type, with its
 * parameters (`text/x-bibliography;style=apa`), else the answer's type alone. Undefined for an answer
 * whose type is no media type.
 */
export function recordedType(accept: string, contentType: string | undefined): string | undefined {
  const type = baseType(contentType)
  if (!MEDIA.test(type)) return undefined
  const entry = parseAccept(accept).find((e) => e.q > 0 && e.type === type)
  return normaliseMediaType(entry?.full ?? type) ?? normaliseMediaType(type)
}
