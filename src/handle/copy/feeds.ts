/**
 * The agencies' update feeds as `doi-proxy import --update` reads them (issue 43, plan-43 §1.12): the URL of
 * each page, what a page holds and where the next one is, and the run's saved state read back. Pure: the
 * fetching is resolve/copy/feeds.ts's, the run resolve/copy/updater.ts's.
 *
 * Crossref: `GET /works?filter=from-update-date:D&rows=1000&cursor=*&mailto=…`, then the answer's
 * `message.next-cursor` until a page comes back empty (Crossref REST API docs, "Deep paging with cursors").
 * DataCite: `GET /dois?query=updated:[T TO *]&sort=updated&page[size]=1000&page[cursor]=1`, then the
 * answer's `links.next` until there is none (DataCite support, "Pagination": cursor-based paging).
 */

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

/** Where an update run stands, saved in the copy's meta (`update:<agency>`) with each page's records. */
export interface UpdateState {
  /** Seconds since 1970: records changed since then are asked for. */
  from: number
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

/** The URL of a page of Crossref's works updated since `fromS`: the first with no cursor (`*`). */
export function crossrefUpdatesUrl(base: string, fromS: number, cursor: string | undefined, mailto: string | undefined): string {
  const query = [
    `filter=${encodeURIComponent(`from-update-date:${crossrefDay(fromS)}`)}`,
    `rows=${PAGE_ROWS}`,
    // Crossref's cursors may hold '+' and '/': encoded, as its docs ask.
    `cursor=${encodeURIComponent(cursor ?? '*')}`
  ]
  if (mailto !== undefined) query.push(`mailto=${encodeURIComponent(mailto)}`)
  return `${baseOf(base)}/works?${query.join('&')}`
}

/** The first page of DataCite's DOIs updated since `fromS` (the next ones are its `links.next`). */
export function dataciteUpdatesUrl(base: string, fromS: number): string {
  const query = [
    `query=${encodeURIComponent(`updated:[${dataciteTime(fromS)} TO *]`)}`,
    'sort=updated',
    `${encodeURIComponent('page[size]')}=${PAGE_ROWS}`,
    `${encodeURIComponent('page[cursor]')}=1`
  ]
  return `${baseOf(base)}/dois?${query.join('&')}`
}

/** The URL of the page a run stands at. */
export function pageUrl(agency: FeedAgency, base: string, state: Pick<UpdateState, 'from' | 'cursor'>, mailto: string | undefined): string {
  if (agency === 'crossref') return crossrefUpdatesUrl(base, state.from, state.cursor, mailto)
  return state.cursor ?? dataciteUpdatesUrl(base, state.from)
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
  return { from, pages, records, startedAt, ...(cursor === undefined ? {} : { cursor }) }
}
