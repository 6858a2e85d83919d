/**
 * The status page (issue 15, behaviour.md §12): one self-contained page for the people who run the
 * resolver. Pure: a snapshot in, a string out; everything shown is escaped. It reads whole without
 * JavaScript; with it, a small inline script refreshes the figures every 10 seconds (a checkbox stops it).
 */
import { createHash } from 'node:crypto'
import { OUTCOMES } from '../../status/snapshot.js'
import type { CountRow, Outcome, StatusSnapshot } from '../../status/snapshot.js'
import { escapeHtml, htmlDocument, link } from './html.js'
import type { PageContext } from './pages.js'
import { CHART_CSS, formatNumber, lineChart } from './svg.js'

const STATUS_CSS = [
  CHART_CSS,
  'section{margin:1.5rem 0}',
  'h2{font-size:1.2rem;margin:0 0 .5rem}',
  '.figures{display:flex;flex-wrap:wrap;gap:.5rem 2rem;margin:.5rem 0 1rem;padding:0;list-style:none}',
  '.figures strong{font-size:1.25rem;display:block}',
  'table.status td:last-child{white-space:normal;font-family:inherit;font-size:inherit}',
  'td.num,th.num{text-align:right;white-space:nowrap}',
  '.state-open{font-weight:700}'
].join('\n')

/** Refreshes #live from the page itself; scripts in the fetched copy never run (DOMParser). */
export const REFRESH_SCRIPT = `(function () {
  var live = document.getElementById('live')
  var control = document.getElementById('refresh-control')
  if (!live || !control || !window.fetch || !window.DOMParser) return
  control.innerHTML = '<label><input type="checkbox" id="refresh" checked> Refresh every 10 seconds</label>'
  var box = document.getElementById('refresh')
  setInterval(function () {
    if (!box.checked || document.hidden) return
    fetch(location.href, { headers: { accept: 'text/html' }, cache: 'no-store', credentials: 'same-origin' })
      .then(function (r) { return r.ok ? r.text() : null })
      .then(function (html) {
        if (html === null) return
        var next = new DOMParser().parseFromString(html, 'text/html').getElementById('live')
        if (next) live.innerHTML = next.innerHTML
      })
      .catch(function () {})
  }, 10000)
})()`

/** For the page's Content-Security-Policy: only this script may run. */
export const REFRESH_SCRIPT_HASH = `sha256-${createHash('sha256').update(REFRESH_SCRIPT).digest('base64')}`

const OUTCOME_NAMES: Record<Outcome, string> = {
  local: 'local record',
  hit: 'cache hit',
  miss: 'miss (asked upstream)',
  stale: 'stale',
  not_found: 'not found',
  bad_request: 'bad request or refused',
  error: 'error'
}

const ERROR_MEANINGS: Record<string, string> = {
  DP_UPSTREAM_UNREACHABLE: 'the registry could not be reached (connection refused, DNS, reset)',
  DP_UPSTREAM_TIMEOUT: 'the registry took longer than UPSTREAM_TIMEOUT_MS',
  DP_UPSTREAM_STATUS: 'the registry answered 5xx',
  DP_UPSTREAM_RATE_LIMITED: 'the registry rate-limits us (429): lower UPSTREAM_MAX_CONCURRENT, set CONTACT_EMAIL',
  DP_UPSTREAM_BAD_RESPONSE: 'an answer that could not be read (HTML, broken JSON, too large)',
  DP_UPSTREAM_REJECTED: "the registry refused the handle (4xx): that request's problem",
  DP_UPSTREAM_OVERLOADED: 'our own queue was full',
  DP_UPSTREAM_CIRCUIT_OPEN: 'lookups paused by the circuit breaker',
  DP_PREFIX_CIRCUIT_OPEN: 'lookups for one prefix paused by its breaker',
  DP_DEADLINE: "the request's deadline (REQUEST_DEADLINE_MS) ran out",
  DP_CLIENT_OVER_SHARE: 'one client over its share of the upstream'
}

