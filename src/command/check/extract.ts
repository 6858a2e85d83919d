/**
 * Finding the DOIs written in a file, for `doi-proxy check` (docs/checking-dois.md): bare DOIs
 * (10.1000/182), their prefixed forms (doi:, urn:doi:, info:doi/, R's <doi:…>), and resolver links
 * (https://doi.org/…, dx.doi.org, percent-encoded, shortDOIs such as https://doi.org/10/abc), in Markdown,
 * HTML, reStructuredText, LaTeX/BibTeX, CITATION.cff, R DESCRIPTION, JSON and plain text. Pure: no I/O.
 *
 * Where a DOI ends is a guess in running text: we stop at whitespace, control characters, quotes, < > { } [ ] ` | \ and
 * drop trailing punctuation and unbalanced closing parentheses, as Crossref's advice for DOIs in text
 * does (https://www.crossref.org/blog/dois-and-matching-regular-expressions/). A SICI DOI with < >
 * is found when written percent-encoded, as in a link.
 */
import { percentDecode } from '../../handle/name.js'

export type FileKind = 'markdown' | 'html' | 'latex' | 'json' | 'text'

/** One DOI as found: the name (decoded, prefix stripped), and where (1-based line). */
export interface FoundDoi {
  doi: string
  line: number
}

/** Which files a directory walk reads, and how: by extension, or by name (R's DESCRIPTION and CITATION). */
export function fileKind(path: string): FileKind | undefined {
  const name = path.slice(path.lastIndexOf('/') + 1)
  if (name === 'DESCRIPTION' || name === 'CITATION' || name === 'CITATION.cff') return 'text'
  const dot = name.lastIndexOf('.')
  if (dot <= 0) return undefined
  return KINDS[name.slice(dot + 1).toLowerCase()]
}

const KINDS: Record<string, FileKind> = {
  md: 'markdown',
  markdown: 'markdown',
  mdx: 'markdown',
  qmd: 'markdown',
  rmd: 'markdown',
  html: 'html',
  htm: 'html',
  xhtml: 'html',
  tex: 'latex',
  bib: 'latex',
  bbl: 'latex',
  json: 'json',
  jsonld: 'json',
  ipynb: 'json',
  rst: 'text',
  txt: 'text',
  cff: 'text',
  ris: 'text',
  yml: 'text',
  yaml: 'text',
  rd: 'latex'
}

