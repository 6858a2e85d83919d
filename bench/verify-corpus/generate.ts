/**
 * The labelled corpus of `check --verify metadata` (issue 41, plan §6), made from a seed so every run makes the
 * same one. The registry is real: 1,958 works HALLMARK checked (works.ndjson, derived by derive-hallmark.ts;
 * machine learning, computing, biology, medicine, social and natural sciences; source and licence in README.md),
 * each written as CSL-JSON with the quirks registries have (a subtitle apart, title arrays, <i>, <sub>, MathML,
 * JATS tags, capitals, a full stop, line breaks, online-first and preprint years, a particle kept with the given
 * name, a CJK name swapped). For each entry, a citation of one work:
 * - genuine (50 %): the real title and details with 0–3 of the changes people make (below, PERTURBATIONS);
 * - details (15 %): the real work with a wrong year (2–5 off), a co-author cited first, or an invented first author;
 * - other-work (35 %): a real DOI under another title: invented on the same topic around the work's key words,
 *   another real title of the same field (the most similar of 400), one key word replaced, a chimera of two real
 *   titles, or the DOI of a neighbouring work of the same venue (a digit off).
 * The split is by work (FNV-1a of its id % 5): a work and every citation of it are all dev or all test.
 * A word that replaces another is never a typo of it (distance 3 or more): a change a typo away is a slip.
 *
 * Usage: node --import tsx bench/verify-corpus/generate.ts [--seed 41] [--size 4000] [--out bench/.tmp/verify-corpus.ndjson]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { seededRandom } from '../lib/random.js'
import type { HallmarkCase, RealWork } from './derive-hallmark.js'
import { CJK_FAMILIES, FAMILIES, GIVENS, INVENTED, PARTICLE_NAMES, SCAFFOLDS, SPELLINGS } from './vocabulary.js'

export type Label = 'genuine' | 'details' | 'other-work'

export interface CorpusEntry {
  id: string
  doi: string
  field: string
  cited: { title?: string; year?: number; author?: string }
  registered: Record<string, unknown>
  label: Label
  expect: { verdict: 'match' | 'mismatch'; kind?: 'other-work' | 'details' }
  /** The changes made to a genuine citation, or the one kind of a detail or another work. */
  perturbations: string[]
  /** How the registry writes the record (markup, a subtitle apart…). */
  quirks: string[]
  split: 'dev' | 'test'
}

/** FNV-1a: the split by `hash(work id) % 5` (one in five is test). */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0
  return hash
}

/** Levenshtein distance, the generator's own (the matcher's is not used to label its corpus). */
export function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      row.push(
        Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1))
      )
    }
    previous = row
  }
  return previous[b.length] as number
}

/** Whether the Levenshtein distance of `a` and `b` is at most `k` (a row that passes `k` stops early). */
export function within(a: string, b: string, k: number): boolean {
  if (Math.abs(a.length - b.length) > k) return false
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    let best = i
    for (let j = 1; j <= b.length; j++) {
      const d = Math.min(
        (previous[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1)
      )
      row.push(d)
      if (d < best) best = d
    }
    if (best > k) return false
    previous = row
  }
  return (previous[b.length] as number) <= k
}

// Function words: never a key word, never put in place of one.
const STOP = new Set(
  (
    'a an the of in on and for to with by from at as is are be been being was were via into onto using use towards toward ' +
    'through its it their they them under over vs versus or not no nor about than that this these those when what which ' +
    'where while who whom whose how why more most based between within without upon after before during does do can ' +
    'could should would may might will all some such only also both each other there here very well we our us you your'
  ).split(' ')
)
export const plain = (text: string): string =>
  text.normalize('NFD').replace(/\p{M}/gu, '').replace(/[øØ]/g, 'o').replace(/[łŁ]/g, 'l').replace(/ß/g, 'ss').replace(/ı/g, 'i')
/** A word as the generator compares words: letters and digits, lower case, no marks. */
export const bare = (word: string): string =>
  plain(word)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '')
const isContent = (word: string): boolean => bare(word).length >= 3 && !STOP.has(bare(word))

const DATA = (name: string): string => fileURLToPath(new URL(name, import.meta.url))
const ndjson = <T>(name: string): T[] =>
  readFileSync(DATA(name), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .slice(1) // the header: where the file was derived from
    .map((line) => JSON.parse(line) as T)

let worksCache: RealWork[] | undefined
/** The real works (works.ndjson). */
export function loadWorks(): RealWork[] {
  worksCache ??= ndjson<RealWork>('./works.ndjson')
  return worksCache
}

const splitOf = (work: RealWork): 'dev' | 'test' => (fnv1a(work.id) % 5 === 0 ? 'test' : 'dev')

class Random {
  constructor(private readonly next: () => number) {}
  float(): number {
    return this.next()
  }

  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.next() * list.length)] as T
  }

  chance(p: number): boolean {
    return this.next() < p
  }

  int(low: number, high: number): number {
    return low + Math.floor(this.next() * (high - low + 1))
  }

  shuffle<T>(list: readonly T[]): T[] {
    const out = [...list]
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1))
      ;[out[i], out[j]] = [out[j] as T, out[i] as T]
    }
    return out
  }
}

/** A title as words, its main title apart from its subtitle (after the first ": "). */
interface TitleWords {
  main: string[]
  sub: string[] | undefined
}

function wordsOf(title: string): TitleWords {
  const at = title.indexOf(': ')
  const split = (text: string): string[] => text.split(/\s+/).filter((word) => word !== '')
  return at < 0 ? { main: split(title), sub: undefined } : { main: split(title.slice(0, at)), sub: split(title.slice(at + 2)) }
}

const textOf = (title: TitleWords, separator = ': '): string =>
  title.sub === undefined ? title.main.join(' ') : `${title.main.join(' ')}${separator}${title.sub.join(' ')}`

/** The first author of the registry's record as a citation writes them. */
interface Person {
  given: string
  family: string
}

/** What the generator changes of a citation before it is written out. */
interface Draft {
  title: TitleWords
  year: number | undefined
  author: string | undefined
  person: Person | undefined
  latex: boolean
  casing: 'as-is' | 'lower' | 'upper' | 'sentence' | 'title'
  truncate: boolean
  strip: boolean
  separator: string
  /** Words already changed (by index in main, then sub): people rarely make two changes to one word. */
  touched: Set<string>
}

