import { CHECK_KINDS, FAILURES, SHOWN_VERDICTS, verdictOf } from '../../handle/health/types.js'
import type {
  BrokenRow,
  CheckRow,
  DoiHistory,
  FailureVerdict,
  PrefixSummary,
  ShownVerdict,
  VerdictCounts
} from '../../handle/health/types.js'
import { stateOfRow } from './db.js'
import type { HealthDb } from './db.js'

/**
 * What the health pages read (issue 42, plan D6), on the writer's connection or a read-only one. Nothing here scans
 * `checks`: the counts are `tally` (kept in each check's transaction), the history is `daily` (one row a day ×
 * prefix × verdict), the broken DOIs are `dois` by the index (prefix, verdict, confirmed_at) with their last check
 * by id. Long lists are pages by key (`after`), never one long read that would pin an old snapshot of the file.
 */

export interface HealthReaderOptions {
  /** HEALTH_WATCH: these prefixes are marked watched, and shown even before their first DOI. */
  watched?: readonly string[]
  now?: () => number
  /** A DOI counts as overdue this long after it was due (the scheduler's turns and host queues are normal). */
  overdueGraceMs?: number
}

export interface BrokenPage {
  rows: BrokenRow[]
  /** Pass as `after` for the next page; null on the last. */
  next: string | null
}

export interface CheckerFigures {
  lastCheckAt: number | null
  overdue: number
  historyGap?: { from: number; to: number }
  /** Where the host's checker is, as its writer last recorded it (the read-only processes show this). */
  recorded?: { state: string; reason?: string }
}

export interface HealthReader {
  /** Every prefix with DOIs (and every watched one): counts now, newly broken this week, overdue, and `days` of history. */
  summary(opts?: { days?: number }): PrefixSummary[]
  /** One point a day for a prefix, oldest first, over the last `days` days (today's from the live counts). */
  daily(prefix: string, days: number): PrefixSummary['history']
  /** Confirmed-broken DOIs by prefix, verdict and time confirmed, a page at a time. Throws RangeError on a bad `after`. */
  broken(opts?: { prefix?: string | undefined; after?: string | undefined; limit?: number }): BrokenPage
  /** DOIs confirmed broken since `sinceMs` (at most `limit`; of `prefix` alone when given), newest first. */
  newlyBroken(sinceMs: number, limit?: number, prefix?: string): BrokenRow[]
  /** One DOI (by its cache key) and its last `limit` checks; null when it was never watched. */
  history(key: string, limit?: number): DoiHistory | null
  checkerStatus(): CheckerFigures
}

const DAY_MS = 86_400_000
const WEEK_MS = 7 * DAY_MS
const PAGE_MAX = 1000
/** The failures in the order of the index (text order), the order of the broken list. */
const FAILURES_SORTED = [...FAILURES].sort()

const BROKEN_COLUMNS = `d.id, d.doi, d.prefix, d.verdict, d.since, d.confirmed_at, c.at AS checked_at, c.status,
  fu.url AS url, ru.url AS registered_url, t.text AS evidence, gu.url AS good_url, g.at AS good_at
  FROM dois d
  LEFT JOIN checks c ON c.id = d.last_check_id
  LEFT JOIN urls fu ON fu.id = c.final_url
  LEFT JOIN urls ru ON ru.id = c.registered_url
  LEFT JOIN texts t ON t.id = c.evidence
  LEFT JOIN checks g ON g.id = d.last_good_check_id
  LEFT JOIN urls gu ON gu.id = g.final_url`

interface BrokenSqlRow {
  id: number
  doi: string
  prefix: string
  verdict: string
  since: number | null
  confirmed_at: number
  checked_at: number | null
  status: number | null
  url: string | null
  registered_url: string | null
  evidence: string | null
  good_url: string | null
  good_at: number | null
}

