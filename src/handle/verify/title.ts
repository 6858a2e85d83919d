import { normaliseTitle } from './normalise.js'
import type { NormalisedTitle } from './normalise.js'

/**
 * Do two titles name one work (issue 41)? Each cited word is paired with at most one registered word: the
 * same word, the same word spelled the British or American way or in the plural, a hyphenated word written
 * whole or apart, initials for a run of words (LLMs), an abbreviation of it, or a typo of it. Two figures decide:
 * - the *unexplained* cited content words, none of those pairings: an invented or substituted word, the
 *   sign of a fabricated title (a real citation drops words, it rarely adds new ones);
 * - the *coverage* of the registered main title: a cited title that names a small part of it is another work,
 *   while a dropped subtitle or a title cut with "…" is not.
 */

/** The constants chosen on the corpus's dev split (bench/verify-quality.ts, bench/VERIFY-QUALITY.md). */
export interface TitleRules {
  /** The most unexplained cited content words a match may have. */
  maxUnexplained: number
  /** The least share of the registered main title's content words the cited title must name. */
  minCoverage: number
  /**
   * A typo's Damerau distance allowed by the registered word's length: `[shortest, distance]`, longest first. A
   * distance of two also keeps the first letter and is not two letters replaced in place (looselyNames).
   */
  typos: readonly (readonly [number, number])[]
}

export const TITLE_RULES: TitleRules = {
  maxUnexplained: 0,
  minCoverage: 0.6,
  typos: [
    [6, 2],
    [4, 1]
  ]
}

export interface TitleAgreement {
  match: boolean
  /** The cited content words that pair with no registered word, as normalised. */
  unexplained: string[]
  /** The share of the registered main title's content words named (0–1). */
  coverage: number
}

// Words that carry no content: a citation adds or drops them freely.
const STOPWORDS = new Set(
  (
    'a an the of in on for and or to with by from at as is are was were be been its it via into using use based ' +
    'toward towards about between under over through within without upon after before during than that this these ' +
    'those their our we do does not no new some his her s'
  ).split(' ')
)

export function isContentWord(token: string): boolean {
  return !STOPWORDS.has(token)
}

// British spellings to American ones, then plurals to singular: "behaviours" and "behavior" share a key.
const SPELLINGS: readonly (readonly [RegExp, string])[] = [
  [/^(.{3,})is(e|es|ed|ing|ation|ations|er|ers)$/, '$1iz$2'],
  [/^(.{3,})ys(e|es|ed|ing)$/, '$1yz$2'],
  [/^(.{2,})our(s|ed|ing|ful|ite|ites|al|able)?$/, '$1or$2'],
  [/^(.{2,})tre(s)?$/, '$1ter$2'],
  [/^(.{3,})ll(ing|ed|er|ers)$/, '$1l$2'],
  [/^(.{3,})ogue(s)?$/, '$1og$2'],
  [/^(.{4,})mme(s)?$/, '$1m$2'],
  [/ae/g, 'e'],
  [/oe/g, 'e'],
  [/ence$/, 'ense']
]

/** The key two tokens share when they are one word in other spellings or numbers. */
export function wordKey(token: string): string {
  if (/^\d/.test(token) || token.length < 4) return token
  let key = token
  for (const [pattern, replacement] of SPELLINGS) key = key.replace(pattern, replacement)
  if (/ies$/.test(key) && key.length > 4) return key.slice(0, -3) + 'y'
  if (/(?:ss|x|z|ch|sh)es$/.test(key)) return key.slice(0, -2)
  if (/[^su]s$/.test(key) && !/(?:is|us|ss)$/.test(key)) return key.slice(0, -1)
  return key
}

/** The optimal-string-alignment distance (Damerau: a swap of neighbours is one edit), or `bound + 1` once above `bound`. */
export function editDistance(a: string, b: string, bound: number): number {
  if (Math.abs(a.length - b.length) > bound) return bound + 1
  let before: number[] = []
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    let best = i
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, (previous[j - 1] as number) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, (before[j - 2] as number) + 1)
      row.push(d)
      best = Math.min(best, d)
    }
    if (best > bound) return bound + 1
    before = previous
    previous = row
  }
  return Math.min(previous[b.length] as number, bound + 1)
}

/** How many places two words of one length differ in. */
function hamming(a: string, b: string): number {
  let n = 0
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) n++
  return n
}

