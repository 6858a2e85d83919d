/**
 * Inbound OpenURL (behaviour.md §10 "Inbound OpenURL"): which DOI an OpenURL names. Pure: no I/O.
 *
 * Link resolvers, discovery systems and citation tools name a DOI in several ways:
 * - OpenURL 1.0 KEV (ANSI/NISO Z39.88-2004): `rft_id=info:doi/10.1000/182`, among other `rft_id`s
 *   (`info:pmid/…`, `info:oclcnum/…`) in any order;
 * - OpenURL 0.1: `id=doi:10.1000/182` (some senders write `id=info:doi/…`);
 * - non-standard but common: `rft.doi=10.1000/182` and a plain `doi=10.1000/182`.
 * The DOI returned still carries its `info:doi/`, `doi:` or doi.org prefix: the §2 path rules strip it.
 */
import { percentDecode } from './name.js'

/** The keys we read, in the order we read them, as the 400 page lists them. */
export const OPENURL_DOI_KEYS: ReadonlyArray<{ key: string; example: string; note: string }> = [
  {
    key: 'rft_id',
    example: 'rft_id=info:doi/10.1000/182',
    note: 'OpenURL 1.0; the first rft_id that is a DOI counts, others (info:pmid/…) are ignored'
  },
  { key: 'id', example: 'id=doi:10.1000/182', note: 'OpenURL 0.1; id=info:doi/10.1000/182 works too' },
  { key: 'rft.doi', example: 'rft.doi=10.1000/182', note: 'used by some link resolvers and discovery systems' },
  { key: 'doi', example: 'doi=10.1000/182', note: 'a plain DOI' }
]

export interface OpenUrlDoi {
  /** The DOI as sent, decoded, possibly with its prefix (info:doi/, doi:, https://doi.org/…). */
  doi: string
  /** The key it came from. */
  key: 'rft_id' | 'id' | 'rft.doi' | 'doi'
}

// An identifier URI that names a DOI: the forms §2.4 strips, minus the handle-only ones.
const DOI_URI = /^\s*(?:info:doi\/|doi:|urn:doi:|https?:\/\/(?:dx\.)?doi\.org\/)/i

// Still percent-encoded after one decoding: the scheme's ':' or '/' is still %3A/%2F ('info%3Adoi%2F10…'),
// or a bare DOI's prefix/suffix separator is ('10.1000%2F182'). A DOI whose suffix really holds '%2F'
// ('10.1000/a%2Fb') has its own '/' first, so it is left alone.
const ENCODED_SCHEME = /^\s*(?:info%3Adoi%2F|doi%3A|urn%3Adoi%3A|https?%3A%2F%2F)/i
const ENCODED_SEPARATOR = /^\s*(?:(?:info:doi\/|doi:|urn:doi:)\s*)?10\.[^/]*%2F/i

/**
 * The DOI an OpenURL names, from its fields (each key → its values, decoded once), or undefined.
 * Order (behaviour.md §10): `rft_id`, `id`, `rft.doi`, `doi`; the first usable value wins.
 */
export function doiFromOpenUrl(fields: ReadonlyMap<string, readonly string[]>): OpenUrlDoi | undefined {
  for (const key of ['rft_id', 'id'] as const) {
    for (const raw of fields.get(key) ?? []) {
      const value = decodedOnceMore(raw)
      if (DOI_URI.test(value)) return { doi: value, key }
    }
  }
  for (const key of ['rft.doi', 'doi'] as const) {
    for (const raw of fields.get(key) ?? []) {
      const value = decodedOnceMore(raw)
      if (value.trim() !== '') return { doi: value, key }
    }
  }
  return undefined
}

/** EZproxy and some link resolvers encode a value twice: decode it once more when it plainly is. */
export function decodedOnceMore(value: string): string {
  if (!ENCODED_SCHEME.test(value) && !ENCODED_SEPARATOR.test(value)) return value
  return percentDecode(value) ?? value
}

/** The proxy's own query parameters an OpenURL may carry (behaviour.md §6), with their synonyms. */
export const CARRIED_PARAMETERS: ReadonlySet<string> = new Set([
  'nols',
  'nosfx',
  'noredirect',
  'urlappend',
  'type',
  'index',
  'locatt',
  'action',
  'auth',
  'ignore_aliases',
  'noalias',
  'linkout'
])

/**
 * The proxy's own parameters among an OpenURL's fields, as a raw query string for the proxy's parser
 * (each key and value encoded once, so '+' and '%' survive as they were decoded). Other keys are dropped.
 */
export function carriedQuery(fields: ReadonlyMap<string, readonly string[]>): string {
  const out: string[] = []
  for (const [key, values] of fields) {
    if (!CARRIED_PARAMETERS.has(key)) continue
    for (const v of values) out.push(v === '' ? encodeQueryPart(key) : `${encodeQueryPart(key)}=${encodeQueryPart(v)}`)
  }
  return out.join('&')
}

/** Like encodeURIComponent, but a lone surrogate becomes U+FFFD instead of throwing. */
export function encodeQueryPart(s: string): string {
  return encodeURIComponent(s.replace(LONE_SURROGATE, '\ufffd'))
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g