/** What the registry's record gets, decided with the citation (a subtitle it lacks, years, name quirks). */
interface Registry {
  lacksSubtitle: boolean
  online: number | undefined
  posted: number | undefined
  quirks: string[]
}

// The places of words in a title: [part, index] over main and sub.
type Place = ['main' | 'sub', number]

function places(d: Draft, test: (word: string) => boolean): Place[] {
  const out: Place[] = []
  d.title.main.forEach((word, i) => {
    if (!d.touched.has(`main${i}`) && test(word)) out.push(['main', i])
  })
  d.title.sub?.forEach((word, i) => {
    if (!d.touched.has(`sub${i}`) && test(word)) out.push(['sub', i])
  })
  return out
}

function wordAt(d: Draft, [part, i]: Place): string {
  return ((part === 'main' ? d.title.main : d.title.sub) ?? [])[i] as string
}

function setWord(d: Draft, [part, i]: Place, word: string): void {
  const list = part === 'main' ? d.title.main : d.title.sub
  if (list === undefined) return
  list[i] = word
  d.touched.add(`${part}${i}`)
}

/** The word's letters (a trailing comma, a closing bracket kept apart). */
function core(word: string): { head: string; body: string; tail: string } {
  const found = /^([^\p{L}\p{N}]*)(.*?)([^\p{L}\p{N}]*)$/u.exec(word)
  return { head: found?.[1] ?? '', body: found?.[2] ?? word, tail: found?.[3] ?? '' }
}

function typo(word: string, r: Random): string {
  const { head, body, tail } = core(word)
  // Anywhere but the first letter (people rarely miss that one), the last included.
  const i = r.int(1, body.length - 1)
  const letters = 'abcdefghijklmnopqrstuvwxyz'
  let out: string
  switch (r.int(0, 3)) {
    case 0:
      out =
        i + 1 < body.length
          ? body.slice(0, i) + (body[i + 1] as string) + (body[i] as string) + body.slice(i + 2)
          : body.slice(0, i - 1) + (body[i] as string) + (body[i - 1] as string) // a swap
      break
    case 1:
      out = body.slice(0, i) + body.slice(i + 1) // a letter left out
      break
    case 2:
      out = body.slice(0, i) + (body[i] ?? '') + body.slice(i) // a letter doubled
      break
    default:
      out = body.slice(0, i) + r.pick([...letters]) + body.slice(i + 1) // a letter wrong
  }
  return head + out + tail
}

const LATEX_MARKS: Record<string, string> = {
  '\u0308': '"',
  '\u0301': "'",
  '\u0300': '`',
  '\u0302': '^',
  '\u0303': '~',
  '\u030c': 'v',
  '\u0327': 'c',
  '\u030a': 'r',
  '\u030b': 'H'
}
const LATEX_LETTERS: Record<string, string> = { ø: '{\\o}', Ø: '{\\O}', ł: '{\\l}', Ł: '{\\L}', ß: '{\\ss}', æ: '{\\ae}', ı: '{\\i}' }
const GREEK: Record<string, string> = {
  α: 'alpha',
  β: 'beta',
  γ: 'gamma',
  δ: 'delta',
  ε: 'epsilon',
  κ: 'kappa',
  λ: 'lambda',
  μ: 'mu',
  π: 'pi',
  σ: 'sigma',
  τ: 'tau',
  ω: 'omega'
}

