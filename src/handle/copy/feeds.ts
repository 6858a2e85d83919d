/**
 * The agencies' update feeds as `doi-proxy import --update` reads them (issue 43, plan-43 §1.12): the URL of
 * each page, what a page holds and where the next one is, and the run's saved state read back. Pure: the
 * fetching is resolve/copy/feeds.ts's, the run resolve/copy/updater.ts's.
 *
 * Crossref: `GET /works?filter=from-update-date:D&rows=1000&cursor=*&mailto=…`, then the answer's
 * `message.next-cursor` until a page comes back empty (Crossref REST API docs, "Deep paging with cursors").
 * DataCite: `GET /dois?query=updated:[T TO *]&sort=updated&page[size]=1000&page[cursor]=1`, then the
 * answer's `links.next` until there is none (DataCite support, "Pagination": cursor-based paging).
 * Limited to some prefixes (a copy imported with `--prefix`): Crossref's `prefix:10.x` filters, ORed
 * (REST API filters: "filters with the same name are ORed"); DataCite's `prefix` filter, comma-separated
 * (support.datacite.org "Queries and filtering"; lupo splits it on commas into one terms query). The
 * updater also passes over any item outside them: the agency's filter is trusted for economy, not truth.
 */
import { cacheKey, prefixOf } from '../name.js'

/** The agencies whose APIs list what changed. */
export const FEED_AGENCIES = ['crossref', 'datacite'] as const
export type FeedAgency = (typeof FEED_AGENCIES)[number]

/** Items per page: the most either API gives at once (Crossref `rows` ≤ 1000, DataCite `page[size]` ≤ 1000). */
export const PAGE_ROWS = 1000

/**
 * An update starts this long before the coverage it extends: Crossref's filter is date-granular, and an
 * agency indexes a change a while after it is made. Asking twice for a record changes nothing (newer wins).
 */
export const OVERLAP_S = 86_400

/** A cursor (or next link) longer than this is not one an agency would give: refused, never stored. */
export const MAX_CURSOR_LENGTH = 4096

/**
 * At most this many prefixes in one update (each is a filter in the URL: 100 keep it under 3 KB), and in a
 * copy's scope (imports with --prefix add up; past this the scope is any prefix, and updates ask for all).
 */
export const MAX_UPDATE_PREFIXES = 100

/** A DOI prefix as `--prefix` takes it: 10. then no '/', space or comma. */
export const PREFIX_PATTERN = /^10\.[^/\s,]+$/

/** Where an update run stands, saved in the copy's meta (`update:<agency>`) with each page's records. */
export interface UpdateState {
  /** Seconds since 1970: records changed since then are asked for. */
  from: number
  /** The prefixes the run asks for; undefined: all of the agency. */
  prefixes?: string[]
  /** Crossref's next cursor, or DataCite's next link; undefined: the first page. */
  cursor?: string
  pages: number
  records: number
  /** Seconds since 1970 when the run began: the coverage it vouches for once complete. */
  startedAt: number
}

/** One page read: its items, and where the next page is (undefined: this was the last). */
export interface FeedPage {
  items: unknown[]
  next: string | undefined
  /** How many the agency says the whole run lists, when it says. */
  total?: number
}

/** YYYY-MM-DD (UTC) of a time in seconds: Crossref's `from-update-date` takes a day. */
export function crossrefDay(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 10)
}

