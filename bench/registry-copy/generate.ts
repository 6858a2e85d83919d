/**
 * The registry copy's benchmark input (issue 43 §4, plan-43 §6): N works in the agencies' real formats,
 * seeded, written streaming so memory stays flat whatever N is:
 *
 * - `crossref-annual.tar`: Crossref's annual public data file as a tar of `N.json.gz`, each
 *   `{"items":[work, …]}` of 5,000 works (the REST API's work JSON);
 * - `datacite.tar`: DataCite's public data file, `dois/updated_YYYY-MM/part_NNNN.jsonl.gz` of 10,000 JSON
 *   lines each (`{"id","type":"dois","attributes",…}`);
 * - `datacite-states.csv`: its DOI/state file (`doi,state,client_id,updated`): every Findable DOI of the
 *   JSON lines, and Registered and Draft DOIs that have none;
 * - `manifest.json`: what was made (a later run with the same options reuses the directory).
 *
 * Field shapes of real works (plan-43 §6): authors geometric with mean 5, 1 % 100–1,000, 0.01 % over 3,000;
 * abstracts in 40 % (JATS, 150–400 words); references in 60 % (mean 35, 1 % over 500); titles with `<i>` or
 * MathML; 5 % in another script; 0.5 % SICI DOIs. Each work is made from its own seeded stream (the seed
 * and its number), so `crossrefDoiOf(seed, i)` gives the benchmark any DOI without the files.
 *
 *   node --import tsx bench/registry-copy/generate.ts --seed 43 --works 10000000 --datacite 0.15 [--out DIR]
 */
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { join, resolve } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { once } from 'node:events'
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import { createGzip, gunzipSync } from 'node:zlib'
import { Header, Parser } from 'tar'
import type { ReadEntry } from 'tar'
import { crossrefRecordOf } from '../../src/handle/copy/crossref-record.js'
import { dataciteRecordOf, dataciteStateOf } from '../../src/handle/copy/datacite-record.js'
import { forEachOption } from '../lib/args.js'
import { seededRandom } from '../lib/random.js'

const HELP = `Usage: node --import tsx bench/registry-copy/generate.ts [--seed 43] [--works N] [--datacite 0.15] [--out DIR] [--force]
  --seed N       the seed (default 43): the same seed and counts make the same bytes
  --works N      works in all (default 200000); a share of them DataCite's (--datacite)
  --datacite F   the share of DataCite records, 0–1 (default 0.15)
  --out DIR      where (default bench/.tmp/copy-<seed>-<works>/); reused when its manifest matches
  --force        make the files again even when DIR holds them
  --threads N    threads making Crossref's files (default: the cores); the bytes are the same
  --check        then read them back through the copy's mappers (crossrefRecordOf, dataciteRecordOf,
                 dataciteStateOf) and count records, problems and shapes`

/** Bumped when the shapes change: a directory made by another version is made again. */
const VERSION = 1
export const CROSSREF_PER_FILE = 5_000
export const DATACITE_PER_FILE = 10_000

// ---- seeded streams ----

/** A 32-bit mix of the seed, a stream's kind and a number (murmur3's finaliser): one stream per work. */
function mix(seed: number, kind: number, i: number): number {
  let h = (seed ^ Math.imul(kind + 1, 0x9e3779b9) ^ Math.imul(i, 0x85ebca6b)) >>> 0
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

class Draw {
  readonly next: () => number
  constructor(seed: number) {
    this.next = seededRandom(seed)
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1))
  }
  chance(p: number): boolean {
    return this.next() < p
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)] as T
  }
  /** Skewed to the front of the list: a few frequent, many rare (word and prefix frequencies). */
  skewed<T>(xs: readonly T[], power = 3): T {
    return xs[Math.floor(this.next() ** power * xs.length)] as T
  }
  /** Geometric on 1, 2, … with the given mean. */
  geometric(mean: number): number {
    return 1 + Math.floor(Math.log(1 - this.next()) / Math.log(1 - 1 / mean))
  }
}

// ---- vocabularies (made once from a fixed stream: the same for every seed) ----

const SYLLABLES =
  'ba be bi bo bu ca ce ci co cu da de di do du fa fe fi fo ga ge gi go la le li lo lu ma me mi mo mu na ne ni no nu pa pe pi po ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo za ze tra pro ter gen tion ment al ic ous ive ph st'.split(
    ' '
  )
const vocab = new Draw(0x43)
const WORDS = Array.from({ length: 3000 }, () => Array.from({ length: vocab.int(1, 4) }, () => vocab.pick(SYLLABLES)).join(''))
const FUNCTION_WORDS = ['of', 'the', 'and', 'in', 'for', 'on', 'with', 'a', 'to', 'by', 'from', 'under', 'at']
const GIVEN = Array.from({ length: 400 }, () => capital(Array.from({ length: vocab.int(2, 3) }, () => vocab.pick(SYLLABLES)).join('')))
const FAMILY = Array.from({ length: 2000 }, () => capital(Array.from({ length: vocab.int(2, 4) }, () => vocab.pick(SYLLABLES)).join('')))
const ACCENTED = ['García-López', 'Müller', 'Østergaard', 'Łukasiewicz', 'Nguyễn', 'Çelik', 'Šimić', "O'Brien", 'van der Berg', 'Dvořák']
/** Other scripts' letters (CJK, Hangul, Cyrillic, Greek, Arabic, Devanagari): ranges to draw words from. */
const SCRIPTS: readonly (readonly [number, number, number])[] = [
  [0x4e00, 0x4fff, 2], // CJK ideographs, 2–3 to a word
  [0x3041, 0x3093, 3], // Hiragana
  [0xac00, 0xad00, 2], // Hangul syllables
  [0x0430, 0x044f, 6], // Cyrillic
  [0x03b1, 0x03c9, 6], // Greek
  [0x0627, 0x064a, 5], // Arabic
  [0x0905, 0x0939, 4] // Devanagari
]
const PUBLISHERS = Array.from(
  { length: 300 },
  (_, k) =>
    `${capital(vocab.pick(WORDS))} ${vocab.pick(['Press', 'Publishing', 'Society', 'Group', 'Institute', 'Media LLC', 'University Press'])} ${k}`
)
const JOURNALS = Array.from(
  { length: 5000 },
  () =>
    `${vocab.pick(['Journal of', 'Annals of', 'Reviews in', 'Letters in', 'Advances in', 'International Journal of'])} ${capital(vocab.skewed(WORDS))} ${capital(vocab.skewed(WORDS))}`
)
const INSTITUTIONS = Array.from(
  { length: 1000 },
  () => `${vocab.pick(['University of', 'Institute of', 'Department of'])} ${capital(vocab.pick(WORDS))}, ${capital(vocab.pick(WORDS))}`
)
const LICENSES = [
  'https://creativecommons.org/licenses/by/4.0/',
  'https://www.elsevier.com/tdm/userlicense/1.0/',
  'https://www.springer.com/tdm',
  'http://onlinelibrary.wiley.com/termsAndConditions#vor'
]
const SUBJECTS = Array.from({ length: 300 }, () => `${capital(vocab.pick(WORDS))} ${capital(vocab.pick(WORDS))}`)

