/**
 * `/health` (issue 42): the resolution health of the DOIs this resolver watches, for the people who own them.
 * Per prefix, the DOIs by verdict now and one point a day (a chart drawn on the server: no JavaScript, light
 * and dark by CSS), those newly broken this week, and each broken DOI with since when, why and its last good
 * URL; `?doi=` one DOI's checks. Pure: a report in, a string out; every string from records and pages escaped.
 */
import type { BrokenRow, DoiHistory, HealthReport, PrefixSummary, ShownVerdict } from '../../handle/health/types.js'
import { SHOWN_VERDICTS } from '../../handle/health/types.js'
import { escapeHtml, htmlDocument, link } from './html.js'
import type { PageContext } from './pages.js'
import { count, duration, figures, table } from './status.js'
import { CHART_CSS, lineChart } from './svg.js'

const HEALTH_CSS = [
  CHART_CSS,
  'section{margin:1.5rem 0}',
  'h2{font-size:1.2rem;margin:0 0 .5rem}',
  '.figures{display:flex;flex-wrap:wrap;gap:.5rem 2rem;margin:.5rem 0 1rem;padding:0;list-style:none}',
  '.figures strong{font-size:1.25rem;display:block}',
  'table.status td{overflow-wrap:anywhere}',
  'td.num,th.num{text-align:right;white-space:nowrap}',
  '.state-open{font-weight:700}',
  'form.pick{display:flex;gap:.5rem;align-items:center;flex-wrap:wrap}'
].join('\n')

/** What each verdict means to an owner, in a few words (docs/health.md says more). */
export const VERDICT_WORDS: Record<ShownVerdict, string> = {
  alive: 'alive: the page names the DOI or its title',
  unconfirmed: 'unconfirmed: the page answers but names neither',
  blocked: 'blocked: a bot wall or robots.txt (the page exists)',
  dead: 'dead: 404, 410, no such host, refused, timeouts',
  takeover: 'taken over: another domain, the DOI gone from the page',
  'not-found': 'not registered: the registry does not know it',
  'no-url': 'no URL: the record sends a reader nowhere',
  unchecked: 'no verdict yet: not checked, or failing and not yet confirmed'
}

export interface HealthPageOptions {
  /** The prefix shown (`?prefix=`), or all. */
  prefix?: string | undefined
  /** Every prefix with watched DOIs, for the picker. */
  prefixes: readonly string[]
  /** Paging of the broken list (keyset): where this page starts (`?after=`; undefined: the first), where the next does (null: last), and how many broken DOIs in all. */
  after?: string | undefined
  next: string | null
  brokenTotal: number
  /** DOIs confirmed broken in the last seven days, newest first (whatever the page of the broken list); default: those of this page. */
  newlyBroken?: readonly BrokenRow[] | undefined
}

const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10)
const minute = (ms: number): string => new Date(ms).toISOString().slice(0, 16).replace('T', ' ')
const time = (ms: number, text = minute(ms)): string => `<time datetime="${new Date(ms).toISOString()}">${escapeHtml(text)}</time>`

/** A URL shown as a link only when it is a web URL (a hostile record's `javascript:` stays text). */
function urlCell(url: string | null): string {
  if (url === null) return '—'
  return /^https?:\/\//i.test(url) ? link(url, escapeHtml(url)) : escapeHtml(url)
}

function query(baseUrl: string, path: string, params: Record<string, string | undefined>): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v)
  const s = q.toString()
  return `${baseUrl}${path}${s === '' ? '' : `?${s}`}`
}