/** YYYY-MM-DDTHH:MM:SSZ of a time in seconds: DataCite's `updated` range takes a time. */
export function dataciteTime(seconds: number): string {
  return new Date(Math.floor(seconds) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

function baseOf(base: string): string {
  return base.replace(/\/+$/, '')
}

/** The URL of a page of Crossref's works updated since `fromS` (of `prefixes` only, when given): the first with no cursor (`*`). */
export function crossrefUpdatesUrl(
  base: string,
  fromS: number,
  cursor: string | undefined,
  mailto: string | undefined,
  prefixes?: readonly string[]
): string {
  const filters = [`from-update-date:${crossrefDay(fromS)}`, ...(prefixes ?? []).map((p) => `prefix:${p}`)]
  const query = [
    `filter=${encodeURIComponent(filters.join(','))}`,
    `rows=${PAGE_ROWS}`,
    // Crossref's cursors may hold '+' and '/': encoded, as its docs ask.
    `cursor=${encodeURIComponent(cursor ?? '*')}`
  ]
  if (mailto !== undefined) query.push(`mailto=${encodeURIComponent(mailto)}`)
  return `${baseOf(base)}/works?${query.join('&')}`
}

/** The first page of DataCite's DOIs updated since `fromS` (of `prefixes` only, when given; the next pages are its `links.next`). */
export function dataciteUpdatesUrl(base: string, fromS: number, prefixes?: readonly string[]): string {
  const query = [
    `query=${encodeURIComponent(`updated:[${dataciteTime(fromS)} TO *]`)}`,
    ...(prefixes === undefined ? [] : [`prefix=${encodeURIComponent(prefixes.join(','))}`]),
    'sort=updated',
    `${encodeURIComponent('page[size]')}=${PAGE_ROWS}`,
    `${encodeURIComponent('page[cursor]')}=1`
  ]
  return `${baseOf(base)}/dois?${query.join('&')}`
}

/** The URL of the page a run stands at. */
export function pageUrl(
  agency: FeedAgency,
  base: string,
  state: Pick<UpdateState, 'from' | 'cursor' | 'prefixes'>,
  mailto: string | undefined
): string {
  if (agency === 'crossref') return crossrefUpdatesUrl(base, state.from, state.cursor, mailto, state.prefixes)
  return state.cursor ?? dataciteUpdatesUrl(base, state.from, state.prefixes)
}

const isObject = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === 'object' && !Array.isArray(x)
const count = (x: unknown): number | undefined => (typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 ? x : undefined)

/**
 * A page's items and the way to the next, or why the answer is not a page (a problem message). Crossref:
 * `{message: {items, next-cursor, total-results}}`, an empty page ends the run. DataCite: `{data, links:
 * {next}, meta: {total}}`; its next link must be on the agency's own origin and path (a hostile answer
 * could otherwise send the updater anywhere), and no link, or no data, ends the run.
 */
export function pageOf(agency: FeedAgency, json: unknown, base: string): FeedPage | string {
  if (agency === 'crossref') {
    const message = isObject(json) ? json.message : undefined
    if (!isObject(message) || !Array.isArray(message.items)) return "Crossref's answer is not a list of works (no message.items)"
    const total = count(message['total-results'])
    if (message.items.length === 0) return { items: [], next: undefined, ...(total === undefined ? {} : { total }) }
    const cursor = message['next-cursor']
    if (typeof cursor !== 'string' || cursor === '' || cursor.length > MAX_CURSOR_LENGTH) {
      return "Crossref's page has works but no usable next-cursor"
    }
    return { items: message.items, next: cursor, ...(total === undefined ? {} : { total }) }
  }
  if (!isObject(json) || !Array.isArray(json.data)) return "DataCite's answer is not a list of DOIs (no data)"
  const total = isObject(json.meta) ? count(json.meta.total) : undefined
  const link = isObject(json.links) ? json.links.next : undefined
  let next: string | undefined
  if (json.data.length > 0 && link !== undefined && link !== null) {
    const checked = nextLinkOf(link, base)
    if ('problem' in checked) return checked.problem
    next = checked.url
  }
  return { items: json.data, next, ...(total === undefined ? {} : { total }) }
}

/** DataCite's next link when it stays on the configured API (same origin, same `/dois` path), else a problem. */
function nextLinkOf(link: unknown, base: string): { url: string } | { problem: string } {
  if (typeof link !== 'string' || link.length > MAX_CURSOR_LENGTH) {
    return { problem: "DataCite's next link is not a URL of reasonable length" }
  }
  let url: URL
  try {
    url = new URL(link)
  } catch {
    return { problem: `DataCite's next link ${JSON.stringify(link.slice(0, 200))} is not a URL` }
  }
  const api = new URL(base)
  const path = `${api.pathname.replace(/\/+$/, '')}/dois`
  if (url.origin !== api.origin || url.pathname !== path) {
    return { problem: `DataCite's next link ${JSON.stringify(link.slice(0, 200))} leaves ${api.origin}${path}` }
  }
  return { url: url.href }
}

/**
 * Whether a saved state's cursor can be used with the API configured now: a DataCite next link must still be
 * on it (DATACITE_API_URL may have changed since the run stopped); a Crossref cursor is only a token.
 */
export function cursorFits(agency: FeedAgency, cursor: string | undefined, base: string): boolean {
  if (cursor === undefined || agency === 'crossref') return true
  return 'url' in nextLinkOf(cursor, base)
}

/** A run's state as read back from the copy (a hostile or older file may hold anything): the state, or undefined. */
export function updateStateOf(raw: unknown): UpdateState | undefined {
  if (!isObject(raw)) return undefined
  const from = count(raw.from)
  const pages = count(raw.pages)
  const records = count(raw.records)
  const startedAt = count(raw.startedAt)
  if (from === undefined || pages === undefined || records === undefined || startedAt === undefined) return undefined
  const cursor = raw.cursor
  if (cursor !== undefined && (typeof cursor !== 'string' || cursor === '' || cursor.length > MAX_CURSOR_LENGTH)) return undefined
  const prefixes = raw.prefixes === undefined ? undefined : prefixListOf(raw.prefixes)
  if (prefixes === null) return undefined
  return { from, pages, records, startedAt, ...(cursor === undefined ? {} : { cursor }), ...(prefixes === undefined ? {} : { prefixes }) }
}

/** A list of prefixes read back from the copy: null when it is not one (a hostile or damaged meta). */
function prefixListOf(raw: unknown): string[] | null {
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_UPDATE_PREFIXES) return null
  return raw.every((p): p is string => typeof p === 'string' && PREFIX_PATTERN.test(p)) ? raw : null
}

// ---- the copy's scope: the prefixes it was imported with ----

/**
 * The prefixes a copy holds records of, as its meta says (`scope`: `{prefixes}`, written when it was made
 * with `--prefix`); undefined: any (no scope recorded, or a file imported without `--prefix`).
 */
export function scopeOf(raw: unknown): string[] | undefined {
  if (!isObject(raw)) return undefined
  return prefixListOf(raw.prefixes) ?? undefined
}

/** Sorted, without repeats (compared as the copy's keys: ASCII folded). */
export function prefixUnion(a: readonly string[], b: readonly string[]): string[] {
  const byKey = new Map<string, string>()
  for (const p of [...a, ...b]) if (!byKey.has(cacheKey(p))) byKey.set(cacheKey(p), p)
  return [...byKey.entries()].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([, p]) => p)
}

