import { renderRedirectBody } from './views/pages.js'

/**
 * A redirect's status, headers and page: the proxy route's (src/http/routes/proxy.ts) and the door's, when
 * it answers a registry copy's work itself (src/http/prepared-answers.ts), so that both send the same bytes.
 */
export interface Redirect {
  status: number
  location: string
  vary: boolean
  linkHeaders: readonly string[]
  extraHeaders: ReadonlyArray<readonly [string, string]>
  headLines: readonly string[]
}

/** An answer's parts as the routes render them; Expires and X-Cache are added when it is sent. */
export interface AnswerParts {
  status: number
  headers: Record<string, string | string[]>
  body: string
}

export const HTML = 'text/html; charset=utf-8'
// A header value we may send: visible ASCII and spaces/tabs only (no CR, LF or other controls).
export const SAFE_HEADER_VALUE = /^[\t\x20-\x7e]*$/
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

export function redirectParts(redirect: Redirect): AnswerParts {
  const headers: Record<string, string | string[]> = { location: redirect.location }
  if (redirect.vary) headers.vary = 'Accept'
  // A record's own headers were allow-listed when its 10320/loc was prepared (behaviour.md §9).
  const links = redirect.linkHeaders.filter((l) => SAFE_HEADER_VALUE.test(l))
  for (const [name, value] of redirect.extraHeaders) {
    if (!HEADER_NAME.test(name) || !SAFE_HEADER_VALUE.test(value)) continue
    const lower = name.toLowerCase()
    if (lower === 'link') links.push(value)
    else headers[lower] = value
  }
  if (links.length > 0) headers.link = links
  headers['content-type'] = HTML
  return { status: redirect.status, headers, body: renderRedirectBody(redirect.location, redirect.headLines) }
}
