/**
 * DOI names as they arrive in a request path: splitting the request target, percent-decoding,
 * trimming, prefix stripping, the cache key and the URL encoders the reference proxy uses.
 * Pure: no I/O. Rules: behaviour.md §2, behaviour.md R1 and R2.
 */

/**
 * Split a raw request target (path + optional ?query, as it came on the wire) per behaviour.md §2.1 and
 * behaviour.md R1 step 1.
 *
 * The fragment starts at the FIRST raw '#' anywhere (RFC 3986 §3.5), and includes that '#', so it can be
 * used as `urlappend` as it is ([HNS92] passes `URI.substring(indexOf('#'))`, '#' included). This gives the
 * reference's result for its two documented cases (no query and a '#' in the path; a '#' inside the query).
 * For the case the reference leaves odd ('/a#b?c': Java keeps '#b' in the path because a query exists) we
 * follow RFC 3986: path '/a', no query, fragment '#b?c'. Browsers never send a '#', so only hand-made
 * requests (curl) reach this.
 *
 * An absolute-form target ('http://host/10.1000/x', which RFC 9112 §3.2.2 says a server must accept) is
 * reduced to its path. The returned parts are still raw (not percent-decoded); `query` is '' when absent.
 */
export function splitRequestTarget(rawUrl: string): { path: string; query: string; fragment: string | undefined } {
  const target = stripAbsoluteForm(rawUrl)
  const hash = target.indexOf('#')
  const beforeHash = hash < 0 ? target : target.slice(0, hash)
  const fragment = hash < 0 ? undefined : target.slice(hash)
  const q = beforeHash.indexOf('?')
  if (q < 0) return { path: beforeHash, query: '', fragment }
  return { path: beforeHash.slice(0, q), query: beforeHash.slice(q + 1), fragment }
}

const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i

function stripAbsoluteForm(rawUrl: string): string {
  if (rawUrl.startsWith('/')) return rawUrl
  const m = ABSOLUTE_FORM.exec(rawUrl)
  if (m === null) return rawUrl
  const rest = rawUrl.slice(m[0].length)
  return rest.startsWith('/') ? rest : '/' + rest
}

export type HandleParse =
  | { ok: true; handle: string } // '' means: show the home page
  | { ok: false; status: 400 | 414; message: string } // clear, user-facing message

/**
 * Raw path (leading '/', before '?', '#' already split off) → handle, behaviour.md §2 steps 2–7.
 *
 * Order, and why:
 * 1. percent-decode once (invalid UTF-8 → 400);
 * 2. a control character anywhere → 400, BEFORE trimming: a '%0A' or '%C2%85' at the end is refused rather
 *    than trimmed away, because the DOI syntax excludes control characters and a decoded newline is far
 *    more likely an injection attempt or a broken link than a DOI;
 * 3. strip leading '/' and trimBetter whitespace, interleaved as [HNS92] does (`while startsWith('/')
 *    hdl = hdl.substring(1).trim()`), then trailing whitespace;
 * 4. strip at most one prefix (doi:, hdl:, info:doi/, urn:doi:, https://doi.org/ …);
 * 5. trim whitespace AGAIN. The reference does not, but pasted input such as 'doi: 10.1000/x' (a space
 *    after the colon: idutils treats it as 10.1000/x) would otherwise look up ' 10.1000/x', which can never
 *    exist because handles never start or end with whitespace;
 * 6. length check on the final handle (code points) → 414.
 * No dot-segment or duplicate-slash normalisation happens anywhere.
 */
export function handleFromPath(rawPath: string, opts: { maxLength: number }): HandleParse {
  // The common case, a plain DOI with nothing to decode, trim or strip, skips all of that.
  if (PLAIN_DOI_PATH.test(rawPath) && rawPath.length <= opts.maxLength) return { ok: true, handle: rawPath.slice(1) }
  const decoded = percentDecode(rawPath)
  if (decoded === undefined) {
    return {
      ok: false,
      status: 400,
      message:
        'The DOI name in this address is not valid UTF-8 after percent-decoding. ' +
        'Encode non-ASCII characters as UTF-8, for example é as %C3%A9.'
    }
  }
  const control = firstControlChar(decoded)
  if (control !== undefined) {
    return {
      ok: false,
      status: 400,
      message:
        `The DOI name contains a control character (${codePointLabel(control)}). ` +
        'DOI names cannot contain control characters; check the link for a stray %0A, %0D, %00 or similar.'
    }
  }
  const handle = handleFromInput(decoded)
  const length = codePointLength(handle)
  if (length > opts.maxLength) {
    return {
      ok: false,
      status: 414,
      message: `The DOI name is too long: ${length} characters, the limit is ${opts.maxLength}.`
    }
  }
  return { ok: true, handle }
}

