/**
 * The works a reference file cites, for `check --verify metadata` (issue 41): each entry that gives a DOI,
 * with its title, year and first author, and the lines it spans, from BibTeX/BibLaTeX (.bib), RIS (.ris),
 * CITATION.cff (`references` and `preferred-citation`) and CSL-JSON (.json). Pure: no I/O. citation-js
 * reads BibTeX's LaTeX (accents, braces, math, `@string`s) and RIS's name forms; every input is given to it
 * with its type forced, so no text is ever taken for a URL to fetch. A file that cannot be read as its
 * kind yields what could be read of it, never an error: a checked repository may be hostile.
 */
import { createRequire } from 'node:module'
import { LineCounter, parseDocument, isMap, isSeq } from 'yaml'
import type { Node as YamlNode, YAMLMap } from 'yaml'
import { cacheKey } from '../../handle/name.js'
import type { CitedWork } from '../../handle/verify/types.js'
import { findDois, lineIndex } from './extract.js'

export type EntryKind = 'bibtex' | 'ris' | 'cff' | 'csl'

/** A cited work as found: its DOI (as findDois reads it), the lines its entry spans (1-based), what it says. */
export interface CitedAt {
  doi: string
  line: number
  endLine: number
  cited: CitedWork
}

/** The batch's bounds on a cited work (handle/batch.ts parseBatchEntry): longer values are cut, other years left out. */
export const MAX_TITLE = 1000
export const MAX_AUTHOR = 200
const YEARS = [1000, 2999] as const

/** Which files hold entries, and of which kind. */
export function entryKind(path: string): EntryKind | undefined {
  const name = path.slice(path.lastIndexOf('/') + 1).toLowerCase()
  if (name.endsWith('.bib') || name.endsWith('.bibtex')) return 'bibtex'
  if (name.endsWith('.ris')) return 'ris'
  if (name.endsWith('.cff')) return 'cff'
  if (name.endsWith('.json')) return 'csl'
  return undefined
}

/** Every entry of the text that gives a DOI, in order. */
export function citedWorksIn(text: string, kind: EntryKind): CitedAt[] {
  try {
    switch (kind) {
      case 'bibtex':
        return bibtexWorks(text)
      case 'ris':
        return risWorks(text)
      case 'cff':
        return cffWorks(text)
      case 'csl':
        return cslWorks(text)
    }
  } catch {
    // A parser's fault on a hostile file: the file's DOIs are still checked, without what the entries say.
    return []
  }
}

/**
 * Attaches to each DOI found in a file the work its entry cites: the entry spanning the DOI's line whose
 * own DOI it is (ownDoi). Another DOI in the entry (a `url` or `note` naming another work, an erratum) is
 * still checked for registration, but cites nothing: it is not the work the entry's title names.
 */
export function withCited<T extends { doi: string; line: number }>(
  found: readonly T[],
  works: readonly CitedAt[]
): Array<T & { cited?: CitedWork }> {
  const byKey = new Map<string, CitedAt[]>()
  for (const w of works) {
    const key = cacheKey(w.doi)
    byKey.set(key, [...(byKey.get(key) ?? []), w])
  }
  return found.map((f) => {
    const work = byKey.get(cacheKey(f.doi))?.find((w) => w.line <= f.line && f.line <= w.endLine)
    return work === undefined ? f : { ...f, cited: work.cited }
  })
}

// ---- CSL-JSON, as citation-js and the CSL-JSON files give it ----

interface CslName {
  family?: unknown
  given?: unknown
  literal?: unknown
  'non-dropping-particle'?: unknown
}

interface CslItem {
  DOI?: unknown
  title?: unknown
  issued?: unknown
  author?: unknown
}

/**
 * An entry's own DOI: the first DOI findDois reads in the first of its fields that gives one, the DOI field
 * first (`doi`, RIS `DO`, CSL `DOI`), then the fields that may link the work when there is none (`url`,
 * `eprint`, `note`…, in the order given). Every other DOI of the entry names some other work.
 */
