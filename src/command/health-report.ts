/**
 * The report of `doi-proxy health` (issue 42, plan §5 and §7): what the checks recorded, read back from the history
 * as `/health` reads it, and written as text (one line per broken DOI, then one per prefix), JSON (the shape of
 * `/health.json`), CSV (that of `/health.csv`) or HTML (the `/health` page, to keep as a CI artefact).
 */
import { csvHeader, csvRow, reportJson, textReport } from '../handle/health/report.js'
import type { BrokenRow, HealthReport } from '../handle/health/types.js'
import { renderHealthPage } from '../http/views/health.js'
import type { HealthReader } from '../resolve/health/reader.js'
import { visible } from './check/visible.js'

export const HEALTH_FORMATS = ['text', 'json', 'csv', 'html'] as const
export type HealthFormat = (typeof HEALTH_FORMATS)[number]

export interface ReportSettings {
  intervalSeconds: number
  confirm: number
  /** The command's gap between confirming checks (--confirm-gap), not HEALTH_CONFIRM_GAP_SECONDS. */
  confirmGapSeconds: number
  keepDays: number
}

/** A page of the broken list: the reader's largest. */
const BROKEN_PAGE = 1000
/** The HTML page's chart spans this many days at most (as /health's). */
const CHART_DAYS = 90

/**
 * The report of the history as it stands: every prefix, every confirmed-broken DOI (read a page at a time: the
 * history holds at most HEALTH_MAX_DOIS DOIs), `days` of history per prefix (the chart's; 1 for text and CSV).
 */
export function readReport(reader: HealthReader, settings: ReportSettings, now: number, format: HealthFormat): HealthReport {
  const days = format === 'html' || format === 'json' ? Math.min(CHART_DAYS, settings.keepDays) : 1
  const broken: BrokenRow[] = []
  let after: string | undefined
  for (;;) {
    const page = reader.broken({ after, limit: BROKEN_PAGE })
    broken.push(...page.rows)
    if (page.next === null) break
    after = page.next
  }
  const status = reader.checkerStatus()
  return {
    generatedAt: now,
    settings,
    // The command is the checker of its own history, for as long as it runs.
    checker: { state: 'running', ...status },
    prefixes: reader.summary({ days }),
    broken
  }
}

/** How many DOIs the report counts, of every verdict (0: nothing was watched). */
export function watchedCount(report: HealthReport): number {
  return report.prefixes.reduce((sum, p) => sum + Object.values(p.counts).reduce((a, b) => a + b, 0), 0)
}

/**
 * The report in a format. Text passes every string from records and pages through `visible` (a terminal or CI log
 * obeys control characters); CSV quotes and defuses formulas; HTML escapes (its links point at `baseUrl`, the
 * server's PUBLIC_BASE_URL when set, so a DOI's row leads to its history there).
 */
export function renderReport(format: HealthFormat, report: HealthReport, baseUrl: string): string {
  if (format === 'json') return JSON.stringify(reportJson(report), null, 2) + '\n'
  if (format === 'csv') return csvHeader() + report.broken.map(csvRow).join('')
  if (format === 'html') {
    return renderHealthPage({ baseUrl }, report, {
      prefixes: report.prefixes.map((p) => p.prefix),
      next: null,
      brokenTotal: report.broken.length
    })
  }
  return textReport(report, visible).join('\n') + '\n'
}
