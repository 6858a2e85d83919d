import { compact, copyUrlOf, cslDate, cslName, cslNames, firstText, plainText, secondsOfIso, stampOfMs, text } from './csl.js'
import type { CslName } from './csl.js'
import { checkedDoi } from './key.js'
import type { Mapped, MapOptions } from './types.js'

/**
 * Crossref work types → CSL types. Source: Crossref's `/types` list and the CSL 1.0.2 type list; the same
 * choices as Crossref's own content negotiation (data.crossref.org answers application/vnd.citationstyles.csl+json).
 */
export const CROSSREF_TYPES: Readonly<Record<string, string>> = {
  'journal-article': 'article-journal',
  'proceedings-article': 'paper-conference',
  'book-chapter': 'chapter',
  'book-section': 'chapter',
  'book-part': 'chapter',
  'book-track': 'chapter',
  'reference-entry': 'entry',
  book: 'book',
  monograph: 'book',
  'edited-book': 'book',
  'reference-book': 'book',
  'book-set': 'book',
  'book-series': 'book',
  'posted-content': 'manuscript',
  dissertation: 'thesis',
  report: 'report',
  'report-component': 'report',
  'report-series': 'report',
  dataset: 'dataset',
  database: 'dataset',
  standard: 'standard',
  'peer-review': 'review',
  journal: 'periodical',
  'journal-issue': 'periodical',
  'journal-volume': 'periodical',
  proceedings: 'book',
  'proceedings-series': 'book',
  component: 'article',
  grant: 'document',
  other: 'document'
}

interface Person {
  family?: unknown
  given?: unknown
  name?: unknown
  suffix?: unknown
}

const person = (p: Person): CslName | undefined => cslName(p.family, p.given, p.name, p.suffix)

/**
 * A Crossref work (its public data file's items, a REST API page's `message.items`) as a copy record:
 * `resource.primary.URL` (the registered URL; `URL` is doi.org's own link), `indexed` as the stamp (it changes
 * with every update: plan-43 §9.6), the work mapped to CSL-JSON field by field. Never throws.
 */
export function crossrefRecordOf(work: unknown, opts: MapOptions): Mapped {
  if (work === null || typeof work !== 'object' || Array.isArray(work)) return 'the item is not a Crossref work (an object)'
  const w = work as Record<string, unknown>
  const checked = checkedDoi(w.DOI)
  if ('problem' in checked) return checked.problem
  const doi = checked.doi
  const resource = w.resource as { primary?: { URL?: unknown } } | undefined
  const url = copyUrlOf(resource?.primary?.URL, opts.schemes)
  if ('problem' in url) return `${doi}: ${url.problem}`
  const stamp = stampOf(w)
  if (stamp === undefined) return `${doi}: the work has no date (indexed, deposited or created)`
  const { csl, abstractDropped } = crossrefCsl(w, doi, opts)
  return { doi, kind: 'work', agency: 'crossref', url: url.url, stamp, csl, ...(abstractDropped ? { abstractDropped } : {}) }
}

function stampOf(w: Record<string, unknown>): number | undefined {
  for (const field of ['indexed', 'deposited', 'created']) {
    const d = w[field] as { timestamp?: unknown; 'date-time'?: unknown } | undefined
    const s = stampOfMs(d?.timestamp) ?? secondsOfIso(d?.['date-time'])
    if (s !== undefined) return s
  }
  return undefined
}

/** The work's CSL-JSON (CSL 1.0.2 variables); each line names the Crossref field it reads. */
export function crossrefCsl(
  w: Record<string, unknown>,
  doi: string,
  opts: MapOptions
): { csl: Record<string, unknown>; abstractDropped: boolean } {
  const crossrefType = typeof w.type === 'string' ? w.type : 'other'
  // posted-content with subtype preprint is an article (CSL 1.0.2 "article": "a preprint, working paper…").
  const type = crossrefType === 'posted-content' && w.subtype === 'preprint' ? 'article' : (CROSSREF_TYPES[crossrefType] ?? 'document')
  const title = plainText(firstText(w.title))
  const subtitle = plainText(firstText(w.subtitle))
  const containers = Array.isArray(w['container-title']) ? w['container-title'] : []
  const event = w.event as { name?: unknown; location?: unknown } | undefined
  const issued = cslDate(w['published-print']) ?? cslDate(w['published-online']) ?? cslDate(w.issued) ?? cslDate(w.published)
  const abstract = plainText(w.abstract)
  const issn = isbnOrIssn(w.ISSN)
  const isbn = isbnOrIssn(w.ISBN)
  const csl = compact({
    id: doi,
    type,
    DOI: doi, // DOI
    URL: text(w.URL) ?? `https://doi.org/${doi}`, // URL: doi.org's link, as Crossref's CSL gives it
    title: title !== undefined && subtitle !== undefined ? `${title}: ${subtitle}` : title, // title[0], subtitle[0]
    'title-short': plainText(firstText(w['short-title'])),
    'container-title': plainText(firstText(containers)), // container-title[0]
    'container-title-short': plainText(firstText(w['short-container-title'])),
    'collection-title': containers.length > 1 && type === 'chapter' ? plainText(containers[1]) : undefined,
    author: cslNames<Person>(w.author, person),
    editor: cslNames<Person>(w.editor, person),
    translator: cslNames<Person>(w.translator, person),
    'container-author': cslNames<Person>(w.chair, person),
    issued, // published-print, else published-online, else issued
    volume: text(w.volume),
    issue: text(w.issue),
    page: text(w.page),
    number: text(w['article-number']),
    ISSN: issn,
    ISBN: isbn,
    publisher: text(w.publisher),
    'publisher-place': text(w['publisher-location']),
    event: text(event?.name), // CSL 1.0.2 `event` (event-title in 1.1)
    'event-place': text(event?.location),
    abstract: opts.abstracts ? abstract : undefined,
    language: text(w.language),
    source: 'Crossref'
  })
  return { csl, abstractDropped: !opts.abstracts && abstract !== undefined }
}

function isbnOrIssn(raw: unknown): string | undefined {
  if (!Array.isArray(raw)) return text(raw)
  const all = raw.map(text).filter((x): x is string => x !== undefined)
  return all.length === 0 ? undefined : all[0]
}