/** One sentence on whether the registry answers, escaped. */
function reachabilityText(r: StatusSnapshot['upstream']['reachability']): string {
  switch (r.state) {
    case 'offline':
      return 'Offline (OFFLINE): no upstream; only local records answer.'
    case 'unknown':
      return 'Not known yet: no lookup has reached the registry since start.'
    case 'answers':
      return `The registry answers (since ${escapeHtml(clock(r.since))} UTC).`
    case 'unreachable':
      return (
        `<span class="state-open">The registry cannot be reached</span> since ${escapeHtml(clock(r.since))} UTC: ${escapeHtml(r.why)} (<code>${escapeHtml(r.detail)}</code>). ` +
        'Cached and local records are still answered. Check the network and UPSTREAM_URL, or run offline (OFFLINE=true).'
      )
  }
}

/** 3 d 4 h, 2 h 5 min, 4 min 10 s, 45 s. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds))
  const d = Math.floor(s / 86_400)
  const h = Math.floor((s % 86_400) / 3600)
  const m = Math.floor((s % 3600) / 60)
  if (d > 0) return `${d} d ${h} h`
  if (h > 0) return `${h} h ${m} min`
  if (m > 0) return `${m} min ${s % 60} s`
  return `${s} s`
}

export function bytes(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(1)} GiB`
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`
  if (n >= 2 ** 10) return `${(n / 2 ** 10).toFixed(1)} KiB`
  return `${n} B`
}

function percent(part: number, whole: number): string {
  if (whole <= 0) return '—'
  const p = (part / whole) * 100
  return `${p < 10 ? p.toFixed(1) : Math.round(p)} %`
}

/** The time of an ISO date, as UTC: 12:03:04. */
function clock(iso: string): string {
  return iso.slice(11, 19)
}

export function count(n: number): string {
  return Math.round(n).toLocaleString('en-US')
}

/** A count, or a dash where there is none to give (a setting that refuses nothing itself). */
function countOrNone(n: number | null): string {
  return n === null ? '—' : count(n)
}

function ms(n: number | null): string {
  return n === null ? '—' : `${formatNumber(n)} ms`
}

function labelsText(labels: Record<string, string>): string {
  return Object.values(labels).join(', ')
}

export function table(
  caption: string,
  head: readonly string[],
  rows: readonly string[][],
  numeric: ReadonlySet<number> = new Set()
): string {
  const th = head.map((h, i) => `<th scope="col"${numeric.has(i) ? ' class="num"' : ''}>${escapeHtml(h)}</th>`).join('')
  const body =
    rows.length === 0
      ? `<tr><td colspan="${head.length}">None.</td></tr>`
      : rows.map((r) => `<tr>${r.map((c, i) => `<td${numeric.has(i) ? ' class="num"' : ''}>${c}</td>`).join('')}</tr>`).join('\n')
  return `<div class="scroll"><table class="status">
<caption>${escapeHtml(caption)}</caption>
<thead><tr>${th}</tr></thead>
<tbody>
${body}
</tbody>
</table></div>`
}

export function figures(items: ReadonlyArray<[string, string]>): string {
  return `<ul class="figures">${items.map(([label, value]) => `<li><strong>${value}</strong>${escapeHtml(label)}</li>`).join('')}</ul>`
}

function countRows(rows: readonly CountRow[]): string[][] {
  return rows.map((r) => [escapeHtml(labelsText(r.labels)), count(r.lastHour), count(r.sinceStart)])
}