function checkerText(report: HealthReport): string {
  const c = report.checker
  const last = c.lastCheckAt === null ? 'no check yet' : `last check ${minute(c.lastCheckAt)} UTC`
  const overdue =
    c.overdue > 0 ? ` <span class="state-open">${count(c.overdue)} DOIs are overdue</span> (a host's limits, or the checker paused).` : ''
  const gap =
    c.historyGap === undefined
      ? ''
      : ` This replica's history has a gap from ${escapeHtml(minute(c.historyGap.from))} to ${escapeHtml(minute(c.historyGap.to))} UTC (it was down longer than HEALTH_LOG_KEEP_SECONDS).`
  const state: Record<HealthReport['checker']['state'], string> = {
    running: 'The checker runs on this replica',
    elsewhere: 'The checker runs on another replica (this one shows the same history)',
    paused: `<span class="state-open">Checking is paused</span>${c.reason === undefined ? '' : `: ${escapeHtml(c.reason)}`}`,
    off: 'Health checks are off (HEALTH_WATCH, HEALTH_LIST_FILE)'
  }
  return `<p id="checker">${state[c.state]}; ${escapeHtml(last)}.${overdue}${gap}</p>`
}

const BROKEN_HEAD = ['DOI', 'Verdict', 'Since (UTC)', 'Evidence', 'Failing URL', 'Last good URL']

function brokenCells(ctx: PageContext, row: BrokenRow): string[] {
  const good =
    row.lastGoodUrl === null || row.lastGoodAt === null ? '—' : `${urlCell(row.lastGoodUrl)} (${time(row.lastGoodAt, day(row.lastGoodAt))})`
  return [
    link(query(ctx.baseUrl, 'health', { doi: row.doi }), escapeHtml(row.doi)),
    escapeHtml(row.verdict),
    time(row.since),
    escapeHtml(row.status === null ? row.evidence : `HTTP ${row.status}: ${row.evidence}`),
    urlCell(row.url),
    good
  ]
}

function prefixSection(ctx: PageContext, p: PrefixSummary, generatedAt: number, index: number): string {
  const watched = SHOWN_VERDICTS.reduce((sum, v) => sum + p.counts[v], 0)
  const broken = p.counts.dead + p.counts.takeover + p.counts['not-found'] + p.counts['no-url']
  const days = p.history
  const chart =
    days.length === 0
      ? '<p>No day is recorded yet.</p>'
      : lineChart({
          id: `chart-prefix-${index}`,
          title: `DOIs of ${p.prefix} by verdict, one point per day`,
          desc: `From ${days[0]?.day ?? ''} to ${days[days.length - 1]?.day ?? ''} (UTC). Today's counts are in the table below the chart.`,
          series: SHOWN_VERDICTS.map((v) => ({ name: v, values: days.map((d) => d.counts[v]) })),
          unit: 'DOIs',
          startLabel: days[0]?.day ?? '',
          endLabel: days[days.length - 1]?.day ?? ''
        })
  const rows = SHOWN_VERDICTS.map((v) => [escapeHtml(VERDICT_WORDS[v]), count(p.counts[v])])
  return `<section aria-labelledby="h-prefix-${index}">
<h2 id="h-prefix-${index}">${escapeHtml(p.prefix)}</h2>
${figures([
  ['DOIs watched', count(watched)],
  ['alive', count(p.counts.alive)],
  ['broken', count(broken)],
  ['newly broken this week', count(p.newlyBroken)],
  ['overdue', count(p.overdue)]
])}
${chart}
${table(`DOIs of ${p.prefix} by verdict now (as of ${day(generatedAt)})`, ['Verdict', 'DOIs'], rows, new Set([1]))}
</section>`
}

function picker(ctx: PageContext, opts: HealthPageOptions): string {
  const options = ['<option value="">All prefixes</option>']
    .concat(opts.prefixes.map((p) => `<option value="${escapeHtml(p)}"${p === opts.prefix ? ' selected' : ''}>${escapeHtml(p)}</option>`))
    .join('')
  return `<form class="pick" method="get" action="${escapeHtml(`${ctx.baseUrl}health`)}">
<label for="prefix">Prefix</label> <select id="prefix" name="prefix">${options}</select> <button type="submit">Show</button>
</form>`
}

