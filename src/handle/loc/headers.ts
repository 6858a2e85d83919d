/**
 * href_template expansion, Link headers (from locations with `rel` and from 10320/links) and the
 * 10320/headers lines (reference-proxy.md §3 "Related value types", [HNS92] Location.writeLinks,
 * getLinkValue, writeHttpHeaders, writeHtmlHeaders). Pure: no I/O.
 */
import { encodeURL, encodeURLComponentHdl, encodeURLPath } from '../name.js'
import { attr } from './xml.js'
import type { XmlElement } from './xml.js'
import { locationElements } from './values.js'

/** `{hdl}` → the handle as one URL component ('/' → %2F); `{hdl:path}` → the handle path-encoded (reference §3). */
export function expandTemplate (template: string, handle: string): string {
  return template.replace(/\{hdl(:path)?\}/g, (_m, path?: string) =>
    path === undefined ? encodeURLComponentHdl(handle) : encodeURLPath(handle))
}

/** The href of a location element: `href` as written, else `href_template` expanded; undefined when it has neither. */
export function hrefOf (el: XmlElement, handle: string): string | undefined {
  const href = attr(el, 'href')
  if (href !== undefined) return href
  const template = attr(el, 'href_template')
  return template === undefined ? undefined : expandTemplate(template, handle)
}

// What Node accepts in a header value (anything else makes setHeader throw): tab, printable ASCII, Latin-1.
const HEADER_VALUE_OK = /^[\t\x20-\x7e\x80-\xff]*$/
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// Headers a record must not set: they would break the response framing, replace our redirect or set
// cookies on our domain. The reference has no such list; it is a resolver's duty to its users.
const FORBIDDEN_HEADERS = new Set([
  'connection', 'content-length', 'content-type', 'host', 'keep-alive', 'location', 'proxy-connection',
  'set-cookie', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'vary', 'expires'
])

/**
 * One Link header per location with `rel` and an href, per links root, in root order. `anchor-id` names
 * another link's `id` in the same root and becomes its href. A link whose header value Node would refuse
 * is dropped and noted.
 */
export function linkHeaders (roots: readonly XmlElement[], handle: string, problems: string[]): string[] {
  const out: string[] = []
  for (const root of roots) {
    const links: Array<{ el: XmlElement, href: string }> = []
    const anchors = new Map<string, string>()
    for (const el of locationElements([root])) {
      if (attr(el, 'rel') === undefined) continue
      const href = hrefOf(el, handle)
      if (href === undefined) continue
      const id = attr(el, 'id')
      if (id !== undefined) anchors.set(id, href)
      links.push({ el, href })
    }
    for (const { el, href } of links) {
      const anchorId = attr(el, 'anchor-id')
      const anchor = attr(el, 'anchor') ?? (anchorId === undefined ? undefined : anchors.get(anchorId))
      const value = linkValue(el, href, anchor)
      if (HEADER_VALUE_OK.test(value)) out.push(value)
      else problems.push(`Link header for ${href} dropped: it contains characters a header cannot carry`)
    }
  }
  return out
}

function linkValue (el: XmlElement, href: string, anchor: string | undefined): string {
  let v = `<${encodeURL(href)}>`
  if (anchor !== undefined) v += `; anchor="${encodeURL(anchor)}"`
  const params: Array<[string, string]> = [
    ['rel', 'rel'], ['type', 'media-type'], ['target-type', 'target-type'], ['media', 'media'], ['hreflang', 'hreflang']
  ]
  for (const [param, attribute] of params) {
    const value = attr(el, attribute)
    if (value !== undefined) v += `; ${param}="${value}"`
  }
  const title = attr(el, 'title')
  const titlelang = attr(el, 'titlelang')
  if (title !== undefined) {
    if (titlelang === undefined && /^[\x20-\x7e]*$/.test(title)) {
      v += `; title="${title.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`
    } else {
      v += `; title*=UTF-8'${titlelang ?? ''}'${encodeURLComponentHdl(title)}`
    }
  }
  return v
}

/** What 10320/headers values add to a redirect. */
export interface HeaderLines {
  /** `Name: value` lines, {hdl} templates expanded, in order. */
  extraHeaders: Array<[string, string]>
  /** Lines starting with '<', templates expanded: HTML to insert in the redirect page's <head>. */
  headLines: string[]
}

/**
 * Split 10320/headers texts into HTTP headers and <head> lines ([HNS92] writeHttpHeaders and
 * writeHtmlHeaders). Lines without ':' are ignored, as in the reference; a header with an invalid name
 * or value, or one from FORBIDDEN_HEADERS, is dropped and noted.
 */
export function headerLines (texts: readonly string[], handle: string, problems: string[]): HeaderLines {
  const result: HeaderLines = { extraHeaders: [], headLines: [] }
  for (const text of texts) {
    for (const raw of text.split('\n')) {
      const line = raw.trim()
      if (line === '') continue
      if (line.startsWith('<')) {
        result.headLines.push(expandTemplate(line, handle))
        continue
      }
      const colon = line.indexOf(':')
      if (colon < 0) continue
      const name = line.slice(0, colon).trim()
      const value = expandTemplate(line.slice(colon + 1).trim(), handle)
      if (!TOKEN.test(name) || !HEADER_VALUE_OK.test(value)) {
        problems.push(`10320/headers line dropped (invalid header): ${JSON.stringify(line)}`)
      } else if (FORBIDDEN_HEADERS.has(name.toLowerCase())) {
        problems.push(`10320/headers line dropped (${name} is not settable by a record)`)
      } else {
        result.extraHeaders.push([name, value])
      }
    }
  }
  return result
}
