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
export function normaliseMediaType (text: string): string | undefined {
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

function parseAccept (accept: string | readonly string[] | undefined): AcceptEntry[] {
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
export function acceptCacheKey (accept: string | readonly string[] | undefined, maxLength = 512): string | undefined {
  const key = parseAccept(accept).map((e) => (e.q === 1 ? e.full : `${e.full};q=${e.q}`)).join(',')
  return key.length > maxLength ? undefined : key
}

/** `type/subtype` of a Content-Type, lower-cased; '' when there is none. */
export function baseType (contentType: string | undefined): string {
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
export function acceptsContentType (accept: string | readonly string[] | undefined, contentType: string | undefined): boolean {
  const type = baseType(contentType)
  if (!MEDIA.test(type) || PAGE_TYPES.has(type)) return false
  const major = type.split('/')[0] ?? ''
  return parseAccept(accept).some((e) => e.q > 0 && (e.type === type || e.type === `${major}/*` || e.type === '*/*'))
}

/**
 * Which stored media type a request gets (docs/metadata.md, "Offline metadata"): the Accept entries by q
 * (stable), each matched against the stored keys exactly, parameters included (`text/x-bibliography;
 * style=apa` is not `text/x-bibliography`); `type/*` and `*\/*` take the first stored key that fits, in
 * the record's order. Undefined when nothing fits (the answer is then 406, as an agency's).
 */
export function chooseStoredType (accept: string | readonly string[] | undefined, stored: readonly string[]): string | undefined {
  const entries = parseAccept(accept).filter((e) => e.q > 0).sort((a, b) => b.q - a.q)
  for (const e of entries) {
    if (e.type === '*/*') return stored[0]
    if (e.type.endsWith('/*')) {
      const major = e.type.slice(0, -1)
      const found = stored.find((s) => s.startsWith(major))
      if (found !== undefined) return found
      continue
    }
    if (stored.includes(e.full)) return e.full
  }
  return undefined
}