export function renderStatusPage(ctx: PageContext, s: StatusSnapshot): string {
  const history = `one point per ${s.stepSeconds} s since ${clock(s.seriesStart)} UTC`
  const body = `<h1>Resolver status</h1>
<p class="links">For the people who run this resolver. ${link(`${ctx.baseUrl}status.json`, 'The same as JSON')} · ${link(`${ctx.baseUrl}metrics`, 'Prometheus metrics')}</p>
<p id="refresh-control"></p>
<div id="live">
${figures([
  ['up', escapeHtml(duration(s.uptimeSeconds))],
  ['version', escapeHtml(s.version)],
  ['as of (UTC)', escapeHtml(clock(s.at))],
  ['cache hit ratio in the period', s.cache.hitRatioLastHour === null ? '—' : percent(s.cache.hitRatioLastHour, 1)]
])}
<p>Figures cover the last hour at most (${escapeHtml(history)}); nothing is kept on disk.</p>
${s.worker === null ? '' : `<p id="worker">These are the figures of worker ${count(s.worker.index)} of ${count(s.worker.of)} (WORKERS), the process that answered this request: each worker counts its own answers, cache and breakers, so a reload may show another's. The Prometheus metrics hold every worker's, labelled by worker.</p>`}
${requestsSection(s, history)}
${cacheSection(s)}
${upstreamSection(s, history)}
${breakerSection(s)}
${copySection(s)}
<section aria-labelledby="h-limits">
<h2 id="h-limits">Limits in force</h2>
${table(
  'Limits and how often they refused',
  ['Limit', 'Setting', 'Refused in the period', 'Since start'],
  s.limits.map((l) => [escapeHtml(l.limit), escapeHtml(l.setting), countOrNone(l.refusedLastHour), countOrNone(l.refusedSinceStart)]),
  new Set([2, 3])
)}
</section>
<section aria-labelledby="h-services">
<h2 id="h-services">Local services</h2>
${servicesSection(s)}
</section>
<section aria-labelledby="h-errors">
<h2 id="h-errors">Recent upstream errors</h2>
${table(
  'The last 20 runs of upstream errors, newest first (no reader data is kept)',
  ['From (UTC)', 'To', 'Code', 'Count', 'Meaning'],
  s.upstreamErrors.map((e) => [
    escapeHtml(clock(e.from)),
    escapeHtml(clock(e.to)),
    `<code>${escapeHtml(e.code)}</code>`,
    count(e.count),
    escapeHtml(ERROR_MEANINGS[e.code] ?? '')
  ]),
  new Set([3])
)}
</section>
</div>
<script>${REFRESH_SCRIPT}</script>`
  return htmlDocument('Resolver status', body, ctx.baseUrl, `<style>\n${STATUS_CSS}\n</style>\n`)
}

/** The charts' time axis: from the first point to now. */
function spanOf(s: StatusSnapshot): { startLabel: string; endLabel: string } {
  return { startLabel: `${clock(s.seriesStart)} UTC`, endLabel: `${clock(s.at)} UTC` }
}

/** Every answer by outcome: a chart per second, and a table of the period and since start. */
function requestsSection(s: StatusSnapshot, history: string): string {
  const chart = lineChart({
    id: 'chart-requests',
    title: 'Requests per second by outcome',
    desc: `Answers per second, ${history}, each counted once: from a local record, the cache, the upstream or a stale copy, or not found, refused, failed. Totals are in the table below.`,
    series: OUTCOMES.map((o) => ({ name: OUTCOME_NAMES[o], values: s.requests.perSecond[o] })),
    unit: 'per second',
    ...spanOf(s)
  })
  const r = s.requests.lastHour
  const answered = OUTCOMES.reduce((sum, o) => sum + r[o], 0)
  const rows = OUTCOMES.map((o) => {
    const series = s.requests.perSecond[o]
    return [escapeHtml(OUTCOME_NAMES[o]), formatNumber(series[series.length - 1] ?? 0), count(r[o]), count(s.requests.sinceStart[o])]
  })
  return `<section aria-labelledby="h-requests">
<h2 id="h-requests">Requests</h2>
${chart}
${table('Requests by outcome', ['Outcome', 'Per second now', 'In the period', 'Since start'], rows, new Set([1, 2, 3]))}
<p>Every answer of <code>/{doi}</code>, the form, <code>/openurl</code> and the REST API (<code>/api/handles/{doi}</code>, <code>?action=api</code>), and every line of a batch (<code>POST /api/batch</code>), counts once (<code>doi_proxy_answers_total</code> in the metrics): a record from local records, the cache, the upstream (miss) or an expired copy standing in (stale); or not found, a bad request or refusal (4xx), an error (5xx). ${count(answered)} answers in the period.</p>
</section>`
}

