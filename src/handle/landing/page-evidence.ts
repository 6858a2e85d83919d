import { Parser } from 'htmlparser2'

/**
 * What a landing page says of the work (issue 41): whether it names the DOI, and where (the meta tags
 * publishers write for indexers, schema.org JSON-LD, or the visible text), and the titles it gives. Read
 * as the page comes, chunk by chunk (htmlparser2's streaming tokenizer, no DOM kept), so a page cut at
 * LANDING_MAX_BYTES still gives what its head said. Pure: the caller fetches.
 */
export interface PageEvidence {
  /** Where the DOI was first found: `citation_doi`, `dc.identifier`, `prism.doi`, `JSON-LD`, `the page's text`, `a link on the page`. */
  doiAt?: string
  /** The titles the page gives, each with where (`citation_title`, `dc.title`, `og:title`, `<title>`), at most MAX_TITLES. */
  titles: Array<{ at: string; title: string }>
  /** The registered title the page names, and where, when one of `titles` matches one asked for. */
  titleMatch?: { at: string; title: string }
}

export interface PageScanner {
  write: (chunk: string) => void
  end: () => PageEvidence
}

// The meta names that carry the DOI (Highwire/Google Scholar, Dublin Core, PRISM), lower-cased.
const DOI_METAS = new Set(['citation_doi', 'dc.identifier', 'dc.identifier.doi', 'prism.doi', 'bepress_citation_doi'])
// The meta names (or properties) that carry the title.
const TITLE_METAS = new Set(['citation_title', 'dc.title', 'og:title', 'twitter:title'])
// The JSON-LD keys whose values may be the DOI: schema.org's identifier, @id, sameAs (and a PropertyValue's value).
const JSON_LD_KEYS = new Set(['@id', 'identifier', 'sameas', 'value', 'url'])
/** JSON-LD kept per script; a larger one is not read (a page's JSON-LD is a few KiB). */
export const MAX_JSON_LD = 64 * 1024
const MAX_TITLES = 8
const MAX_TITLE_CHARS = 1000
const MAX_DEPTH = 16
/** A title must share this many comparable characters before a match means anything (not "Home"). */
const MIN_TITLE_CHARS = 12

export function createPageScanner(doi: string, registeredTitles: readonly string[]): PageScanner {
  const wanted = doi.toLowerCase()
  const asked = registeredTitles.map(comparable).filter((t) => t.length >= MIN_TITLE_CHARS)
  const evidence: PageEvidence = { titles: [] }
  // The visible text's last characters, so a DOI split between two chunks (or text events) is still seen.
  const keep = wanted.length * 3 + 16
  let tail = ''
  let skipping = 0 // inside <script>/<style>/<noscript>/<template> (not text a reader sees)
  let jsonLd: string | undefined
  let inTitle: string | undefined

  const found = (at: string): void => {
    evidence.doiAt ??= at
  }
  const title = (at: string, raw: string): void => {
    const text = raw.replace(/\s+/g, ' ').trim().slice(0, MAX_TITLE_CHARS)
    if (text === '' || evidence.titles.length >= MAX_TITLES) return
    evidence.titles.push({ at, title: text })
    if (evidence.titleMatch === undefined && titleMatches(comparable(text), asked)) evidence.titleMatch = { at, title: text }
  }

  const parser = new Parser(
    {
      onopentag(name, attribs) {
        if (name === 'meta') {
          const key = (attribs.name ?? attribs.property ?? attribs.itemprop ?? '').trim().toLowerCase()
          const content = attribs.content ?? ''
          if (DOI_METAS.has(key) && namesDoi(content, wanted)) found(key)
          else if (TITLE_METAS.has(key)) title(key, content)
        } else if (name === 'script') {
          skipping++
          if ((attribs.type ?? '').trim().toLowerCase() === 'application/ld+json') jsonLd = ''
        } else if (name === 'style' || name === 'noscript' || name === 'template') {
          skipping++
        } else if (name === 'title' && inTitle === undefined && skipping === 0) {
          inTitle = ''
        } else if (name === 'a' && attribs.href !== undefined && namesDoi(attribs.href, wanted)) {
          found('a link on the page')
        }
      },
      ontext(text) {
        if (jsonLd !== undefined) {
          jsonLd = jsonLd.length + text.length > MAX_JSON_LD ? undefined : jsonLd + text
          return
        }
        if (skipping > 0) return
        if (inTitle !== undefined) inTitle = (inTitle + text).slice(0, MAX_TITLE_CHARS)
        if (evidence.doiAt !== undefined) return
        const window = tail + text.toLowerCase()
        if (namesDoi(window, wanted)) found("the page's text")
        tail = window.slice(-keep)
      },
      onclosetag(name) {
        if (name === 'script') {
          if (jsonLd !== undefined && jsonLdNames(jsonLd, wanted)) found('JSON-LD')
          jsonLd = undefined
          skipping = Math.max(0, skipping - 1)
        } else if (name === 'style' || name === 'noscript' || name === 'template') {
          skipping = Math.max(0, skipping - 1)
        } else if (name === 'title' && inTitle !== undefined) {
          title('<title>', inTitle)
          inTitle = undefined
        }
      }
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true }
  )

  return {
    write(chunk) {
      parser.write(chunk)
    },
    end() {
      parser.end()
      return evidence
    }
  }
}