function pager(ctx: PageContext, opts: HealthPageOptions): string {
  const parts: string[] = []
  if (opts.after !== undefined) parts.push(link(query(ctx.baseUrl, 'health', { prefix: opts.prefix }), 'First page'))
  if (opts.next !== null) parts.push(link(query(ctx.baseUrl, 'health', { prefix: opts.prefix, after: opts.next }), 'Next page'))
  return parts.length === 0 ? '' : `<nav aria-label="Pages of broken DOIs"><p>${parts.join(' · ')}</p></nav>`
}

export function renderHealthPage(ctx: PageContext, report: HealthReport, opts: HealthPageOptions): string {
  const weekAgo = report.generatedAt - 7 * 86_400_000
  const newly = opts.newlyBroken ?? report.broken.filter((b) => b.confirmedAt >= weekAgo)
  const s = report.settings
  const files = { prefix: opts.prefix }
  const body = `<h1>DOI health</h1>
<p class="links">For the people who own these DOIs. ${link(query(ctx.baseUrl, 'health.json', files), 'The same as JSON')} · ${link(query(ctx.baseUrl, 'health.csv', files), 'Broken DOIs as CSV')} (to send to a publisher or registration agency)</p>
${checkerText(report)}
<p>Each DOI is checked once every ${escapeHtml(duration(s.intervalSeconds))}; a failure counts as broken after ${count(s.confirm)} failed checks in a row, at least ${escapeHtml(duration(s.confirmGapSeconds))} apart. History is kept ${count(s.keepDays)} days.</p>
${picker(ctx, opts)}
${report.prefixes.length === 0 ? '<p>No DOI is watched yet.</p>' : report.prefixes.map((p, i) => prefixSection(ctx, p, report.generatedAt, i)).join('\n')}
<section aria-labelledby="h-newly">
<h2 id="h-newly">Newly broken this week</h2>
${table(
  'DOIs confirmed broken in the last seven days',
  BROKEN_HEAD,
  newly.map((b) => brokenCells(ctx, b))
)}
</section>
<section aria-labelledby="h-broken">
<h2 id="h-broken">Broken DOIs</h2>
${table(
  `Confirmed broken DOIs (${count(opts.brokenTotal)})`,
  BROKEN_HEAD,
  report.broken.map((b) => brokenCells(ctx, b))
)}
${pager(ctx, opts)}
</section>`
  return htmlDocument('DOI health', body, ctx.baseUrl, `<style>\n${HEALTH_CSS}\n</style>\n`)
}

export function renderDoiHealthPage(ctx: PageContext, h: Pick<DoiHistory, 'doi' | 'prefix' | 'state' | 'checks'>): string {
  const st = h.state
  const since = st.since === null ? '' : ` since ${time(st.since)} UTC`
  const streak =
    st.streak > 0 && st.streakVerdict !== null
      ? `<p>${count(st.streak)} failed check${st.streak === 1 ? '' : 's'} in a row (${escapeHtml(st.streakVerdict)}) not yet confirmed.</p>`
      : ''
  const rows = h.checks.map((c) => [
    time(c.at),
    escapeHtml(c.kind),
    escapeHtml(c.verdict),
    c.status === null ? '—' : count(c.status),
    urlCell(c.finalUrl),
    escapeHtml(c.evidence)
  ])
  const body = `<h1>DOI health: ${escapeHtml(h.doi)}</h1>
<p class="links">${link(query(ctx.baseUrl, 'health', { prefix: h.prefix }), `All of ${escapeHtml(h.prefix)}`)} · ${link(query(ctx.baseUrl, 'health.json', { doi: h.doi }), 'The same as JSON')}</p>
<p id="state"><strong>${escapeHtml(VERDICT_WORDS[st.verdict])}</strong>${since}. Next check ${time(st.nextAt)} UTC.</p>
${streak}
${table(`The last ${count(h.checks.length)} checks, newest first`, ['When (UTC)', 'Kind', 'Verdict', 'Status', 'URL reached', 'Evidence'], rows, new Set([3]))}`
  return htmlDocument(`DOI health: ${h.doi}`, body, ctx.baseUrl, `<style>\n${HEALTH_CSS}\n</style>\n`)
}
