/**
 * Retraction, correction and concern notices, and the verdict they give a work (issue 41, `verify=retraction`).
 * Two sources say the same things in two vocabularies: Crossref's REST API lists a work's notices in
 * `updated-by` (deposited by the publisher, or taken from Retraction Watch: `source`), and the Retraction
 * Watch data set gives one CSV row per notice (`RetractionNature`). Both become `Notice`s here; the verdict
 * is read from the notices alone, whatever their source. Pure: no I/O, no clock; any input is read defensively.
 */
import { cacheKey } from '../name.js'
import type { RetractionVerdict } from './types.js'

/** What a notice does to the work, in the verdict's terms; a reinstatement undoes a retraction before it. */
export type NoticeKind = 'retraction' | 'concern' | 'correction' | 'reinstatement'

export interface Notice {
  kind: NoticeKind
  /** The notice's own DOI; null when the source gives none (Retraction Watch's "unavailable"). */
  doi: string | null
  /** YYYY-MM-DD; null when the source gives none, or only a year or a month. */
  date: string | null
  /** Who said so: the publisher's deposit, or Retraction Watch (in Crossref's `source`, or its CSV). */
  source: 'publisher' | 'retraction-watch'
}

/** The verdict and the notice it rests on (the wire's `retraction` object when it could be found out). */
export interface RetractionFinding {
  verdict: RetractionVerdict
  notice: string | null
  date: string | null
}

// Crossref's update types (Crossmark: "retraction", "partial_retraction", "withdrawal", "removal",
// "expression_of_concern", "correction", "corrigendum", "erratum", "addendum", "clarification"; Retraction
// Watch's in the REST API add "reinstatement") and Retraction Watch's natures ("Retraction", "Correction",
// "Expression of concern", "Reinstatement"), both after `typeKey`. Any other ("new_version", "new_edition")
// says nothing about the work's soundness: no notice.
const KINDS: Readonly<Record<string, NoticeKind>> = {
  retraction: 'retraction',
  partial_retraction: 'retraction',
  withdrawal: 'retraction',
  removal: 'retraction',
  expression_of_concern: 'concern',
  correction: 'correction',
  corrigendum: 'correction',
  erratum: 'correction',
  addendum: 'correction',
  clarification: 'correction',
  reinstatement: 'reinstatement'
}

// A hostile or broken answer with a million notices is read no further than this.
const MAX_NOTICES = 1000
const MAX_DOI_LENGTH = 1000

/** An update type or a nature as a key of KINDS: lower case, runs of anything but letters as one `_`. */
const typeKey = (raw: string): string =>
  raw
    .trim()
    .toLowerCase()
    .replace(/[^a-z]+/g, '_')
    .replace(/^_|_$/g, '')

