/**
 * The labelled corpus of `check --verify metadata` (issue 41, plan §6), made from a seed so every run makes
 * the same one: a synthetic registry (CSL-JSON records with the quirks registries have: <i>, MathML, a
 * subtitle apart, title arrays, online and print years) and, for each record, a citation of it:
 * - genuine (50 %): the real title and details with 0–3 of the changes people make (LaTeX, a subtitle dropped
 *   or added, case, abbreviations, British or American spelling, typos, hyphens, plurals, digits, Greek names,
 *   truncation, online or preprint year, initials, particles, stripped diacritics, swapped CJK order);
 * - details (10 %): the real title with a year 2–5 off or another first author;
 * - fabricated (40 %): an invented title of the same field, another paper's title, a paraphrase with 2–4
 *   content words replaced, one content word replaced, the real title with invented authors, another
 *   paper's title with this one's first author.
 * A word that replaces another is never a typo of it (edit distance 3 or more): a swap a typo away is a slip.
 *
 * Usage: node --import tsx bench/verify-corpus/generate.ts [--seed 41] [--size 3000] [--out bench/verify-corpus/corpus.ndjson]
 */
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import {
  CJK_FAMILIES,
  CJK_GIVENS,
  FAMILIES,
  FIELDS,
  GIVENS,
  MAIN_TEMPLATES,
  NUMBER_WORDS,
  ORGANISATIONS,
  PARTICLE_NAMES,
  SPELLINGS,
  SUBTITLE_TEMPLATES
} from './vocabulary.js'
import type { Field } from './vocabulary.js'

export type Label = 'genuine' | 'details' | 'fabricated'

export interface CorpusEntry {
  id: string
  doi: string
  field: string
  cited: { title?: string; year?: number; author?: string }
  registered: Record<string, unknown>
  label: Label
  expect: { verdict: 'match' | 'mismatch'; kind?: 'other-work' | 'details' }
  /** The changes made to a genuine citation, or the one kind of a detail or fabrication. */
  perturbations: string[]
  split: 'dev' | 'test'
}

/** mulberry32: a small, fast, seeded PRNG (public domain), so the corpus needs no dependency. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** FNV-1a: the split by `hash(id) % 5` (one in five is test). */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0
  return hash
}