function brokenRow(row: BrokenSqlRow): BrokenRow {
  return {
    doi: row.doi,
    prefix: row.prefix,
    verdict: row.verdict as FailureVerdict,
    since: row.since ?? row.confirmed_at,
    confirmedAt: row.confirmed_at,
    url: row.url,
    status: row.status,
    evidence: row.evidence ?? '',
    registeredUrl: row.registered_url,
    lastGoodUrl: row.good_url,
    lastGoodAt: row.good_url === null ? null : row.good_at,
    checkedAt: row.checked_at ?? row.confirmed_at
  }
}

/** The UTC day of a time, YYYY-MM-DD. */
export function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10)
}

function zeroCounts(): VerdictCounts {
  return Object.fromEntries(SHOWN_VERDICTS.map((v) => [v, 0])) as VerdictCounts
}

function addCount(counts: VerdictCounts, verdict: string, n: number): void {
  if ((SHOWN_VERDICTS as readonly string[]).includes(verdict)) counts[verdict as ShownVerdict] += n
}

type Cursor = [string, string, number, number]

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url')
}

function decodeCursor(text: string): Cursor {
  try {
    const value: unknown = JSON.parse(Buffer.from(text.slice(0, 2000), 'base64url').toString('utf8'))
    if (
      Array.isArray(value) &&
      value.length === 4 &&
      typeof value[0] === 'string' &&
      typeof value[1] === 'string' &&
      Number.isSafeInteger(value[2]) &&
      Number.isSafeInteger(value[3])
    ) {
      return value as Cursor
    }
  } catch {
    // said below
  }
  throw new RangeError('not a page of this list (after=)')
}

/** The checker's state as the writer recorded it (meta `checker`), or undefined when unreadable. */
function recordedChecker(text: string | undefined): { state: string; reason?: string } | undefined {
  if (text === undefined) return undefined
  try {
    const value = JSON.parse(text) as { state?: unknown; reason?: unknown } | null
    if (typeof value?.state !== 'string') return undefined
    return typeof value.reason === 'string' ? { state: value.state, reason: value.reason } : { state: value.state }
  } catch {
    return undefined
  }
}

export function createHealthReader(db: HealthDb, opts: HealthReaderOptions = {}): HealthReader {
  const now = opts.now ?? Date.now
  const grace = opts.overdueGraceMs ?? 3_600_000
  const counts = countQueries(db.sqlite, new Set(opts.watched ?? []), now, grace)
  const broken = brokenQueries(db.sqlite, counts.prefixes)
  return {
    summary: counts.summary,
    daily: (prefix, days) => counts.daily(prefix, days),
    broken: broken.page,
    newlyBroken: broken.since,
    history: historyQuery(db.sqlite),
    checkerStatus: statusQuery(db.sqlite, () => counts.overdueNow(now() - grace))
  }
}

type Sql = HealthDb['sqlite']