/**
 * The DOI name in what a reader typed or pasted into a form (already decoded by the form encoding):
 * steps 3–5 of handleFromPath, so `https://doi.org/10.1000/182`, `doi:10.1000/182` and ` 10.1000/182 `
 * all become `10.1000/182`, and the form's shareable URL is `/10.1000/182`, not `/https://doi.org/…`.
 * Limits and control characters are left to handleFromPath when that URL is asked for.
 */
export function handleFromInput(typed: string): string {
  return trimWhitespace(stripNamePrefix(trimLeadingSlashesAndWhitespace(typed)))
}

/**
 * Percent-decode one string once, as UTF-8: '+' stays '+', a '%' not followed by two hex digits is kept
 * literally (behaviour.md §2.2). Returns undefined when the decoded bytes are not valid UTF-8 (overlong forms,
 * surrogates and truncated sequences included), where the reference would silently produce U+FFFD.
 */
export function percentDecode(s: string): string | undefined {
  if (!s.includes('%')) return s
  try {
    return decodeURIComponent(s.replace(LONE_PERCENT, '%25'))
  } catch {
    return undefined
  }
}

const LONE_PERCENT = /%(?![0-9A-Fa-f]{2})/g

// '/10.' then only characters that need no decoding, are neither whitespace nor control characters,
// and cannot start a prefix such as doi: (it starts with 10.): the handle is the path without its '/'.
const PLAIN_DOI_PATH = /^\/10\.[0-9A-Za-z._\-/():;<>[\]+=@!$*,'~]*$/

/** Cache key: ASCII a–z folded to upper case only, never other letters (behaviour.md §2.8, [DOI-HB25] §4.3.4). */
export function cacheKey(handle: string): string {
  // For pure ASCII, toUpperCase folds exactly a–z; only other scripts need the careful path.
  return ASCII_ONLY.test(handle) ? handle.toUpperCase() : handle.replace(/[a-z]+/g, (run) => run.toUpperCase())
}

// eslint-disable-next-line no-control-regex
const ASCII_ONLY = /^[\x00-\x7f]*$/

/**
 * The reference's StringUtils.encodeURL for Location headers (behaviour.md R2 "Headers"): keeps
 * a-z A-Z 0-9 - . _ ~ ! $ ( ) * , : @ / ; = + & ' ? # [ ] % and encodes every other character as UTF-8 %XX.
 * Because '%' is kept, an existing %XX (and a lone '%') passes through untouched.
 */
export function encodeURL(url: string): string {
  return url.replace(NOT_URL_SAFE, utf8PercentEncode)
}

/**
 * The reference's encodeURLPath, for self-links and upstream paths (behaviour.md R2 "Base URL for
 * self-links"): keeps a-zA-Z0-9 - . _ ~ ! $ ( ) * , : @ / ; = and encodes everything else, including
 * % + & ' ? # [ ] and space, as UTF-8 %XX.
 */
export function encodeURLPath(handle: string): string {
  return handle.replace(NOT_PATH_SAFE, utf8PercentEncode)
}

/**
 * A handle as a URL path we send somewhere (upstream, our own self-links): encodeURLPath, and a '.' or
 * '..' segment as %2E, so no client, CDN or server normalises '10.1000/../x' into another handle
 * (behaviour.md §2.5: dot segments are part of the handle). The handle server decodes %2E back to '.'.
 */
export function encodeHandlePath(handle: string): string {
  return encodeURLPath(handle).replace(DOT_SEGMENT, (dots) => dots.replace(/\./g, '%2E'))
}

// A segment that is only '.' or '..' (between slashes or at either end).
const DOT_SEGMENT = /(?<=^|\/)\.{1,2}(?=\/|$)/g

/**
 * For href_template {hdl} (behaviour.md R3): the handle as one URL component, so '/' → %2F and space → %20
 * (doi.org: 'https://data.crosscite.org/10.17879%2F91968401496'). cnriutil's exact safe set is not
 * available; we keep the path set minus '/', ';' and '=', which is safe both in a path segment and in a
 * query value ('...?dois={hdl}&format=unixref' in 10.SERV/CROSSREF).
 */
export function encodeURLComponentHdl(handle: string): string {
  return handle.replace(NOT_COMPONENT_SAFE, utf8PercentEncode)
}

// The 'u' flag makes each match one code point, so astral characters are encoded as 4 bytes.
const NOT_URL_SAFE = /[^A-Za-z0-9\-._~!$()*,:@/;=+&'?#[\]%]/gu
const NOT_PATH_SAFE = /[^A-Za-z0-9\-._~!$()*,:@/;=]/gu
const NOT_COMPONENT_SAFE = /[^A-Za-z0-9\-._~!$()*,:@]/gu

const utf8 = new TextEncoder()

/** One code point → its UTF-8 bytes as %XX (upper-case hex). A lone surrogate becomes U+FFFD's bytes. */
function utf8PercentEncode(ch: string): string {
  // ASCII is one byte, its own code: most encoded characters are ('/' in every DOI, '<', '>', ' ').
  const code = ch.charCodeAt(0)
  if (code < 0x80) return code < 0x10 ? `%0${code.toString(16).toUpperCase()}` : `%${code.toString(16).toUpperCase()}`
  let out = ''
  for (const byte of utf8.encode(ch)) out += '%' + byte.toString(16).toUpperCase().padStart(2, '0')
  return out
}

/** The part before the first '/', or the whole handle if none (a prefix such as 10.1000). */
export function prefixOf(handle: string): string {
  const slash = handle.indexOf('/')
  return slash < 0 ? handle : handle.slice(0, slash)
}

/** True when the string contains a control character U+0000–U+001F or U+007F–U+009F. */
export function hasControlChar(s: string): boolean {
  return firstControlChar(s) !== undefined
}

function isControl(code: number): boolean {
  return code <= 0x1f || (code >= 0x7f && code <= 0x9f)
}

function firstControlChar(s: string): number | undefined {
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i)
    if (isControl(code)) return code
  }
  return undefined
}