/** DataCite's prefixes here; Crossref's are drawn from the others. */
const DATACITE_PREFIXES = [
  '10.5281',
  '10.6084',
  '10.1594',
  '10.5061',
  '10.17605',
  '10.48550',
  '10.25384',
  '10.34894',
  '10.15468',
  '10.7910'
]
const DATACITE_CLIENTS = [
  'cern.zenodo',
  'figshare.ars',
  'pangaea.repository',
  'dryad.dryad',
  'cos.osf',
  'arxiv.content',
  'sml.tdar',
  'gesis.ssoar',
  'gbif.gbif',
  'inist.humanum'
]
const CROSSREF_PREFIXES = Array.from({ length: 4000 }, (_, k) => `10.${1000 + k}`).filter((p) => !DATACITE_PREFIXES.includes(p))

function capital(w: string): string {
  return w.length === 0 ? w : w[0]!.toUpperCase() + w.slice(1)
}

function words(d: Draw, n: number): string {
  const out: string[] = []
  for (let i = 0; i < n; i++) out.push(d.chance(0.3) ? d.pick(FUNCTION_WORDS) : d.skewed(WORDS, 2.5))
  return out.join(' ')
}

function foreignWords(d: Draw, n: number): string {
  const [lo, hi, len] = d.pick(SCRIPTS)
  const sep = lo >= 0x3041 && lo < 0xad00 ? '' : ' ' // CJK and kana without spaces
  return Array.from({ length: n }, () => String.fromCodePoint(...Array.from({ length: d.int(1, len) }, () => d.int(lo, hi)))).join(sep)
}

function sentence(d: Draw, n: number): string {
  return `${capital(words(d, n))}.`
}

// ---- dates ----

interface Day {
  y: number
  m: number
  d: number
}
const iso = (t: Day, hms = '00:00:00'): string => `${t.y}-${String(t.m).padStart(2, '0')}-${String(t.d).padStart(2, '0')}T${hms}Z`
const seconds = (t: Day): number => Date.UTC(t.y, t.m - 1, t.d) / 1000
function dayOf(d: Draw, from: number, to: number): Day {
  return { y: d.int(from, to), m: d.int(1, 12), d: d.int(1, 28) }
}
/** A publication year, recent ones the most frequent (Crossref's works per year grow). */
function yearOf(d: Draw): number {
  return 2025 - Math.floor(d.next() ** 2.5 * 60)
}
const crossrefDate = (t: Day): Record<string, unknown> => ({
  'date-parts': [[t.y, t.m, t.d]],
  'date-time': iso(t, '08:12:44'),
  timestamp: (seconds(t) + 29_564) * 1000
})

// ---- Crossref works ----

const CROSSREF_TYPES: readonly [string, number][] = [
  ['journal-article', 0.74],
  ['book-chapter', 0.08],
  ['proceedings-article', 0.07],
  ['posted-content', 0.03],
  ['book', 0.02],
  ['dataset', 0.015],
  ['report', 0.01],
  ['dissertation', 0.005],
  ['component', 0.01],
  ['reference-entry', 0.01],
  ['other', 0.01]
]
function typeOf(d: Draw): string {
  let u = d.next()
  for (const [t, p] of CROSSREF_TYPES) {
    if ((u -= p) < 0) return t
  }
  return 'journal-article'
}

/**
 * The DOI of Crossref work `i`: its prefix (a few prefixes hold most works, as at Crossref) and a suffix in one
 * of the publishers' patterns, each holding `i` so no two works share one; 0.5 % SICI (`(SICI)…<…>3.0.CO;2-X`).
 */
export function crossrefDoiOf(seed: number, i: number): string {
  const d = new Draw(mix(seed, 1, i))
  const k = Math.floor(d.next() ** 3 * CROSSREF_PREFIXES.length)
  const prefix = CROSSREF_PREFIXES[k]!
  const year = yearOf(d)
  const abbr = (WORDS[k % WORDS.length] ?? 'x').slice(0, 5)
  if (d.chance(0.005)) {
    const issn = `${d.int(1000, 9999)}-${d.int(100, 999)}${d.pick(['0', '1', 'X'])}`
    return `${prefix}/(SICI)${issn}(${year}${String(d.int(1, 12)).padStart(2, '0')})${d.int(1, 99)}:${d.int(1, 12)}<${d.int(1, 999)}::AID-${abbr.toUpperCase()}${i}>3.0.CO;2-${d.pick(['H', '7', 'X', 'Q'])}`
  }
  switch (k % 6) {
    case 0:
      return `${prefix}/j.${abbr}.${year}.${String(d.int(1, 12)).padStart(2, '0')}.${i.toString(36)}`
    case 1:
      return `${prefix}/s${d.int(10000, 99999)}-${String(year % 100).padStart(2, '0')}-${i}-${d.int(0, 9)}`
    case 2:
      return `${prefix}/journal.${abbr}.${String(i).padStart(7, '0')}`
    case 3:
      return `${prefix}/${abbr}${i}`
    case 4:
      return `${prefix}/${year}.${i}`
    default:
      return `${prefix}/${abbr.toUpperCase()}.${year}.${i}`
  }
}

/** One author's JSON without its `sequence` (added by position), as a pool entry. */
function authorJson(d: Draw, foreign: boolean): string {
  if (d.chance(0.01)) {
    return JSON.stringify({
      name: `The ${capital(d.pick(WORDS))} ${d.pick(['Consortium', 'Collaboration', 'Group', 'Study Team'])}`,
      affiliation: []
    })
  }
  const family = foreign && d.chance(0.7) ? foreignWords(d, 1) : d.chance(0.05) ? d.pick(ACCENTED) : d.skewed(FAMILY, 2)
  const author: Record<string, unknown> = { given: d.chance(0.1) ? `${d.pick(GIVEN)[0]}. ${d.pick(GIVEN)[0]}.` : d.pick(GIVEN), family }
  author.affiliation = d.chance(0.5) ? Array.from({ length: d.int(1, 2) }, () => ({ name: d.pick(INSTITUTIONS) })) : []
  if (d.chance(0.3)) {
    author.ORCID = `http://orcid.org/0000-000${d.int(1, 3)}-${d.int(1000, 9999)}-${d.int(1000, 9999)}`
    author['authenticated-orcid'] = d.chance(0.5)
  }
  return JSON.stringify(author)
}

/** The `author` list's JSON: geometric with mean 5, 1 % 100–1,000, 0.01 % 3,001–5,000. */
function crossrefAuthors(d: Draw, pools: Pools, foreign: boolean): string {
  const u = d.next()
  const n = u < 0.0001 ? d.int(3001, 5000) : u < 0.0101 ? d.int(100, 1000) : Math.min(d.geometric(5), 99)
  const out: string[] = []
  for (let a = 0; a < n; a++) {
    const one = foreign && d.chance(0.7) ? d.pick(pools.foreignAuthors) : d.pick(pools.authors)
    out.push(`{"sequence":"${a === 0 ? 'first' : 'additional'}",${one.slice(1)}`)
  }
  return `[${out.join(',')}]`
}

