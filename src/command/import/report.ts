import type { ImportSummary, NamedProblem } from './pipeline.js'
import { visible } from '../check/visible.js'

/**
 * The import's summary (plan-43 §4), for a person or, with --json, a program:
 *   imported 9,998,123 · unchanged 0 · filtered 1,877 · malformed 12 (named in DIR/import-problems.ndjson)
 * then up to 50 problems, each named file › entry item N: why; then the entries passed over as no records (a
 * README, a report), not counted as malformed. File names and messages come from the
 * input: what a terminal would obey is shown escaped (check/visible.ts).
 */

const NUMBER = new Intl.NumberFormat('en-US')

/** Where a problem was and why: `crossref-2025.tar › 0042.json.gz item 1,203: the DOI has a control character (U+0007)`. */
export function problemLine(p: NamedProblem): string {
  const where = [p.file, ...(p.entry === undefined ? [] : [p.entry])].join(' › ')
  const item = p.item === undefined ? '' : ` item ${NUMBER.format(p.item)}`
  return visible(`${where}${item}: ${p.message}`)
}

export function summaryText(s: ImportSummary): string {
  const older = s.older > 0 ? ` (${NUMBER.format(s.older)} older than the copy's)` : ''
  const named = s.malformed > 0 ? ` (named in ${s.problemsFile})` : ''
  const lines = [
    `imported ${NUMBER.format(s.imported)} · unchanged ${NUMBER.format(s.unchanged)}${older} · filtered ${NUMBER.format(s.filtered)} · malformed ${NUMBER.format(s.malformed)}${named}`
  ]
  for (const p of s.problems) lines.push(`  ${problemLine(p)}`)
  if (s.malformed > s.problems.length) lines.push(`  … and ${NUMBER.format(s.malformed - s.problems.length)} more in ${s.problemsFile}`)
  if (s.passedOver > 0) {
    // Not problems: a README or a report beside the data files, said once here and nowhere else.
    lines.push(`passed over ${NUMBER.format(s.passedOver)} ${s.passedOver === 1 ? 'entry that holds' : 'entries that hold'} no records:`)
    for (const p of s.passedOverNamed) lines.push(`  ${problemLine(p)}`)
    if (s.passedOver > s.passedOverNamed.length) lines.push(`  … and ${NUMBER.format(s.passedOver - s.passedOverNamed.length)} more`)
  }
  if (s.alreadyImported > 0) {
    lines.push(
      `${NUMBER.format(s.alreadyImported)} file${s.alreadyImported === 1 ? ' was' : 's were'} imported whole before: passed over (--again reads them anew)`
    )
  }
  for (const c of s.covered) {
    lines.push(
      `the copy holds every ${c.agency === 'crossref' ? 'Crossref' : c.agency === 'datacite' ? 'DataCite' : c.agency} DOI of its ${NUMBER.format(c.prefixes)} prefix${c.prefixes === 1 ? '' : 'es'} as of ${new Date(c.asOf * 1000).toISOString().slice(0, 10)}`
    )
  }
  lines.push(`the copy holds ${NUMBER.format(s.records)} record${s.records === 1 ? '' : 's'}`)
  if (s.stopped !== undefined) lines.push(visible(s.stopped.message))
  return lines.join('\n') + '\n'
}

export function summaryJson(s: ImportSummary): string {
  return (
    JSON.stringify({
      imported: s.imported,
      unchanged: s.unchanged,
      older: s.older,
      filtered: s.filtered,
      malformed: s.malformed,
      problems: s.problems,
      problemsFile: s.problemsFile,
      passedOver: s.passedOver,
      passedOverNamed: s.passedOverNamed,
      files: s.files,
      alreadyImported: s.alreadyImported,
      covered: s.covered,
      records: s.records,
      ...(s.stopped === undefined ? {} : { stopped: s.stopped })
    }) + '\n'
  )
}