export function ownDoi(fields: readonly unknown[], kind: 'latex' | 'text'): string | undefined {
  for (const value of fields) {
    const doi = typeof value === 'string' ? findDois(value, kind)[0]?.doi : undefined
    if (doi !== undefined) return doi
  }
  return undefined
}

/** What a CSL-JSON item says of its work (its own DOI chosen by ownDoi); undefined when it has no DOI. */
function workOf(item: CslItem, doi: string | undefined, line: number, endLine: number): CitedAt | undefined {
  if (doi === undefined) return undefined
  const cited: CitedWork = {}
  const title = Array.isArray(item.title) ? item.title[0] : item.title
  if (typeof title === 'string' && title.trim() !== '') cited.title = clip(title, MAX_TITLE)
  const year = yearOf(item.issued)
  if (year !== undefined) cited.year = year
  const first = Array.isArray(item.author) ? (item.author[0] as CslName | undefined) : undefined
  const author = first === undefined || typeof first !== 'object' || first === null ? undefined : nameOf(first)
  if (author !== undefined) cited.author = clip(author, MAX_AUTHOR)
  return { doi, line, endLine, cited }
}

/** A year from CSL's `date-parts`, or the first four digits of its `raw` or `literal` form ("2020///", "circa 2020"). */
function yearOf(issued: unknown): number | undefined {
  if (typeof issued !== 'object' || issued === null) return undefined
  const { 'date-parts': parts, raw, literal } = issued as { 'date-parts'?: unknown; raw?: unknown; literal?: unknown }
  const first = Array.isArray(parts) && Array.isArray(parts[0]) ? (parts[0] as unknown[])[0] : undefined
  const candidate = first ?? (typeof raw === 'string' ? raw : typeof literal === 'string' ? literal : undefined)
  return yearIn(candidate)
}

function yearIn(value: unknown): number | undefined {
  const year = typeof value === 'number' ? value : typeof value === 'string' ? Number(/(?<!\d)\d{4}(?!\d)/.exec(value)?.[0]) : NaN
  return Number.isInteger(year) && year >= YEARS[0] && year <= YEARS[1] ? year : undefined
}

/** A name as written in a reference list, family first: "van der Berg, Jan", "World Health Organization". */
function nameOf(name: CslName): string | undefined {
  const str = (v: unknown): string => (typeof v === 'string' ? v.trim() : '')
  if (str(name.literal) !== '') return str(name.literal)
  const family = [str(name['non-dropping-particle']), str(name.family)].filter((s) => s !== '').join(' ')
  if (family === '') return undefined
  return str(name.given) === '' ? family : `${family}, ${str(name.given)}`
}

function clip(s: string, max: number): string {
  const t = s.replace(/\s+/g, ' ').trim()
  return t.length <= max ? t : t.slice(0, max)
}

// ---- citation-js, loaded on first use (only a run that verifies needs it) ----

type Chain = (input: string, options: { forceType: string; generateGraph: boolean }) => unknown
let chain: Chain | undefined

/** citation-js's parsers (CommonJS, untyped): read as CSL-JSON, the type forced so nothing is fetched. */
function parse(text: string, type: '@bibtex/text' | '@ris/file'): CslItem[] {
  if (chain === undefined) {
    const require = createRequire(import.meta.url)
    const core = require('@citation-js/core') as { plugins: { input: { chain: Chain } } }
    require('@citation-js/plugin-bibtex')
    require('@citation-js/plugin-ris')
    chain = core.plugins.input.chain
  }
  const out = chain(text, { forceType: type, generateGraph: false })
  return Array.isArray(out) ? (out as CslItem[]) : []
}

// ---- BibTeX / BibLaTeX ----

/** One `@type{…}` or `@type(…)` of a .bib file: where it lies, its type and key. */
interface BibChunk {
  type: string
  key: string
  start: number
  end: number
}

/**
 * The entries of a .bib file, by balanced braces (linear: one pass, whatever the file holds). An entry
 * never closed runs to the end of the file. Text between entries is a comment, as BibTeX reads it.
 */