function title(d: Draw, foreign: boolean): string {
  if (foreign) return foreignWords(d, d.int(4, 12))
  const base = capital(words(d, d.int(5, 16)))
  const u = d.next()
  if (u < 0.03) return base.replace(/ (\w+) (\w+)/, ' <i>$1 $2</i>') // a species, a gene
  if (u < 0.04) {
    return `${base} for <mml:math xmlns:mml="http://www.w3.org/1998/Math/MathML"><mml:msub><mml:mi>L</mml:mi><mml:mn>${d.int(1, 9)}</mml:mn></mml:msub></mml:math> norms`
  }
  if (u < 0.05) return `${base} of H<sub>2</sub>O and CO<sub>2</sub>`
  return base
}

function abstract(d: Draw): string {
  const paragraphs: string[] = []
  let left = d.int(150, 400)
  while (left > 0) {
    const n = Math.min(left, d.int(40, 150))
    left -= n
    const sentences: string[] = []
    for (let w = n; w > 0;) {
      const s = Math.min(w, d.int(8, 25))
      w -= s
      sentences.push(sentence(d, s))
    }
    let p = sentences.join(' ')
    if (d.chance(0.2)) p = p.replace(/ (\w+) /, ' <jats:italic>$1</jats:italic> ')
    paragraphs.push(`<jats:p>${p}</jats:p>`)
  }
  return `<jats:title>Abstract</jats:title>${paragraphs.join('')}`
}

/** One reference's JSON without its `key` (added by position), as a pool entry: half with a DOI, half unstructured. */
function referenceJson(d: Draw, seed: number): string {
  const year = String(yearOf(d))
  if (d.chance(0.55)) {
    return JSON.stringify({
      'doi-asserted-by': d.pick(['crossref', 'publisher']),
      'first-page': String(d.int(1, 2000)),
      DOI: crossrefDoiOf(seed, d.int(0, 150_000_000)),
      volume: String(d.int(1, 300)),
      author: `${d.skewed(FAMILY, 2)} ${d.pick(GIVEN)[0]}`,
      year,
      'journal-title': d.skewed(JOURNALS, 2)
    })
  }
  return JSON.stringify({
    unstructured: `${d.skewed(FAMILY, 2)} ${d.pick(GIVEN)[0]}, ${d.skewed(FAMILY, 2)} ${d.pick(GIVEN)[0]} (${year}) ${sentence(d, d.int(5, 14))} ${d.skewed(JOURNALS, 2)} ${d.int(1, 300)}:${d.int(1, 999)}–${d.int(1000, 1999)}`
  })
}

/** The `reference` list's JSON: mean 35, 1 % 501–1,500; and how many. */
function references(d: Draw, pools: Pools): [string, number] {
  const n = d.chance(0.01) ? d.int(501, 1500) : d.geometric(35)
  const out: string[] = []
  for (let r = 0; r < n; r++) out.push(`{"key":"ref${r + 1}",${d.pick(pools.references).slice(1)}`)
  return [`[${out.join(',')}]`, n]
}

/**
 * Authors, references and abstracts are drawn from pools made once per seed (10⁴–10⁵ each, serialized): a
 * work is then mostly string joins, ~5× faster than making and serializing each anew. Pools that large
 * repeat an entry rarely within gzip's 32 KiB window, so the files compress as fresh text would.
 */
interface Pools {
  seed: number
  authors: string[]
  foreignAuthors: string[]
  references: string[]
  abstracts: string[]
}
let pools: Pools | undefined
function poolsOf(seed: number): Pools {
  if (pools?.seed !== seed) {
    const d = new Draw(mix(seed, 6, 0))
    pools = {
      seed,
      authors: Array.from({ length: 100_000 }, () => authorJson(d, false)),
      foreignAuthors: Array.from({ length: 10_000 }, () => authorJson(d, true)),
      references: Array.from({ length: 100_000 }, () => referenceJson(d, seed)),
      abstracts: Array.from({ length: 10_000 }, () => JSON.stringify(abstract(d)))
    }
  }
  return pools
}

/** Crossref work `i`, as the REST API and the annual file give it (api.crossref.org `/works` item). */
export function crossrefWork(seed: number, i: number): Record<string, unknown> {
  return JSON.parse(crossrefWorkJson(seed, i)) as Record<string, unknown>
}

