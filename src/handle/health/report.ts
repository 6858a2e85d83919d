/**
 * The reports of resolution health (issue 42, plan §5): the CSV of confirmed-broken DOIs a repository manager sends
 * to a publisher, the JSON of `/health.json` (times as ISO 8601 UTC), and the `doi-proxy health` command's text.
 * Every cell comes from hostile pages and records: the CSV quotes by RFC 4180 and defuses formulas (a cell a
 * spreadsheet would run), the text passes each such string through the caller's `show` (the command's `visible`).
 */
import { SHOWN_VERDICTS } from './types.js'
import type { BrokenRow, HealthReport, PrefixSummary } from './types.js'

/** ISO 8601 UTC of epoch ms, and its date alone. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString()
}
function isoDay(ms: number): string {
  return isoTime(ms).slice(0, 10)
}

// OWASP "CSV Injection": a cell starting with one of these is a formula to Excel, LibreOffice and Sheets.
const FORMULA_START = /^[=+\-@\t\r]/
const NEEDS_QUOTES = /[",\r\n]/

/** One CSV cell: a formula defused with a leading `'`, then quoted (quotes doubled) when RFC 4180 needs it. */
export function csvCell(value: string): string {
  const safe = FORMULA_START.test(value) ? `'${value}` : value
  return NEEDS_QUOTES.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe
}

/** The CSV's header line (RFC 4180 lines end in CRLF). */
export function csvHeader(): string {
  return 'doi,verdict,since,url,evidence\r\n'
}

/** One confirmed-broken DOI as a CSV line: `url` is the final URL reached (the failing one), `since` ISO 8601. */
export function csvRow(row: BrokenRow): string {
  return [row.doi, row.verdict, isoTime(row.since), row.url ?? '', row.evidence].map(csvCell).join(',') + '\r\n'
}

/** One broken row of `/health.json`, its times in ISO 8601 (written one by one when the page is streamed). */
export function brokenJson(row: BrokenRow): Record<string, unknown> {
  return {
    ...row,
    since: isoTime(row.since),
    confirmedAt: isoTime(row.confirmedAt),
    lastGoodAt: row.lastGoodAt === null ? null : isoTime(row.lastGoodAt),
    checkedAt: isoTime(row.checkedAt)
  }
}

/** The whole of `/health.json` (plan §5), its times in ISO 8601 UTC. */
export function reportJson(report: HealthReport): Record<string, unknown> {
  const { checker } = report
  return {
    generatedAt: isoTime(report.generatedAt),
    settings: report.settings,
    checker: {
      ...checker,
      lastCheckAt: checker.lastCheckAt === null ? null : isoTime(checker.lastCheckAt),
      ...(checker.historyGap === undefined
        ? {}
        : { historyGap: { from: isoTime(checker.historyGap.from), to: isoTime(checker.historyGap.to) } })
    },
    prefixes: report.prefixes,
    broken: report.broken.map(brokenJson)
  }
}

/** One broken DOI as the command prints it (plan §5): `10.5555/abc  dead since 2026-11-20: HTTP 404 at https://… · last good https://… (2026-11-13)`. */
export function textLine(row: BrokenRow, show: (s: string) => string): string {
  const where = row.url === null ? '' : ` at ${show(row.url)}`
  const what =
    row.status === null
      ? show(row.evidence) + where
      : `HTTP ${row.status}${where}` + (row.evidence === '' ? '' : ` (${show(row.evidence)})`)
  const good =
    row.lastGoodUrl === null || row.lastGoodAt === null ? '' : ` · last good ${show(row.lastGoodUrl)} (${isoDay(row.lastGoodAt)})`
  return `${show(row.doi)}  ${row.verdict} since ${isoDay(row.since)}: ${what}${good}`
}

/** One prefix's summary line: its DOIs, then each verdict that has any, in the reports' order. */
export function summaryLine(prefix: PrefixSummary, show: (s: string) => string): string {
  const total = SHOWN_VERDICTS.reduce((sum, verdict) => sum + prefix.counts[verdict], 0)
  const counts = SHOWN_VERDICTS.filter((verdict) => prefix.counts[verdict] > 0).map((verdict) => `${prefix.counts[verdict]} ${verdict}`)
  const extra = [`${prefix.newlyBroken} newly broken this week`, ...(prefix.overdue > 0 ? [`${prefix.overdue} overdue`] : [])]
  return `${show(prefix.prefix)}  ${total} DOI${total === 1 ? '' : 's'}${counts.length > 0 ? ': ' + counts.join(', ') : ''} (${extra.join(', ')})`
}

/** The command's text: each broken DOI, then one summary line per prefix; strings from pages pass through `show`. */
export function textReport(report: HealthReport, show: (s: string) => string): string[] {
  return [...report.broken.map((row) => textLine(row, show)), ...report.prefixes.map((prefix) => summaryLine(prefix, show))]
}