export function splitBibtex(text: string): BibChunk[] {
  const chunks: BibChunk[] = []
  const head = /@\s*([A-Za-z]+)\s*([{(])/g
  let at = 0
  while (at < text.length) {
    head.lastIndex = at
    const m = head.exec(text)
    if (m === null) break
    const close = m[2] === '{' ? '}' : ')'
    let depth = 0
    let i = m.index + m[0].length
    for (; i < text.length; i++) {
      const c = text[i]
      if (c === '{') depth++
      else if (c === '}' && depth > 0) depth--
      else if (c === close && depth === 0) break
    }
    const end = Math.min(i + 1, text.length)
    const body = text.slice(m.index + m[0].length, end)
    chunks.push({ type: m[1]!.toLowerCase(), key: /^\s*([^,\s{}()]*)/.exec(body)?.[1] ?? '', start: m.index, end })
    at = end
  }
  return chunks
}

const NOT_ENTRIES = new Set(['string', 'preamble', 'comment'])

/** Where a .bib entry's own DOI is read (ownDoi): its `doi`, else a link or note naming one (BibLaTeX `eprint`). */
const BIBTEX_DOI_FIELDS = ['doi', 'url', 'eprint', 'note', 'howpublished']

/**
 * The fields of one entry (its text from `@`), by name in lower case (the first of a name kept), each value
 * as written (braces, quotes and `#` joins left in: findDois stops at them). One pass, whatever the text:
 * a field that is not `name = value` is skipped to the next comma outside braces and quotes.
 */
export function bibtexFields(entry: string): Map<string, string> {
  const fields = new Map<string, string>()
  const open = /[{(]/.exec(entry)
  if (open === null) return fields
  const close = open[0] === '{' ? '}' : ')'
  const name = /\s*([^\s=,{}()"#]+)\s*=/y
  /** The end of a value (or of the key): the next comma, or the entry's end, outside braces and quotes. */
  const endOf = (from: number): number => {
    let depth = 0
    let quoted = false
    for (let i = from; i < entry.length; i++) {
      const c = entry[i]
      if (c === '{') depth++
      else if (c === '}' && depth > 0) depth--
      else if (depth === 0 && c === '"') quoted = !quoted
      else if (depth === 0 && !quoted && (c === ',' || c === close)) return i
    }
    return entry.length
  }
  let at = endOf(open.index + 1) // past the key
  while (at < entry.length && entry[at] === ',') {
    name.lastIndex = at + 1
    const m = name.exec(entry)
    const from = m === null ? at + 1 : name.lastIndex
    const end = endOf(from)
    const key = m?.[1]!.toLowerCase()
    if (key !== undefined && !fields.has(key)) fields.set(key, entry.slice(from, end).trim())
    at = end
  }
  return fields
}

function bibtexWorks(text: string): CitedAt[] {
  const chunks = splitBibtex(text)
  const strings = chunks.filter((c) => c.type === 'string')
  const entries = chunks.filter((c) => !NOT_ENTRIES.has(c.type))
  const lineOf = lineIndex(text)
  const items = wholeFile(text, chunks, entries) ?? entries.map((e) => oneEntry(text, e, strings))
  const works: CitedAt[] = []
  entries.forEach((e, i) => {
    const item = items[i]
    const body = text.slice(e.start, e.end)
    // citation-js 0.7 leaves BibLaTeX's `date` unread: the year is then read from the entry itself.
    const issued = yearOf(item?.issued) ?? yearIn(/\b(?:date|year)\s*=\s*[{"]?\s*(\d{4})(?!\d)/i.exec(body)?.[1])
    const fields = bibtexFields(body)
    const doi = ownDoi(
      BIBTEX_DOI_FIELDS.map((name) => fields.get(name)),
      'latex'
    )
    const work =
      item === undefined
        ? undefined
        : workOf(
            { ...item, title: plain(item.title), issued: issued === undefined ? undefined : { 'date-parts': [[issued]] } },
            doi,
            lineOf(e.start),
            lineOf(Math.max(e.start, e.end - 1))
          )
    if (work !== undefined) works.push(work)
  })
  return works
}

/** The file read at once (fast), when that gives one item per entry, in order; undefined to read entry by entry. */
function wholeFile(text: string, chunks: readonly BibChunk[], entries: readonly BibChunk[]): CslItem[] | undefined {
  try {
    const items = parse(chunks.map((c) => text.slice(c.start, c.end)).join('\n'), '@bibtex/text')
    const same =
      items.length === entries.length &&
      items.every((item, i) => (item as { 'citation-key'?: unknown })['citation-key'] === entries[i]!.key)
    return same ? items : undefined
  } catch {
    return undefined
  }
}

/** One entry read alone, with the `@string`s its words may name (a broken entry costs only itself). */
function oneEntry(text: string, entry: BibChunk, strings: readonly BibChunk[]): CslItem | undefined {
  const body = text.slice(entry.start, entry.end)
  const words = new Set(body.toLowerCase().match(/[a-z][\w-]*/g) ?? [])
  const needed = strings.filter((s) =>
    words.has(/^@\s*string\s*[{(]\s*([^\s=]+)/i.exec(text.slice(s.start, s.end))?.[1]?.toLowerCase() ?? '')
  )
  try {
    return parse([...needed.map((s) => text.slice(s.start, s.end)), body].join('\n'), '@bibtex/text')[0]
  } catch {
    return undefined
  }
}

/** citation-js writes LaTeX's \\emph, \\textsuperscript, small caps and protected case as HTML: the title as its words. */
function plain(title: unknown): unknown {
  return typeof title === 'string' ? title.replace(/<\/?(?:i|b|sup|sub|span)(?:\s[^<>]*)?>/g, '') : title
}

// ---- RIS ----

/** Where a RIS record's own DOI is read (ownDoi): `DO`, else its links (`UR`, `L1`, `L2`), else its notes (`N1`). */
const RIS_DOI_TAGS = ['DO', 'UR', 'L1', 'L2', 'N1']

/**
 * The records of a RIS file (`TY  -` to `ER  -`), each read by citation-js; `DO` read here, as findDois reads
 * it (citation-js drops a DOI link it doubts, such as https://doi.org/10.5555%2Fx).
 */
function risWorks(text: string): CitedAt[] {
  const lines = text.split(/\r?\n/)
  const works: CitedAt[] = []
  let start = -1
  lines.forEach((line, i) => {
    const tag = /^([A-Z][A-Z0-9]) {2}-(?: |$)/.exec(line)?.[1]
    if (tag === 'TY') start = i
    if (tag !== 'ER' || start < 0) return
    const record = lines.slice(start, i + 1)
    let item: CslItem = {}
    try {
      item = parse(record.join('\n') + '\n', '@ris/file')[0] ?? {}
    } catch {
      // Read below from the tags alone.
    }
    const tagged = (want: string[]): string | undefined =>
      record
        .map((l) => /^([A-Z][A-Z0-9]) {2}- (.*)$/.exec(l))
        .find((m) => m !== null && want.includes(m[1]!))?.[2]
        ?.trim()
    const all = (tag: string): string =>
      record
        .map((l) => /^([A-Z][A-Z0-9]) {2}- (.*)$/.exec(l))
        .filter((m) => m?.[1] === tag)
        .map((m) => m![2])
        .join('\n')
    const raw: CslItem = {
      title: item.title ?? tagged(['TI', 'T1']),
      issued: item.issued ?? { raw: tagged(['PY', 'Y1', 'DA']) },
      author: item.author
    }
    const work = workOf(raw, ownDoi(RIS_DOI_TAGS.map(all), 'text'), start + 1, i + 1)
    if (work !== undefined) works.push(work)
    start = -1
  })
  return works
}

// ---- CITATION.cff ----

/** CITATION.cff's `references` and `preferred-citation` (Citation File Format 1.2). */
function cffWorks(text: string): CitedAt[] {
  const counter = new LineCounter()
  const doc = parseDocument(text, { lineCounter: counter, uniqueKeys: false })
  // A file YAML cannot read is not guessed at: its DOIs are still checked, without what its entries say.
  if (doc.errors.length > 0) return []
  const root = doc.contents
  if (!isMap(root)) return []
  const maps: YAMLMap[] = []
  const preferred = root.get('preferred-citation', true)
  if (isMap(preferred)) maps.push(preferred)
  const references = root.get('references', true)
  if (isSeq(references)) for (const r of references.items) if (isMap(r)) maps.push(r)
  const works: CitedAt[] = []
  for (const map of maps) {
    // At most 100 aliases' worth of nodes: a billion laughs throws, and the file gives no entry.
    const ref = map.toJS(doc, { maxAliasCount: 100 }) as Record<string, unknown>
    const line = (offset: number): number => counter.linePos(offset).line
    const [from, , to] = (map as YamlNode).range ?? [0, 0, 0]
    const identifiers = Array.isArray(ref.identifiers) ? (ref.identifiers as Array<Record<string, unknown>>) : []
    const ids = (type: string): unknown[] => identifiers.filter((x) => x?.type === type).map((x) => x.value)
    // Its own DOI (ownDoi): `doi`, an identifier of type doi, else its `url` or a url identifier.
    const doi = ownDoi([ref.doi, ...ids('doi'), ref.url, ...ids('url')], 'text')
    const first = Array.isArray(ref.authors) ? (ref.authors[0] as Record<string, unknown> | undefined) : undefined
    const author: CslName | undefined =
      first === undefined || typeof first !== 'object' || first === null
        ? undefined
        : {
            family: first['family-names'],
            given: first['given-names'],
            'non-dropping-particle': first['name-particle'],
            literal: first.name
          }
    const year = yearIn(ref.year) ?? yearIn(ref['date-published']) ?? yearIn(ref['date-released'])
    const work = workOf(
      { title: ref.title, issued: year === undefined ? undefined : { 'date-parts': [[year]] }, author: author && [author] },
      doi,
      line(from),
      line(Math.max(from, to - 1))
    )
    if (work !== undefined) works.push(work)
  }
  return works
}

// ---- CSL-JSON files ----

/** A CSL-JSON file: an array of items (or one item); each item's lines from a string-aware brace scan. */
function cslWorks(text: string): CitedAt[] {
  const parsed = JSON.parse(text) as unknown
  const items = Array.isArray(parsed) ? parsed : [parsed]
  const spans = objectSpans(text, Array.isArray(parsed) ? 2 : 1)
  if (spans.length !== items.length) return []
  const lineOf = lineIndex(text)
  const works: CitedAt[] = []
  items.forEach((item, i) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return
    const [start, end] = spans[i]!
    const { DOI, URL, note } = item as CslItem & { URL?: unknown; note?: unknown }
    const work = workOf(item as CslItem, ownDoi([DOI, URL, note], 'text'), lineOf(start), lineOf(end))
    if (work !== undefined) works.push(work)
  })
  return works
}

/** Where each value at nesting `depth` begins and ends (offsets), skipping strings; for valid JSON only. */
function objectSpans(text: string, depth: number): Array<[number, number]> {
  const spans: Array<[number, number]> = []
  let level = 0
  let start = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
      continue
    }
    if (c === '"') {
      if (level === depth - 1) spans.push([i, i]) // a string where an item stands: counted, and never an item
      inString = true
    } else if (c === '{' || c === '[') {
      if (++level === depth) start = i
    } else if (c === '}' || c === ']') {
      if (level-- === depth) spans.push([start, i])
    } else if (level === depth - 1 && /[\d\-tfn]/.test(c!) && !/[\d.eE+\-a-z]/.test(text[i - 1] ?? ' ')) {
      spans.push([i, i]) // a number, true, false or null where an item stands
    }
  }
  return spans
}