/** Levenshtein distance, the generator's own (the matcher's is not used to label its corpus). */
function distance(a: string, b: string): number {
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

const STOP = new Set('a an the of in on and for to with versus towards from'.split(' '))
const plain = (text: string): string => text.normalize('NFD').replace(/\p{M}/gu, '')

interface Work {
  field: Field
  main: string[]
  sub: string[] | undefined
  italic: Set<string>
  issued: number
  online: number | undefined
  posted: number | undefined
  authors: { family?: string; given?: string; literal?: string }[]
  /** How the first author is built, for the author perturbations. */
  firstKind: 'plain' | 'particle' | 'cjk' | 'organisation'
  particle?: string
}

class Generator {
  constructor(private readonly random: () => number) {}

  random01(): number {
    return this.random()
  }

  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.random() * list.length)] as T
  }

  chance(p: number): boolean {
    return this.random() < p
  }

  int(low: number, high: number): number {
    return low + Math.floor(this.random() * (high - low + 1))
  }

  fill(template: string, field: Field, italic: Set<string>): string[] {
    const out: string[] = []
    for (const slot of template.split(' ')) {
      const comma = slot.endsWith(',')
      const name = comma ? slot.slice(0, -1) : slot
      let word: string
      if (name === 'N') word = this.pick(field.nouns)
      else if (name === 'A') word = this.pick(field.adjectives)
      else if (name === 'G') word = this.pick(field.gerunds)
      else if (name === '#') word = this.pick(NUMBER_WORDS)
      else if (name === 'X') {
        word = this.pick(field.italic).replace(/-/g, ' ')
        italic.add(word)
      } else word = name
      out.push(comma ? `${word},` : word)
    }
    return out.map((word, i) => (i === 0 ? capital(word) : word))
  }

  title(field: Field, italic: Set<string>): { main: string[]; sub: string[] | undefined } {
    const main = this.fill(this.pick(MAIN_TEMPLATES), field, italic)
    const sub = this.chance(0.4)
      ? this.fill(this.pick(SUBTITLE_TEMPLATES), field, italic).map((w, i) => (i === 0 ? w.toLowerCase() : w))
      : undefined
    return { main, sub }
  }

  person(): Pick<Work, 'authors' | 'firstKind' | 'particle'> {
    const roll = this.random()
    if (roll < 0.1) {
      const [particle, family] = this.pick(PARTICLE_NAMES)
      const given = this.pick(GIVENS)
      // Registries keep the particle with the family name, or with the given name.
      const first = this.chance(0.5) ? { family: `${particle} ${family}`, given } : { family, given: `${given} ${particle}` }
      return { authors: [first], firstKind: 'particle', particle }
    }
    if (roll < 0.22) return { authors: [{ family: this.pick(CJK_FAMILIES), given: this.pick(CJK_GIVENS) }], firstKind: 'cjk' }
    if (roll < 0.28) return { authors: [{ literal: this.pick(ORGANISATIONS) }], firstKind: 'organisation' }
    return { authors: [{ family: this.pick(FAMILIES), given: this.pick(GIVENS) }], firstKind: 'plain' }
  }

  work(field: Field): Work {
    const italic = new Set<string>()
    const { main, sub } = this.title(field, italic)
    const issued = this.int(1975, 2024)
    const online = this.chance(0.35) ? issued - 1 : undefined
    const posted = this.chance(0.12) ? issued - this.int(1, 2) : undefined
    const person = this.person()
    const more = Array.from({ length: this.int(0, 4) }, () => ({ family: this.pick(FAMILIES), given: this.pick(GIVENS) }))
    return { field, main, sub, italic, issued, online, posted, ...person, authors: [...person.authors, ...more] }
  }

  /** The work as the registry's CSL-JSON writes it, with its quirks. */
  csl(work: Work, dropsSubtitle: boolean): Record<string, unknown> {
    const render = (words: string[]): string =>
      words
        .map((word) => {
          let out = work.italic.has(word.replace(/,$/, '')) ? `<i>${word}</i>` : word
          if (/[αβγ]/.test(out) && this.chance(0.3)) out = out.replace(/[αβγ]/, (g) => `<mml:math><mml:mi>${g}</mml:mi></mml:math>`)
          return out
        })
        .join(' ')
    const main = render(work.main)
    const csl: Record<string, unknown> = { type: 'journal-article' }
    if (work.sub !== undefined && !dropsSubtitle) {
      if (this.chance(0.5)) {
        csl.title = this.chance(0.3) ? [main] : main
        csl.subtitle = [render(work.sub)]
      } else csl.title = `${main}: ${render(work.sub)}`
    } else csl.title = this.chance(0.3) ? [main] : main
    csl.issued = { 'date-parts': [[work.issued, this.int(1, 12)]] }
    if (work.online !== undefined) csl['published-online'] = { 'date-parts': [[work.online, this.int(1, 12)]] }
    if (work.online !== undefined || this.chance(0.3)) csl['published-print'] = { 'date-parts': [[work.issued]] }
    if (work.posted !== undefined) csl.posted = { 'date-parts': [[work.posted]] }
    csl.author = work.authors
    return csl
  }

  citedAuthor(work: Work, style?: 'initials'): string {
    const first = work.authors[0] as { family?: string; given?: string; literal?: string }
    if (first.literal !== undefined) return this.chance(0.7) ? first.literal : `{${first.literal}}`
    const family = first.family as string
    const given = first.given as string
    const initials = given
      .split(/[\s-]+/)
      .filter((part) => /^\p{Lu}/u.test(part))
      .map((part) => part[0])
    if (work.firstKind === 'cjk') return this.chance(0.5) ? `${family}, ${given}` : `${family} ${given}`
    const forms =
      style === 'initials'
        ? [`${family}, ${initials.join('. ')}.`, `${initials.join('. ')}. ${family}`, `${family} ${initials.join('')}`]
        : [`${family}, ${given}`, `${given} ${family}`]
    return this.pick(forms)
  }

  /** Another person, sharing no word with the first author (an invented or wrong author). */
  otherAuthor(work: Work): string {
    const first = work.authors[0] as { family?: string; given?: string; literal?: string }
    const taken = plain(`${first.family ?? ''} ${first.given ?? ''} ${first.literal ?? ''}`)
      .toLowerCase()
      .split(/[\s,.-]+/)
    for (;;) {
      const family = this.pick([...FAMILIES, ...CJK_FAMILIES])
      const given = this.pick(GIVENS)
      const words = plain(`${family} ${given}`)
        .toLowerCase()
        .split(/[\s-]+/)
      if (words.every((w) => taken.every((t) => t.length < 2 || distance(w, t) > 2))) {
        return this.chance(0.5) ? `${family}, ${given[0]}.` : `${given} ${family}`
      }
    }
  }

  /** A same-field word to replace `word`: not in the title, not a typo of it. */
  replacement(word: string, field: Field, title: string[]): string {
    const pool = field.nouns.includes(word)
      ? field.nouns
      : field.adjectives.includes(word)
        ? field.adjectives
        : [...field.nouns, ...field.adjectives]
    for (;;) {
      const other = this.pick(pool)
      const a = plain(other).toLowerCase()
      const b = plain(word).toLowerCase()
      if (!title.includes(other) && distance(a, b) >= 3 && !a.startsWith(b.slice(0, 4)) && !b.startsWith(a.slice(0, 4))) return other
    }
  }
}