/** A title or a name as a .bib writes it: accents as commands, special letters, Greek in math, capitals in braces, `\&`, `--`. */
export function latexOf(text: string, r: Random | undefined): string {
  return (
    [...text.normalize('NFD')]
      .map((char, i, chars) => {
        if (/\p{M}/u.test(char)) return '' // a mark written with its letter, or a second one (ễ: BibTeX writes one)
        const next = chars[i + 1]
        if (next !== undefined && LATEX_MARKS[next] !== undefined) {
          const mark = LATEX_MARKS[next]
          return /[a-zA-Z]/.test(mark) ? `{\\${mark}{${char}}}` : `{\\${mark}${char}}`
        }
        if (LATEX_LETTERS[char] !== undefined) return LATEX_LETTERS[char]
        if (GREEK[char] !== undefined) return `$\\${GREEK[char]}$`
        if (char === '&') return '\\&'
        if (char === '%') return '\\%'
        if (char === '–') return '--'
        if (char === '—') return '---'
        return char
      })
      .join('')
      // Capitals kept by braces (acronyms most often); a name is written as it is (r undefined).
      .replace(/(?<![\\{])\b(\p{Lu}\p{L}*\p{Lu}[\p{L}\d]*)\b/gu, (word) => (r !== undefined && r.chance(0.8) ? `{${word}}` : word))
      .replace(/(?<![\\{])\b(\p{Lu}\p{Ll}+)\b/gu, (word) => (r !== undefined && r.chance(0.2) ? `{${word}}` : word))
  )
}

const capital = (word: string): string => word.charAt(0).toUpperCase() + word.slice(1)

function cased(text: string, casing: Draft['casing']): string {
  if (casing === 'lower') return text.toLowerCase()
  if (casing === 'upper') return text.toUpperCase()
  if (casing === 'sentence') return capital(text.toLowerCase())
  if (casing === 'title') return text.replace(/(^|\s)(\p{Ll})/gu, (_, space: string, letter: string) => space + letter.toUpperCase())
  return text
}

type Perturb = (d: Draft, reg: Registry, work: RealWork, r: Random) => boolean

/** Makes a change and says it applied. */
function applied(change: () => void): true {
  change()
  return true
}

function withoutTouching(d: Draft, test: (word: string) => boolean, r: Random): Place | undefined {
  const found = places(d, test)
  return found.length === 0 ? undefined : r.pick(found)
}

const UMLAUTS: Record<string, string> = { ä: 'ae', ö: 'oe', ü: 'ue', Ä: 'Ae', Ö: 'Oe', Ü: 'Ue', å: 'aa', Å: 'Aa', ø: 'oe', Ø: 'Oe' }
const NUMBERS = ['Zero', 'One', 'Two', 'Three', 'Four', 'Five', 'Six', 'Seven', 'Eight', 'Nine', 'Ten']
const initialsOf = (given: string): string[] =>
  given
    .split(/[\s-]+/)
    .filter((part) => /^\p{Lu}/u.test(part))
    .map((part) => part.charAt(0))

/** The changes people make to a real citation (title, year, first author); each says whether it applied. */
const PERTURBATIONS: Record<string, Perturb> = {
  latex: (d) =>
    applied(() => {
      d.latex = true
    }),
  case: (d, _reg, _w, r) =>
    applied(() => {
      d.casing = r.pick(['lower', 'upper', 'sentence', 'title'] as const)
    }),
  punctuation: (d, _reg, _w, r) =>
    d.title.sub === undefined
      ? false
      : applied(() => {
          d.separator = r.pick([' - ', '. ', ' — ', ' -- ', ', '])
        }),
  'subtitle-dropped': (d) =>
    d.title.sub === undefined || d.title.main.filter(isContent).length < 3
      ? false
      : applied(() => {
          d.title.sub = undefined
        }),
  'subtitle-added': (d, reg) =>
    d.title.sub === undefined
      ? false
      : applied(() => {
          reg.lacksSubtitle = true
        }),
  abbreviation: (d, _reg, _w, r) => {
    const and = withoutTouching(d, (w) => w === 'and', r)
    if (and !== undefined && r.chance(0.4)) return applied(() => setWord(d, and, '&'))
    const at = withoutTouching(d, (w) => /^\p{L}{8,}$/u.test(w), r)
    if (at === undefined) return false
    const word = wordAt(d, at)
    setWord(d, at, `${word.slice(0, r.int(3, 5))}.`)
    return true
  },
  acronym: (d, _reg, _w, r) => {
    // Two to four capitalised words in a row written as their initials: Large Language Models → LLMs.
    const main = d.title.main
    const runs: [number, number][] = []
    for (let i = 0; i < main.length; i++) {
      let j = i
      while (
        j < main.length &&
        /^\p{Lu}\p{Ll}+$/u.test(main[j] as string) &&
        !STOP.has(bare(main[j] as string)) &&
        !d.touched.has(`main${j}`)
      ) {
        j++
      }
      if (j - i >= 2) runs.push([i, Math.min(j, i + 4)])
    }
    if (runs.length === 0) return false
    const [from, to] = r.pick(runs)
    const run = main.slice(from, to)
    const plural = /[^s]s$/.test(run[run.length - 1] as string)
    const acronym = run.map((w) => w.charAt(0)).join('') + (plural ? 's' : '')
    main.splice(from, to - from, acronym)
    d.touched = new Set([...d.touched].filter((t) => !t.startsWith('main')))
    return true
  },
  spelling: (d, _reg, _w, r) => {
    // A Map, not the object: a title's "constructor" is no spelling.
    const other = new Map([...Object.entries(SPELLINGS), ...Object.entries(SPELLINGS).map(([b, a]) => [a, b] as [string, string])])
    const at = withoutTouching(d, (w) => other.has(bare(w)), r)
    if (at === undefined) return false
    const { head, body, tail } = core(wordAt(d, at))
    const spelt = other.get(bare(body)) as string
    setWord(d, at, head + (/^\p{Lu}/u.test(body) ? capital(spelt) : spelt) + tail)
    return true
  },
  typo: (d, _reg, _w, r) => {
    const at = withoutTouching(d, (w) => /^\p{L}{5,}$/u.test(core(w).body) && isContent(w), r)
    if (at === undefined) return false
    setWord(d, at, typo(wordAt(d, at), r))
    return true
  },
  'two-typos': (d, _reg, _w, r) => {
    const at = places(d, (w) => /^\p{L}{5,}$/u.test(core(w).body) && isContent(w))
    const long = at.filter((p) => core(wordAt(d, p)).body.length >= 9)
    if (long.length > 0 && r.chance(0.3)) {
      const p = r.pick(long)
      setWord(d, p, typo(typo(wordAt(d, p), r), r)) // two slips in one long word
      return true
    }
    if (at.length < 2) return false
    const [a, b] = r.shuffle(at) as [Place, Place]
    setWord(d, a, typo(wordAt(d, a), r))
    setWord(d, b, typo(wordAt(d, b), r))
    return true
  },
  truncation: (d) =>
    d.title.main.length + (d.title.sub?.length ?? 0) < 6
      ? false
      : applied(() => {
          d.truncate = true
        }),
  'word-dropped': (d, _reg, _w, r) => {
    const content = d.title.main.filter(isContent).length + (d.title.sub ?? []).filter(isContent).length
    if (content < 6) return false
    const at = withoutTouching(d, (w) => isContent(w) && !/^\p{Lu}/u.test(w), r) ?? withoutTouching(d, isContent, r)
    if (at === undefined || (at[0] === 'main' && at[1] === 0)) return false
    const list = at[0] === 'main' ? d.title.main : (d.title.sub as string[])
    list.splice(at[1], 1)
    d.touched = new Set([...d.touched].filter((t) => !t.startsWith(at[0])))
    return true
  },
  hyphenation: (d, _reg, _w, r) => {
    const at = withoutTouching(d, (w) => /^\p{L}+-\p{L}+/u.test(core(w).body), r)
    if (at === undefined) return false
    setWord(d, at, wordAt(d, at).replace('-', r.chance(0.5) ? '' : ' '))
    return true
  },
  plural: (d, _reg, _w, r) => {
    const at = withoutTouching(d, (w) => /^\p{Ll}{4,}$/u.test(w) && isContent(w) && !/(?:ss|us|is|ing|ed|ly|al|ic|ive)$/.test(w), r)
    if (at === undefined) return false
    const word = wordAt(d, at)
    setWord(d, at, word.endsWith('s') ? word.slice(0, -1) : `${word}s`)
    return true
  },
  digits: (d, _reg, _w, r) => {
    const at = withoutTouching(d, (w) => NUMBERS.includes(capital(core(w).body.toLowerCase())) || /^(?:[2-9]|10)$/.test(core(w).body), r)
    if (at === undefined) return false
    const { head, body, tail } = core(wordAt(d, at))
    const index = NUMBERS.indexOf(capital(body.toLowerCase()))
    setWord(d, at, head + (index >= 0 ? String(index) : (NUMBERS[Number(body)] as string)) + tail)
    return true
  },
  greek: (d, _reg, _w, r) => {
    const at = withoutTouching(d, (w) => Object.keys(GREEK).some((g) => w.includes(g)), r)
    if (at === undefined) return false
    setWord(
      d,
      at,
      wordAt(d, at).replace(/[αβγδεκλμπστω]/gu, (g) => (r.chance(0.5) ? `$\\${GREEK[g] as string}$` : (GREEK[g] as string)))
    )
    return true
  },
  'stripped-diacritics': (d, _reg, w) => {
    const all = `${textOf(d.title)} ${d.author ?? ''}`
    if (plain(all) === all && !/[^\x20-\x7e]/.test(w.title)) return false
    d.strip = true
    return true
  },
  'online-year': (d, reg, w) =>
    applied(() => {
      reg.online = w.year - 1
      d.year = w.year - 1
    }),
  'preprint-year': (d, reg, w) =>
    applied(() => {
      reg.posted = w.year - 1
      d.year = w.year - 1
    }),
  'in-press-year': (d, _reg, w) =>
    applied(() => {
      d.year = w.year + 1
    }),
  initials: (d, _reg, _w, r) => {
    const p = d.person
    if (p === undefined || initialsOf(p.given).length === 0) return false
    const initials = initialsOf(p.given)
    d.author = r.pick([`${p.family}, ${initials.join('. ')}.`, `${initials.join('. ')}. ${p.family}`, `${p.family} ${initials.join('')}`])
    return true
  },
  'family-only': (d) =>
    d.person === undefined
      ? false
      : applied(() => {
          d.author = (d.person as Person).family
        }),
  'et-al': (d) =>
    d.person === undefined || d.author === undefined
      ? false
      : applied(() => {
          d.author = `${(d.person as Person).family} et al.`
        }),
  'upper-family': (d) => {
    const p = d.person
    if (p === undefined) return false
    d.author = `${p.family.toUpperCase()}, ${initialsOf(p.given).join('. ')}.`
    return true
  },
  particle: (d) => {
    const p = d.person
    const found = p === undefined ? null : /^((?:(?:van|von|der|den|de|da|la|di|dos|ter|du|le)\s+)+)(.+)$/i.exec(p.family)
    if (p === undefined || found === null) return false
    // The citation moves the particle to the given name (or drops it): "Schaar, M. van der", "Schaar M".
    d.author = `${found[2] as string}, ${initialsOf(p.given).join('. ')}. ${(found[1] as string).trim()}`
    return true
  },
  transliteration: (d) => {
    const p = d.person
    if (p === undefined || !/[äöüÄÖÜåÅøØ]/.test(p.family)) return false
    d.author = `${p.family.replace(/[äöüÄÖÜåÅøØ]/g, (v) => UMLAUTS[v] as string)}, ${p.given}`
    return true
  },
  'name-typo': (d, _reg, _w, r) => {
    // One slip in the family name (Kowalsky for Kowalski, Wnag for Wang).
    const p = d.person
    if (p === undefined || !/^\p{L}{4,}$/u.test(p.family)) return false
    d.author = `${typo(p.family, r)}, ${p.given}`
    return true
  },
  'two-typos-one-word': (d, _reg, _w, r) => {
    // Two slips in a word of six to eight letters (the matcher allows one below nine).
    const at = withoutTouching(d, (w) => /^\p{L}{6,8}$/u.test(core(w).body) && isContent(w), r)
    if (at === undefined) return false
    const word = wordAt(d, at)
    let twice = typo(typo(word, r), r)
    for (let tries = 0; tries < 5 && distance(bare(twice), bare(word)) < 2; tries++) twice = typo(typo(word, r), r)
    if (distance(bare(twice), bare(word)) < 2) return false
    setWord(d, at, twice)
    return true
  },
  'hyphenated-name': (d, _reg, _w, r) => {
    const p = d.person
    if (p === undefined || !/\p{L}-\p{L}/u.test(p.family)) return false
    const parts = p.family.split('-')
    d.author = `${r.chance(0.6) ? (parts[0] as string) : parts.join(' ')}, ${p.given}`
    return true
  }
}

/** The cosmetic changes a fabrication or a wrong detail may also carry, as any reference does. */
const COSMETIC = ['latex', 'case', 'stripped-diacritics', 'initials']

/** The title as the citation writes it. */
function titleText(d: Draft, r: Random): string {
  // A private-use letter marks where the subtitle starts until the separator is written.
  let words = d.title.sub === undefined ? [...d.title.main] : [...d.title.main, '\uE000', ...d.title.sub]
  if (d.truncate) words = words.slice(0, Math.max(3, Math.ceil(words.length * (0.45 + r.float() * 0.35))))
  let text = words
    .join(' ')
    .replace(/ \uE000 /g, d.separator)
    .replace(/ ?\uE000$/, '')
  if (d.truncate) text = text.replace(/[,:;]$/, '') + (r.chance(0.5) ? '…' : '...')
  if (d.strip) text = plain(text)
  text = cased(text, d.casing)
  return d.latex ? latexOf(text, r) : text
}

function authorText(d: Draft): string | undefined {
  if (d.author === undefined) return undefined
  const author = d.strip ? plain(d.author) : d.author
  return d.latex ? latexOf(author, undefined) : author
}

/** Registry quirks a title may get: markup on a word, Greek in MathML, a formula's digits in <sub>, JATS tags. */
function markedUp(title: string, r: Random): { text: string; quirk: string } | undefined {
  if (/[αβγδεκλμπστω]/u.test(title) && r.chance(0.7)) {
    return {
      text: title.replace(/[αβγδεκλμπστω]/gu, (g) => `<mml:math><mml:mi>${g}</mml:mi></mml:math>`),
      quirk: 'mathml'
    }
  }
  if (/\b\p{Lu}\p{Ll}?\d+\b/u.test(title) && r.chance(0.7)) {
    return { text: title.replace(/\b(\p{Lu}\p{Ll}?)(\d+)\b/gu, '$1<sub>$2</sub>'), quirk: 'sub' }
  }
  const words = title.split(' ')
  const at = words.map((w, i) => (isContent(w) && /^[\p{L}-]+$/u.test(w) ? i : -1)).filter((i) => i >= 0)
  if (at.length === 0) return undefined
  const i = r.pick(at)
  const span = r.chance(0.4) && i + 1 < words.length && isContent(words[i + 1] as string) ? 2 : 1
  const [open, close] = r.pick([
    ['<i>', '</i>'],
    ['<jats:italic>', '</jats:italic>'],
    ['<em>', '</em>'],
    ['<b>', '</b>'],
    ['<scp>', '</scp>']
  ] as const)
  words[i] = `${open}${words[i] as string}`
  words[i + span - 1] = `${words[i + span - 1] as string}${close}`
  return { text: words.join(' '), quirk: open === '<jats:italic>' ? 'jats' : 'html' }
}

/** The work as the registry's CSL-JSON writes it, with its quirks. */
function cslOf(work: RealWork, first: Person, reg: Registry, r: Random): Record<string, unknown> {
  const quirks = reg.quirks
  const full = wordsOf(work.title)
  let main = full.main.join(' ')
  let sub = full.sub?.join(' ')
  if (reg.lacksSubtitle) sub = undefined
  const mark = (text: string): string => {
    if (!r.chance(0.25)) return text
    const done = markedUp(text, r)
    if (done === undefined) return text
    quirks.push(done.quirk)
    return done.text
  }
  main = mark(main)
  if (sub !== undefined) sub = mark(sub)
  if (r.chance(0.03)) {
    main = main.toUpperCase()
    sub = sub?.toUpperCase()
    quirks.push('all-caps')
  }
  const csl: Record<string, unknown> = { type: work.doi?.startsWith('10.1101/') ? 'posted-content' : 'article-journal' }
  if (sub !== undefined && r.chance(0.35)) {
    csl.title = main
    csl.subtitle = [sub]
    quirks.push('subtitle-apart')
  } else {
    let title = sub === undefined ? main : `${main}: ${sub}`
    if (r.chance(0.04)) {
      title += '.'
      quirks.push('full-stop')
    }
    if (r.chance(0.04)) {
      title = `\n\t\t${title.replace(/ /, '\n\t\t')}\n\t`
      quirks.push('line-breaks')
    }
    csl.title = title
  }
  if (r.chance(0.5)) csl.title = [csl.title]
  csl.issued = { 'date-parts': [[work.year, r.int(1, 12)]] }
  const online = reg.online ?? (r.chance(0.25) ? work.year - 1 : undefined)
  if (online !== undefined) {
    csl['published-online'] = { 'date-parts': [[online]] }
    csl['published-print'] = { 'date-parts': [[work.year]] }
    quirks.push('online-first')
  }
  if (reg.posted !== undefined) csl.posted = { 'date-parts': [[reg.posted]] }
  const authors = work.authors.map(([given, family]) => ({ given, family }))
  const person: { given: string; family: string } = { ...first }
  const particle = /^((?:(?:van|von|der|den|de|da|la|di|dos|ter|du|le)\s+)+)(.+)$/i.exec(person.family)
  if (particle !== null && r.chance(0.5)) {
    person.family = particle[2] as string
    person.given = `${person.given} ${(particle[1] as string).trim()}`
    quirks.push('particle-in-given')
  } else if (CJK_FAMILIES.has(person.family.toLowerCase()) && /^\p{Lu}\p{Ll}+$/u.test(person.given) && r.chance(0.15)) {
    ;[person.family, person.given] = [person.given, person.family]
    quirks.push('cjk-swapped')
  }
  authors[0] = person
  csl.author = authors
  if (work.venue !== '') csl['container-title'] = [work.venue]
  return csl
}

/** The first author of a work: the real one, or (one work in eight) a name from the lists, so every name change has names to apply to. */
function firstAuthorOf(work: RealWork, r: Random, quirks: string[]): Person {
  const [given, family] = work.authors[0] as [string, string]
  if (!r.chance(0.125)) return { given, family }
  quirks.push('listed-name')
  if (r.chance(0.4)) {
    const [particle, name] = r.pick(PARTICLE_NAMES)
    return { given: r.pick(GIVENS), family: `${particle} ${name}` }
  }
  return { given: r.pick(GIVENS), family: r.pick(FAMILIES) }
}

const nameWords = (text: string): string[] =>
  plain(text)
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter((w) => w.length > 1)

/** Whether two people share no name a citation would confuse (no word within two letters). */
function unlike(a: string, b: string): boolean {
  return nameWords(a).every((x) => nameWords(b).every((y) => !within(x, y, 2)))
}

interface Pools {
  byField: Map<string, RealWork[]>
  vocabulary: Map<string, string[]>
  /** The field's words as [word, bare], by the bare word's length. */
  bareVocabulary: Map<string, Map<number, [string, string][]>>
  byVenue: Map<string, RealWork[]>
}

function poolsOf(works: RealWork[]): Pools {
  const byField = new Map<string, RealWork[]>()
  const byVenue = new Map<string, RealWork[]>()
  const vocabulary = new Map<string, Set<string>>()
  for (const work of works) {
    const key = `${work.field}|${splitOf(work)}`
    byField.set(key, [...(byField.get(key) ?? []), work])
    const venue = `${work.venue}|${work.year}|${splitOf(work)}`
    byVenue.set(venue, [...(byVenue.get(venue) ?? []), work])
    const words = vocabulary.get(work.field) ?? new Set<string>()
    for (const word of work.title.split(/\s+/)) if (isContent(word) && /^\p{Ll}[\p{Ll}-]{3,}$/u.test(word)) words.add(word)
    vocabulary.set(work.field, words)
  }
  for (const list of byVenue.values()) list.sort((a, b) => (a.doi ?? a.id).localeCompare(b.doi ?? b.id))
  const sorted = new Map([...vocabulary].map(([field, words]) => [field, [...words].sort()]))
  const bareVocabulary = new Map<string, Map<number, [string, string][]>>()
  for (const [field, words] of sorted) {
    const byLength = new Map<number, [string, string][]>()
    for (const word of words) {
      const b = bare(word)
      byLength.set(b.length, [...(byLength.get(b.length) ?? []), [word, b]])
    }
    bareVocabulary.set(field, byLength)
  }
  return { byField, byVenue, vocabulary: sorted, bareVocabulary }
}

const contentSets = new Map<string, Set<string>>()
/** A title's content words (bare), kept: the fabrications compare each title with hundreds of others. */
function contentSet(title: string): Set<string> {
  let set = contentSets.get(title)
  if (set === undefined) {
    set = new Set(title.split(/\s+/).filter(isContent).map(bare))
    contentSets.set(title, set)
  }
  return set
}

/** A word of the field to put in place of `word`: not in the title, not a typo of any of its words. */
function replacementFor(word: string, title: string, pools: Pools, field: string, r: Random): string {
  const taken = [...contentSet(title)]
  const pool = pools.vocabulary.get(field) ?? []
  for (let tries = 0; tries < 200; tries++) {
    const other = r.pick(pool)
    const b = bare(other)
    if (taken.every((t) => !within(t, b, 2) && t.slice(0, 5) !== b.slice(0, 5)) && !within(bare(word), b, 2)) return other
  }
  return 'zeitgeber'
}

/** The work of the same field (and split) whose title shares the most content words with this one's, of 400 drawn. */
function similarWork(work: RealWork, pools: Pools, r: Random): RealWork {
  const pool = (pools.byField.get(`${work.field}|${splitOf(work)}`) ?? []).filter((w) => w.id !== work.id)
  const mine = contentSet(work.title)
  let best = pool[0] as RealWork
  let bestShared = -1
  for (let i = 0; i < 400 && pool.length > 0; i++) {
    const other = r.pick(pool)
    const theirs = contentSet(other.title)
    const shared = [...theirs].filter((w) => mine.has(w)).length
    if (shared > bestShared && bare(other.title) !== bare(work.title)) {
      best = other
      bestShared = shared
    }
  }
  return best
}

/** The work next to this one in its venue and year (sorted by DOI): a DOI a digit off. */
function neighbourOf(work: RealWork, pools: Pools, r: Random): RealWork | undefined {
  const list = pools.byVenue.get(`${work.venue}|${work.year}|${splitOf(work)}`) ?? []
  const at = list.indexOf(work)
  const candidates = [list[at - 1], list[at + 1]].filter((w): w is RealWork => w !== undefined && bare(w.title) !== bare(work.title))
  return candidates.length === 0 ? undefined : r.pick(candidates)
}

/** A title cut into phrases at its function words: "Decoupling Data Striping", "and", "Redundancy Grouping", "in", … */
function phrasesOf(title: string): { words: string[]; before: string }[] {
  const out: { words: string[]; before: string }[] = []
  let before = ''
  let words: string[] = []
  for (const word of title.replace(/:/g, ' :').split(/\s+/)) {
    if (word === ':' || STOP.has(bare(word))) {
      if (words.length > 0) out.push({ words, before })
      before = word === ':' ? '' : word.toLowerCase()
      words = []
    } else words.push(word)
  }
  if (words.length > 0) out.push({ words, before })
  return out
}

/**
 * An invented title on the work's topic, as a language model writes one: the work's leading phrase (its key
 * words), joined to a phrase of another title of the field, or framed by a model's scaffolding.
 */
function inventedTitle(work: RealWork, pools: Pools, r: Random): string {
  const mine = phrasesOf(work.title)
  const lead = mine.slice(0, 2).sort((a, b) => b.words.length - a.words.length)[0]?.words ?? work.title.split(' ')
  const head = lead.slice(0, 4).join(' ')
  const mineBare = contentSet(work.title)
  const pool = pools.byField.get(`${work.field}|${splitOf(work)}`) ?? []
  let tail = 'Large-Scale Evaluation'
  for (let tries = 0; tries < 50; tries++) {
    const candidates = phrasesOf(r.pick(pool).title).filter((p) => p.words.length >= 2 && p.words.every((w) => !mineBare.has(bare(w))))
    if (candidates.length > 0) {
      tail = r.pick(candidates).words.join(' ')
      break
    }
  }
  const connector = r.pick(['for', 'via', 'with', 'in', 'under', 'from'])
  const shape = r.int(0, 3)
  if (shape === 0) return `${head} ${connector} ${tail}`
  if (shape === 1) return `${r.pick(SCAFFOLDS.prefixes)} ${head} ${connector} ${tail}`
  if (shape === 2) return `${r.pick(SCAFFOLDS.frames)} ${head}: ${r.pick(SCAFFOLDS.subtitles)}`
  return `${head} ${connector} ${tail}: ${r.pick(SCAFFOLDS.subtitles)}`
}

/** The cited title's content words that name no word of the registered title (none within two letters). */
function newWords(cited: string, registered: string): number {
  const theirs = [...contentSet(registered)]
  return [...contentSet(cited)].filter((word) => theirs.every((t) => !within(word, t, 2) && t.slice(0, 5) !== word.slice(0, 5))).length
}

/**
 * The title with one content word replaced by another real word of the field two letters away, not a form of it
 * (Spatial → Partial, Neural → Natural): another work whose title a loose typo rule would let through.
 */
function nearWordOf(d: Draft, work: RealWork, pools: Pools, r: Random): { title: TitleWords } | undefined {
  const title: TitleWords = { main: [...d.title.main], sub: d.title.sub === undefined ? undefined : [...d.title.sub] }
  const draft: Draft = { ...d, title, touched: new Set() }
  const vocabulary = pools.bareVocabulary.get(work.field) ?? new Map<number, [string, string][]>()
  // The places in random order; the first with a real word two letters away is changed.
  for (const at of r.shuffle(places(draft, (w) => isContent(w) && /^\p{L}{5,}$/u.test(core(w).body)))) {
    const word = bare(core(wordAt(draft, at)).body)
    const near: string[] = []
    for (let length = word.length - 2; length <= word.length + 2; length++) {
      for (const [v, b] of vocabulary.get(length) ?? []) {
        if (b.length >= 5 && b.slice(0, 4) !== word.slice(0, 4) && within(b, word, 2) && !within(b, word, 1)) near.push(v)
      }
    }
    if (near.length === 0) continue
    const { head, body, tail } = core(wordAt(draft, at))
    const other = r.pick(near)
    setWord(draft, at, head + (/^\p{Lu}/u.test(body) ? capital(other) : other) + tail)
    return { title }
  }
  return undefined
}

const ROMAN = ['I', 'II', 'III', 'IV', 'V']

/**
 * The title of a sequel or a sibling of the work (another work of one series): a number or a version changed
 * (FastSpeech 2 → FastSpeech 3, Part I → Part II, CIFAR-10 → CIFAR-100), or one added to the work's name
 * (GRAND → GRAND 2, Okapi → Okapi-v2); undefined when the title has nothing to number.
 */
function sequelOf(title: string, r: Random): { title: TitleWords } | undefined {
  const words = title.split(' ')
  const numbered = words.map((w, i) => (/^\d{1,3}$|^(?:I|II|III|IV|V)$/.test(core(w).body) ? i : -1)).filter((i) => i >= 0)
  if (numbered.length > 0) {
    const i = r.pick(numbered)
    const { head, body, tail } = core(words[i] as string)
    const roman = ROMAN.indexOf(body)
    words[i] = head + (roman >= 0 ? (ROMAN[(roman + 1) % ROMAN.length] as string) : String(Number(body) + r.int(1, 3))) + tail
    return { title: wordsOf(words.join(' ')) }
  }
  // A name: a main title of one word (Okapi: …), or a leading word with capitals inside (ViTPose, GRAND).
  const name = /^(\p{Lu}[\p{L}\d-]*)(?=:)|^(\p{Lu}[\p{L}\d-]*\p{Lu}[\p{L}\d-]*)(?=[:\s])/u.exec(title)
  if (name === null) return undefined
  const found = name[1] ?? name[2] ?? ''
  const next = r.pick([' 2', ' II', '-v2', ' 3', '++', '-XL', ' Pro', ' v2'])
  return { title: wordsOf(title.replace(found, `${found}${next}`)) }
}

/** Another work's title for `kind` (and, for another real title, sometimes its author and year), or undefined. */
function fabricated(
  kind: 'invented-title' | 'other-title' | 'one-word' | 'near-word' | 'chimera' | 'sequel',
  work: RealWork,
  d: Draft,
  pools: Pools,
  r: Random
): { title: TitleWords; person?: Person; year?: number } | undefined {
  if (kind === 'invented-title') return { title: wordsOf(inventedTitle(work, pools, r)) }
  if (kind === 'sequel') return sequelOf(work.title, r)
  if (kind === 'near-word') return nearWordOf(d, work, pools, r)
  if (kind === 'other-title') {
    const other = similarWork(work, pools, r)
    if (!r.chance(0.5)) return { title: wordsOf(other.title) }
    const [given, family] = other.authors[0] as [string, string]
    return { title: wordsOf(other.title), person: { given, family }, year: other.year }
  }
  if (kind === 'one-word') {
    const title: TitleWords = { main: [...d.title.main], sub: d.title.sub === undefined ? undefined : [...d.title.sub] }
    const draft: Draft = { ...d, title, touched: new Set() }
    const at = withoutTouching(draft, (w) => isContent(w) && /^\p{L}[\p{L}-]*$/u.test(core(w).body), r)
    if (at === undefined) return undefined
    const { head, body, tail } = core(wordAt(draft, at))
    const other = replacementFor(body, work.title, pools, work.field, r)
    setWord(draft, at, head + (/^\p{Lu}/u.test(body) ? capital(other) : other) + tail)
    return { title }
  }
  const other = similarWork(work, pools, r)
  const mine = wordsOf(work.title)
  const theirs = wordsOf(other.title)
  if (mine.sub !== undefined && theirs.sub !== undefined && r.chance(0.7)) return { title: { main: mine.main, sub: theirs.sub } }
  // The first phrases of this title, the last of the other: cut where a function word joins them.
  const keep = phrasesOf(work.title)
  const half = phrasesOf(other.title)
  const parts = [...keep.slice(0, Math.max(1, Math.ceil(keep.length / 2))), ...half.slice(Math.floor(half.length / 2))]
  return { title: wordsOf(parts.map((p, i) => (i > 0 && p.before !== '' ? `${p.before} ` : '') + p.words.join(' ')).join(' ')) }
}

const OTHER_WORK = ['invented-title', 'other-title', 'one-word', 'near-word', 'chimera', 'neighbour-doi', 'sequel'] as const
const DETAILS = ['year-off', 'co-author-first', 'invented-author'] as const

/** The corpus of `size` entries made from `seed`. */
export function generateCorpus(seed = 41, size = 4000): CorpusEntry[] {
  const r = new Random(seededRandom(seed))
  const works = loadWorks()
  const pools = poolsOf(works)
  const order = r.shuffle(works)
  const entries: CorpusEntry[] = []
  const names = Object.keys(PERTURBATIONS)
  for (let n = 0; n < size; n++) {
    let work = order[n % order.length] as RealWork
    const slot = n % 20
    const label: Label = slot < 10 ? 'genuine' : slot < 13 ? 'details' : 'other-work'
    const reg: Registry = { lacksSubtitle: false, online: undefined, posted: undefined, quirks: [] }
    const person = firstAuthorOf(work, r, reg.quirks)
    const d: Draft = {
      title: wordsOf(work.title),
      year: work.year,
      author: r.chance(0.5) ? `${person.family}, ${person.given}` : `${person.given} ${person.family}`,
      person,
      latex: false,
      casing: 'as-is',
      truncate: false,
      strip: false,
      separator: ': ',
      touched: new Set()
    }
    const perturbations: string[] = []
    let expect: CorpusEntry['expect'] = { verdict: 'match' }
    let registeredWork = work
    let registeredFirst = person
    const cosmetic = (): void => {
      if (r.chance(0.5)) {
        const name = r.pick(COSMETIC)
        if ((PERTURBATIONS[name] as Perturb)(d, reg, work, r)) perturbations.push(name)
      }
    }
    if (label === 'genuine') {
      const count = r.pick([0, 1, 1, 1, 2, 2, 2, 3, 3])
      for (let tries = 0; perturbations.length < count && tries < 30; tries++) {
        const name = r.pick(names)
        const clash: Record<string, string[]> = {
          typo: ['two-typos', 'two-typos-one-word'],
          'two-typos': ['typo', 'two-typos-one-word'],
          'two-typos-one-word': ['typo', 'two-typos'],
          'subtitle-dropped': ['subtitle-added', 'punctuation'],
          'subtitle-added': ['subtitle-dropped', 'punctuation'],
          punctuation: ['subtitle-dropped', 'subtitle-added'],
          'online-year': ['preprint-year', 'in-press-year'],
          'preprint-year': ['online-year', 'in-press-year'],
          'in-press-year': ['online-year', 'preprint-year'],
          truncation: ['word-dropped'],
          'word-dropped': ['truncation']
        }
        const authorChanges = [
          'initials',
          'family-only',
          'et-al',
          'upper-family',
          'particle',
          'transliteration',
          'hyphenated-name',
          'name-typo'
        ]
        if (perturbations.includes(name) || (clash[name] ?? []).some((c) => perturbations.includes(c))) continue
        if (authorChanges.includes(name) && perturbations.some((p) => authorChanges.includes(p))) continue
        if ((PERTURBATIONS[name] as Perturb)(d, reg, work, r)) perturbations.push(name)
      }
    } else if (label === 'details') {
      let kind: (typeof DETAILS)[number] = DETAILS[Math.floor(n / 20) % DETAILS.length] as (typeof DETAILS)[number]
      const second = work.authors[1]
      if (kind === 'co-author-first' && (second === undefined || !unlike(second.join(' '), `${person.given} ${person.family}`))) {
        kind = 'invented-author'
      }
      expect = { verdict: 'mismatch', kind: 'details' }
      if (kind === 'year-off') {
        const years = [work.year, work.year - 1]
        let year = work.year
        while (years.some((y) => Math.abs(y - year) < 2)) year = work.year + (r.chance(0.5) ? -1 : 1) * r.int(2, 5)
        d.year = year
        reg.online = undefined
      } else if (kind === 'co-author-first') {
        const [given, family] = second as [string, string]
        d.author = r.chance(0.5) ? `${family}, ${given}` : `${given} ${family}`
        d.person = { given, family }
      } else {
        let given = r.pick(INVENTED.givens)
        let family = r.pick(INVENTED.families)
        while (!unlike(`${given} ${family}`, `${person.given} ${person.family}`)) {
          given = r.pick(INVENTED.givens)
          family = r.pick(INVENTED.families)
        }
        d.author = r.chance(0.5) ? `${family}, ${given}` : `${given} ${family}`
        d.person = { given, family }
      }
      perturbations.push(kind)
      cosmetic()
    } else {
      let kind = OTHER_WORK[Math.floor(n / 20) % OTHER_WORK.length] as (typeof OTHER_WORK)[number]
      expect = { verdict: 'mismatch', kind: 'other-work' }
      const neighbour = kind === 'neighbour-doi' ? neighbourOf(work, pools, r) : undefined
      if (kind === 'neighbour-doi' && (neighbour === undefined || newWords(work.title, neighbour.title) < 2)) kind = 'other-title'
      if (kind === 'neighbour-doi') {
        // The citation is right for its own work; its DOI is a digit off and names the next work of the venue.
        registeredWork = neighbour as RealWork
        registeredFirst = firstAuthorOf(registeredWork, r, reg.quirks)
      } else {
        // Another title, with new content words (one for one-word, two for the others): else it is a slip, not another work.
        for (let attempt = 0; ; attempt++) {
          if (attempt === 12) kind = 'invented-title'
          const made = fabricated(kind, work, d, pools, r)
          const need = kind === 'sequel' || kind === 'near-word' ? 0 : kind === 'one-word' ? 1 : 2
          const changed = made !== undefined && textOf(made.title).toLowerCase() !== work.title.toLowerCase()
          if (made !== undefined && changed && (newWords(textOf(made.title), work.title) >= need || attempt > 40)) {
            d.title = made.title
            if (made.person !== undefined) {
              d.person = made.person
              d.author = `${made.person.family}, ${made.person.given}`
              d.year = made.year
            }
            break
          }
        }
      }
      perturbations.push(kind)
      cosmetic()
    }
    const registered = cslOf(registeredWork, registeredFirst, reg, r)
    work = registeredWork
    const cited: CorpusEntry['cited'] = { title: titleText(d, r) }
    if (d.year !== undefined && (label !== 'genuine' || r.chance(0.95))) cited.year = d.year
    const author = authorText(d)
    if (author !== undefined && (label !== 'genuine' || r.chance(0.9))) cited.author = author
    entries.push({
      id: `v41-${String(n).padStart(5, '0')}`,
      doi: work.doi ?? `10.5555/hallmark.${work.id}`,
      field: work.field,
      cited,
      registered: { ...registered, DOI: work.doi ?? `10.5555/hallmark.${work.id}` },
      label,
      expect,
      perturbations,
      quirks: reg.quirks,
      split: splitOf(work)
    })
  }
  return entries
}

/** The last word of a family name, as the generator compares names (DBLP's 0001 and marks out). */
function familyKey(name: string): string {
  const cleaned = name.replace(/\s+\d{4}\b/g, '').trim()
  const family = cleaned.includes(',') ? (cleaned.split(',')[0] as string) : (cleaned.split(/\s+/).pop() as string)
  return bare(family.split(/[\s-]+/).pop() ?? family)
}

/**
 * HALLMARK's own perturbations of the works we hold (hallmark-cases.ndjson): each cited as HALLMARK wrote it,
 * against the plain record of the DOI it gives. The expected verdict is what a metadata check can see, by field
 * and by the corpus's own rules (not the matcher's): a title with a new content word → `other-work`; else the first
 * author's family name or the year (more than one off) changed → `details`; else (the venue, later authors, a
 * title re-cased or changed only in function words or endings) → `match`.
 */
export function hallmarkCorpus(): CorpusEntry[] {
  const works = new Map(loadWorks().map((work) => [work.id, work]))
  return ndjson<HallmarkCase>('./hallmark-cases.ndjson').map((c, n) => {
    const work = works.get(c.work) as RealWork
    // A title with a new content word names another work; one that changes only function words or endings
    // (for → towards, Privacy → Privacys) is a slip by the corpus's own rule, whatever HALLMARK's type.
    const titleChanged = bare(c.cited.title) !== bare(work.title)
    const slip = titleChanged && newWords(c.cited.title, work.title) === 0
    const [given, family] = work.authors[0] as [string, string]
    const authorChanged = c.cited.author !== undefined && familyKey(c.cited.author) !== familyKey(`${given} ${family}`)
    const yearChanged = c.cited.year !== undefined && Math.abs(c.cited.year - work.year) > 1
    const label: Label = titleChanged && !slip ? 'other-work' : authorChanged || yearChanged ? 'details' : 'genuine'
    const doi = work.doi ?? `10.5555/hallmark.${work.id}`
    return {
      id: `hallmark-${String(n).padStart(4, '0')}`,
      doi,
      field: work.field,
      cited: c.cited,
      registered: {
        type: 'article-journal',
        DOI: doi,
        title: work.title,
        author: work.authors.map(([g, f]) => ({ given: g, family: f })),
        issued: { 'date-parts': [[work.year]] },
        'container-title': [work.venue]
      },
      label,
      expect: label === 'genuine' ? { verdict: 'match' } : { verdict: 'mismatch', kind: label },
      perturbations: [slip ? `${c.type} (title: a slip)` : c.type],
      quirks: [],
      split: 'test'
    }
  })
}

function main(): void {
  const args = process.argv.slice(2)
  const option = (name: string, fallback: string): string => {
    const at = args.indexOf(name)
    return at >= 0 && args[at + 1] !== undefined ? (args[at + 1] as string) : fallback
  }
  const seed = Number(option('--seed', '41'))
  const size = Number(option('--size', '4000'))
  const out = option('--out', DATA('../.tmp/verify-corpus.ndjson'))
  const corpus = generateCorpus(seed, size)
  mkdirSync(dirname(out), { recursive: true })
  writeFileSync(out, corpus.map((entry) => JSON.stringify(entry)).join('\n') + '\n')
  console.log(`${corpus.length} entries (seed ${seed}) → ${out}`)
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main()