function cacheSection(s: StatusSnapshot): string {
  return `<section aria-labelledby="h-cache">
<h2 id="h-cache">Cache</h2>
${figures([
  ['entries', `${count(s.cache.entries)} of ${count(s.cache.maxEntries)} (${percent(s.cache.entries, s.cache.maxEntries)})`],
  ['bytes', `${escapeHtml(bytes(s.cache.bytes))} of ${escapeHtml(bytes(s.cache.maxBytes))} (${percent(s.cache.bytes, s.cache.maxBytes)})`],
  ['hit ratio in the period', s.cache.hitRatioLastHour === null ? '—' : percent(s.cache.hitRatioLastHour, 1)]
])}
</section>`
}

/** Whether the registry answers, its requests now and in the period, and the charts of latency and failures. */
function upstreamSection(s: StatusSnapshot, history: string): string {
  const latencyChart = lineChart({
    id: 'chart-latency',
    title: 'Upstream latency, p50 and p99',
    desc: `Milliseconds, ${history}; gaps where no upstream request ended. Over the period: p50 ${ms(s.upstream.lastHour.p50Ms)}, p99 ${ms(s.upstream.lastHour.p99Ms)}.`,
    series: [
      { name: 'p50', values: s.upstream.p50Ms },
      { name: 'p99', values: s.upstream.p99Ms }
    ],
    unit: 'ms',
    ...spanOf(s)
  })
  const errorChart = lineChart({
    id: 'chart-errors',
    title: 'Upstream error rate',
    desc: `Share of upstream requests that failed, ${history}. Over the period: ${count(s.upstream.lastHour.errors)} of ${count(s.upstream.lastHour.requests)}.`,
    series: [
      { name: 'failed share', values: s.upstream.errorRate },
      { name: 'breaker open (1) or half-open (0.5)', values: s.breaker.perStep.map((v) => v / 2) }
    ],
    unit: 'share',
    minMax: 1,
    ...spanOf(s)
  })
  return `<section aria-labelledby="h-upstream">
<h2 id="h-upstream">Upstream</h2>
<p id="upstream-state">${reachabilityText(s.upstream.reachability)}</p>
${figures([
  ['requests in the period', count(s.upstream.lastHour.requests)],
  ['failed', count(s.upstream.lastHour.errors)],
  ['retries', count(s.upstream.lastHour.retries)],
  ['in flight now', count(s.upstream.inFlight)],
  ['waiting now', count(s.upstream.queued)]
])}
${latencyChart}
${errorChart}
</section>`
}

function breakerSection(s: StatusSnapshot): string {
  const state =
    s.breaker.state === 'open'
      ? '<span class="state-open">Open</span>: lookups that need the registry fail at once'
      : s.breaker.state === 'half-open'
        ? 'Half-open: one probe is being tried'
        : 'Closed: lookups go to the registry'
  return `<section aria-labelledby="h-breaker">
<h2 id="h-breaker">Circuit breaker</h2>
<p>${state}. Prefix breakers opened ${count(s.breaker.prefixOpeningsLastHour)} times in the period.</p>
<p>Last openings (UTC, seen once a second): ${s.breaker.openings.length === 0 ? 'none since start.' : escapeHtml(s.breaker.openings.map((o) => `${o.slice(0, 10)} ${clock(o)}`).join(', '))}</p>
</section>`
}

const UPDATE_OUTCOMES: Readonly<Record<string, string>> = {
  done: 'done',
  interrupted: 'interrupted (the next run resumes)',
  disk_full: 'stopped: the disk is full',
  failed: 'failed'
}