// A character that would carry a DOI on (so `10.1/x` is not found inside `10.1/x1` or `210.1/x`).
const DOI_CHAR = /[a-z0-9_\-/]/

/**
 * Whether `text` names the DOI: bare, `doi:`, a doi.org (or dx.doi.org) URL, percent-encoded; compared
 * without case (DOIs are case-insensitive, §2 of the DOI Handbook's syntax).
 */
export function namesDoi(text: string, doi: string): boolean {
  const lower = text.toLowerCase()
  const forms = [doi.toLowerCase(), encodeURIComponent(doi).toLowerCase(), encodeURI(doi).toLowerCase()]
  for (const form of new Set(forms)) {
    for (let at = lower.indexOf(form); at !== -1; at = lower.indexOf(form, at + 1)) {
      const before = lower[at - 1] ?? ''
      const after = lower[at + form.length] ?? ''
      const beforeOk = before === '' || !/[a-z0-9.]/.test(before) || lower.slice(0, at).endsWith('doi.org/')
      // A trailing full stop or closing bracket ends a sentence, not the DOI.
      const afterOk = after === '' || !DOI_CHAR.test(after) || (after === '.' && !/[a-z0-9]/.test(lower[at + form.length + 1] ?? ''))
      if (beforeOk && afterOk) return true
    }
  }
  return false
}

/** Whether a JSON-LD script names the DOI under schema.org's identifier, @id, sameAs (or a PropertyValue's value). */
function jsonLdNames(text: string, doi: string): boolean {
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch {
    return false
  }
  const visit = (value: unknown, key: string, depth: number): boolean => {
    if (depth > MAX_DEPTH) return false
    if (typeof value === 'string') return JSON_LD_KEYS.has(key) && namesDoi(value, doi)
    if (Array.isArray(value)) return value.some((item) => visit(item, key, depth + 1))
    if (typeof value === 'object' && value !== null) {
      return Object.entries(value).some(([k, v]) => visit(v, JSON_LD_KEYS.has(key) && k !== '@type' ? key : k.toLowerCase(), depth + 1))
    }
    return false
  }
  return visit(data, '', 0)
}

/** A title as compared here: letters and digits of any script, without case or marks, words one space apart. */
export function comparable(title: string): string {
  return title
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/<[^>]*>/g, ' ')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
}

/**
 * Whether a page's title names one of the registered ones: the same words, or one within the other at word
 * bounds (a page's `<title>` adds " | Journal"; a registered title adds a subtitle the page drops), the
 * shorter one long enough to mean something. A rough rule on purpose: the page only confirms, the
 * metadata level (handle/verify/title.ts) judges titles.
 */
export function titleMatches(page: string, registered: readonly string[]): boolean {
  if (page.length < MIN_TITLE_CHARS) return false
  return registered.some((title) => {
    const [shorter, longer] = title.length <= page.length ? [title, page] : [page, title]
    return shorter.length >= MIN_TITLE_CHARS && ` ${longer} `.includes(` ${shorter} `)
  })
}
