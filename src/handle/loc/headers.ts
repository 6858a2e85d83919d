/**
 * href_template expansion, Link headers (from locations with `rel` and from 10320/links) and the
 * 10320/headers lines (behaviour.md R3 "Related value types", [HNS92] Location.writeLinks,
 * getLinkValue, writeHttpHeaders, writeHtmlHeaders). Pure: no I/O.
 */
import { encodeURL, encodeURLComponentHdl, encodeURLPath } from '../name.js'
import { attr, decodeEntities } from './xml.js'
import type { XmlElement } from './xml.js'
import { locationElements } from './values.js'

/** `{hdl}` → the handle as one URL component ('/' → %2F); `{hdl:path}` → the handle path-encoded (behaviour.md R3). */
export function expandTemplate(template: string, handle: string): string {
  return template.replace(/\{hdl(:path)?\}/g, (_m, path?: string) =>
    path === undefined ? encodeURLComponentHdl(handle) : encodeURLPath(handle)
  )
}

/** The href of a location element: `href` as written, else `href_template` expanded; undefined when it has neither. */
export function hrefOf(el: XmlElement, handle: string): string | undefined {
  const href = attr(el, 'href')
  if (href !== undefined) return href
  const template = attr(el, 'href_template')
  return template === undefined ? undefined : expandTemplate(template, handle)
}

// What Node accepts in a header value (anything else makes setHeader throw): tab, printable ASCII, Latin-1.
const HEADER_VALUE_OK = /^[\t\x20-\x7e\x80-\xff]*$/
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// X- headers that we or the browsers' security model use: a record never sets these (behaviour.md §9).
const RESERVED_X_HEADERS = new Set([
  'x-cache',
  'x-frame-options',
  'x-content-type-options',
  'x-xss-protection',
  'x-request-id',
  'x-powered-by',
  'x-dns-prefetch-control',
  'x-permitted-cross-domain-policies',
  'x-download-options',
  // Reverse proxies act on these (nginx X-Accel-Redirect, Apache/lighttpd X-Sendfile): a record must not steer ours.
  'x-sendfile',
  'x-lighttpd-send-file'
])
const RESERVED_X_PREFIXES = ['x-forwarded-', 'x-ratelimit-', 'x-accel-']

/**
 * Which record headers reach a client (behaviour.md §9): an allow-list, not a deny-list. `Link`, and
 * `X-…` headers other than ours and the browsers' security headers; nothing else (Set-Cookie,
 * Access-Control-*, Strict-Transport-Security, Cache-Control, Refresh, Content-*…) ever does.
 */
export function recordMaySetHeader(name: string): boolean {
  const lower = name.toLowerCase()
  if (lower === 'link') return true
  return lower.startsWith('x-') && !RESERVED_X_HEADERS.has(lower) && !RESERVED_X_PREFIXES.some((p) => lower.startsWith(p))
}

/**
 * One Link header per location with `rel` and an href, per links root, in root order. `anchor-id` names
 * another link's `id` in the same root and becomes its href. A link whose header value Node would refuse
 * is dropped and noted.
 */
