import type { PersonName, RegisteredWork } from './types.js'

/**
 * The registered work of a CSL-JSON record (issue 41), as Crossref and DataCite write it: `title` a string
 * or an array, `subtitle` apart (Crossref), `original-title` and `short-title`, dates as `date-parts` or
 * `raw`, authors with `family`/`given` or one `literal` (an organisation). Any other shape is read as far as
 * it goes: a record may be hostile, so strings are bounded and counts capped.
 */

const MAX_TITLE_CHARS = 2_000
const MAX_TITLES = 8
const MAX_AUTHORS = 50

function strings(value: unknown): string[] {
  const list = Array.isArray(value) ? value : [value]
  return list
    .filter((item): item is string => typeof item === 'string' && item.trim() !== '')
    .slice(0, MAX_TITLES)
    .map((item) => item.slice(0, MAX_TITLE_CHARS).trim())
}

/** The year of a CSL date: `{"date-parts": [[2019, 3]]}`, `{"raw": "2019-03-01"}`, `{"literal": "Spring 2019"}`. */
export function yearOfCslDate(value: unknown): number | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const date = value as Record<string, unknown>
  const parts = date['date-parts']
  if (Array.isArray(parts) && Array.isArray(parts[0])) {
    const year = Number(parts[0][0])
    if (Number.isInteger(year) && year >= 1000 && year <= 2999) return year
  }
  for (const text of [date.raw, date.literal]) {
    const found = typeof text === 'string' ? /(?:^|\D)([12]\d{3})(?!\d)/.exec(text.slice(0, 100)) : null
    if (found !== null) return Number(found[1])
  }
  return undefined
}

function personOf(value: unknown): PersonName | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const record = value as Record<string, unknown>
  const text = (key: string): string | undefined => {
    const field = record[key]
    return typeof field === 'string' && field.trim() !== '' ? field.slice(0, 200) : undefined
  }
  const person: PersonName = {}
  const family = text('family')
  const given = text('given')
  // CSL's `literal`; some DataCite and Crossref records give an organisation as `name`.
  const literal = text('literal') ?? text('name')
  if (family !== undefined) person.family = family
  if (given !== undefined) person.given = given
  if (literal !== undefined && family === undefined) person.literal = literal
  return Object.keys(person).length > 0 ? person : undefined
}

function peopleOf(value: unknown): PersonName[] {
  if (!Array.isArray(value)) return []
  return value
    .slice(0, MAX_AUTHORS)
    .map(personOf)
    .filter((person): person is PersonName => person !== undefined)
}

/**
 * The RegisteredWork of a CSL-JSON record, or undefined when it is not a record (not an object, or an array
 * of anything but one record). Titles: the main title first, then main and subtitle together, the original
 * and the short ones; authors, or the editors when no author is named.
 */
export function registeredWorkOf(csl: unknown): RegisteredWork | undefined {
  const record = Array.isArray(csl) && csl.length === 1 ? csl[0] : csl
  if (typeof record !== 'object' || record === null || Array.isArray(record)) return undefined
  const fields = record as Record<string, unknown>
  const main = strings(fields.title)
  const subtitles = strings(fields.subtitle)
  const titles: string[] = [...main]
  const first = main[0]
  if (first !== undefined) for (const subtitle of subtitles) titles.push(`${first}: ${subtitle}`)
  titles.push(...strings(fields['original-title']), ...strings(fields['short-title']), ...strings(fields.shortTitle))
  const years: RegisteredWork['years'] = {}
  const issued = yearOfCslDate(fields.issued)
  const online = yearOfCslDate(fields['published-online'])
  const print = yearOfCslDate(fields['published-print'])
  const posted = yearOfCslDate(fields.posted)
  if (issued !== undefined) years.issued = issued
  if (online !== undefined) years.online = online
  if (print !== undefined) years.print = print
  if (posted !== undefined) years.posted = posted
  const authors = peopleOf(fields.author)
  return {
    titles: [...new Set(titles)].slice(0, MAX_TITLES),
    years,
    authors: authors.length > 0 ? authors : peopleOf(fields.editor)
  }
}