function capital(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1)
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
const GREEK_NAMES: Record<string, string> = { α: 'alpha', β: 'beta', γ: 'gamma' }

/** A title or a name as a .bib writes it: accents as commands, special letters, Greek in math, capitals in braces, `\&`, `--`. */
function latexOf(text: string, random: () => number): string {
  return [...text.normalize('NFD')]
    .map((char, i, chars) => {
      if (/\p{M}/u.test(char)) return '' // a mark written with its letter, or a second one (ễ: BibTeX writes one)
      const next = chars[i + 1]
      if (next !== undefined && LATEX_MARKS[next] !== undefined) {
        const mark = LATEX_MARKS[next]
        return /[a-zA-Z]/.test(mark) ? `{\\${mark}{${char}}}` : `{\\${mark}${char}}`
      }
      if (LATEX_LETTERS[char] !== undefined) return LATEX_LETTERS[char]
      if (GREEK_NAMES[char] !== undefined) return `$\\${GREEK_NAMES[char]}$`
      if (char === '&') return '\\&'
      if (char === '–') return '--'
      return char
    })
    .join('')
    .replace(/\b(\p{Lu}[\p{L}{}\\"'`^~]+)/gu, (word) => (random() < 0.3 ? `{${word}}` : word))
}

function typo(word: string, g: Generator): string {
  const i = g.int(1, word.length - 2)
  const letters = 'abcdefghijklmnopqrstuvwxyz'
  switch (g.int(0, 3)) {
    case 0:
      return word.slice(0, i) + word[i + 1] + word[i] + word.slice(i + 2) // a swap
    case 1:
      return word.slice(0, i) + word.slice(i + 1) // a letter left out
    case 2:
      return word.slice(0, i) + g.pick([...letters]) + word.slice(i) // a letter too many
    default:
      return word.slice(0, i) + g.pick([...letters]) + word.slice(i + 1) // a letter wrong
  }
}

const isContent = (word: string): boolean => !STOP.has(word.toLowerCase().replace(/,$/, '')) && /\p{L}{3}/u.test(word)

interface Citation {
  main: string[]
  sub: string[] | undefined
  year: number | undefined
  author: string | undefined
  latex: boolean
  casing: 'as-is' | 'lower' | 'upper'
  truncate: boolean
  strip: boolean
  /** The main title's words already changed: people rarely make two changes to one word. */
  touched: Set<number>
}

/** The first untouched word of the main title that `test` accepts, marked touched; -1 when none. */
function firstFree(c: Citation, test: (word: string) => boolean): number {
  const i = c.main.findIndex((word, k) => !c.touched.has(k) && test(word))
  if (i >= 0) c.touched.add(i)
  return i
}

type Perturb = (c: Citation, w: Work, g: Generator) => boolean

/** Makes a change and says it applied. */
function applied(change: () => void): true {
  change()
  return true
}

/** The changes people make to a real citation; each says whether it applied. */
const PERTURBATIONS: Record<string, Perturb> = {
  latex: (c) =>
    applied(() => {
      c.latex = true
    }),
  'subtitle-dropped': (c) =>
    c.sub === undefined
      ? false
      : applied(() => {
          c.sub = undefined
        }),
  case: (c, _w, g) =>
    applied(() => {
      c.casing = g.chance(0.5) ? 'lower' : 'upper'
    }),
  abbreviation: (c, _w, g) => {
    const i = firstFree(c, (w) => w === 'and')
    if (i >= 0 && g.chance(0.5)) {
      return applied(() => {
        c.main[i] = '&'
      })
    }
    const j = firstFree(c, (w) => /^\p{L}{9,}$/u.test(w))
    if (j < 0) return false
    c.main[j] = `${(c.main[j] as string).slice(0, g.int(4, 5))}.`
    return true
  },
  spelling: (c) => {
    const i = firstFree(c, (w) => SPELLINGS[w.toLowerCase()] !== undefined)
    if (i >= 0) {
      return applied(() => {
        c.main[i] = SPELLINGS[(c.main[i] as string).toLowerCase()] as string
      })
    }
    const sub = c.sub ?? []
    const j = sub.findIndex((w) => SPELLINGS[w.toLowerCase()] !== undefined)
    if (j >= 0) {
      return applied(() => {
        sub[j] = SPELLINGS[(sub[j] as string).toLowerCase()] as string
      })
    }
    return false
  },
  typo: (c, _w, g) => {
    const at = c.main.map((w, i) => (/^[a-z]{5,}$/i.test(w) && isContent(w) && !c.touched.has(i) ? i : -1)).filter((i) => i >= 0)
    if (at.length === 0) return false
    const i = g.pick(at)
    c.touched.add(i)
    c.main[i] = typo(c.main[i] as string, g)
    return true
  },
  'two-typos': (c, _w, g) => {
    const at = c.main.map((w, i) => (/^[a-z]{5,}$/i.test(w) && isContent(w) && !c.touched.has(i) ? i : -1)).filter((i) => i >= 0)
    if (at.length < 2) return false
    const i = g.pick(at)
    const j = g.pick(at.filter((k) => k !== i))
    c.touched.add(i).add(j)
    c.main[i] = typo(c.main[i] as string, g)
    c.main[j] = typo(c.main[j] as string, g)
    return true
  },
  hyphenation: (c, _w, g) => {
    const i = firstFree(c, (w) => /^[a-z]+-[a-z]+$/i.test(w))
    if (i < 0) return false
    c.main[i] = (c.main[i] as string).replace('-', g.chance(0.5) ? '' : ' ')
    return true
  },
  plural: (c) => {
    const i = firstFree(c, (w) => /^[a-z]{4,}$/.test(w) && isContent(w))
    if (i < 0) return false
    const word = c.main[i] as string
    c.main[i] = word.endsWith('s') ? word.slice(0, -1) : `${word}s`
    return true
  },
  digits: (c) => {
    const i = firstFree(c, (w) => NUMBER_WORDS.includes(w))
    if (i < 0) return false
    c.main[i] = String(['Two', 'Three', 'Four', 'Five', 'Six', 'Ten'].indexOf(c.main[i] as string) + (c.main[i] === 'Ten' ? 5 : 2))
    return true
  },
  greek: (c) => {
    const i = firstFree(c, (w) => /[αβγ]/.test(w))
    if (i < 0) return false
    c.main[i] = (c.main[i] as string).replace(/[αβγ]/, (letter) => GREEK_NAMES[letter] as string)
    return true
  },
  truncation: (c) => {
    if (c.main.length + (c.sub?.length ?? 0) < 6) return false
    c.truncate = true
    return true
  },
  'stripped-diacritics': (c, w) => {
    const all = [...c.main, ...(c.sub ?? []), c.author ?? ''].join(' ')
    if (plain(all) === all) return false
    c.strip = true
    return true
  },
  'online-year': (c, w) =>
    w.online === undefined
      ? false
      : applied(() => {
          c.year = w.online
        }),
  'preprint-year': (c, w) =>
    w.posted === undefined
      ? false
      : applied(() => {
          c.year = w.posted
        }),
  'in-press-year': (c, w) =>
    applied(() => {
      c.year = w.issued + 1
    }),
  initials: (c, w, g) =>
    w.firstKind === 'plain' || w.firstKind === 'particle'
      ? applied(() => {
          c.author = g.citedAuthor(w, 'initials')
        })
      : false,
  ue: (c) => {
    if (c.author === undefined || !/[äöü]/i.test(c.author)) return false
    c.author = c.author.replace(/[äöüÄÖÜ]/g, (v) => ({ ä: 'ae', ö: 'oe', ü: 'ue', Ä: 'Ae', Ö: 'Oe', Ü: 'Ue' })[v] as string)
    return true
  },
  particle: (c, w) => {
    if (w.firstKind !== 'particle' || c.author === undefined) return false
    const first = w.authors[0] as { family: string; given: string }
    const bare = first.family.replace(`${w.particle} `, '')
    // The citation moves the particle to the other side from the registry's.
    c.author = first.family.includes(' ')
      ? `${bare}, ${first.given.charAt(0)}. ${w.particle}`
      : `${w.particle} ${bare}, ${first.given.charAt(0)}.`
    return true
  },
  'cjk-swap': (c, w) => {
    if (w.firstKind !== 'cjk') return false
    const first = w.authors[0] as { family: string; given: string }
    c.author = `${first.given} ${first.family}`
    return true
  }
}

function titleOf(c: Citation, g: Generator): string {
  let words = [...c.main, ...(c.sub === undefined ? [] : [':', ...c.sub])]
  if (c.truncate) words = words.slice(0, Math.max(3, Math.ceil(words.length * (0.5 + g.random01() * 0.3))))
  let text = words.join(' ').replace(/ :/g, ':').replace(/:$/, '')
  if (c.truncate) text += g.chance(0.5) ? '…' : '...'
  if (c.strip) text = plain(text)
  if (c.casing === 'lower') text = text.toLowerCase()
  if (c.casing === 'upper') text = text.toUpperCase()
  return c.latex ? latexOf(text, () => g.random01()) : text
}

/** The corpus of `size` entries made from `seed`. */
export function generateCorpus(seed = 41, size = 3000): CorpusEntry[] {
  const random = mulberry32(seed)
  const g = new Generator(random)
  const works = Array.from({ length: size }, (_, i) => g.work(FIELDS[i % FIELDS.length] as Field))
  const entries: CorpusEntry[] = []
  const fabricationKinds = ['invented-title', 'other-title', 'paraphrase', 'one-word', 'invented-authors', 'other-title-same-author']
  for (let n = 0; n < size; n++) {
    const work = works[n] as Work
    const roll = n % 10
    const label: Label = roll < 5 ? 'genuine' : roll === 5 ? 'details' : 'fabricated'
    const dropsSubtitle = label === 'genuine' && work.sub !== undefined && g.chance(0.15)
    const registered = g.csl(work, dropsSubtitle)
    const c: Citation = {
      main: [...work.main],
      sub: work.sub === undefined ? undefined : [...work.sub],
      year: work.issued,
      author: g.citedAuthor(work),
      latex: false,
      casing: 'as-is',
      truncate: false,
      strip: false,
      touched: new Set()
    }
    const perturbations: string[] = []
    let expect: CorpusEntry['expect'] = { verdict: 'match' }
    if (dropsSubtitle) perturbations.push('subtitle-the-registry-lacks')
    else if (work.sub !== undefined && typeof registered.subtitle !== 'undefined' && g.chance(0.3)) perturbations.push('subtitle-added')
    if (label === 'genuine') {
      const names = Object.keys(PERTURBATIONS)
      const count = g.int(0, 3)
      for (let tries = 0; perturbations.filter((p) => !p.startsWith('subtitle-')).length < count && tries < 20; tries++) {
        const name = g.pick(names)
        if (name === 'subtitle-dropped' && perturbations.some((p) => p.startsWith('subtitle-'))) continue
        if (
          perturbations.includes(name) ||
          (name === 'typo' && perturbations.includes('two-typos')) ||
          (name === 'two-typos' && perturbations.includes('typo'))
        ) {
          continue
        }
        if ((PERTURBATIONS[name] as Perturb)(c, work, g)) perturbations.push(name)
      }
    } else if (label === 'details') {
      expect = { verdict: 'mismatch', kind: 'details' }
      if (g.chance(0.5)) {
        const years = [work.issued, work.online, work.posted].filter((y): y is number => y !== undefined)
        let year = work.issued
        while (years.some((y) => Math.abs(y - year) < 2)) year = work.issued + (g.chance(0.5) ? -1 : 1) * g.int(2, 5)
        c.year = year
        perturbations.push('year-off')
      } else {
        c.author = g.otherAuthor(work)
        perturbations.push('other-author')
      }
    } else {
      const kind = fabricationKinds[Math.floor(n / 10) % fabricationKinds.length] as string
      perturbations.length = 0
      perturbations.push(kind)
      expect = { verdict: 'mismatch', kind: kind === 'invented-authors' ? 'details' : 'other-work' }
      const sameField = (): Work => {
        for (;;) {
          const other = g.pick(works)
          if (other !== work && other.field === work.field) return other
        }
      }
      if (kind === 'invented-title') {
        const title = g.title(work.field, new Set())
        c.main = title.main
        c.sub = title.sub
      } else if (kind === 'other-title') {
        const other = sameField()
        c.main = [...other.main]
        c.sub = other.sub === undefined ? undefined : [...other.sub]
        c.author = g.chance(0.5) ? g.citedAuthor(other) : c.author
      } else if (kind === 'paraphrase' || kind === 'one-word') {
        c.sub = g.chance(0.5) ? c.sub : undefined
        const at = c.main.map((w, i) => (isContent(w) && !work.italic.has(w) ? i : -1)).filter((i) => i >= 0)
        const replaced = kind === 'one-word' ? 1 : Math.min(at.length, g.int(2, 4))
        for (let k = 0; k < replaced; k++) {
          const i = at.splice(Math.floor(g.random01() * at.length), 1)[0]
          if (i === undefined) break
          const word = c.main[i] as string
          const other = g.replacement(word.replace(/,$/, ''), work.field, c.main)
          c.main[i] = (i === 0 ? capital(other) : other) + (word.endsWith(',') ? ',' : '')
        }
      } else if (kind === 'invented-authors') {
        c.author = g.otherAuthor(work)
      } else {
        const other = sameField()
        c.main = [...other.main]
        c.sub = undefined
      }
      // A fabrication is written as carefully as a real reference: sometimes in LaTeX, sometimes without its subtitle.
      if (g.chance(0.3)) c.latex = true
    }
    const id = `v41-${String(n).padStart(5, '0')}`
    const cited: CorpusEntry['cited'] = { title: titleOf(c, g) }
    if (c.year !== undefined && (label !== 'genuine' || g.chance(0.95))) cited.year = c.year
    if (c.author !== undefined && (label !== 'genuine' || g.chance(0.9))) {
      cited.author = c.strip ? plain(c.author) : c.latex ? latexOf(c.author, () => 1) : c.author
    }
    entries.push({
      id,
      doi: `10.5555/v41.${n}`,
      field: work.field.name,
      cited,
      registered,
      label,
      expect,
      perturbations,
      split: fnv1a(id) % 5 === 0 ? 'test' : 'dev'
    })
  }
  return entries
}

function main(): void {
  const args = process.argv.slice(2)
  const option = (name: string, fallback: string): string => {
    const at = args.indexOf(name)
    return at >= 0 && args[at + 1] !== undefined ? (args[at + 1] as string) : fallback
  }
  const seed = Number(option('--seed', '41'))
  const size = Number(option('--size', '3000'))
  const out = option('--out', fileURLToPath(new URL('./corpus.ndjson', import.meta.url)))
  const corpus = generateCorpus(seed, size)
  writeFileSync(out, corpus.map((entry) => JSON.stringify(entry)).join('\n') + '\n')
  console.log(`${corpus.length} entries (seed ${seed}) → ${out}`)
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main()
