/**
 * The works of `npm run bench:verify` (bench/verify.ts), seeded: work i's DOI, the landing host that serves
 * it, what its BibTeX entry cites and what the registry says about it. The fakes (verify-fakes.ts) answer
 * from the same functions, so nothing is kept per work but its host (one byte or two a work).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { seededRandom } from './random.js'

export const PREFIXES = 20
const FIRST_PREFIX = 5000

const WORDS = [
  'soil',
  'microbial',
  'networks',
  'of',
  'the',
  'deep',
  'learning',
  'river',
  'basin',
  'evidence',
  'for',
  'protein',
  'folding',
  'in',
  'urban',
  'heat',
  'islands',
  'a',
  'survey',
  'quantum',
  'transport',
  'under',
  'stress',
  'signalling',
  'pathways',
  'coral',
  'reef',
  'decline',
  'measuring',
  'inequality',
  'across',
  'regions',
  'graph',
  'neural',
  'methods',
  'on',
  'sparse',
  'data',
  'climate',
  'models',
  'and',
  'their',
  'limits',
  'gene',
  'expression',
  'during',
  'early',
  'development',
  'bayesian',
  'inference',
  'with'
]
const FAMILIES = ['Müller', 'Smith', 'García', 'Nguyen', 'van der Berg', "O'Brien", 'Kowalski', 'Tanaka', 'Okafor', 'Lindqvist']
const GIVEN = ['Anna', 'J.', 'Maria', 'Wei', 'Kofi', 'Ingrid', 'P. R.', 'Sofia']

/** FNV-1a, so a work's words and years come from its number alone. */
function hash(n: number, salt: number): number {
  let h = 0x811c9dc5 ^ salt
  for (const byte of [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff]) {
    h ^= byte
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h
}

export interface Work {
  doi: string
  title: string
  subtitle: string
  /** The year the .bib cites; the registered year is this or one before (online first). */
  year: number
  registeredYear: number
  family: string
  given: string
  /** Crossref lists a retraction notice for it (one work in a hundred). */
  retracted: boolean
}

export function doiOf(i: number): string {
  return `10.${FIRST_PREFIX + (i % PREFIXES)}/bench.${i}`
}

/** Work i, or undefined when `doi` names none (the fakes answer 404). */
export function indexOf(doi: string): number | undefined {
  const m = /^10\.(\d+)\/bench\.(\d+)$/i.exec(doi)
  if (m === null) return undefined
  const i = Number(m[2])
  return Number.isSafeInteger(i) && doiOf(i) === doi.toLowerCase() ? i : undefined
}

export function workOf(i: number): Work {
  const h = hash(i, 1)
  const words = Array.from({ length: 5 + (h % 6) }, (_, k) => WORDS[hash(i, k + 10) % WORDS.length]!)
  words[0] = words[0]!.charAt(0).toUpperCase() + words[0]!.slice(1)
  const year = 1995 + (h % 30)
  return {
    doi: doiOf(i),
    title: `${words.join(' ')} ${i}`,
    subtitle: `${WORDS[hash(i, 3) % WORDS.length]} ${WORDS[hash(i, 4) % WORDS.length]}`,
    year,
    registeredYear: year - ((h >>> 8) % 2),
    family: FAMILIES[hash(i, 5) % FAMILIES.length]!,
    given: GIVEN[hash(i, 6) % GIVEN.length]!,
    retracted: i % 100 === 42
  }
}

/** The registered CSL-JSON of work i, as an agency answers it. */
export function cslOf(i: number): string {
  const w = workOf(i)
  return JSON.stringify({
    type: 'article-journal',
    DOI: w.doi,
    title: w.title,
    subtitle: [w.subtitle],
    'container-title': 'Journal of Benchmarks',
    issued: { 'date-parts': [[w.registeredYear, 1 + (i % 12)]] },
    author: [
      { family: w.family, given: w.given },
      { family: 'Second', given: 'S.' }
    ],
    volume: String(1 + (i % 40)),
    page: `${1 + (i % 300)}-${20 + (i % 300)}`
  })
}

/** Work i as a BibTeX entry, written as people write them: LaTeX braces and accents, the subtitle after a colon. */
export function bibEntry(i: number): string {
  const w = workOf(i)
  const family = w.family.replace('ü', '{\\"u}').replace('í', "{\\'i}").replace('van der Berg', '{van der Berg}')
  const title = w.title.replace(/^(\w)/, '{$1}')
  return [
    `@article{bench${i},`,
    `  author = {${family}, ${w.given} and Second, S.},`,
    `  title = {${title}: ${w.subtitle}},`,
    '  journal = {Journal of Benchmarks},',
    `  year = {${w.year}},`,
    `  volume = {${1 + (i % 40)}},`,
    `  pages = {${1 + (i % 300)}--${20 + (i % 300)}},`,
    `  doi = {${w.doi}}`,
    '}',
    ''
  ].join('\n')
}

/** Which landing host serves each work, seeded and uniform over `hosts`. */
export function landingHosts(count: number, hosts: number, seed: number): Uint16Array {
  const random = seededRandom(seed)
  const out = new Uint16Array(count)
  for (let i = 0; i < count; i++) out[i] = Math.floor(random() * hosts)
  return out
}

/**
 * Works [0, count) written as .bib files of at most `perFile` entries in `dir` (a reference list is one
 * file; 100,000 entries are ten, each under `check`'s 20 MB per file). Returns the files' paths.
 */
export function writeBib(dir: string, count: number, perFile = 10_000): string[] {
  mkdirSync(dir, { recursive: true })
  const files: string[] = []
  for (let from = 0; from < count; from += perFile) {
    const path = join(dir, `refs-${String(files.length).padStart(2, '0')}.bib`)
    const parts: string[] = []
    for (let i = from; i < Math.min(count, from + perFile); i++) parts.push(bibEntry(i))
    writeFileSync(path, parts.join('\n'))
    files.push(path)
  }
  return files
}
