/**
 * The quality of `check --verify metadata` on the labelled corpus (issue 41, plan §6): detection (references
 * that name another work or give wrong details, flagged `mismatch`), false alarms (genuine ones flagged), whether
 * a mismatch is told apart as `other-work` or `details`, per perturbation, per kind and per registry quirk. The
 * title constants are chosen by a grid search on the dev split and reported on the held-out test split, then on
 * HALLMARK's own perturbations of the same works (never tuned on). Writes bench/VERIFY-QUALITY.md.
 *
 * Usage: node --import tsx bench/verify-quality.ts [--seed 41] [--size 4000] [--no-write] [--wrong N] [--split dev|test|hallmark]
 */
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { compareCited } from '../src/handle/verify/compare.js'
import { registeredWorkOf } from '../src/handle/verify/csl.js'
import { TITLE_RULES } from '../src/handle/verify/title.js'
import type { TitleRules } from '../src/handle/verify/title.js'
import type { MetadataResult } from '../src/handle/verify/types.js'
import { generateCorpus, hallmarkCorpus, loadWorks } from './verify-corpus/generate.js'
import type { CorpusEntry } from './verify-corpus/generate.js'

export interface Tally {
  total: number
  flagged: number
  /** Flagged with the kind expected (details or other-work). */
  rightKind: number
}

export interface Quality {
  entries: number
  /** References that are not genuine (another work, wrong details) flagged `mismatch`. */
  detection: number
  /** References naming another work flagged `mismatch`. */
  otherWorkDetection: number
  /** Real works cited with a wrong year or first author flagged `mismatch`. */
  detailsDetection: number
  /** Genuine references flagged `mismatch`. */
  falseAlarms: number
  /** Another work flagged with kind `other-work`, over every reference naming another work. */
  otherWorkAsOtherWork: number
  /** Wrong details flagged with kind `details`, over every reference with wrong details. */
  detailsAsDetails: number
  counts: { genuine: number; details: number; otherWork: number }
  /** Per label and perturbation or kind, and per registry quirk of genuine references. */
  byCategory: Map<string, Tally & { label: string }>
  /** The first wrong verdicts, for reading. */
  wrong: { entry: CorpusEntry; result: MetadataResult }[]
}

export function verdictOf(entry: CorpusEntry, rules: TitleRules = TITLE_RULES): MetadataResult {
  return compareCited(entry.cited, registeredWorkOf(entry.registered), rules)
}

export function measure(entries: readonly CorpusEntry[], rules: TitleRules = TITLE_RULES, keepWrong = 0): Quality {
  const n = { genuine: 0, genuineFlagged: 0, details: 0, detailsFlagged: 0, detailsKind: 0, other: 0, otherFlagged: 0, otherKind: 0 }
  const byCategory = new Map<string, Tally & { label: string }>()
  const wrong: Quality['wrong'] = []
  const count = (key: string, label: string, flagged: boolean, rightKind: boolean): void => {
    const tally = byCategory.get(key) ?? { label, total: 0, flagged: 0, rightKind: 0 }
    tally.total++
    if (flagged) tally.flagged++
    if (rightKind) tally.rightKind++
    byCategory.set(key, tally)
  }
  for (const entry of entries) {
    const result = verdictOf(entry, rules)
    const flagged = result.verdict === 'mismatch'
    const rightKind = flagged && result.kind === entry.expect.kind
    for (const category of entry.perturbations.length === 0 ? ['(none)'] : entry.perturbations) {
      count(`${entry.label}:${category}`, entry.label, flagged, rightKind)
    }
    if (entry.label === 'genuine') {
      for (const quirk of new Set(entry.quirks)) count(`registry:${quirk}`, 'genuine', flagged, false)
      n.genuine++
      if (flagged) n.genuineFlagged++
    } else if (entry.label === 'details') {
      n.details++
      if (flagged) n.detailsFlagged++
      if (rightKind) n.detailsKind++
    } else {
      n.other++
      if (flagged) n.otherFlagged++
      if (rightKind) n.otherKind++
    }
    const right = entry.label === 'genuine' ? !flagged : rightKind
    if (!right && wrong.length < keepWrong) wrong.push({ entry, result })
  }
  const share = (part: number, whole: number): number => (whole === 0 ? 0 : part / whole)
  return {
    entries: entries.length,
    detection: share(n.detailsFlagged + n.otherFlagged, n.details + n.other),
    otherWorkDetection: share(n.otherFlagged, n.other),
    detailsDetection: share(n.detailsFlagged, n.details),
    falseAlarms: share(n.genuineFlagged, n.genuine),
    otherWorkAsOtherWork: share(n.otherKind, n.other),
    detailsAsDetails: share(n.detailsKind, n.details),
    counts: { genuine: n.genuine, details: n.details, otherWork: n.other },
    byCategory,
    wrong
  }
}