/** Crossref work `i`'s JSON, as a line of an annual file's `items`. */
export function crossrefWorkJson(seed: number, i: number): string {
  const p = poolsOf(seed)
  const DOI = crossrefDoiOf(seed, i)
  const d = new Draw(mix(seed, 2, i))
  const type = typeOf(d)
  const prefix = DOI.slice(0, DOI.indexOf('/'))
  const member = String(Number(prefix.slice(3)) % 9000)
  const publisher = PUBLISHERS[Number(member) % PUBLISHERS.length]!
  const foreign = d.chance(0.05)
  const year = yearOf(d)
  const published: Day = { y: year, m: d.int(1, 12), d: d.int(1, 28) }
  const created: Day = { y: Math.min(2025, year + d.int(0, 1)), m: d.int(1, 12), d: d.int(1, 28) }
  const deposited = dayOf(d, Math.max(created.y, 2015), 2025)
  const indexed = dayOf(d, 2024, 2025)
  const w: Record<string, unknown> = {
    indexed: crossrefDate(indexed),
    'reference-count': 0,
    publisher,
    'content-domain': { domain: [], 'crossmark-restriction': false },
    DOI,
    type,
    created: crossrefDate(created),
    source: 'Crossref',
    'is-referenced-by-count': Math.floor(d.next() ** 4 * 2000),
    title: [title(d, foreign)],
    prefix,
    member,
    deposited: crossrefDate(deposited),
    score: 1,
    resource: { primary: { URL: encodeURI(`https://${publisher.split(' ')[0]!.toLowerCase()}.example.org/doi/${DOI}`) } },
    issued: { 'date-parts': [[published.y, published.m, published.d]] },
    'references-count': 0,
    URL: `https://doi.org/${encodeURI(DOI)}`,
    published: { 'date-parts': [[published.y, published.m, published.d]] }
  }
  const tail: string[] = []
  if (type !== 'book' || d.chance(0.5)) tail.push(`"author":${crossrefAuthors(d, p, foreign)}`)
  if (d.chance(0.6)) w.language = foreign ? d.pick(['ja', 'zh', 'ru', 'ko', 'el', 'ar']) : 'en'
  if (d.chance(0.3)) w.subtitle = [capital(words(d, d.int(3, 9)))]
  if (d.chance(0.5)) {
    w.license = [
      {
        start: { 'date-parts': [[published.y, published.m, published.d]] },
        'content-version': 'vor',
        'delay-in-days': 0,
        URL: d.pick(LICENSES)
      }
    ]
  }
  if (d.chance(0.4)) tail.push(`"abstract":${d.pick(p.abstracts)}`)
  if (d.chance(0.6)) {
    const [refs, n] = references(d, p)
    tail.push(`"reference":${refs}`)
    w['reference-count'] = n
    w['references-count'] = n
  }
  if (d.chance(0.3)) {
    w.funder = [
      {
        DOI: `10.13039/${d.int(100000000, 501100099999)}`,
        name: `${capital(d.pick(WORDS))} Research Council`,
        'doi-asserted-by': 'crossref',
        award: [`${d.int(100000, 999999)}`]
      }
    ]
  }
  if (d.chance(0.4)) {
    w.link = [
      {
        URL: `https://${publisher.split(' ')[0]!.toLowerCase()}.example.org/pdf/${encodeURI(DOI)}`,
        'content-type': 'application/pdf',
        'content-version': 'vor',
        'intended-application': 'text-mining'
      }
    ]
  }
  if (type === 'journal-article' || type === 'component') {
    const journal = d.skewed(JOURNALS, 2)
    const issn = [
      `${d.int(1000, 9999)}-${d.int(100, 999)}${d.pick(['0', '1', '5', 'X'])}`,
      `${d.int(1000, 9999)}-${d.int(100, 999)}${d.pick(['2', '4', 'X'])}`
    ]
    Object.assign(w, {
      'container-title': [journal],
      'short-container-title': [
        journal
          .split(' ')
          .map((x) => x.slice(0, 4))
          .join('. ')
      ],
      volume: String(d.int(1, 300)),
      issue: String(d.int(1, 12)),
      ISSN: issn,
      'issn-type': [
        { value: issn[0], type: 'print' },
        { value: issn[1], type: 'electronic' }
      ],
      'journal-issue': { issue: String(d.int(1, 12)), 'published-print': { 'date-parts': [[published.y, published.m]] } },
      'published-print': { 'date-parts': [[published.y, published.m, published.d]] },
      'published-online': { 'date-parts': [[published.y, published.m, Math.max(1, published.d - 3)]] },
      subject: [d.pick(SUBJECTS)],
      'alternative-id': [`S${d.int(1000000, 9999999)}`]
    })
    if (d.chance(0.8)) {
      const first = d.int(1, 2000)
      w.page = `${first}-${first + d.int(1, 30)}`
    } else {
      w['article-number'] = String(d.int(100000, 999999))
    }
  } else if (type === 'proceedings-article') {
    const name = `${year} ${d.pick(['IEEE', 'ACM', 'International'])} Conference on ${capital(words(d, 3))}`
    Object.assign(w, {
      'container-title': [`Proceedings of the ${name}`],
      event: { name, location: `${capital(d.pick(WORDS))}, ${capital(d.pick(WORDS))}`, start: { 'date-parts': [[year, published.m, 1]] } },
      ISBN: [`978${d.int(1000000000, 1999999999)}`],
      page: `${d.int(1, 900)}-${d.int(901, 999)}`
    })
  } else if (type === 'book-chapter' || type === 'book' || type === 'reference-entry') {
    if (type !== 'book') w['container-title'] = [capital(words(d, d.int(3, 8)))]
    Object.assign(w, {
      ISBN: [`978${d.int(1000000000, 1999999999)}`, `978${d.int(1000000000, 1999999999)}`],
      'publisher-location': capital(d.pick(WORDS))
    })
    if (d.chance(0.4)) {
      w.editor = Array.from({ length: d.int(1, 4) }, (_, k) => ({
        given: d.pick(GIVEN),
        family: d.skewed(FAMILY, 2),
        sequence: k === 0 ? 'first' : 'additional',
        affiliation: []
      }))
    }
    if (type !== 'book') w.page = `${d.int(1, 400)}-${d.int(401, 500)}`
  } else if (type === 'posted-content') {
    Object.assign(w, {
      subtype: 'preprint',
      institution: [{ name: d.pick(['bioRxiv', 'medRxiv', 'SSRN', 'Research Square']) }],
      'group-title': d.pick(SUBJECTS),
      posted: { 'date-parts': [[published.y, published.m, published.d]] }
    })
  } else if (type === 'dissertation') {
    Object.assign(w, { institution: [{ name: d.pick(INSTITUTIONS) }], degree: ['PhD'] })
  }
  const head = JSON.stringify(w)
  return tail.length === 0 ? head : `${head.slice(0, -1)},${tail.join(',')}}`
}

// ---- DataCite records ----

const DATACITE_TYPES: readonly [string, string, string, string, number][] = [
  // resourceTypeGeneral, citeproc, ris, schemaOrg, share
  ['Dataset', 'dataset', 'DATA', 'Dataset', 0.45],
  ['Text', 'article', 'RPRT', 'ScholarlyArticle', 0.2],
  ['Software', 'article', 'COMP', 'SoftwareSourceCode', 0.1],
  ['Image', 'graphic', 'FIGURE', 'ImageObject', 0.08],
  ['JournalArticle', 'article-journal', 'JOUR', 'ScholarlyArticle', 0.05],
  ['Collection', 'article', 'GEN', 'Collection', 0.04],
  ['PhysicalObject', 'article', 'GEN', 'Thing', 0.04],
  ['Other', 'article', 'GEN', 'CreativeWork', 0.04]
]

/** DataCite DOI `i`: a repository's prefix and pattern (`zenodo.N`, `arXiv.YYMM.NNNNN`, `PANGAEA.N`…), each holding `i`. */
export function dataciteDoiOf(seed: number, i: number): string {
  const d = new Draw(mix(seed, 3, i))
  const k = Math.floor(d.next() ** 1.5 * DATACITE_PREFIXES.length)
  const prefix = DATACITE_PREFIXES[k]!
  switch (prefix) {
    case '10.5281':
      return `${prefix}/zenodo.${1_000_000 + i}`
    case '10.48550':
      return `${prefix}/arXiv.${String(d.int(7, 25)).padStart(2, '0')}${String(d.int(1, 12)).padStart(2, '0')}.${String(i).padStart(5, '0')}`
    case '10.1594':
      return `${prefix}/PANGAEA.${800_000 + i}`
    case '10.6084':
      return `${prefix}/m9.figshare.${10_000_000 + i}.v${d.int(1, 3)}`
    case '10.5061':
      return `${prefix}/dryad.${i.toString(36)}${d.int(10, 99)}`
    default:
      return `${prefix}/${i.toString(36).toUpperCase().padStart(4, '0')}-${d.int(1000, 9999).toString(36)}`
  }
}