/** The counts now (`tally`), their history (`daily`), the newly broken and the overdue, by prefix. */
function countQueries(sql: Sql, watched: ReadonlySet<string>, now: () => number, grace: number) {
  const tallyStmt = sql.prepare<[], { prefix: string; verdict: string; n: number }>('SELECT prefix, verdict, n FROM tally')
  const overdueOf = sql.prepare<[string, number], { n: number }>(
    'SELECT count(*) AS n FROM dois WHERE sources <> 0 AND prefix = ? AND next_at < ?'
  )
  const newlyCount = sql.prepare<[string, string, number], { n: number }>(
    'SELECT count(*) AS n FROM dois WHERE sources <> 0 AND prefix = ? AND verdict = ? AND confirmed_at >= ?'
  )
  const dailyStmt = sql.prepare<[string, string], { day: string; verdict: string; n: number }>(
    'SELECT day, verdict, n FROM daily WHERE prefix = ? AND day >= ? ORDER BY day'
  )

  /** Prefixes with DOIs (from the counts) and the watched ones, sorted; with their counts now. */
  const countsNow = (): Map<string, VerdictCounts> => {
    const counts = new Map<string, VerdictCounts>()
    for (const prefix of watched) counts.set(prefix, zeroCounts())
    for (const { prefix, verdict, n } of tallyStmt.all()) {
      const c = counts.get(prefix) ?? zeroCounts()
      addCount(c, verdict, n)
      counts.set(prefix, c)
    }
    return new Map([...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  }

  const daily = (prefix: string, days: number, today?: VerdictCounts): PrefixSummary['history'] => {
    const span = Math.max(1, Math.min(3650, Math.trunc(days)))
    const at = now()
    const byDay = new Map<string, VerdictCounts>()
    for (const { day, verdict, n } of dailyStmt.all(prefix, dayOf(at - (span - 1) * DAY_MS))) {
      const c = byDay.get(day) ?? zeroCounts()
      addCount(c, verdict, n)
      byDay.set(day, c)
    }
    // Today's point is the live count: the rollup is hourly.
    const live = today ?? countsNow().get(prefix)
    if (live !== undefined) byDay.set(dayOf(at), { ...live })
    return [...byDay].sort(([a], [b]) => (a < b ? -1 : 1)).map(([day, counts]) => ({ day, counts }))
  }

  return {
    daily,
    prefixes: (): Iterable<string> => countsNow().keys(),
    /** Overdue DOIs of every prefix, each counted from the index alone. */
    overdueNow: (before: number): number =>
      [...new Set(tallyStmt.all().map((row) => row.prefix))].reduce((sum, prefix) => sum + (overdueOf.get(prefix, before)?.n ?? 0), 0),
    summary(summaryOpts: { days?: number } = {}): PrefixSummary[] {
      const at = now()
      return [...countsNow()].map(([prefix, counts]) => ({
        prefix,
        watched: watched.has(prefix),
        counts,
        newlyBroken: FAILURES.reduce((sum, verdict) => sum + (newlyCount.get(prefix, verdict, at - WEEK_MS)?.n ?? 0), 0),
        overdue: overdueOf.get(prefix, at - grace)?.n ?? 0,
        history: summaryOpts.days === undefined ? [] : daily(prefix, summaryOpts.days, counts)
      }))
    }
  }
}

/** The confirmed-broken DOIs: a page of the list by a cursor, and those newly broken since a time. */
function brokenQueries(
  sql: Sql,
  allPrefixes: () => Iterable<string>
): { page: HealthReader['broken']; since: HealthReader['newlyBroken'] } {
  // One failure verdict of one prefix after a place (confirmed_at, id): a range of the index dois_report.
  const brokenStmt = sql.prepare<[string, string, number, number, number], BrokenSqlRow>(
    `SELECT ${BROKEN_COLUMNS}
     WHERE d.sources <> 0 AND d.prefix = ? AND d.verdict = ? AND (d.confirmed_at, d.id) > (?, ?)
     ORDER BY d.confirmed_at, d.id LIMIT ?`
  )
  const newlyStmt = sql.prepare<[string, string, number, number], BrokenSqlRow>(
    `SELECT ${BROKEN_COLUMNS}
     WHERE d.sources <> 0 AND d.prefix = ? AND d.verdict = ? AND d.confirmed_at >= ? ORDER BY d.confirmed_at DESC LIMIT ?`
  )
  return {
    page(brokenOpts = {}) {
      const limit = Math.max(1, Math.min(PAGE_MAX, Math.trunc(brokenOpts.limit ?? 200)))
      const cursor: Cursor = brokenOpts.after === undefined ? ['', '', 0, 0] : decodeCursor(brokenOpts.after)
      const prefixes = brokenOpts.prefix !== undefined ? [brokenOpts.prefix] : [...allPrefixes()]
      const rows: BrokenSqlRow[] = []
      // Each failure verdict of each prefix in the index's order, after the cursor's place, until the page is full.
      const ranges = prefixes.flatMap((prefix) => FAILURES_SORTED.map((verdict) => [prefix, verdict] as const))
      for (const [prefix, verdict] of ranges) {
        if (rows.length > limit) break
        if (prefix < cursor[0] || (prefix === cursor[0] && verdict < cursor[1])) continue
        const here = prefix === cursor[0] && verdict === cursor[1]
        rows.push(
          ...brokenStmt.all(prefix, verdict, here ? cursor[2] : Number.MIN_SAFE_INTEGER, here ? cursor[3] : 0, limit + 1 - rows.length)
        )
      }
      const page = rows.slice(0, limit)
      const last = page.at(-1)
      return {
        rows: page.map(brokenRow),
        next: rows.length > limit && last !== undefined ? encodeCursor([last.prefix, last.verdict, last.confirmed_at, last.id]) : null
      }
    },
    since(sinceMs, limit = PAGE_MAX, only) {
      const bound = Math.max(1, Math.min(PAGE_MAX, Math.trunc(limit)))
      const rows: BrokenSqlRow[] = []
      for (const prefix of only === undefined ? allPrefixes() : [only]) {
        for (const verdict of FAILURES) rows.push(...newlyStmt.all(prefix, verdict, sinceMs, bound))
      }
      return rows
        .sort((a, b) => b.confirmed_at - a.confirmed_at || a.id - b.id)
        .slice(0, bound)
        .map(brokenRow)
    }
  }
}

/** One DOI and its last checks. */
function historyQuery(sql: Sql): HealthReader['history'] {
  const doiStmt = sql.prepare(
    `SELECT d.id, d.key, d.doi, d.prefix, d.sources, d.verdict, d.since, d.confirmed_at, d.streak, d.streak_verdict,
       d.streak_first_at, d.streak_last_at, d.win, d.retries, d.next_at FROM dois d WHERE d.key = ?`
  )
  const checksStmt = sql.prepare<
    [number, number],
    {
      at: number
      kind: number
      verdict: number
      status: number | null
      registered_url: string | null
      final_url: string | null
      domain: string | null
      evidence: string | null
      ms: number | null
    }
  >(
    `SELECT c.at, c.kind, c.verdict, c.status, ru.url AS registered_url, fu.url AS final_url, fu.domain, t.text AS evidence, c.ms
     FROM checks c LEFT JOIN urls ru ON ru.id = c.registered_url LEFT JOIN urls fu ON fu.id = c.final_url
     LEFT JOIN texts t ON t.id = c.evidence
     WHERE c.doi_id = ? ORDER BY c.at DESC, c.id DESC LIMIT ?`
  )
  return (key, limit = 100) => {
    const row = doiStmt.get(key) as
      (Parameters<typeof stateOfRow>[0] & { id: number; key: string; doi: string; prefix: string; sources: number }) | undefined
    if (row === undefined) return null
    const checks = checksStmt.all(row.id, Math.max(1, Math.min(PAGE_MAX, Math.trunc(limit)))).map((c): CheckRow => ({
      at: c.at,
      kind: CHECK_KINDS[c.kind] ?? 'scheduled',
      verdict: verdictOf(c.verdict) ?? 'error',
      status: c.status,
      registeredUrl: c.registered_url,
      finalUrl: c.final_url,
      domain: c.domain,
      evidence: c.evidence ?? '',
      ms: c.ms
    }))
    return { key: row.key, doi: row.doi, prefix: row.prefix, watched: row.sources !== 0, state: stateOfRow(row), checks }
  }
}

/** The checker's figures: the last check, the overdue, a gap in the history, the state its writer recorded. */
function statusQuery(sql: Sql, overdue: () => number): HealthReader['checkerStatus'] {
  const lastCheckStmt = sql.prepare<[], { at: number | null }>('SELECT max(at) AS at FROM checks')
  const metaStmt = sql.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?')
  return () => {
    const figures: CheckerFigures = { lastCheckAt: lastCheckStmt.get()?.at ?? null, overdue: overdue() }
    const from = metaStmt.get('gap_from')?.value
    const to = metaStmt.get('gap_to')?.value
    if (from !== undefined && to !== undefined) figures.historyGap = { from: Number(from), to: Number(to) }
    const recorded = recordedChecker(metaStmt.get('checker')?.value)
    if (recorded !== undefined) figures.recorded = recorded
    return figures
  }
}