/** The grid searched on the dev split: coverage, unexplained words allowed, typo bounds (by the registered word's length). */
export function gridOf(): TitleRules[] {
  const grid: TitleRules[] = []
  const typoBounds: (readonly (readonly [number, number])[])[] = [
    [
      [9, 2],
      [4, 1]
    ],
    [
      [8, 2],
      [4, 1]
    ],
    [
      [7, 2],
      [4, 1]
    ],
    [
      [6, 2],
      [4, 1]
    ],
    [
      [6, 2],
      [5, 1]
    ],
    [
      [5, 2],
      [4, 1]
    ]
  ]
  for (const minCoverage of [0.4, 0.5, 0.6, 0.7]) {
    for (const maxUnexplained of [0, 1]) {
      for (const typos of typoBounds) grid.push({ ...TITLE_RULES, minCoverage, maxUnexplained, typos })
    }
  }
  return grid
}

/** Both bounds asked on dev (a margin over the gate's 0.95 and 5 %). */
const meetsDev = (q: Quality): boolean => q.detection >= 0.97 && q.otherWorkDetection >= 0.97 && q.falseAlarms <= 0.03

/** The rules of the grid on `entries`, best first: those meeting the dev bounds, then the most detection less false alarms. */
export function tune(entries: readonly CorpusEntry[]): { rules: TitleRules; quality: Quality }[] {
  return gridOf()
    .map((rules) => ({ rules, quality: measure(entries, rules) }))
    .sort(
      (a, b) =>
        Number(meetsDev(b.quality)) - Number(meetsDev(a.quality)) ||
        b.quality.detection - b.quality.falseAlarms - (a.quality.detection - a.quality.falseAlarms)
    )
}

const percent = (x: number): string => `${(x * 100).toFixed(1)} %`
const rulesText = (rules: TitleRules): string =>
  `minCoverage ${rules.minCoverage}, maxUnexplained ${rules.maxUnexplained}, typos ${rules.typos.map(([n, d]) => `≤${d} from ${n} letters`).join(', ')}`

function headline(name: string, q: Quality, bold = false): string {
  const b = (text: string): string => (bold ? `**${text}**` : text)
  return `| ${name} | ${q.entries} (${q.counts.genuine} / ${q.counts.details} / ${q.counts.otherWork}) | ${b(percent(q.detection))} | ${percent(q.otherWorkDetection)} | ${percent(q.detailsDetection)} | ${b(percent(q.falseAlarms))} | ${percent(q.otherWorkAsOtherWork)} | ${percent(q.detailsAsDetails)} |`
}

function categoryRows(dev: Quality, test: Quality, prefix: (key: string) => boolean): string[] {
  const keys = [...new Set([...dev.byCategory.keys(), ...test.byCategory.keys()])].filter(prefix).sort()
  const cell = (q: Quality, key: string): string => {
    const t = q.byCategory.get(key)
    if (t === undefined) return '–'
    return key.startsWith('genuine') || key.startsWith('registry') ? `${t.flagged}/${t.total}` : `${t.flagged}/${t.total} (${t.rightKind})`
  }
  return keys.map((key) => {
    const at = key.indexOf(':')
    return `| ${key.slice(0, at)} | ${key.slice(at + 1)} | ${cell(dev, key)} | ${cell(test, key)} |`
  })
}