/**
 * The copy's scope after records of `prefixes` (undefined: of any prefix) are written into it: a copy
 * that held nothing takes the prefixes as its scope; one scoped already widens to the union; one that
 * may hold any prefix stays so (undefined), as does a scope grown past MAX_UPDATE_PREFIXES.
 */
export function scopeAfter(
  held: readonly string[] | undefined,
  empty: boolean,
  prefixes: readonly string[] | undefined
): string[] | undefined {
  if (prefixes === undefined) return undefined
  if (held === undefined && !empty) return undefined
  const union = prefixUnion(held ?? [], prefixes)
  return union.length > MAX_UPDATE_PREFIXES ? undefined : union
}

/**
 * Whether a run asking `prefixes` (undefined: all) lists every change of what the copy holds, its scope
 * (undefined: any prefix): only then may the agency's coverage move to the run's start.
 */
export function runCoversScope(prefixes: readonly string[] | undefined, scope: readonly string[] | undefined): boolean {
  if (prefixes === undefined) return true
  if (scope === undefined) return false
  const asked = new Set(prefixes.map(cacheKey))
  return scope.every((p) => asked.has(cacheKey(p)))
}

/** Whether two prefix lists (undefined: all) ask for the same DOIs. */
export function samePrefixes(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b
  return runCoversScope(a, b) && runCoversScope(b, a)
}

/** Whether a DOI is of one of the prefixes (their cache keys): the updater's own filter of the agency's answer. */
export function inPrefixes(doi: string, keys: ReadonlySet<string>): boolean {
  return keys.has(cacheKey(prefixOf(doi)))
}