function typoBound(length: number, rules: TitleRules): number {
  for (const [shortest, distance] of rules.typos) if (length >= shortest) return distance
  return 0
}

/** Whether `short` keeps `long`'s first letter and the rest of its letters in order (Intl. for International). */
function contracts(short: string, long: string): boolean {
  if (short[0] !== long[0]) return false
  let at = 1
  for (const letter of short.slice(1)) {
    at = long.indexOf(letter, at) + 1
    if (at === 0) return false
  }
  return true
}

/**
 * Whether a cited token names a registered one loosely: a typo of it, its first four letters or more, an
 * abbreviation written with a full stop (Intl.), or the last word of a title cut short (non-lin…).
 */
function looselyNames(cited: string, registered: string, how: { abbreviation: boolean; cut: boolean }, rules: TitleRules): boolean {
  if (/^\d/.test(cited) || /^\d/.test(registered)) return false // 1998 and 1999 are not a typo
  if (registered.length > cited.length && registered.startsWith(cited) && (cited.length >= 4 || how.cut)) return true
  if (how.abbreviation && registered.length >= cited.length + 2 && contracts(cited, registered)) return true
  // The bound goes by the word as registered: two slips in "migration" (migartin) are still that word.
  const bound = typoBound(registered.length, rules)
  if (bound === 0) return false
  // The words as written, or their keys: a typo can hide a plural or a spelling (traed is trade, not tred).
  const distance = Math.min(editDistance(cited, registered, bound), editDistance(wordKey(cited), wordKey(registered), bound))
  if (distance <= 1) return distance <= bound
  // Two slips keep the word's first letter (people seldom miss that one: migartin, Ppleines) and are seldom two
  // letters replaced in place, which is how one real word becomes another (control → central, cancer → confer).
  return distance <= bound && cited[0] === registered[0] && !(cited.length === registered.length && hamming(cited, registered) === 2)
}

/**
 * The words of `words` (unpaired, in a row, function words skippable) whose initials spell `acronym` (LLMs:
 * Large Language Models; IoT: Internet of Things), or undefined. Two to six letters, a plural `s` allowed; a word
 * that spells a run of two or more words is rarely chance.
 */
function initialsRun(acronym: string, words: readonly string[], used: readonly boolean[]): number[] | undefined {
  if (!/^[a-z]{2,6}$/.test(acronym) || !isContentWord(acronym)) return undefined
  for (const letters of acronym.endsWith('s') && acronym.length > 2 ? [acronym, acronym.slice(0, -1)] : [acronym]) {
    for (let start = 0; start < words.length; start++) {
      const run: number[] = []
      let at = start
      for (const letter of letters) {
        while (at < words.length && !used[at] && !isContentWord(words[at] as string) && (words[at] as string)[0] !== letter) at++
        if (at >= words.length || used[at] || (words[at] as string)[0] !== letter) break
        run.push(at++)
      }
      if (run.length === letters.length && run.length >= 2) return run
    }
  }
  return undefined
}

