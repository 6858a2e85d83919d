import { normaliseName } from './normalise.js'
import { editDistance } from './title.js'
import type { PersonName } from './types.js'

/**
 * Is the cited first author the registered one (issue 41)? Only the family name is compared: a citation
 * writes "Müller, H.", "H. Müller", "Mueller HJ", "{\"U}ller" or, for Chinese, Japanese and Korean names,
 * either order; the registry splits family and given names its own way ("van der Berg" or "Berg" with
 * "J. van der"). So each word of the family name, particles aside, is looked for among the cited words.
 */

// Particles a family name carries or drops, by citation style (van, von, de, da, al-…).
const PARTICLES = new Set(
  'van von der den de da das dos di del della degli du des la le ten ter zu vom al el bin ibn ben mac st'.split(' ')
)

/**
 * German umlauts written out (ü as ue) read as the bare vowel, as folding reads ü: Mueller is Müller is Muller;
 * so is the Scandinavian å written aa (Aaberg is Åberg), both sides alike.
 */
function umlautFree(token: string): string {
  return token.replace(/([aou])e/g, '$1').replace(/aa/g, 'a')
}

function nameWords(raw: string): string[] {
  return normaliseName(raw).filter(
    (token) => token.length > 1 && !PARTICLES.has(token) && !/^(?:jr|sr|ii|iii|iv|et|al|and|others)$/.test(token)
  )
}

/** Whether a cited word names a registered one: the same, the same with umlauts written out, or one slip away. */
function sameWord(cited: string, registered: string): boolean {
  if (cited === registered || umlautFree(cited) === umlautFree(registered)) return true
  return oneSlip(cited, registered) || oneSlip(umlautFree(cited), umlautFree(registered))
}

/**
 * One slip in a registered name of five letters or more (Kowalsky for Kowalski, Beyr for Beyer); in a four-letter
 * name only two letters swapped (Wnag for Wang), never one letter for another (Wang is not Wong); none below.
 */
function oneSlip(cited: string, registered: string): boolean {
  if (registered.length >= 5) return editDistance(cited, registered, 1) <= 1
  return registered.length === 4 && cited.length === 4 && swappedOnce(cited, registered)
}

/** Whether `a` is `b` with two neighbouring letters swapped. */
function swappedOnce(a: string, b: string): boolean {
  const at = [...a].findIndex((letter, i) => letter !== b[i])
  return at >= 0 && at + 1 < a.length && a[at] === b[at + 1] && a[at + 1] === b[at] && a.slice(at + 2) === b.slice(at + 2)
}

/** The words that name a registered person: the family name's (particles aside), or an organisation's own. */
function familyWords(person: PersonName): string[] {
  const family = person.family ?? person.literal ?? ''
  const words = nameWords(family)
  if (words.length > 0) return words
  return nameWords(person.given ?? '')
}

/**
 * Whether the cited first author is the first registered author: a word of the registered family name
 * (a double family name needs one of its parts, García for García-López) among the cited words; for an
 * organisation most of its words, or its initials (WHO). Registries that swapped a CJK name (family "Wei",
 * given "Wang") match too. True when the record names no author (nothing to compare).
 */
export function firstAuthorMatches(cited: string, authors: readonly PersonName[]): boolean {
  const first = authors[0]
  if (first === undefined) return true
  const citedWords = nameWords(cited.split(/\s+(?:and|&)\s+|;/)[0] ?? cited)
  if (citedWords.length === 0) return true
  if (first.literal !== undefined && first.family === undefined) {
    const words = nameWords(first.literal)
    const named = words.filter((word) => citedWords.some((c) => sameWord(c, word))).length
    const initials = normaliseName(first.literal)
      .filter((w) => !['of', 'for', 'the', 'and', 'on'].includes(w))
      .map((w) => w[0])
      .join('')
    return named * 2 >= words.length || citedWords.includes(initials)
  }
  const family = familyWords(first)
  if (family.some((word) => citedWords.some((c) => sameWord(c, word)))) return true
  const given = nameWords(first.given ?? '')
  // A swapped CJK name: the citation wrote one name, the registry's given one (one word each side, as CJK names are).
  return (
    citedWords.length === 1 &&
    given.length === 1 &&
    nameWords(first.family ?? '').length === 1 &&
    sameWord(citedWords[0] as string, given[0] as string)
  )
}

/** A registered person as a message shows them: "Family, Given", or the organisation. */
export function personLabel(person: PersonName): string {
  if (person.family !== undefined) return person.given === undefined ? person.family : `${person.family}, ${person.given}`
  return person.literal ?? person.given ?? ''
}