function codePointLabel(code: number): string {
  return 'U+' + code.toString(16).toUpperCase().padStart(4, '0')
}

/** A name's length in characters as MAX_HANDLE_LENGTH counts them (code points: a surrogate pair is one). */
export function codePointLength(s: string): number {
  return s.length - (s.match(SURROGATE_PAIR)?.length ?? 0)
}

const SURROGATE_PAIR = /[\uD800-\uDBFF][\uDC00-\uDFFF]/g

/**
 * The reference's whitespace set ([HNS931] trimBetter, behaviour.md R1 step 4): everything up to U+0020 (what
 * Java's trim() strips) plus U+0085, U+00A0, U+1680, U+180E, U+2000–U+200D, U+2028, U+2029, U+202F, U+205F,
 * U+2060, U+3000, U+FEFF, U+FFFE, U+FFFF.
 */
function isTrimmable(code: number): boolean {
  if (code <= 0x20) return true
  if (code < 0x85) return false
  if (code >= 0x2000 && code <= 0x200d) return true
  switch (code) {
    case 0x85:
    case 0xa0:
    case 0x1680:
    case 0x180e:
    case 0x2028:
    case 0x2029:
    case 0x202f:
    case 0x205f:
    case 0x2060:
    case 0x3000:
    case 0xfeff:
    case 0xfffe:
    case 0xffff:
      return true
    default:
      return false
  }
}

function trimWhitespace(s: string): string {
  let start = 0
  let end = s.length
  while (start < end && isTrimmable(s.charCodeAt(start))) start++
  while (end > start && isTrimmable(s.charCodeAt(end - 1))) end--
  return s.slice(start, end)
}

/** Leading '/' and whitespace in any mix ('/ /10.1000/x' → '10.1000/x'), then trailing whitespace. */
function trimLeadingSlashesAndWhitespace(s: string): string {
  let start = 0
  while (start < s.length && (s.charCodeAt(start) === 0x2f || isTrimmable(s.charCodeAt(start)))) start++
  return trimWhitespace(s.slice(start))
}

/** Prefixes removed as they are (case-insensitive), in the reference's test order ([HNS92] normalizeHandle). */
const PLAIN_PREFIXES = ['info:doi/', 'info:hdl/', 'hdl:', 'doi:']
const URN_PREFIXES = ['urn:hdl:', 'urn:doi:']
/**
 * A pasted resolver URL ([HNS931], behaviour.md §2.4). One or two slashes after the scheme: a front proxy with
 * merged slashes (nginx's default merge_slashes) turns '/https://doi.org/x' into '/https:/doi.org/x'.
 */
export const RESOLVER_URL = /^https?:\/\/?(?:doi\.org|dx\.doi\.org|hdl\.handle\.net)\//i

/** Strip at most one scheme-like prefix (behaviour.md §2.4). */
function stripNamePrefix(s: string): string {
  for (const prefix of PLAIN_PREFIXES) {
    if (startsWithAsciiCaseless(s, prefix)) return s.slice(prefix.length)
  }
  for (const prefix of URN_PREFIXES) {
    if (startsWithAsciiCaseless(s, prefix)) return urnColonToSlash(s.slice(prefix.length))
  }
  const url = RESOLVER_URL.exec(s)
  if (url !== null) return s.slice(url[0].length)
  return s
}

/** Only ASCII letters fold: 'İ' or 'K' (Kelvin) must never match 'i' or 'k'. */
function startsWithAsciiCaseless(s: string, lowerPrefix: string): boolean {
  return s.length >= lowerPrefix.length && s.slice(0, lowerPrefix.length).replace(/[A-Z]/g, (c) => c.toLowerCase()) === lowerPrefix
}

/** 'urn:doi:10.123:456' → '10.123/456': the first ':' becomes '/' unless a '/' comes before it. */
function urnColonToSlash(s: string): string {
  const colon = s.indexOf(':')
  if (colon < 0) return s
  const slash = s.indexOf('/')
  if (slash >= 0 && slash < colon) return s
  return s.slice(0, colon) + '/' + s.slice(colon + 1)
}