/** The kind of a notice named `raw` (an update type or a nature), or undefined for one that is no problem. */
export function noticeKindOf(raw: unknown): NoticeKind | undefined {
  return typeof raw === 'string' && raw.length <= 100 ? KINDS[typeKey(raw)] : undefined
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

/**
 * A DOI as a source wrote it, or null: trimmed, a doi.org URL or `doi:` taken off, then `10.<prefix>/<suffix>`
 * with no space or control character; "unavailable" (Retraction Watch's word) and anything else is null.
 */
export function doiOf(raw: unknown): string | null {
  if (typeof raw !== 'string' || raw.length > MAX_DOI_LENGTH) return null
  const doi = raw
    .trim()
    .replace(/^https?:\/\/(?:dx\.)?doi\.org\//i, '')
    .replace(/^doi:\s*/i, '')
  // eslint-disable-next-line no-control-regex
  return /^10\.[^\s/]+\/[^\s\u0000-\u001f\u007f]+$/.test(doi) ? doi : null
}

/** A calendar date's parts as YYYY-MM-DD, or null when it is no day of the calendar (Feb 30, month 13). */
function dayOf(year: number, month: number, day: number): string | null {
  if (![year, month, day].every(Number.isInteger) || year < 1000 || year > 9999) return null
  const date = new Date(Date.UTC(year, month - 1, day))
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null
  return date.toISOString().slice(0, 10)
}

/**
 * Crossref's date object (`{"date-parts": [[2010, 2, 2]], "date-time": "2010-02-02T00:00:00Z"}`) as
 * YYYY-MM-DD: the date-parts when they name a day, else the date-time's day; null for a year or month alone.
 */
export function crossrefDateOf(raw: unknown): string | null {
  if (!isObject(raw)) return null
  const parts = raw['date-parts']
  const first: unknown = Array.isArray(parts) ? parts[0] : undefined
  if (Array.isArray(first) && first.length >= 3) {
    const day = dayOf(Number(first[0]), Number(first[1]), Number(first[2]))
    if (day !== null) return day
  }
  const time = raw['date-time']
  const match = typeof time === 'string' ? /^(\d{4})-(\d{2})-(\d{2})(?:T|$)/.exec(time) : null
  return match === null ? null : dayOf(Number(match[1]), Number(match[2]), Number(match[3]))
}

/** Retraction Watch's dates ("3/9/2026 0:00", month first; "3/9/2026"; an ISO day in some exports) as YYYY-MM-DD. */
export function retractionWatchDateOf(raw: unknown): string | null {
  if (typeof raw !== 'string' || raw.length > 40) return null
  const text = raw.trim()
  const us = /^(\d{1,2})\/(\d{1,2})\/(\d{4})(?:\s+\d{1,2}:\d{2}(?::\d{2})?)?$/.exec(text)
  if (us !== null) return dayOf(Number(us[3]), Number(us[1]), Number(us[2]))
  const iso = /^(\d{4})-(\d{2})-(\d{2})(?:[T ].*)?$/.exec(text)
  return iso === null ? null : dayOf(Number(iso[1]), Number(iso[2]), Number(iso[3]))
}

/** One entry of `updated-by` or `update-to` as a notice, or undefined when its type says nothing of soundness. */
function crossrefNotice(entry: unknown): Notice | undefined {
  if (!isObject(entry)) return undefined
  const kind = noticeKindOf(entry.type)
  if (kind === undefined) return undefined
  return {
    kind,
    doi: doiOf(entry.DOI),
    date: crossrefDateOf(entry.updated),
    source: entry.source === 'retraction-watch' ? 'retraction-watch' : 'publisher'
  }
}

/**
 * The notices on a work, from Crossref's `/works/{doi}` answer (the whole answer or its `message`): each
 * `updated-by` entry (a notice that updates this work), and each `update-to` entry naming this work's own
 * DOI (a publisher that turned the article itself into its notice: an in-place retraction). An `update-to`
 * naming another DOI makes this work a notice about that one, which says nothing against this work.
 */
export function noticesOfCrossrefWork(json: unknown): Notice[] {
  const work = isObject(json) && isObject(json.message) ? json.message : json
  if (!isObject(work)) return []
  const own = doiOf(work.DOI)
  const notices: Notice[] = []
  const updatedBy = Array.isArray(work['updated-by']) ? work['updated-by'].slice(0, MAX_NOTICES) : []
  for (const entry of updatedBy) {
    const notice = crossrefNotice(entry)
    if (notice !== undefined) notices.push(notice)
  }
  const updateTo = Array.isArray(work['update-to']) ? work['update-to'].slice(0, MAX_NOTICES) : []
  for (const entry of updateTo) {
    const target = isObject(entry) ? doiOf(entry.DOI) : null
    if (own === null || target === null || cacheKey(target) !== cacheKey(own)) continue
    const notice = crossrefNotice(entry)
    if (notice !== undefined) notices.push({ ...notice, doi: notice.doi ?? own })
  }
  return notices
}

/**
 * One row of the Retraction Watch CSV (its columns by name): the work it is about (`OriginalPaperDOI`)
 * and its notice (`RetractionNature`, `RetractionDOI`, `RetractionDate`); undefined for a row about a work
 * without a DOI, or of a nature that is no problem.
 */
export function noticesOfRetractionWatch(row: Readonly<Record<string, unknown>>): { original: string; notices: Notice[] } | undefined {
  const original = doiOf(row.OriginalPaperDOI)
  const kind = noticeKindOf(row.RetractionNature)
  if (original === null || kind === undefined) return undefined
  return {
    original,
    notices: [{ kind, doi: doiOf(row.RetractionDOI), date: retractionWatchDateOf(row.RetractionDate), source: 'retraction-watch' }]
  }
}

/** The latest of some notices: a known date beats an unknown one, then a later one; on a tie, one with a DOI, then the first. */
function latest(notices: readonly Notice[]): Notice | undefined {
  let best: Notice | undefined
  for (const n of notices) {
    if (best === undefined || later(n, best)) best = n
  }
  return best
}

function later(a: Notice, b: Notice): boolean {
  if (a.date !== b.date) return b.date === null || (a.date !== null && a.date > b.date)
  return a.doi !== null && b.doi === null
}

const finding = (verdict: RetractionVerdict, notice: Notice | undefined): RetractionFinding => ({
  verdict,
  notice: notice?.doi ?? null,
  date: notice?.date ?? null
})

/**
 * The verdict of a work's notices: retracted > expression of concern > corrected > none, the latest
 * notice of the winning kind giving the DOI and date. A reinstatement undoes the retractions before it
 * (its date not before theirs, or either unknown: a work is reinstated only after it was retracted) and
 * then counts as a correction: the record changed, the work stands (plan-41, open question 7).
 */
export function retractionVerdictOf(notices: readonly Notice[]): RetractionFinding {
  const of = (kind: NoticeKind): Notice[] => notices.filter((n) => n.kind === kind)
  const retraction = latest(of('retraction'))
  const reinstatement = latest(of('reinstatement'))
  const reinstated =
    retraction !== undefined &&
    reinstatement !== undefined &&
    !(retraction.date !== null && reinstatement.date !== null && retraction.date > reinstatement.date)
  if (retraction !== undefined && !reinstated) return finding('retracted', retraction)
  const concern = latest(of('concern'))
  if (concern !== undefined) return finding('expression-of-concern', concern)
  const correction = latest([...of('correction'), ...of('reinstatement')])
  if (correction !== undefined) return finding('corrected', correction)
  return finding('none', undefined)
}
