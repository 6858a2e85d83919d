import { firstAuthorMatches, personLabel } from './people.js'
import { titleAgreement, TITLE_RULES } from './title.js'
import type { TitleRules } from './title.js'
import type { CitedWork, MetadataResult, Mismatch, RegisteredWork } from './types.js'

/**
 * The metadata verdict of one cited work against its registered record (issue 41): title (normalised,
 * title.ts), year within one of any year the record gives (issued, online, print, posted: online-first and
 * preprints are a year apart from the issue), first author's family name (people.ts). `kind` tells a DOI
 * that names another work (`other-work`: the title differs) from a real work cited with a wrong year or
 * author (`details`), so an editor can tell a fabrication from a slip.
 */

/** How far a cited year may be from a registered one: online-first against the issue, a preprint's year. */
export const YEAR_SLACK = 1

/** The year shown as the registered one: the issue's, else the first other the record gives. */
function shownYear(years: RegisteredWork['years']): number | undefined {
  return years.issued ?? years.print ?? years.online ?? years.posted
}

export function compareCited(cited: CitedWork, registered: RegisteredWork | undefined, rules: TitleRules = TITLE_RULES): MetadataResult {
  if (registered === undefined) return { verdict: 'unverifiable', mismatches: [], why: 'the agency gives no metadata for this DOI' }
  if (cited.title === undefined || cited.title.trim() === '') {
    return { verdict: 'unverifiable', mismatches: [], why: 'the reference gives no title to compare' }
  }
  if (registered.titles.length === 0) return { verdict: 'unverifiable', mismatches: [], why: 'the registered metadata has no title' }
  const mismatches: Mismatch[] = []
  if (!titleAgreement(cited.title, registered.titles, rules).match) {
    mismatches.push({ field: 'title', cited: cited.title, registered: registered.titles[0] as string })
  }
  const years = Object.values(registered.years).filter((year): year is number => typeof year === 'number')
  const shown = shownYear(registered.years)
  if (cited.year !== undefined && shown !== undefined && !years.some((year) => Math.abs(year - (cited.year as number)) <= YEAR_SLACK)) {
    mismatches.push({ field: 'year', cited: cited.year, registered: shown })
  }
  const first = registered.authors[0]
  if (
    cited.author !== undefined &&
    cited.author.trim() !== '' &&
    first !== undefined &&
    !firstAuthorMatches(cited.author, registered.authors)
  ) {
    mismatches.push({ field: 'author', cited: cited.author, registered: personLabel(first) })
  }
  if (mismatches.length === 0) return { verdict: 'match', mismatches }
  return { verdict: 'mismatch', mismatches, kind: mismatches[0]?.field === 'title' ? 'other-work' : 'details' }
}
