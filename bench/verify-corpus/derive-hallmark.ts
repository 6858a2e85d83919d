/**
 * Derives the corpus's real works from a checkout of the HALLMARK benchmark (github.com/rpatrik96/hallmark,
 * MIT licence; see README.md beside this file): every entry HALLMARK labels VALID (papers it checked in DBLP,
 * bioRxiv, PubMed, Crossref) becomes one registered work, and every entry it labels HALLUCINATED whose DOI is one
 * of those works becomes an outside case (HALLMARK's own perturbation, checked against that work's record).
 * Run once by hand; the two files it writes are committed, so the corpus is built offline.
 *
 * Usage: node --import tsx bench/verify-corpus/derive-hallmark.ts /path/to/hallmark [commit]
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** A registered work: what a registry's record holds (title, authors as [given, family], year, venue, DOI). */
export interface RealWork {
  id: string
  doi: string | null
  title: string
  authors: [string, string][]
  year: number
  venue: string
  field: string
  from: string
}

/** HALLMARK's own perturbation of a work we hold: the cited fields as HALLMARK wrote them, and its type. */
export interface HallmarkCase {
  key: string
  type: string
  work: string
  cited: { title: string; author?: string; year?: number }
  from: string
}

const MAX_AUTHORS = 4

// The field of a work by HALLMARK's source: the registry's topic, so that fabrications stay within one field.
function fieldOf(source: string, venue: string): string {
  if (source === 'biorxiv' || /biorxiv/i.test(venue)) return 'biology'
  if (source === 'pubmed') return 'medicine'
  if (source === 'dblp_cs_non_ml') return 'computing'
  if (source === 'walters_wilder_2023') return 'social and natural sciences'
  return 'machine learning'
}

/** "Given Family" or "Family, Given" → [given, family]; a particle (van, de…) stays with the family name; DBLP's 0001 goes. */
export function splitName(raw: string): [string, string] {
  const name = raw
    .replace(/\s+\d{4}\b/g, '')
    .replace(/\s+/g, ' ')
    .trim()
  if (name.includes(',')) {
    const [family, given] = name.split(',', 2) as [string, string]
    return [given.trim(), family.trim()]
  }
  const parts = name.split(' ')
  let at = parts.length - 1
  while (at > 1 && /^(?:van|von|der|den|de|da|del|della|di|du|la|le|ter|ten|dos|das|al|el|st\.?)$/i.test(parts[at - 1] as string)) at--
  if (/^(?:jr\.?|sr\.?|ii|iii|iv)$/i.test(parts[at] as string) && at > 1) at--
  return [parts.slice(0, at).join(' '), parts.slice(at).join(' ')]
}

function fieldsOf(entry: Record<string, unknown>): Record<string, string> | undefined {
  if (typeof entry.fields === 'object' && entry.fields !== null) return entry.fields as Record<string, string>
  if (typeof entry.bibtex === 'string') return Object.fromEntries([...entry.bibtex.matchAll(/(\w+) = \{(.*)\},/g)].map((m) => [m[1], m[2]]))
  return undefined
}

const titleKey = (title: string): string =>
  title
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '')

function main(): void {
  const [root, commit = 'unknown'] = process.argv.slice(2)
  if (root === undefined) throw new Error('usage: derive-hallmark.ts /path/to/hallmark [commit]')
  const files: string[] = []
  const walk = (dir: string): void => {
    for (const item of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, item.name)
      if (item.isDirectory() && item.name !== 'baseline_results' && item.name !== 'pool') walk(path)
      else if (item.name.endsWith('.jsonl') && !item.name.includes('blind')) files.push(path)
    }
  }
  walk(join(root, 'data'))
  files.sort()
  const works = new Map<string, RealWork>()
  const byDoi = new Map<string, RealWork>()
  const hallucinated: { entry: Record<string, unknown>; fields: Record<string, string>; file: string }[] = []
  for (const path of files) {
    const file = path.slice(root.length + 1)
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      if (line.trim() === '') continue
      const entry = JSON.parse(line) as Record<string, unknown>
      const fields = fieldsOf(entry)
      if (fields?.title === undefined || entry.source === 'canary') continue
      if (entry.label !== 'VALID') {
        hallucinated.push({ entry, fields, file })
        continue
      }
      const key = titleKey(fields.title)
      const year = Number(fields.year)
      const authors = (fields.author ?? '').split(/\s+and\s+/).filter((name) => name.trim() !== '' && !/^others$/i.test(name))
      if (works.has(key) || authors.length === 0 || !Number.isInteger(year)) continue
      const doi = fields.doi?.toLowerCase() ?? null
      if (doi !== null && byDoi.has(doi)) continue
      const source = String(entry.source ?? entry.source_conference ?? '')
      const venue = fields.booktitle ?? fields.journal ?? String(entry.source_conference ?? '')
      const work: RealWork = {
        id: `w${String(works.size + 1).padStart(4, '0')}`,
        doi,
        // DBLP ends titles with a full stop; registries do not.
        title: fields.title.replace(/\.$/, '').trim(),
        authors: authors.slice(0, MAX_AUTHORS).map(splitName),
        year,
        venue,
        field: fieldOf(source, venue),
        from: file.replace(/^data\//, '')
      }
      works.set(key, work)
      if (doi !== null) byDoi.set(doi, work)
    }
  }
  const cases: HallmarkCase[] = []
  const seen = new Set<string>()
  for (const { entry, fields, file } of hallucinated) {
    const work = fields.doi === undefined ? undefined : byDoi.get(fields.doi.toLowerCase())
    const type = entry.hallucination_type
    if (work === undefined || typeof type !== 'string') continue
    const first = (fields.author ?? '').split(/\s+and\s+/)[0]?.trim()
    const year = Number(fields.year)
    const seenKey = `${work.id}|${fields.title}|${first}|${fields.year}`
    if (seen.has(seenKey)) continue
    seen.add(seenKey)
    const cited: HallmarkCase['cited'] = { title: fields.title as string }
    if (first !== undefined && first !== '') cited.author = first
    if (Number.isInteger(year)) cited.year = year
    cases.push({ key: String(entry.bibtex_key), type, work: work.id, cited, from: file.replace(/^data\//, '') })
  }
  const here = (name: string): string => fileURLToPath(new URL(name, import.meta.url))
  const header = { derivedFrom: `github.com/rpatrik96/hallmark@${commit}`, licence: 'MIT (HALLMARK); see README.md' }
  writeFileSync(here('./works.ndjson'), [JSON.stringify(header), ...[...works.values()].map((w) => JSON.stringify(w))].join('\n') + '\n')
  writeFileSync(here('./hallmark-cases.ndjson'), [JSON.stringify(header), ...cases.map((c) => JSON.stringify(c))].join('\n') + '\n')
  console.log(`${works.size} works (${byDoi.size} with a DOI), ${cases.length} HALLMARK cases`)
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main()