function dcCreator(d: Draw, foreign: boolean): Record<string, unknown> {
  if (d.chance(0.12)) {
    return {
      name: `${capital(d.pick(WORDS))} ${d.pick(['Consortium', 'Project', 'Survey', 'Observatory'])}`,
      nameType: 'Organizational',
      affiliation: [],
      nameIdentifiers: []
    }
  }
  const familyName = foreign && d.chance(0.7) ? foreignWords(d, 1) : d.chance(0.05) ? d.pick(ACCENTED) : d.skewed(FAMILY, 2)
  const givenName = d.pick(GIVEN)
  return {
    name: `${familyName}, ${givenName}`,
    nameType: 'Personal',
    givenName,
    familyName,
    affiliation: d.chance(0.5) ? [{ name: d.pick(INSTITUTIONS) }] : [],
    nameIdentifiers: d.chance(0.3)
      ? [
          {
            nameIdentifier: `https://orcid.org/0000-000${d.int(1, 3)}-${d.int(1000, 9999)}-${d.int(1000, 9999)}`,
            nameIdentifierScheme: 'ORCID',
            schemeUri: 'https://orcid.org'
          }
        ]
      : []
  }
}

function dcUpdated(d: Draw, fileIndex: number, files: number): Day {
  // Files by month of last update, oldest first, as DataCite's `dois/updated_YYYY-MM/` folders.
  const months = 15 * 12
  const m = Math.floor((fileIndex * months) / Math.max(1, files))
  return { y: 2011 + Math.floor(m / 12), m: (m % 12) + 1, d: d.int(1, 28) }
}

/** DataCite record `i` as a line of its public data file (`{"id","type":"dois","attributes",…}`), last updated on `updated`. */
export function dataciteRecord(seed: number, i: number, updated: Day): Record<string, unknown> {
  const doi = dataciteDoiOf(seed, i)
  const d = new Draw(mix(seed, 4, i))
  let u = d.next()
  const [general, citeproc, ris, schemaOrg] = DATACITE_TYPES.find((t) => (u -= t[4]) < 0) ?? DATACITE_TYPES[0]!
  const foreign = d.chance(0.05)
  const year = Math.min(updated.y, yearOf(d))
  const client = DATACITE_CLIENTS[DATACITE_PREFIXES.indexOf(doi.slice(0, doi.indexOf('/')))] ?? 'demo.client'
  const created: Day = { y: year, m: d.int(1, 12), d: d.int(1, 28) }
  const url = `https://${client.split('.')[0]}.example.org/record/${encodeURIComponent(doi.slice(doi.indexOf('/') + 1))}`
  const titles: Record<string, unknown>[] = [{ title: foreign ? foreignWords(d, d.int(4, 10)) : capital(words(d, d.int(4, 14))) }]
  if (d.chance(0.15)) titles.push({ title: capital(words(d, d.int(3, 8))), titleType: 'Subtitle' })
  const attributes: Record<string, unknown> = {
    doi,
    identifiers: [{ identifier: url, identifierType: 'URL' }],
    creators: Array.from({ length: d.chance(0.002) ? d.int(100, 600) : Math.min(d.geometric(3), 60) }, () => dcCreator(d, foreign)),
    titles,
    publisher: d.pick(['Zenodo', 'figshare', 'PANGAEA', 'Dryad', 'OSF', 'arXiv', 'GBIF', 'GESIS']),
    container: d.chance(0.1)
      ? {
          type: 'Series',
          title: capital(words(d, 5)),
          volume: String(d.int(1, 50)),
          firstPage: String(d.int(1, 100)),
          lastPage: String(d.int(101, 200))
        }
      : {},
    publicationYear: year,
    subjects: Array.from({ length: d.int(0, 4) }, () => ({ subject: d.pick(SUBJECTS) })),
    contributors: d.chance(0.2) ? [{ ...dcCreator(d, false), contributorType: d.pick(['Editor', 'ContactPerson', 'DataCurator']) }] : [],
    dates: [
      { date: iso(created).slice(0, 10), dateType: 'Issued' },
      ...(d.chance(0.3) ? [{ date: iso(created).slice(0, 10), dateType: 'Created' }] : [])
    ],
    language: d.chance(0.5) ? (foreign ? d.pick(['ja', 'zh', 'ru', 'ko']) : 'en') : null,
    types: { ris, bibtex: general === 'JournalArticle' ? 'article' : 'misc', citeproc, schemaOrg, resourceTypeGeneral: general },
    relatedIdentifiers: Array.from({ length: d.chance(0.5) ? d.int(1, 5) : 0 }, () => ({
      relationType: d.pick(['IsSupplementTo', 'IsPartOf', 'References', 'IsVersionOf', 'IsCitedBy']),
      relatedIdentifier: d.chance(0.6)
        ? crossrefDoiOf(seed, d.int(0, 150_000_000))
        : `https://github.com/${d.pick(WORDS)}/${d.pick(WORDS)}`,
      relatedIdentifierType: 'DOI'
    })),
    sizes: d.chance(0.3) ? [`${d.int(1, 999)} ${d.pick(['KB', 'MB', 'GB'])}`] : [],
    formats: d.chance(0.3) ? [d.pick(['text/csv', 'application/zip', 'image/tiff', 'application/x-netcdf'])] : [],
    version: d.chance(0.25) ? `v${d.int(1, 5)}.${d.int(0, 9)}.${d.int(0, 9)}` : null,
    rightsList: [
      {
        rights: 'Creative Commons Attribution 4.0 International',
        rightsUri: 'https://creativecommons.org/licenses/by/4.0/legalcode',
        rightsIdentifier: 'cc-by-4.0'
      }
    ],
    descriptions: d.chance(0.6)
      ? [{ description: Array.from({ length: d.int(2, 12) }, () => sentence(d, d.int(8, 25))).join(' '), descriptionType: 'Abstract' }]
      : [],
    geoLocations: d.chance(0.1)
      ? [
          {
            geoLocationPoint: { pointLatitude: String(d.int(-90, 90)), pointLongitude: String(d.int(-180, 180)) },
            geoLocationPlace: capital(d.pick(WORDS))
          }
        ]
      : [],
    fundingReferences: d.chance(0.1)
      ? [{ funderName: `${capital(d.pick(WORDS))} Foundation`, awardNumber: String(d.int(10000, 99999)) }]
      : [],
    url,
    contentUrl: null,
    metadataVersion: d.int(0, 9),
    schemaVersion: 'http://datacite.org/schema/kernel-4',
    source: d.pick(['mds', 'api', 'fabricaForm']),
    isActive: true,
    state: 'findable',
    reason: null,
    viewCount: 0,
    downloadCount: 0,
    referenceCount: 0,
    citationCount: Math.floor(d.next() ** 6 * 100),
    created: iso(created, '10:00:00').replace('Z', '.000Z'),
    registered: iso(created, '10:00:01').replace('Z', '.000Z'),
    published: String(year),
    updated: iso(updated, '11:27:14').replace('Z', '.000Z')
  }
  return { id: doi, type: 'dois', attributes, relationships: { client: { data: { id: client, type: 'clients' } } } }
}

// ---- writing ----

/**
 * One gzipped file made from text as it comes: text is gathered into 1 MiB pieces, each compressed on libuv's
 * threads while the next is made; only the compressed bytes are held (a tar entry needs its size first).
 */