export function linkHeaders(roots: readonly XmlElement[], handle: string, problems: string[]): string[] {
  const out: string[] = []
  for (const root of roots) {
    const links: Array<{ el: XmlElement; href: string }> = []
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

function linkValue(el: XmlElement, href: string, anchor: string | undefined): string {
  let v = `<${encodeURL(href)}>`
  if (anchor !== undefined) v += `; anchor="${encodeURL(anchor)}"`
  const params: Array<[string, string]> = [
    ['rel', 'rel'],
    ['type', 'media-type'],
    ['target-type', 'target-type'],
    ['media', 'media'],
    ['hreflang', 'hreflang']
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

/** An element a record may add to the redirect page's <head>, already rebuilt and escaped. */
export interface HeadElement {
  html: string
  /** For `<meta http-equiv="refresh">`: where it sends the browser; kept only when that is the redirect's own target. */
  refreshTo?: string
}

/** What 10320/headers values add to a redirect. */
export interface HeaderLines {
  /** `Name: value` lines, {hdl} templates expanded, in order; only headers a record may set. */
  extraHeaders: Array<[string, string]>
  /** Lines starting with '<', rebuilt as <link> or <meta> elements; anything else is dropped. */
  headElements: HeadElement[]
}

/**
 * Split 10320/headers texts into HTTP headers and <head> elements ([HNS92] writeHttpHeaders and
 * writeHtmlHeaders). Lines without ':' are ignored, as in the reference; a header with an invalid name
 * or value, or one a record may not set, is dropped and noted; so is a '<' line that is not a plain
 * <link> or <meta> element.
 */
export function headerLines(texts: readonly string[], handle: string, problems: string[]): HeaderLines {
  const result: HeaderLines = { extraHeaders: [], headElements: [] }
  for (const text of texts) {
    for (const raw of text.split('\n')) {
      const line = raw.trim()
      if (line === '') continue
      if (line.startsWith('<')) {
        const element = headElement(expandTemplate(line, handle))
        if (element === undefined) {
          problems.push(`10320/headers line dropped (only plain <link> and <meta> elements are kept): ${JSON.stringify(line)}`)
        } else result.headElements.push(element)
        continue
      }
      const colon = line.indexOf(':')
      if (colon < 0) continue
      const name = line.slice(0, colon).trim()
      const value = expandTemplate(line.slice(colon + 1).trim(), handle)
      if (!TOKEN.test(name) || !HEADER_VALUE_OK.test(value)) {
        problems.push(`10320/headers line dropped (invalid header): ${JSON.stringify(line)}`)
      } else if (!recordMaySetHeader(name)) {
        problems.push(`10320/headers line dropped (${name} is not settable by a record)`)
      } else {
        result.extraHeaders.push([name, value])
      }
    }
  }
  return result
}

// One whole element: <link …> or <meta …>, attributes quoted or not, optionally self-closed.
const ELEMENT = /^<\s*(link|meta)((?:\s+[A-Za-z][-A-Za-z0-9_:.]*(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*)\s*\/?\s*>$/i
const ATTRIBUTE = /([A-Za-z][-A-Za-z0-9_:.]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g
const LINK_ATTRIBUTES = new Set(['rel', 'href', 'type', 'hreflang', 'title', 'media', 'sizes'])
const META_ATTRIBUTES = new Set(['name', 'property', 'content', 'http-equiv', 'itemprop', 'lang'])
// Link relations that describe (signposting, alternates, licences) and make a browser fetch nothing.
const LINK_RELATIONS = new Set([
  'alternate',
  'author',
  'bookmark',
  'canonical',
  'cite-as',
  'collection',
  'describedby',
  'describes',
  'help',
  'identifier',
  'item',
  'license',
  'linkset',
  'me',
  'next',
  'prev',
  'profile',
  'related',
  'type',
  'up',
  'via'
])
const REFRESH = /^\s*\d+\s*[;,]\s*url\s*=\s*['"]?([^'"]*)['"]?\s*$/i
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/**
 * A '<' line rebuilt from its parsed attributes (behaviour.md §9): only <link> with describing
 * relations and an http(s) href, and <meta> with allow-listed attributes; a <meta http-equiv> only
 * as a refresh, which the caller keeps only when it points at the redirect's own target. Undefined
 * for anything else (a <script>, an event handler, a stylesheet, a javascript: href…).
 */
export function headElement(line: string): HeadElement | undefined {
  const m = ELEMENT.exec(line)
  if (m === null) return undefined
  const tag = (m[1] ?? '').toLowerCase()
  const allowed = tag === 'link' ? LINK_ATTRIBUTES : META_ATTRIBUTES
  const attrs = new Map<string, string>()
  for (const a of (m[2] ?? '').matchAll(ATTRIBUTE)) {
    const name = (a[1] ?? '').toLowerCase()
    if (!allowed.has(name) || attrs.has(name)) return undefined
    const value = decodeEntities(a[2] ?? a[3] ?? a[4] ?? '')
    if (CONTROL.test(value)) return undefined
    attrs.set(name, value)
  }
  let refreshTo: string | undefined
  if (tag === 'link') {
    const rels = (attrs.get('rel') ?? '').toLowerCase().split(/\s+/).filter(Boolean)
    const href = attrs.get('href') ?? ''
    if (rels.length === 0 || !rels.every((r) => LINK_RELATIONS.has(r)) || !/^https?:\/\/[^\s]/i.test(href)) return undefined
  } else {
    const equiv = attrs.get('http-equiv')
    if (equiv !== undefined) {
      const target = equiv.toLowerCase() === 'refresh' ? REFRESH.exec(attrs.get('content') ?? '')?.[1]?.trim() : undefined
      if (target === undefined || target === '') return undefined
      refreshTo = target
    } else if (!attrs.has('content')) {
      return undefined
    }
  }
  let html = `<${tag}`
  for (const [name, value] of attrs) html += ` ${name}="${escapeAttribute(value)}"`
  html += '>'
  return refreshTo === undefined ? { html } : { html, refreshTo }
}

function escapeAttribute(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;')
}