// A DOI never holds a control character (C0, DEL, C1): an ESC or CSI ends it, as whitespace does.
// A resolver link: its path is the DOI, percent-encoded or not (shortDOIs included); ?query and #fragment are the link's.
// eslint-disable-next-line no-control-regex
const RESOLVER_LINK = /(?:https?:\/\/)?(?:dx\.|www\.)?doi\.org\/([^\s\u0000-\u001f\u007f-\u009f"'<>`{}[\]\\|^?#]+)/gi
// A bare DOI: the directory indicator 10, a registrant code (sub-codes after dots), '/', a suffix.
// eslint-disable-next-line no-control-regex
const BARE_DOI = /(?<![\w.-])10\.\d{4,9}(?:\.\d+)*\/[^\s\u0000-\u001f\u007f-\u009f"'<>`{}[\]\\|^]+/g
// A shortDOI is only a DOI with a prefix saying so: doi:10/abc (as a link, RESOLVER_LINK finds it).
const SHORT_WITH_PREFIX = /\bdoi:\s?(10\/[a-z0-9]+)\b/gi
const DOI_SHAPE = /^10(?:\.\d{4,9}(?:\.\d+)*)?\/\S/

/**
 * Every DOI written in a file's text, in order of appearance (repeats kept: each is a place to report).
 * Linear in the text's length, whatever it holds: one small hostile file must not hang a CI job.
 */
export function findDois(text: string, kind: FileKind): FoundDoi[] {
  const source = prepare(text, kind)
  const lineOf = lineIndex(source)
  const found: Array<FoundDoi & { at: number }> = []
  const links: Array<[number, number]> = []
  for (const m of source.matchAll(RESOLVER_LINK)) {
    const doi = clean(m[1]!, kind, true)
    links.push([m.index, m.index + m[0].length])
    if (doi !== undefined) found.push({ doi, line: lineOf(m.index), at: m.index })
  }
  // matchAll finds in increasing order, so each question below is answered by one forward pass.
  const inLink = insideSpans(links)
  const inOtherUrl = otherUrlAt(source)
  for (const m of source.matchAll(BARE_DOI)) {
    if (inLink(m.index) || inOtherUrl(m.index)) continue
    const doi = clean(m[0], kind, false)
    if (doi !== undefined) found.push({ doi, line: lineOf(m.index), at: m.index })
  }
  const inLinkToo = insideSpans(links)
  for (const m of source.matchAll(SHORT_WITH_PREFIX)) {
    if (!inLinkToo(m.index)) found.push({ doi: m[1]!, line: lineOf(m.index), at: m.index })
  }
  return found.sort((a, b) => a.at - b.at).map(({ doi, line }) => ({ doi, line }))
}

/** Undo the escapes a format puts inside a DOI, keeping every line where it was. */
function prepare(text: string, kind: FileKind): string {
  if (kind === 'json') return text.replace(/\\\//g, '/')
  if (kind === 'latex') return text.replace(/\\([_%#&])/g, '$1')
  return text
}

/** A DOI as written, to the name: entities decoded, trailing punctuation dropped, a link's path percent-decoded. */
function clean(raw: string, kind: FileKind, link: boolean): string | undefined {
  // An entity may spell a control character (&#27;, &#x9b;): it ends the DOI as the character itself would.
  let s = trimTrailing(cutAtControl(kind === 'html' || kind === 'markdown' ? decodeEntities(raw) : raw))
  if (link) {
    const decoded = percentDecode(s)
    if (decoded === undefined) return undefined
    s = decoded
  }
  return DOI_SHAPE.test(s) ? s : undefined
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/** The text before its first control character (C0, DEL, C1). */
function cutAtControl(s: string): string {
  const at = s.search(CONTROL)
  return at < 0 ? s : s.slice(0, at)
}

/** Trailing sentence punctuation, and closing brackets that close nothing inside the DOI. */
function trimTrailing(s: string): string {
  let opens = 0
  let closes = 0
  for (const c of s) {
    if (c === '(') opens++
    else if (c === ')') closes++
  }
  let end = s.length
  for (;;) {
    const last = s[end - 1]
    if (last !== undefined && TRAILING_PUNCTUATION.includes(last)) {
      end--
    } else if (last === ')' && opens < closes) {
      end--
      closes--
    } else {
      return s.slice(0, end)
    }
  }
}

const TRAILING_PUNCTUATION = '.,;:!?\'"*_~'

/** Whether an offset lies in one of the spans (in order, apart); offsets must be asked in increasing order. */
function insideSpans(spans: ReadonlyArray<readonly [number, number]>): (at: number) => boolean {
  let i = 0
  return (at) => {
    while (i < spans.length && spans[i]![1] <= at) i++
    return i < spans.length && spans[i]![0] <= at
  }
}

/**
 * Whether a bare DOI at an offset is inside some other site's URL (a publisher's landing page), that site's
 * path rather than a DOI reference: the text since the last URL boundary holds '://' or starts with 'www.'.
 * Offsets must be asked in increasing order: the text is read once, forward, whatever the number of DOIs.
 */
function otherUrlAt(text: string): (at: number) => boolean {
  let read = 0
  let tokenStart = 0
  let hasScheme = false
  return (at) => {
    for (; read < at; read++) {
      if (URL_BOUNDARY.test(text[read]!)) {
        tokenStart = read + 1
        hasScheme = false
      } else if (text[read] === '/' && read - 2 >= tokenStart && text[read - 1] === '/' && text[read - 2] === ':') {
        hasScheme = true
      }
    }
    return hasScheme || /^www\./i.test(text.slice(tokenStart, Math.min(at, tokenStart + 4)))
  }
}

const URL_BOUNDARY = /[\s"'<>()[\]{}`|]/

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }

function decodeEntities(s: string): string {
  return s.replace(/&(?:#(\d+)|#x([0-9a-f]+)|(amp|lt|gt|quot|apos));/gi, (whole, dec?: string, hex?: string, name?: string) => {
    if (name !== undefined) return ENTITIES[name.toLowerCase()] ?? whole
    const code = dec !== undefined ? Number(dec) : parseInt(hex!, 16)
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
  })
}

/** Offset → 1-based line number, by binary search over the line starts (the DOIs found here, the entries of a JSON file). */
export function lineIndex(text: string): (offset: number) => number {
  const starts = [0]
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1)
  return (offset) => {
    let lo = 0
    let hi = starts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (starts[mid]! <= offset) lo = mid
      else hi = mid - 1
    }
    return lo + 1
  }
}
