/**
 * The quality of `check --verify metadata` on the labelled corpus (issue 41, plan §6): detection (fabricated
 * references flagged `mismatch`), false alarms (genuine ones flagged), whether a mismatch is told apart as
 * `other-work` or `details`, per perturbation and per fabrication kind. The title constants are chosen by a
 * grid search on the dev split and reported on the held-out test split. Writes bench/VERIFY-QUALITY.md.
 *
 * Usage: node --import tsx bench/verify-quality.ts [--seed 41] [--size 3000] [--no-write]
 */
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { compareCited } from '../src/handle/verify/compare.js'
import { registeredWorkOf } from '../src/handle/verify/csl.js'
import { TITLE_RULES } from '../src/handle/verify/title.js'
import type { TitleRules } from '../src/handle/verify/title.js'
import type { MetadataResult } from '../src/handle/verify/types.js'
import { generateCorpus } from './verify-corpus/generate.js'
import type { CorpusEntry } from './verify-corpus/generate.js'

export interface Tally {
  total: number
  flagged: number
}

export interface Quality {
  entries: number
  /** Fabricated references flagged `mismatch`. */
  detection: number
  /** Genuine references flagged `mismatch`. */
  falseAlarms: number
  /** Wrong details (year, author) flagged `mismatch` with kind `details`. */
  detailsAsDetails: number
  /** Mismatches whose `kind` is the one expected, over details and fabrications. */
  kindAccuracy: number
  /** Per perturbation (genuine: flagged is a false alarm) and per fabrication or detail kind (flagged is detected). */
  byCategory: Map<string, Tally & { label: string }>
  /** The first wrong verdicts, for reading. */
  wrong: { entry: CorpusEntry; result: MetadataResult }[]
}

export function measure(entries: readonly CorpusEntry[], rules: TitleRules = TITLE_RULES, keepWrong = 0): Quality {
  const count = { genuine: 0, genuineFlagged: 0, fabricated: 0, fabricatedFlagged: 0, details: 0, detailsRight: 0, kinds: 0, kindsRight: 0 }
  const byCategory = new Map<string, Tally & { label: string }>()
  const wrong: Quality['wrong'] = []
  for (const entry of entries) {
    const result = compareCited(entry.cited, registeredWorkOf(entry.registered), rules)
    const flagged = result.verdict === 'mismatch'
    const categories = entry.perturbations.length === 0 ? ['(none)'] : entry.perturbations
    for (const category of categories) {
      const key = `${entry.label}:${category}`
      const tally = byCategory.get(key) ?? { label: entry.label, total: 0, flagged: 0 }
      tally.total++
      if (flagged) tally.flagged++
      byCategory.set(key, tally)
    }
    if (entry.label === 'genuine') {
      count.genuine++
      if (flagged) count.genuineFlagged++
    } else {
      if (entry.label === 'fabricated') {
        count.fabricated++
        if (flagged) count.fabricatedFlagged++
      } else {
        count.details++
        if (flagged && result.kind === 'details') count.detailsRight++
      }
      count.kinds++
      if (flagged && result.kind === entry.expect.kind) count.kindsRight++
    }
    const right =
      flagged === (entry.expect.verdict === 'mismatch') && (!flagged || entry.label === 'genuine' || result.kind === entry.expect.kind)
    if (!right && wrong.length < keepWrong) wrong.push({ entry, result })
  }
  const share = (part: number, whole: number): number => (whole === 0 ? 0 : part / whole)
  return {
    entries: entries.length,
    detection: share(count.fabricatedFlagged, count.fabricated),
    falseAlarms: share(count.genuineFlagged, count.genuine),
    detailsAsDetails: share(count.detailsRight, count.details),
    kindAccuracy: share(count.kindsRight, count.kinds),
    byCategory,
    wrong
  }
}

/** The grid searched on the dev split: coverage, unexplained words allowed, typo bounds. */
export function gridOf(): TitleRules[] {
  const grid: TitleRules[] = []
  for (const minCoverage of [0.4, 0.5, 0.6, 0.7, 0.8]) {
    for (const maxUnexplained of [0, 1]) {
      for (const typos of [
        [[4, 1]],
        [
          [9, 2],
          [4, 1]
        ],
        [
          [8, 2],
          [5, 1]
        ],
        [
          [9, 2],
          [6, 1]
        ]
      ] as (readonly [number, number])[][]) {
        grid.push({ minCoverage, maxUnexplained, typos })
      }
    }
  }
  return grid
}

/** The best rules on `entries`: the most detection less false alarms, among those meeting the dev bounds when any do. */
export function tune(entries: readonly CorpusEntry[]): { rules: TitleRules; quality: Quality }[] {
  return gridOf()
    .map((rules) => ({ rules, quality: measure(entries, rules) }))
    .sort((a, b) => {
      const meets = (q: Quality): number => (q.detection >= 0.97 && q.falseAlarms <= 0.03 ? 1 : 0)
      return (
        meets(b.quality) - meets(a.quality) || b.quality.detection - b.quality.falseAlarms - (a.quality.detection - a.quality.falseAlarms)
      )
    })
}