/** The registry copy (REGISTRY_COPY): its records, as-of and last update per agency, and who updates it. */
function copySection(s: StatusSnapshot): string {
  const c = s.registryCopy
  if (c === null) return ''
  const when = (iso: string | null): string => (iso === null ? '—' : escapeHtml(`${iso.slice(0, 10)} ${clock(iso)}`))
  const rows = c.agencies.map((a) => {
    const last = a.lastUpdate
    const lastText =
      last === null
        ? '—'
        : `${when(last.at)}: ${escapeHtml(UPDATE_OUTCOMES[last.outcome] ?? last.outcome)}, ${count(last.records)} records in ${count(last.pages)} pages${last.error === null ? '' : ` (${escapeHtml(last.error)})`}`
    const pending = a.pending === null ? '—' : `${count(a.pending.records)} records in ${count(a.pending.pages)} pages so far`
    return [escapeHtml(a.agency), count(a.records), when(a.asOf), lastText, pending]
  })
  const updates =
    c.updateHours === 0
      ? 'This server does not update it (REGISTRY_COPY_UPDATE_HOURS=0).'
      : `This server updates an agency when its as-of is ${count(c.updateHours)} hours old (REGISTRY_COPY_UPDATE_HOURS), one process at a time.`
  const lease =
    c.lease === null
      ? 'Nobody is updating it now.'
      : `Being updated by <code>${escapeHtml(c.lease.holder)}</code> (its lease runs to ${when(c.lease.until)} UTC).`
  return `<section aria-labelledby="h-copy">
<h2 id="h-copy">Registry copy</h2>
${figures([
  ['records', count(c.records)],
  ['on disk', escapeHtml(bytes(c.fileBytes))],
  ['last written (UTC)', when(c.updatedAt)]
])}
${table('The copy by agency (times in UTC)', ['Agency', 'Records', 'Complete to', 'Last update', 'Update to resume'], rows, new Set([1]))}
<p>${escapeHtml(updates)} ${lease}</p>
</section>`
}

/** The local services configured, what they were sent, and the link-out chains. */
function servicesSection(s: StatusSnapshot): string {
  if (s.localServices.configured.length === 0) {
    return '<p>No local service is configured (LOCAL_SERVICES, LOCAL_SERVICE_URL), so no redirect is diverted.</p>'
  }
  return `<p>Configured: ${s.localServices.configured.map((c) => `${escapeHtml(c.name)} (<code>${escapeHtml(c.id)}</code>)`).join(', ')}. Loop guard held back ${count(s.localServices.loopGuard.lastHour)} diversions in the period (${count(s.localServices.loopGuard.sinceStart)} since start).</p>
${table('Redirects diverted to a local service', ['Service, reason', 'Period', 'Since start'], countRows(s.localServices.diversions), new Set([1, 2]))}
${table("Redirects not diverted at the reader's request", ['Reason', 'Period', 'Since start'], countRows(s.localServices.bypasses), new Set([1, 2]))}
${linkoutSection(s)}`
}

/** Link-out chains: each step's count, and the open-access source with its daily limit (docs/institutional.md). */
function linkoutSection(s: StatusSnapshot): string {
  const oa = s.openAccess
  const source =
    oa === null
      ? '<p>No open-access source (OA_PROVIDER).</p>'
      : `<p>Open-access source: <code>${escapeHtml(oa.provider)}</code>. ${oa.dailyLimit === null ? 'A file: no daily limit.' : `Calls today (UTC): ${count(oa.callsToday)} of the daily limit ${count(oa.dailyLimit)}${oa.callsToday >= oa.dailyLimit ? ' <strong>reached: the open-access step is skipped until midnight UTC</strong>' : ''}.`}</p>
${table('Open-access lookups past the memory cache', ['Provider, result', 'Period', 'Since start'], countRows(oa.lookups), new Set([1, 2]))}`
  return `<h3>Link-out chains</h3>
${table('Link-out steps (open-access by result; the step each reader took)', ['Step, result', 'Period', 'Since start'], countRows(s.linkout), new Set([1, 2]))}
${source}`
}