function report(
  seed: number,
  size: number,
  dev: Quality,
  test: Quality,
  hallmark: Quality,
  best: { rules: TitleRules; quality: Quality }[]
): string {
  const hallmarkRows = [...hallmark.byCategory.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, t]) => {
      const at = key.indexOf(':')
      const [label, type] = [key.slice(0, at), key.slice(at + 1)]
      const what =
        label === 'genuine'
          ? `${t.flagged}/${t.total} flagged (false alarms)`
          : `${t.flagged}/${t.total} flagged, ${t.rightKind} as ${label}`
      return `| ${type} | ${label === 'genuine' ? 'match' : label} | ${what} |`
    })
  // HALLMARK's near-miss titles: how many change only function words or endings (a slip here), how many it flags.
  const near = [...hallmark.byCategory.entries()].filter(([key]) => key.includes(':near_miss_title'))
  const nearTotal = near.reduce((sum, [, t]) => sum + t.total, 0)
  const nearSlips = near.filter(([key]) => key.includes('a slip')).reduce((sum, [, t]) => sum + t.total, 0)
  const nearFlagged = near.reduce((sum, [, t]) => sum + t.flagged, 0)
  const works = loadWorks()
  const fields = new Map<string, number>()
  for (const work of works) fields.set(work.field, (fields.get(work.field) ?? 0) + 1)
  return `# The quality of \`check --verify metadata\`

Written by \`node --import tsx bench/verify-quality.ts\` (\`npm run bench:verify-quality\`), seed ${seed}, ${size} entries; the
gate is test/handle/verify/quality.test.ts. No language model, no network: \`compareCited\` over CSL-JSON records
(\`registeredWorkOf\`), as \`check --verify metadata\` runs it.

**The registry is real.** ${works.length} works that the HALLMARK benchmark of hallucinated references checked against
DBLP, bioRxiv, PubMed and Crossref (github.com/rpatrik96/hallmark, MIT licence; derived once into
bench/verify-corpus/works.ndjson, see its README.md): ${[...fields].map(([field, count]) => `${field} ${count}`).join(', ')};
real titles (long ones, subtitles, formulae, Greek, ™, acronyms, bioRxiv and PubMed sentence case) and real authors
(particles, double family names, diacritics, CJK names). Each record is written as CSL-JSON with the quirks registries
have (a subtitle apart, title arrays, \`<i>\`, \`<jats:italic>\`, \`<sub>\`, MathML, capitals, a full stop, line breaks,
online-first years, a particle kept with the given name, a CJK name swapped).

**The citations are generated** from those records (bench/verify-corpus/generate.ts): 50 % genuine with 0–3 of the
changes people make, 15 % a real work with wrong details (year 2–5 off, a co-author cited first, an invented first
author), 35 % a real DOI under another work's title (invented on the same topic around the work's key words,
the most similar real title of the same field, one key word replaced by another word of the field or by a real word
two letters away, a chimera of two real titles, a sequel's number or version, the DOI of the neighbouring work of the
same venue). Split by work (FNV-1a(id) % 5): every citation of a test work is in **test**;
the title constants (src/handle/verify/title.ts \`TITLE_RULES\`) were chosen on **dev**.

**An outside view:** HALLMARK's own perturbations of the works we hold (${hallmark.entries} entries of its public splits whose
DOI is one of those works; bench/verify-corpus/hallmark-cases.ndjson), made by others, never tuned on.

| set | entries (genuine / details / other work) | detection (not genuine, flagged) | other work flagged | wrong details flagged | false alarms (genuine flagged) | other work told as other-work | details told as details |
|---|---|---|---|---|---|---|---|
${headline('dev', dev)}
${headline('test (held out)', test, true)}
${headline('HALLMARK (outside)', hallmark)}

Before this corpus, the matcher (commit f35375f, tuned on a synthetic registry where it scored 100 % / 0 %) scored on
the same test split: detection 96.8 %, other work flagged 95.6 %, false alarms **14.3 %** (initials for words: 15 of
15 flagged, two slips in a word 33/36, a slip in a name 11/18; a real main title under another subtitle passed when
the record gave its subtitle apart). The rules added since (src/handle/verify/title.ts, people.ts, normalise.ts, each
with vectors in their tests) are named in the category table's rows.

Goal (issue 41): detection ≥ 95 %, false alarms ≤ 5 % on the held-out split; the gate also asks ≥ 95 % of other works
flagged and told as other-work, and of wrong details told as details. On dev the margin asked is ≥ 97 % and ≤ 3 %.

Rules in force: ${rulesText(TITLE_RULES)}; year ±1 of any of issued, online, print, posted; the first author's family name.

Best on dev in the grid (${gridOf().length} settings; detection / false alarms):

${best
  .slice(0, 5)
  .map(({ rules, quality }) => `- ${rulesText(rules)}: ${percent(quality.detection)} / ${percent(quality.falseAlarms)}`)
  .join('\n')}

## By category

A genuine entry counts under each of its changes (0–3; \`(none)\`: cited as registered) and each quirk of its record;
flagged there is a false alarm. On the other rows flagged is a detection, with (in brackets) how many were told as
the kind expected (details or other-work).

| label | change, kind or registry quirk | dev | test |
|---|---|---|---|
${categoryRows(dev, test, (key) => !key.startsWith('registry')).join('\n')}
${categoryRows(dev, test, (key) => key.startsWith('registry')).join('\n')}

## HALLMARK's perturbations, as a metadata check sees them

Each HALLMARK entry is compared with the plain record of the DOI it gives. What a metadata check can see decides the
label, field by field, by the corpus's own rule (bench/verify-corpus/generate.ts \`hallmarkCorpus\`), whatever
HALLMARK's type: a title with a content word the record's title lacks is another work; else a first author whose
family name changed or a year more than one off is wrong details; else (the venue, later authors, a title re-cased, or
changed only in function words or endings: "(title: a slip)") there is nothing to see and \`match\` is right. So the
same HALLMARK type can fall in several rows: its \`arxiv_version_mismatch\` entries with another paper's DOI are
another work here.

| HALLMARK type | expected | result |
|---|---|---|
${hallmarkRows.join('\n')}

## What this corpus cannot show

- The citations are generated: the changes are those the generator knows (listed above), at rates it chose. Real
  reference lists have their own mix, and errors no list names. A typo rate, an abbreviation habit or a citation
  style it lacks would move the false alarms.
- The registry is real but narrow: mostly machine learning (2021–2026) and biomedicine; few old records, no
  non-English titles, no organisations as authors, no books, datasets or DataCite records. Its quirks are added by
  the generator at rates it chose, not sampled from Crossref.
- The title of one work may be cited in a version the DOI does not name (the arXiv title of a paper renamed at
  publication): the matcher flags it, rightly for the DOI, and the corpus has no such pairs to count.
- A fabricated title a typo away from the real one, or that only drops words, is counted genuine by design (a slip,
  not another work); so are ${nearSlips} of HALLMARK's ${nearTotal} near-miss titles (for → towards, Using → With,
  Privacy → Privacys), which HALLMARK counts as hallucinated: by its labels the matcher flags ${nearFlagged} of ${nearTotal}.
- Two slips in one word are forgiven from six letters when they keep the first letter and are not two letters
  replaced in place; a real word two letters away that passes this (female → fetal, videos → views) is missed: the
  near-word row. The generator never slips on a first letter, so the corpus cannot show what that part of the rule
  costs on real typing.
- Names of four letters or fewer allow no slip but a swap (Wnag is Wang, Wong is not; Zou is not Zhou): the name-typo
  row's false alarms are those, and they are the price of telling two people apart.
- Venue, volume, pages and later authors are not compared; HALLMARK's venue and author-list types are therefore
  \`match\` above, and a checker reading venues would see more.
`
}