class GzipFile {
  private readonly z = createGzip()
  private readonly out: Buffer[] = []
  private pending: string[] = []
  private pendingChars = 0
  private flowing: Promise<unknown> = Promise.resolve()
  bytes = 0
  constructor() {
    this.z.on('data', (c: Buffer) => this.out.push(c))
  }
  async write(text: string): Promise<void> {
    this.pending.push(text)
    this.pendingChars += text.length
    if (this.pendingChars >= 1024 * 1024) await this.flush()
  }
  async finish(): Promise<Buffer> {
    await this.flush()
    await this.flowing
    const ended = once(this.z, 'end')
    this.z.end()
    await ended
    return Buffer.concat(this.out)
  }
  private async flush(): Promise<void> {
    const piece = Buffer.from(this.pending.join(''))
    this.pending = []
    this.pendingChars = 0
    this.bytes += piece.length
    await this.flowing // the piece before has been taken by zlib: one compressing, one being made
    this.flowing = this.z.write(piece) ? Promise.resolve() : once(this.z, 'drain')
  }
}

/** A tar written entry by entry (tar's Header for the 512-byte headers), never holding more than one entry. */
class TarWriter {
  private readonly out
  constructor(path: string) {
    this.out = createWriteStream(path)
  }
  async add(name: string, data: Buffer): Promise<void> {
    const header = new Header({
      path: name,
      mode: 0o644,
      size: data.length,
      mtime: new Date(Date.UTC(2025, 3, 30)),
      type: 'File',
      uid: 0,
      gid: 0,
      uname: '',
      gname: ''
    })
    header.encode()
    await this.write(header.block!)
    await this.write(data)
    const pad = (512 - (data.length % 512)) % 512
    if (pad > 0) await this.write(Buffer.alloc(pad))
  }
  async close(): Promise<void> {
    await this.write(Buffer.alloc(1024)) // two zero blocks: the end of the archive
    await new Promise<void>((resolve, reject) => this.out.end((err?: Error | null) => (err ? reject(err) : resolve())))
  }
  private write(b: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.out.write(b)) {
        resolve()
      } else {
        const failed = (err: Error): void => reject(err)
        this.out.once('error', failed)
        this.out.once('drain', () => {
          this.out.off('error', failed)
          resolve()
        })
      }
    })
  }
}

interface MadeFile {
  gz: Buffer
  /** The works' JSON alone, without the wrapper and commas. */
  jsonBytes: number
}

/** Crossref's file of works start … end − 1: `{"items":[…]}`, gzipped. */
async function crossrefFile(seed: number, start: number, end: number): Promise<MadeFile> {
  const file = new GzipFile()
  await file.write('{"items":[')
  for (let i = start; i < end; i++) await file.write(i === start ? crossrefWorkJson(seed, i) : `,${crossrefWorkJson(seed, i)}`)
  await file.write(']}')
  const gz = await file.finish()
  return { gz, jsonBytes: file.bytes - 12 - (end - start - 1) }
}

/**
 * `threads` worker threads running this file (through tsx, as the command line does), each making whole
 * files on request; a request goes to the thread with the fewest waiting.
 */
function fileMakers(threads: number): { make: typeof crossrefFile; close: () => Promise<void> } {
  const workers = Array.from({ length: threads }, () => {
    const w = new Worker(THREAD_SOURCE, { eval: true, workerData: { role: MAKER } })
    const waiting = new Map<number, { resolve: (m: MadeFile) => void; reject: (e: Error) => void }>()
    w.on('message', (m: { id: number; gz: Uint8Array; jsonBytes: number }) => {
      waiting.get(m.id)?.resolve({ gz: Buffer.from(m.gz.buffer, m.gz.byteOffset, m.gz.byteLength), jsonBytes: m.jsonBytes })
      waiting.delete(m.id)
    })
    w.on('error', (err) => {
      for (const p of waiting.values()) p.reject(err)
      waiting.clear()
    })
    return { w, waiting }
  })
  let ids = 0
  return {
    make: (seed, start, end) =>
      new Promise<MadeFile>((resolve, reject) => {
        const t = workers.reduce((a, b) => (b.waiting.size < a.waiting.size ? b : a))
        const id = ids++
        t.waiting.set(id, { resolve, reject })
        t.w.postMessage({ id, seed, start, end })
      }),
    close: async () => {
      await Promise.all(workers.map(({ w }) => w.terminate()))
    }
  }
}