const percent = (x: number): string => `${(x * 100).toFixed(1)} %`
const rulesText = (rules: TitleRules): string =>
  `minCoverage ${rules.minCoverage}, maxUnexplained ${rules.maxUnexplained}, typos ${rules.typos.map(([n, d]) => `≤${d} from ${n} letters`).join(', ')}`

function report(seed: number, size: number, dev: Quality, test: Quality, best: { rules: TitleRules; quality: Quality }[]): string {
  const rows = [...test.byCategory.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, tally]) => {
      const [label, category] = key.split(':')
      const devTally = dev.byCategory.get(key)
      const what = label === 'genuine' ? 'false alarms' : 'flagged'
      return `| ${label} | ${category} | ${what} | ${devTally === undefined ? '–' : `${devTally.flagged}/${devTally.total}`} | ${tally.flagged}/${tally.total} |`
    })
  return `# The quality of \`check --verify metadata\`

Written by \`node --import tsx bench/verify-quality.ts\` (\`npm run bench:verify-quality\`); the corpus is made by
bench/verify-corpus/generate.ts, seed ${seed}, ${size} entries (50 % genuine, 10 % wrong details, 40 % fabricated;
see its header for each kind). Split by FNV-1a(id) % 5: one in five held out as **test**, the rest **dev**.
The title constants (src/handle/verify/title.ts \`TITLE_RULES\`) were chosen on dev; test is reported as is.
No language model, no network: \`compareCited\` over CSL-JSON records (\`registeredWorkOf\`).

| split | entries | detection (fabricated flagged) | false alarms (genuine flagged) | details told as details | kind right (details and fabrications) |
|---|---|---|---|---|---|
| dev | ${dev.entries} | ${percent(dev.detection)} | ${percent(dev.falseAlarms)} | ${percent(dev.detailsAsDetails)} | ${percent(dev.kindAccuracy)} |
| test | ${test.entries} | **${percent(test.detection)}** | **${percent(test.falseAlarms)}** | ${percent(test.detailsAsDetails)} | ${percent(test.kindAccuracy)} |

Goal (issue 41): detection ≥ 95 %, false alarms ≤ 5 % (test/handle/verify/quality.test.ts gates it on test);
on dev the margin asked is ≥ 97 % and ≤ 3 %.

Rules in force: ${rulesText(TITLE_RULES)}; year ±1 of any of issued, online, print, posted; the first author's family name.

Best on dev in the grid (${gridOf().length} settings; detection / false alarms):

${best
  .slice(0, 5)
  .map(({ rules, quality }) => `- ${rulesText(rules)}: ${percent(quality.detection)} / ${percent(quality.falseAlarms)}`)
  .join('\n')}

## By category

A genuine entry counts under each of its perturbations (0–3 each; \`(none)\`: cited as registered); "flagged" on a
genuine row is a false alarm, on the others a detection.

| label | category | counts | dev | test |
|---|---|---|---|---|
${rows.join('\n')}

## What is not measured here

The corpus is synthetic: the registry, its quirks and the perturbations are what the generator knows of; real
references keep surprising. Hand-written real-world vectors live in test/handle/verify/*.test.ts. A fabricated
title that differs from the real one by a word a typo away is labelled genuine by design (a slip, not a fabrication).
This corpus saturates: many settings of the grid reach the same figures, so it shows the matcher handles each
perturbation and fabrication kind, not how much margin it has. Harder cases are left for a later corpus: titles of
one series that differ by a word or a number (Part I and Part II), substitutions a typo away from the word replaced,
real titles with an invented subtitle, and a sample of real references with their registered records.
`
}

function main(): void {
  const args = process.argv.slice(2)
  const option = (name: string, fallback: string): string => {
    const at = args.indexOf(name)
    return at >= 0 && args[at + 1] !== undefined ? (args[at + 1] as string) : fallback
  }
  const seed = Number(option('--seed', '41'))
  const size = Number(option('--size', '3000'))
  const corpus = generateCorpus(seed, size)
  const devEntries = corpus.filter((entry) => entry.split === 'dev')
  const testEntries = corpus.filter((entry) => entry.split === 'test')
  const best = tune(devEntries)
  const dev = measure(devEntries, TITLE_RULES, 40)
  const test = measure(testEntries)
  console.log(
    `dev: detection ${percent(dev.detection)}, false alarms ${percent(dev.falseAlarms)}, details ${percent(dev.detailsAsDetails)}`
  )
  console.log(
    `test: detection ${percent(test.detection)}, false alarms ${percent(test.falseAlarms)}, details ${percent(test.detailsAsDetails)}`
  )
  for (const { rules, quality } of best.slice(0, 5)) {
    console.log(`  ${rulesText(rules)}: ${percent(quality.detection)} / ${percent(quality.falseAlarms)}`)
  }
  if (args.includes('--wrong')) {
    for (const { entry, result } of dev.wrong) {
      console.log(
        JSON.stringify({
          l: entry.label,
          p: entry.perturbations,
          cited: entry.cited,
          reg: entry.registered.title,
          sub: entry.registered.subtitle,
          a: (entry.registered.author as unknown[])[0],
          result
        })
      )
    }
  }
  if (!args.includes('--no-write')) {
    writeFileSync(fileURLToPath(new URL('./VERIFY-QUALITY.md', import.meta.url)), report(seed, size, dev, test, best))
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main()