function main(): void {
  const args = process.argv.slice(2)
  const option = (name: string, fallback: string): string => {
    const at = args.indexOf(name)
    return at >= 0 && args[at + 1] !== undefined ? (args[at + 1] as string) : fallback
  }
  const seed = Number(option('--seed', '41'))
  const size = Number(option('--size', '4000'))
  const keepWrong = Number(option('--wrong', '0'))
  const corpus = generateCorpus(seed, size)
  const devEntries = corpus.filter((entry) => entry.split === 'dev')
  const testEntries = corpus.filter((entry) => entry.split === 'test')
  const look = option('--split', 'dev')
  const dev = measure(devEntries, TITLE_RULES, look === 'dev' ? keepWrong : 0)
  const test = measure(testEntries, TITLE_RULES, look === 'test' ? keepWrong : 0)
  const hallmark = measure(hallmarkCorpus(), TITLE_RULES, look === 'hallmark' ? keepWrong : 0)
  const line = (name: string, q: Quality): string =>
    `${name}: detection ${percent(q.detection)} (other work ${percent(q.otherWorkDetection)}, details ${percent(q.detailsDetection)}), false alarms ${percent(q.falseAlarms)}, kinds ${percent(q.otherWorkAsOtherWork)} / ${percent(q.detailsAsDetails)}`
  console.log(line('dev', dev))
  console.log(line('test', test))
  console.log(line('hallmark', hallmark))
  for (const { entry, result } of [...dev.wrong, ...test.wrong, ...hallmark.wrong]) {
    console.log(
      JSON.stringify({
        label: entry.label,
        p: entry.perturbations,
        q: entry.quirks,
        cited: entry.cited,
        reg: entry.registered.title,
        sub: entry.registered.subtitle,
        a: (entry.registered.author as unknown[])[0],
        y: [entry.registered.issued, entry.registered['published-online'], entry.registered.posted],
        result: { verdict: result.verdict, kind: result.kind, fields: result.mismatches.map((m) => m.field) }
      })
    )
  }
  if (!args.includes('--no-write')) {
    const best = tune(devEntries)
    for (const { rules, quality } of best.slice(0, 5)) {
      console.log(`  ${rulesText(rules)}: ${percent(quality.detection)} / ${percent(quality.falseAlarms)}`)
    }
    writeFileSync(fileURLToPath(new URL('./VERIFY-QUALITY.md', import.meta.url)), report(seed, size, dev, test, hallmark, best))
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main()