const MAKER = 'crossref-file-maker'
/** Node 20 does not give a worker `--import tsx`'s hooks before its entry: the thread registers tsx, then loads this file. */
const THREAD_SOURCE = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))})
  .then(({ register }) => { register(); return import(${JSON.stringify(import.meta.url)}) })`

if (!isMainThread && (workerData as { role?: unknown } | null)?.role === MAKER) {
  parentPort!.on('message', async (m: { id: number; seed: number; start: number; end: number }) => {
    const { gz, jsonBytes } = await crossrefFile(m.seed, m.start, m.end)
    parentPort!.postMessage({ id: m.id, gz, jsonBytes }) // copied: a small Buffer may share a pool
  })
}

export interface GenerateOptions {
  seed: number
  works: number
  /** The share of DataCite records, 0–1. */
  datacite: number
  out: string
  force?: boolean
  /** Items per file (5,000 Crossref works, 10,000 DataCite lines as the agencies' files): smaller in tests. */
  perFile?: { crossref: number; datacite: number }
  /** Called every few seconds and at the end of each part. */
  progress?: (line: string) => void
  /** Threads making Crossref's files (default 1); each file is made from its works' own streams, so the bytes are the same. */
  threads?: number
}

export interface GenerateReport {
  seed: number
  works: number
  datacite: number
  version: number
  perFile: { crossref: number; datacite: number }
  crossref: { works: number; files: number; jsonBytes: number; gzBytes: number }
  dataciteRecords: { records: number; files: number; jsonBytes: number; gzBytes: number; stateRows: number }
  /** Mean bytes of one Crossref work's JSON (the issue's "field shapes of real works"; Crossref 2024: ~7–9 KB). */
  meanWorkBytes: number
  meanDataciteBytes: number
  seconds: number
  worksPerSecond: number
  cached: boolean
}

/** Makes the files (or finds them made): see the head of this file. */
export async function generate(opts: GenerateOptions): Promise<GenerateReport> {
  const manifestPath = join(opts.out, 'manifest.json')
  if (opts.force !== true) {
    const held = await readFile(manifestPath, 'utf8').then(
      (t) => JSON.parse(t) as GenerateReport,
      () => undefined
    )
    const perFile = opts.perFile ?? { crossref: CROSSREF_PER_FILE, datacite: DATACITE_PER_FILE }
    const same =
      held !== undefined &&
      held.version === VERSION &&
      held.seed === opts.seed &&
      held.works === opts.works &&
      held.datacite === opts.datacite &&
      held.perFile.crossref === perFile.crossref &&
      held.perFile.datacite === perFile.datacite
    if (same) return { ...held, cached: true }
  }
  await mkdir(opts.out, { recursive: true })
  await rm(manifestPath, { force: true })
  const started = process.hrtime.bigint()
  const crPerFile = opts.perFile?.crossref ?? CROSSREF_PER_FILE
  const dcPerFile = opts.perFile?.datacite ?? DATACITE_PER_FILE
  const dataciteCount = Math.round(opts.works * opts.datacite)
  const crossrefCount = opts.works - dataciteCount
  const elapsed = (): number => Number(process.hrtime.bigint() - started) / 1e9
  let lastReport = 0
  const say = (done: number, part: string, total: number): void => {
    if (opts.progress === undefined || elapsed() - lastReport < 5) return
    lastReport = elapsed()
    const all = crossrefCount + dataciteCount
    const doneAll = part === 'crossref' ? done : crossrefCount + done
    const rate = doneAll / elapsed()
    opts.progress(
      `${part} ${done.toLocaleString('en')}/${total.toLocaleString('en')} · ${Math.round(rate).toLocaleString('en')} works/s · ETA ${Math.round((all - doneAll) / rate)} s`
    )
  }

  // Crossref: N.json.gz of 5,000 works each.
  const crossref = { works: crossrefCount, files: 0, jsonBytes: 0, gzBytes: 0 }
  const crTar = new TarWriter(join(opts.out, 'crossref-annual.tar.partial'))
  const makeFile = opts.threads !== undefined && opts.threads > 1 ? fileMakers(opts.threads) : { make: crossrefFile, close: async () => {} }
  const ranges: Array<[number, number]> = []
  for (let start = 0; start < crossrefCount; start += crPerFile) ranges.push([start, Math.min(crossrefCount, start + crPerFile)])
  try {
    // Files are asked for ahead (two a thread) and added to the tar in order.
    const ahead = Math.max(1, 2 * (opts.threads ?? 1))
    const made: Array<Promise<MadeFile>> = ranges.slice(0, ahead).map(([s, e]) => makeFile.make(opts.seed, s, e))
    for (let k = 0; k < ranges.length; k++) {
      const { gz, jsonBytes } = await made[k]!
      const next = ranges[k + ahead]
      if (next !== undefined) made.push(makeFile.make(opts.seed, next[0], next[1]))
      made[k] = undefined as unknown as Promise<MadeFile> // let the bytes go once written
      crossref.jsonBytes += jsonBytes
      await crTar.add(`${crossref.files++}.json.gz`, gz)
      crossref.gzBytes += gz.length
      say(ranges[k]![1], 'crossref', crossrefCount)
    }
  } finally {
    await makeFile.close()
  }
  await crTar.close()

  // DataCite: dois/updated_YYYY-MM/part_NNNN.jsonl.gz of 10,000 lines, and the DOI/state CSV.
  const dc = { records: dataciteCount, files: 0, jsonBytes: 0, gzBytes: 0, stateRows: 0 }
  const dcTar = new TarWriter(join(opts.out, 'datacite.tar.partial'))
  const csv = createWriteStream(join(opts.out, 'datacite-states.csv.partial'))
  const csvWrite = (text: string): Promise<void> =>
    new Promise((resolve) => {
      if (csv.write(text)) resolve()
      else csv.once('drain', resolve)
    })
  await csvWrite('doi,state,client_id,updated\n')
  const files = Math.ceil(dataciteCount / dcPerFile)
  let month = ''
  let part = 0
  for (let f = 0; f < files; f++) {
    const start = f * dcPerFile
    const file = new GzipFile()
    const rows: string[] = []
    const d = new Draw(mix(opts.seed, 5, f))
    const end = Math.min(dataciteCount, start + dcPerFile)
    for (let i = start; i < end; i++) {
      const updated = dcUpdated(d, f, files)
      const record = dataciteRecord(opts.seed, i, updated)
      const a = record.attributes as { doi: string; updated: string }
      const client = (record.relationships as { client: { data: { id: string } } }).client.data.id
      await file.write(`${JSON.stringify(record)}\n`)
      rows.push(`${a.doi},findable,${client},${a.updated}\n`)
      // DOIs the JSON lines leave out: Registered (no public URL) and Draft (not yet a DOI).
      if (d.chance(0.03)) rows.push(`10.80000/registered-${opts.seed}-${i},registered,demo.client,${a.updated}\n`)
      if (d.chance(0.01)) rows.push(`10.80000/draft-${opts.seed}-${i},draft,demo.client,${a.updated}\n`)
    }
    const gz = await file.finish()
    dc.jsonBytes += file.bytes - (end - start)
    dc.stateRows += rows.length
    const updated = dcUpdated(d, f, files)
    const m = `${updated.y}-${String(updated.m).padStart(2, '0')}`
    part = m === month ? part + 1 : 0
    month = m
    await dcTar.add(`dois/updated_${m}/part_${String(part).padStart(4, '0')}.jsonl.gz`, gz)
    await csvWrite(rows.join(''))
    dc.files++
    dc.gzBytes += gz.length
    say(end, 'datacite', dataciteCount)
  }
  await dcTar.close()
  await new Promise<void>((resolve, reject) => csv.end((err?: Error | null) => (err ? reject(err) : resolve())))

  for (const name of ['crossref-annual.tar', 'datacite.tar', 'datacite-states.csv']) {
    await rename(join(opts.out, `${name}.partial`), join(opts.out, name))
  }
  const secs = elapsed()
  const report: GenerateReport = {
    seed: opts.seed,
    works: opts.works,
    datacite: opts.datacite,
    version: VERSION,
    perFile: { crossref: crPerFile, datacite: dcPerFile },
    crossref,
    dataciteRecords: dc,
    meanWorkBytes: crossrefCount === 0 ? 0 : Math.round(crossref.jsonBytes / crossrefCount),
    meanDataciteBytes: dataciteCount === 0 ? 0 : Math.round(dc.jsonBytes / dataciteCount),
    seconds: Math.round(secs * 10) / 10,
    worksPerSecond: Math.round(opts.works / secs),
    cached: false
  }
  await writeFile(manifestPath, `${JSON.stringify(report, null, 2)}\n`)
  return report
}

// ---- reading them back, as the importer's mappers read them ----

export interface CheckReport {
  crossref: { entries: number; items: number; records: number; problems: string[] }
  datacite: { entries: number; lines: number; records: number; problems: string[] }
  states: { rows: number; registered: number; findableOrDraft: number; problems: string[] }
  /** Works with each shape: the issue's "long author lists, abstracts, many references" and the rest of §6. */
  shapes: {
    over100Authors: number
    over3000Authors: number
    abstracts: number
    withReferences: number
    over500References: number
    sici: number
    nonLatinTitles: number
    markupTitles: number
  }
  /** DOIs seen twice (checked up to 2 M records: the set's memory). */
  duplicateDois: number
}

/** Each tar entry in turn, its bytes whole (one entry at a time). */
async function eachEntry(path: string, onEntry: (name: string, data: Buffer) => void): Promise<void> {
  const parser = new Parser({
    onReadEntry: (entry: ReadEntry) => {
      const chunks: Buffer[] = []
      entry.on('data', (c: Buffer) => chunks.push(c))
      entry.on('end', () => onEntry(entry.path, Buffer.concat(chunks)))
    }
  })
  await pipeline(createReadStream(path), parser)
}

export async function checkCopyFiles(dir: string): Promise<CheckReport> {
  const r: CheckReport = {
    crossref: { entries: 0, items: 0, records: 0, problems: [] },
    datacite: { entries: 0, lines: 0, records: 0, problems: [] },
    states: { rows: 0, registered: 0, findableOrDraft: 0, problems: [] },
    shapes: {
      over100Authors: 0,
      over3000Authors: 0,
      abstracts: 0,
      withReferences: 0,
      over500References: 0,
      sici: 0,
      nonLatinTitles: 0,
      markupTitles: 0
    },
    duplicateDois: 0
  }
  const seen = new Set<string>()
  const once = (doi: string): void => {
    if (seen.size >= 2_000_000) return
    const k = doi.toLowerCase()
    if (seen.has(k)) r.duplicateDois++
    else seen.add(k)
  }
  const opts = { abstracts: true }
  await eachEntry(join(dir, 'crossref-annual.tar'), (name, data) => {
    r.crossref.entries++
    const items = (JSON.parse(gunzipSync(data).toString('utf8')) as { items: Record<string, unknown>[] }).items
    for (const w of items) {
      r.crossref.items++
      const m = crossrefRecordOf(w, opts)
      if (typeof m === 'string') {
        if (r.crossref.problems.length < 20) r.crossref.problems.push(`${name}: ${m}`)
        continue
      }
      r.crossref.records++
      once(m.doi)
      const authors = Array.isArray(w.author) ? w.author.length : 0
      const refs = Array.isArray(w.reference) ? w.reference.length : 0
      const t = String((w.title as unknown[] | undefined)?.[0] ?? '')
      if (authors > 100) r.shapes.over100Authors++
      if (authors > 3000) r.shapes.over3000Authors++
      if (typeof w.abstract === 'string') r.shapes.abstracts++
      if (refs > 0) r.shapes.withReferences++
      if (refs > 500) r.shapes.over500References++
      if (m.doi.includes('(SICI)')) r.shapes.sici++
      if (/[^\u0020-\u024f\u2013]/.test(t)) r.shapes.nonLatinTitles++
      if (/<(i|sub|mml:math)\b/.test(t)) r.shapes.markupTitles++
    }
  })
  await eachEntry(join(dir, 'datacite.tar'), (name, data) => {
    r.datacite.entries++
    for (const line of gunzipSync(data).toString('utf8').split('\n')) {
      if (line === '') continue
      r.datacite.lines++
      const m = dataciteRecordOf(JSON.parse(line) as unknown, opts)
      if (typeof m === 'string') {
        if (r.datacite.problems.length < 20) r.datacite.problems.push(`${name}: ${m}`)
        continue
      }
      r.datacite.records++
      once(m.doi)
    }
  })
  const csv = await readFile(join(dir, 'datacite-states.csv'), 'utf8')
  const [head = '', ...rows] = csv.split('\n')
  const columns = head.split(',')
  for (const row of rows) {
    if (row === '') continue
    r.states.rows++
    const cells = row.split(',')
    const m = dataciteStateOf(Object.fromEntries(columns.map((c, k) => [c, cells[k]])))
    if (m === undefined) r.states.findableOrDraft++
    else if (typeof m === 'string') {
      if (r.states.problems.length < 20) r.states.problems.push(m)
    } else r.states.registered++
  }
  return r
}

// ---- the command ----

function parseArgs(argv: string[]): GenerateOptions & { check: boolean } {
  const opts = { seed: 43, works: 200_000, datacite: 0.15, out: '', force: false, check: false, threads: availableParallelism() }
  const whole = (name: string, v: string, min: number): number => {
    const n = Number(v)
    if (!Number.isInteger(n) || n < min) throw new Error(`${name} wants a whole number ≥ ${min}, got "${v}"`)
    return n
  }
  forEachOption(argv, HELP, (arg, value) => {
    if (arg === '--seed') opts.seed = whole(arg, value(), 0)
    else if (arg === '--works') opts.works = whole(arg, value(), 1)
    else if (arg === '--datacite') {
      const v = value()
      opts.datacite = Number(v)
      if (!(opts.datacite >= 0 && opts.datacite <= 1)) throw new Error(`--datacite wants a share from 0 to 1, got "${v}"`)
    } else if (arg === '--out') opts.out = resolve(value())
    else if (arg === '--force') opts.force = true
    else if (arg === '--check') opts.check = true
    else if (arg === '--threads') opts.threads = whole(arg, value(), 1)
    else return false
    return true
  })
  const root = fileURLToPath(new URL('../..', import.meta.url))
  return { ...opts, out: opts.out === '' ? join(root, 'bench', '.tmp', `copy-${opts.seed}-${opts.works}`) : opts.out }
}

const MB = 1024 * 1024

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2))
  const r = await generate({ ...opts, progress: (line) => process.stderr.write(`${line}\n`) })
  const lines = [
    r.cached ? `${opts.out}: made before (seed ${r.seed}, ${r.works.toLocaleString('en')} works); --force makes it again` : `${opts.out}`,
    `crossref  ${r.crossref.works.toLocaleString('en')} works in ${r.crossref.files} files: ${(r.crossref.jsonBytes / MB).toFixed(0)} MB of JSON, ${(r.crossref.gzBytes / MB).toFixed(0)} MB gzipped`,
    `datacite  ${r.dataciteRecords.records.toLocaleString('en')} records in ${r.dataciteRecords.files} files: ${(r.dataciteRecords.jsonBytes / MB).toFixed(0)} MB of JSON, ${(r.dataciteRecords.gzBytes / MB).toFixed(0)} MB gzipped; ${r.dataciteRecords.stateRows.toLocaleString('en')} state rows`,
    `mean work size ${r.meanWorkBytes.toLocaleString('en')} B (Crossref), ${r.meanDataciteBytes.toLocaleString('en')} B (DataCite)`,
    r.cached ? '' : `made in ${r.seconds} s: ${r.worksPerSecond.toLocaleString('en')} works/s`
  ]
  process.stdout.write(`${lines.filter((l) => l !== '').join('\n')}\n`)
  if (opts.check) {
    const c = await checkCopyFiles(opts.out)
    process.stdout.write(`check ${JSON.stringify(c, null, 2)}\n`)
    const ok =
      c.crossref.records === r.crossref.works &&
      c.datacite.records === r.dataciteRecords.records &&
      c.duplicateDois === 0 &&
      c.states.problems.length === 0
    if (!ok) throw new Error('the files are not read back whole by the mappers')
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  })
}
