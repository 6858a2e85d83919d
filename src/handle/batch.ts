/**
 * The lines of a list of DOIs, the batch's (POST /api/batch, docs/checking-dois.md) and `mirror`'s reading
 * list (docs/local-records.md) alike: which lines are names to look up, in every form `/{doi}` accepts.
 * Pure: the route and the command read the text, the resolver and the upstream look the names up.
 */
import { RESOLVER_URL, handleFromPath } from './name.js'
import { isDoiName } from './ra.js'
import type { CitedWork } from './verify/types.js'

/**
 * One entry of a batch: a name to look up, or why it is not one. Every line that is not a DOI name (empty,
 * malformed, too long, or well-formed but not a DOI) is answered alike, without any lookup.
 */
export type BatchLine =
  { kind: 'doi'; input: string; handle: string; cited?: CitedWork } | { kind: 'invalid'; input: string; message: string }

/** A JSON batch item (`?verify=`, issue 41): a DOI, or a DOI with the work its reference cites. */
export type BatchEntry = string | { doi: string; title?: unknown; year?: unknown; author?: unknown }

/** The bounds of a cited work's fields (issue 41): longer is not a reference's, and is refused. */
export const CITED_LIMITS = { title: 1000, author: 200, minYear: 1000, maxYear: 2999 } as const

/**
 * The lines of a text that hold something, with their numbers (from 1): one a line (LF or CRLF), blank
 * lines and lines starting with '#' skipped. A CR anywhere but at the end stays in its line, where it is a
 * control character, refused.
 */
export function listLines(text: string): Array<{ line: number; text: string }> {
  const lines: Array<{ line: number; text: string }> = []
  text.split('\n').forEach((raw, i) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    const trimmed = line.trim()
    if (trimmed === '' || trimmed.startsWith('#')) return
    lines.push({ line: i + 1, text: line })
  })
  return lines
}

/** The entries of a text/plain batch: its lines that hold something (listLines). */
export function textEntries(body: string): string[] {
  return listLines(body).map((l) => l.text)
}

/** A line read as a name: its handle, or why it is not one (and the name read, when it is one but not a DOI's). */
export type LineName = { ok: true; handle: string } | { ok: false; why: string; name?: string }

/**
 * One line as `GET /{line}` reads its path (percent-decoding once; doi:, urn:doi:, info:doi/ and resolver
 * URLs stripped; behaviour.md §2), except that a pasted resolver URL's ?query and #fragment are dropped:
 * a list names the plain DOI. A name that is neither a DOI (10.prefix/suffix) nor a shortDOI (10/abc) is
 * refused, so no lookup is spent on it, unless `anyHandle` (`mirror`: a local store may hold other handles).
 */
export function nameOfLine(input: string, maxLength: number, opts: { anyHandle?: boolean } = {}): LineName {
  const trimmed = input.trim()
  if (trimmed === '') return { ok: false, why: 'the line is empty' }
  const path = RESOLVER_URL.test(trimmed) ? trimmed.replace(/[?#].*$/s, '') : trimmed
  const parsed = handleFromPath(`/${path}`, { maxLength })
  if (!parsed.ok) return { ok: false, why: parsed.message }
  const { handle } = parsed
  if (handle === '') return { ok: false, why: 'the line has no name after its prefix (no DOI name on it)' }
  if (opts.anyHandle !== true && !isDoiName(handle) && !SHORT_DOI.test(handle)) {
    return { ok: false, why: 'does not start with 10. and a prefix (10.1000/x) or 10/ (a shortDOI)', name: handle }
  }
  return { ok: true, handle }
}

/** One entry of a batch (nameOfLine), with the words its answer gives for a line that is not a DOI name. */
export function parseBatchLine(input: string, maxLength: number): BatchLine {
  const read = nameOfLine(input, maxLength)
  if (read.ok) return { kind: 'doi', input, handle: read.handle }
  const name = read.name === undefined ? '' : `${JSON.stringify(clip(read.name))} `
  return { kind: 'invalid', input, message: `not a DOI name: ${name}${read.why}` }
}

/**
 * One JSON item of a batch: a string as parseBatchLine reads it; an object's `doi` so too, with its cited
 * work (`title` and `author` strings, `year` an integer or its digits, within CITED_LIMITS; each optional,
 * null as absent). A field out of bounds makes the line invalid, naming it; nothing is looked up for it.
 */
export function parseBatchEntry(entry: BatchEntry, maxLength: number): BatchLine {
  if (typeof entry === 'string') return parseBatchLine(entry, maxLength)
  const line = parseBatchLine(entry.doi, maxLength)
  if (line.kind === 'invalid') return line
  const cited = citedWorkOf(entry)
  if (typeof cited === 'string') return { kind: 'invalid', input: entry.doi, message: cited }
  return Object.keys(cited).length === 0 ? line : { ...line, cited }
}

function citedWorkOf(entry: { title?: unknown; year?: unknown; author?: unknown }): CitedWork | string {
  const cited: CitedWork = {}
  for (const field of ['title', 'author'] as const) {
    const value = entry[field]
    if (value === undefined || value === null) continue
    if (typeof value !== 'string') return `its ${field} is not a string`
    if (value.length > CITED_LIMITS[field]) return `its ${field} is longer than ${CITED_LIMITS[field]} characters`
    if (value.trim() !== '') cited[field] = value
  }
  const year = entry.year
  if (year !== undefined && year !== null && year !== '') {
    const n = typeof year === 'number' ? year : typeof year === 'string' && /^\d{4}$/.test(year.trim()) ? Number(year) : NaN
    if (!Number.isInteger(n) || n < CITED_LIMITS.minYear || n > CITED_LIMITS.maxYear) {
      return `its year is not a year from ${CITED_LIMITS.minYear} to ${CITED_LIMITS.maxYear}`
    }
    cited.year = n
  }
  return cited
}

// shortDOI.org's names live under the handle prefix 10 and alias a DOI (https://shortdoi.org/).
const SHORT_DOI = /^10\/[^/]+$/

/** A name quoted in a message is at most 80 characters: the message stays one short line. */
function clip(s: string): string {
  return s.length <= 80 ? s : `${s.slice(0, 79)}…`
}