/** One cited title against one registered title: the unexplained cited content words and the registered main title's coverage. */
function agreementWith(cited: NormalisedTitle, registered: NormalisedTitle, rules: TitleRules): TitleAgreement {
  const c = cited.tokens
  const r = registered.tokens
  const cKeys = c.map(wordKey)
  const rKeys = r.map(wordKey)
  const cPair: (number | undefined)[] = c.map(() => undefined)
  const rUsed: boolean[] = r.map(() => false)
  const take = (i: number, j: number): void => {
    cPair[i] = j
    rUsed[j] = true
  }
  // Words written whole or apart first (non-linear, nonlinear; End-to-End, Endto-End: a joined pair is specific),
  // then the same word, then initials (LLMs for Large Language Models), then typos and abbreviations.
  for (let i = 0; i + 1 < c.length; i++) {
    if (cPair[i] !== undefined || cPair[i + 1] !== undefined) continue
    const joined = wordKey(`${c[i]}${c[i + 1]}`)
    const j = rKeys.findIndex((key, k) => !rUsed[k] && key === joined)
    if (j >= 0) {
      take(i, j)
      cPair[i + 1] = j
    }
  }
  for (let j = 0; j + 1 < r.length; j++) {
    if (rUsed[j] || rUsed[j + 1]) continue
    const joined = wordKey(`${r[j]}${r[j + 1]}`)
    const i = cKeys.findIndex((key, k) => cPair[k] === undefined && key === joined)
    if (i >= 0) {
      take(i, j)
      rUsed[j + 1] = true
    }
  }
  for (let i = 0; i < c.length; i++) {
    if (cPair[i] !== undefined) continue
    // A word the record has twice pairs with the one nearest its place (Data … care data: the second for the second).
    const expected = (i * r.length) / Math.max(1, c.length)
    let j = -1
    for (let k = 0; k < r.length; k++) {
      if (!rUsed[k] && rKeys[k] === cKeys[i] && (j < 0 || Math.abs(k - expected) < Math.abs(j - expected))) j = k
    }
    if (j >= 0) take(i, j)
  }
  for (let i = 0; i < c.length; i++) {
    if (cPair[i] !== undefined) continue
    const run = initialsRun(c[i] as string, r, rUsed)
    if (run !== undefined) {
      cPair[i] = run[0]
      for (const j of run) rUsed[j] = true
    }
  }
  for (let j = 0; j < r.length; j++) {
    if (rUsed[j]) continue
    const run = initialsRun(
      r[j] as string,
      c,
      cPair.map((pair) => pair !== undefined)
    )
    if (run !== undefined) {
      rUsed[j] = true
      for (const i of run) cPair[i] = j
    }
  }
  for (let i = 0; i < c.length; i++) {
    if (cPair[i] !== undefined || !isContentWord(c[i] as string)) continue
    const how = { abbreviation: cited.abbreviations.includes(c[i] as string), cut: cited.truncated && i === c.length - 1 }
    const j = r.findIndex((token, k) => !rUsed[k] && looselyNames(c[i] as string, token, how, rules))
    if (j >= 0) take(i, j)
  }
  const unexplained = c.filter((token, i) => cPair[i] === undefined && isContentWord(token))
  // Coverage of the main title's content words (a dropped subtitle costs nothing), or of the whole title when that
  // is higher (a cited title that keeps the subtitle but drops a word of a short main title); of those before the
  // last one named when the cited title was cut short.
  const coverageOf = (count: number): number => {
    let last = count - 1
    if (cited.truncated) last = Math.min(last, Math.max(-1, ...rUsed.map((used, j) => (used ? j : -1))))
    let content = 0
    let named = 0
    for (let j = 0; j <= last; j++) {
      if (!isContentWord(r[j] as string)) continue
      content++
      if (rUsed[j]) named++
    }
    return content === 0 ? (unexplained.length === 0 ? 1 : 0) : named / content
  }
  const coverage = Math.max(coverageOf(registered.mainTokens.length), coverageOf(r.length))
  return { match: unexplained.length <= rules.maxUnexplained && coverage >= rules.minCoverage, unexplained, coverage }
}

function better(a: TitleAgreement, b: TitleAgreement): boolean {
  if (a.match !== b.match) return a.match
  if (a.unexplained.length !== b.unexplained.length) return a.unexplained.length < b.unexplained.length
  return a.coverage > b.coverage
}

/**
 * Whether a cited title names the registered work: compared with each title the record gives (main, with
 * subtitle, original, short), the best agreement. A cited subtitle the record lacks is tolerated when the cited
 * main title agrees on its own (registries often drop subtitles); when the record gives a subtitle, the cited
 * one must agree with it (a real main title under another subtitle is another work).
 */
export function titleAgreement(cited: string, registered: string | readonly string[], rules: TitleRules = TITLE_RULES): TitleAgreement {
  const citedTitle = normaliseTitle(cited)
  const citedMain: NormalisedTitle | undefined =
    citedTitle.mainTokens.length < citedTitle.tokens.length ? { ...citedTitle, tokens: citedTitle.mainTokens, truncated: false } : undefined
  const titles = (typeof registered === 'string' ? [registered] : registered).map(normaliseTitle)
  // A record that gives a subtitle (in its title or apart) is compared with it: a cited subtitle must then agree.
  const recordHasSubtitle = titles.some((title) => title.mainTokens.length < title.tokens.length)
  let best: TitleAgreement = { match: false, unexplained: citedTitle.tokens.filter(isContentWord), coverage: 0 }
  for (const registeredTitle of titles) {
    const whole = agreementWith(citedTitle, registeredTitle, rules)
    if (better(whole, best)) best = whole
    if (citedMain !== undefined && !recordHasSubtitle) {
      const main = agreementWith(citedMain, registeredTitle, rules)
      if (main.match && !best.match) best = main
    }
  }
  return best
}
