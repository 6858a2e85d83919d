/**
 * Content negotiation as doi.org does it: the Accept, Accept-Language and User-Agent headers become
 * automatic `locatt` values, which the 10320/loc engine matches against locations with `http_role`,
 * `ctype`, `media-type` and `language` (behaviour.md R9; [HNS92] HDLServletRequest
 * processAcceptHeader and processAcceptLanguageHeader; behaviour.md §5). Pure: no I/O.
 */

import { boundedMemo } from './memo.js'

export interface NegotiationHeaders {
  /** Accept header(s); several headers are read in order, as one list. */
  accept?: string | readonly string[] | undefined
  acceptLanguage?: string | readonly string[] | undefined
  userAgent?: string | undefined
  /**
   * The `action` query parameter. `metadata` suppresses the `http_role:` values, as in the reference
   * (the `role:metadata` locatt it implies is added by the query parser, with the user's locatt values).
   */
  action?: string | undefined
}

interface AcceptEntry {
  value: string
  q: number
}

/** Types a browser asks for ([HNS92] SPECIFIC_BROWSER_CONTENT_TYPES, plus image/, audio/, video/ and any wildcard). */
const BROWSER_TYPES = new Set([
  'text/html',
  'text/xhtml',
  'application/xhtml+xml',
  'application/pdf',
  'application/vnd.wap.xhtml+xml',
  'text/vnd.wap.wml'
])

function isBrowserType(type: string): boolean {
  return (
    type.includes('*') || BROWSER_TYPES.has(type) || type.startsWith('image/') || type.startsWith('audio/') || type.startsWith('video/')
  )
}

/**
 * The automatic locatt values for a request, in the reference's order: the Accept-derived ones, then one
 * `language:` per Accept-Language entry.
 *
 * Accept empty, absent or only `*\/*`: a User-Agent starting with `mozilla/` or `opera/` (any case) is a
 * browser (`http_role:browser`, `ctype:text/html`, `media-type:text/html`); anything else, curl included,
 * is `http_role:no_conneg`. Otherwise, when no browser type has the highest q, the request is
 * negotiation: `ctype:`/`media-type:` for each type by q (stable order) up to the first wildcard or q=0, then
 * `http_role:conneg`; when a browser type ties for the highest q it is a browser, with the text/html pair
 * if text/html, text/* or *\/* is listed.
 */
export function automaticLocatt(h: NegotiationHeaders): readonly string[] {
  return negotiate(h).locatt
}

/** The headers negotiation reads, taken from a request's headers (Node's names, lower case): the one place that says which. */
export function negotiationHeadersOf(headers: {
  accept?: string | undefined
  'accept-language'?: string | undefined
  'user-agent'?: string | undefined
}): NegotiationHeaders {
  return { accept: headers.accept, acceptLanguage: headers['accept-language'], userAgent: headers['user-agent'] }
}

export interface Negotiation {
  locatt: readonly string[]
  key: string
}

/** The automatic locatt values and a key naming them: requests with the same key get the same redirect. */
export function negotiate(h: NegotiationHeaders): Negotiation {
  // Clients send few distinct header combinations: remember the answers (bounded, least recently used dropped).
  if (typeof h.accept === 'object' || typeof h.acceptLanguage === 'object') return negotiation(computeLocatt(h))
  const key = `${h.accept ?? ''}\u0000${h.acceptLanguage ?? ''}\u0000${h.userAgent ?? ''}\u0000${h.action ?? ''}`
  return key.length > MEMO_KEY_LIMIT ? negotiation(computeLocatt(h)) : memoNegotiation(key)
}

function negotiation(locatt: readonly string[]): Negotiation {
  return { locatt, key: locatt.join('\n') }
}

const MEMO_KEY_LIMIT = 1024
const memoNegotiation = boundedMemo(2048, (key: string): Negotiation => {
  const [accept, acceptLanguage, userAgent, action] = key.split('\u0000')
  return negotiation(computeLocatt({ accept, acceptLanguage, userAgent, action: action === '' ? undefined : action }))
})

function computeLocatt(h: NegotiationHeaders): readonly string[] {
  const withRole = h.action?.toLowerCase() !== 'metadata'
  const out: string[] = []
  const role = (r: string): void => {
    if (withRole) out.push(`http_role:${r}`)
  }
  const html = (): void => {
    out.push('ctype:text/html', 'media-type:text/html')
  }

  const accepts = parseAcceptList(h.accept)
  if (accepts.every((a) => a.value === '*/*')) {
    const ua = (h.userAgent ?? '').trim().toLowerCase()
    if (ua.startsWith('mozilla/') || ua.startsWith('opera/')) {
      role('browser')
      html()
    } else {
      role('no_conneg')
    }
  } else if (browserScore(accepts) < maxScore(accepts)) {
    for (const a of byQuality(accepts)) {
      if (a.value.includes('*')) break
      // RFC 9110 §12.4.2: q=0 means "not acceptable", so such a type is never asked for (the reference lists it last).
      if (a.q <= 0) break
      out.push(`ctype:${a.value}`, `media-type:${a.value}`)
    }
    role('conneg')
  } else {
    role('browser')
    if (accepts.some((a) => a.value === 'text/html' || a.value === 'text/*' || a.value === '*/*')) html()
  }

  // RFC 9110 §12.5.4 with §12.4.2: a language at q=0 is not acceptable, so it is no locatt either.
  for (const lang of byQuality(parseAcceptList(h.acceptLanguage))) if (lang.q > 0) out.push(`language:${lang.value}`)
  return out
}

/** The highest q of a browser type, 0 when none (so a browser type at q=0 does not count). */
function browserScore(accepts: readonly AcceptEntry[]): number {
  return accepts.reduce((best, a) => (a.q > best && isBrowserType(a.value) ? a.q : best), 0)
}

function maxScore(accepts: readonly AcceptEntry[]): number {
  return accepts.reduce((best, a) => (a.q > best ? a.q : best), 0)
}

/** Highest q first; equal q keep their order (Java's Collections.sort is stable). */
function byQuality(accepts: readonly AcceptEntry[]): AcceptEntry[] {
  return [...accepts].sort((a, b) => b.q - a.q)
}

/**
 * Split header values on ',' then ';': the first part, trimmed and lower-cased, is the value; only `q=`
 * is read (default 1; an unparsable q leaves it as it was). Media-type parameters such as `style=apa` are
 * not the proxy's business: the RA service reads them from the Accept header it receives.
 * One difference from the reference: blank entries (an empty header, `a,,b`) are skipped, where Java
 * reads them as a non-browser type "" and so treats an empty Accept as negotiation.
 */
function parseAcceptList(header: string | readonly string[] | undefined): AcceptEntry[] {
  if (header === undefined) return []
  const fields = typeof header === 'string' ? [header] : header
  const out: AcceptEntry[] = []
  for (const field of fields) {
    for (const entry of field.split(',')) {
      const [first = '', ...params] = entry.split(';')
      const value = first.trim().toLowerCase()
      if (value === '') continue
      let q = 1
      for (const p of params) {
        const t = p.trim()
        if (t.startsWith('q=')) q = parseQuality(t.slice(2)) ?? q
      }
      out.push({ value, q })
    }
  }
  return out
}

const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?$/

/** Java's Float.parseFloat for the usual forms (trimmed, optional f/d suffix); undefined when it would throw. */
function parseQuality(text: string): number | undefined {
  const t = text.trim()
  if (!FLOAT.test(t)) return undefined
  const n = Number(t.replace(/[fFdD]$/, ''))
  return Number.isFinite(n) ? n : undefined
}
