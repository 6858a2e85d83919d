/**
 * The HTML pages of the proxy (behaviour.md §7, behaviour.md R2, R5, R6): pure functions from
 * data to a string. Every user- or upstream-supplied string is escaped here.
 */
import { encodeURL, encodeURLPath, prefixOf } from '../../handle/name.js'
import { adminText, nicerTimestamp, vlistEntries } from '../../handle/record.js'
import { asciiUpperCase, valueString } from '../../handle/types.js'
import type { HandleValue } from '../../handle/types.js'
import { escapeHtml, htmlDocument, isWebUrl, link, looksLikeUri, showControls, textWithBreaks } from './html.js'

export interface PageContext {
  /** Absolute base for self-links, with a trailing slash, e.g. 'http://127.0.0.1:8000/'. */
  baseUrl: string
}

const EXAMPLE_DOI = '10.1000/182'

/** Our own URL for a handle (behaviour.md R2 "Base URL for self-links"). */
function handleUrl(ctx: PageContext, handle: string): string {
  return ctx.baseUrl + encodeURLPath(handle)
}

// ---------------------------------------------------------------- redirect body

/**
 * The reference redirect body, byte for byte (Location.sendHttpRedirectResponse): 10320/headers
 * lines starting with '<' go before </head>, each followed by a newline, after one newline.
 */
export function renderRedirectBody(url: string, headLines?: readonly string[]): string {
  const escaped = escapeHtml(url)
  const head = headLines !== undefined && headLines.length > 0 ? '\n' + headLines.join('\n') + '\n' : ''
  return `<html><head><title>Handle Redirect</title>${head}</head>\n<body><a href="${escaped}">${escaped}</a></body></html>`
}

// ---------------------------------------------------------------- values page

/** Type cell (behaviour.md R5, HDLProxy.returnResponsePage), but only web URIs become links. */
function typeCell(ctx: PageContext, type: string): string {
  const text = escapeHtml(type)
  if (looksLikeUri(type)) return isWebUrl(type) ? link(encodeURL(type), text) : text
  if (type.includes('/')) return link(handleUrl(ctx, type), text)
  const upper = asciiUpperCase(type)
  if (upper.startsWith('HS_') || upper === 'URL' || upper === 'DESC' || upper === 'EMAIL') {
    return link(ctx.baseUrl + '0.TYPE/' + encodeURLPath(type), text)
  }
  return text
}

function isUrlType(upperType: string): boolean {
  return upperType === 'URL' || upperType.startsWith('URL.') || upperType === '0.TYPE/URL'
}

/** Compact JSON for data that is not a string (admin, vlist, site, key, base64, ...). */
function jsonText(data: unknown): string {
  try {
    return JSON.stringify(data) ?? ''
  } catch {
    return ''
  }
}

/** A URL shown as a link when its scheme is a web one, else as plain text. */
function urlData(text: string): string {
  const target = text.trim()
  return isWebUrl(target) ? link(encodeURL(target), escapeHtml(text)) : textWithBreaks(text)
}

function emailData(text: string): string {
  const address = text.trim()
  return address === '' ? '' : link('mailto:' + encodeURLPath(address), escapeHtml(text))
}

/** Format 'string' (or none given, as hand-written local records may do): show the text itself. */
function hasStringFormat(value: HandleValue): boolean {
  const format: unknown = value.data?.format
  return typeof format !== 'string' || format.toLowerCase() === 'string'
}

/** Data cell content (behaviour.md R5 table): admin, vlist, URL, EMAIL, JSON for non-strings, text. */
function dataCell(value: HandleValue): string {
  const upper = asciiUpperCase(String(value.type))
  if (upper === 'HS_ADMIN') {
    const admin = adminText(value)
    if (admin !== undefined) return escapeHtml(admin)
  } else if (upper === 'HS_VLIST') {
    const entries = vlistEntries(value)
    if (entries !== undefined) return entries.map(escapeHtml).join('<br>')
  }
  const text = hasStringFormat(value) ? valueString(value) : undefined
  if (text === undefined) return escapeHtml(jsonText(value.data))
  if (upper === 'EMAIL') return emailData(text)
  if (isUrlType(upper) || looksLikeUri(text)) return urlData(text)
  return textWithBreaks(text)
}

/** One table row. The data cell ends with '</td></tr>': a public scraper matches `10.SERV/(\w+)</td></tr>`. */
function valueRow(ctx: PageContext, value: HandleValue): string {
  return (
    `<tr><td>${escapeHtml(String(value.index))}</td><td class="type">${typeCell(ctx, String(value.type))}</td>` +
    `<td class="ts">${escapeHtml(nicerTimestamp(typeof value.timestamp === 'string' ? value.timestamp : undefined))}</td><td>${dataCell(value)}</td></tr>\n`
  )
}

export function renderValuesPage(ctx: PageContext, handle: string, values: readonly HandleValue[]): string {
  const h = escapeHtml(handle)
  const apiUrl = ctx.baseUrl + 'api/handles/' + encodeURLPath(handle)
  let rows = ''
  for (const value of values) rows += valueRow(ctx, value)
  if (rows === '') rows = '<tr><td colspan="4">No values.</td></tr>\n'
  return htmlDocument(
    'DOI Name Values',
    `<h1>DOI: ${h}</h1>
<p class="links">${link(apiUrl, 'View as JSON')} · ${link(handleUrl(ctx, handle), 'Resolve')}</p>
<div class="scroll"><table>
<caption>DOI Values for: ${h}</caption>
<thead><tr><th scope="col">Index</th><th scope="col">Type</th><th scope="col">Timestamp</th><th scope="col">Data</th></tr></thead>
<tbody>
${rows}</tbody>
</table></div>
<h2>Look up another DOI</h2>
${searchForm(ctx, false, handle)}`,
    ctx.baseUrl
  )
}

// ---------------------------------------------------------------- values not found

export function renderNoValuesPage(ctx: PageContext, handle: string): string {
  const url = handleUrl(ctx, handle)
  return htmlDocument(
    'No Values Found',
    `<h1>No Values Found</h1>
<p>The DOI <code>${escapeHtml(handle)}</code> exists, but the values you asked for were not found in its record.</p>
<p class="links">${link(url, 'Resolve the DOI')} · ${link(url + '?noredirect', 'Show all its values')}</p>`,
    ctx.baseUrl
  )
}

// ---------------------------------------------------------------- not found

/**
 * A search form that resolves a DOI with GET, so the result is a shareable URL. `value` fills the
 * field with the DOI the page is about (behaviour.md §12: a reader corrects it rather than retypes it),
 * unless it is too long or holds a control character a text field cannot show.
 */
function searchForm(ctx: PageContext, withOptions: boolean, value?: string): string {
  const options = withOptions
    ? `
<fieldset>
<legend class="sr">Options</legend>
<label><input type="checkbox" name="noredirect"> Show the record instead of redirecting</label>
<label><input type="checkbox" name="ignore_aliases"> Do not follow aliases</label>
<label><input type="checkbox" name="auth"> Authoritative: skip the cache</label>
</fieldset>`
    : ''
  return `<form action="${escapeHtml(ctx.baseUrl)}" method="get" role="search">
<label for="hdl">DOI</label>
<input type="text" id="hdl" name="hdl"${fieldValue(value)} placeholder="${EXAMPLE_DOI}" required autocapitalize="off" autocorrect="off" spellcheck="false">
<button type="submit">Resolve</button>${options}
</form>`
}

function fieldValue(value: string | undefined): string {
  if (value === undefined || value === '' || value.length > MAX_SHOWN_HANDLE || showControls(value) !== value) return ''
  return ` value="${escapeHtml(value)}"`
}

function trailingSlashHint(ctx: PageContext, handle: string): string {
  if (!handle.endsWith('/')) return ''
  const withoutSlash = handle.slice(0, -1)
  if (withoutSlash === '') return ''
  const w = escapeHtml(withoutSlash)
  return (
    `<p class="note">The DOI you asked for ends with a slash. A trailing slash is often added by mistake: try ${link(handleUrl(ctx, withoutSlash), w)}. ` +
    `Note that <code>${w}</code> and <code>${escapeHtml(handle)}</code> are different identifiers.</p>\n`
  )
}

/** No '/' at all, or only a trailing one ([HNS92] HDLProxy PREFIX_ONLY, [DOI-HB25] §6.4.5). */
function prefixOnlyHint(handle: string): string {
  const slash = handle.indexOf('/')
  if (slash !== -1 && slash !== handle.length - 1) return ''
  return (
    `<p class="note"><code>${escapeHtml(prefixOf(handle))}</code> looks like a DOI prefix only. ` +
    `A DOI has a prefix and a suffix separated by a slash, e.g. <code>${EXAMPLE_DOI}</code>.</p>\n`
  )
}

function multipleSlashHint(handle: string): string {
  if (!handle.includes('//')) return ''
  return (
    '<p class="note">The DOI you asked for contains several slashes in a row (<code>//</code>). ' +
    'Check whether one was added by mistake: a DOI with one slash there is a different identifier.</p>\n'
  )
}

const LIKELY_CAUSES = `<p>This may be because:</p>
<ul>
<li>the DOI is incorrect (check it against the citation you took it from);</li>
<li>it was copied incorrectly (a character missing or added, or a line break in the copied text);</li>
<li>it has not been activated yet (recently registered DOIs can take a little time to appear).</li>
</ul>
`

/**
 * An offline resolver knows only its local records: a DOI missing from them may well exist, so the page
 * says so and never that the DOI is wrong (docs/local-records.md, "Offline").
 */
const OFFLINE_HEADLINE = "DOI Not in This Resolver's Local Records"
/** Offline with a registry copy (issue 43): the copy's words say what the absence means (src/resolve/copy/tier.ts). */
const COPY_HEADLINE = "DOI Not in This Resolver's Copy of the Registry"

export function renderNotFoundPage(
  ctx: PageContext,
  handle: string,
  opts?: { message?: string; offline?: boolean; absence?: string | undefined }
): string {
  const h = escapeHtml(handle)
  const message = opts?.message
  const absence = opts?.offline === true ? opts.absence : undefined
  const headline = message ?? (absence !== undefined ? COPY_HEADLINE : opts?.offline === true ? OFFLINE_HEADLINE : 'DOI Not Found')
  const intro =
    message !== undefined
      ? `<p>The DOI <code>${h}</code> cannot be resolved: ${escapeHtml(message)}.</p>\n`
      : absence !== undefined
        ? `<p>This resolver is offline: it answers from its local records and its copy of the registry, and cannot answer for <code>${h}</code>: ` +
          `${escapeHtml(absence)}. It was not looked up in the DOI System, where it may well exist (try ${link('https://doi.org/' + encodeURLPath(handle), 'doi.org')}).</p>\n`
        : opts?.offline === true
          ? `<p>This resolver is offline: it answers only from its local records, and <code>${h}</code> is not among them. ` +
            `It was not looked up in the DOI System, where it may well exist (try ${link('https://doi.org/' + encodeURLPath(handle), 'doi.org')}).</p>\n`
          : `<p>This DOI cannot be found in the DOI System: <code>${h}</code></p>\n${LIKELY_CAUSES}`
  return htmlDocument(
    `Error: ${headline}`,
    `<h1>${escapeHtml(headline)}</h1>
${intro}${trailingSlashHint(ctx, handle)}${prefixOnlyHint(handle)}${multipleSlashHint(handle)}<h2>Correct the DOI or try another</h2>
${searchForm(ctx, false, handle)}`,
    ctx.baseUrl
  )
}

// ---------------------------------------------------------------- other errors

/**
 * The headline of an error page in plain words (behaviour.md §12): what the reader can take from
 * it, never the HTTP jargon ("Bad Gateway"). The message below says what happened, once.
 */
const STATUS_TITLES: Record<number, string> = {
  400: 'This request could not be read',
  403: 'Not allowed from here',
  404: 'Nothing here',
  405: 'This kind of request is not supported',
  408: 'The request took too long to arrive',
  414: 'This link is too long',
  429: 'Too many lookups at once',
  431: 'This link is too long',
  500: 'Something went wrong on our side',
  502: 'This DOI could not be looked up just now',
  503: 'This DOI could not be looked up just now',
  504: 'This DOI could not be looked up just now'
}

/** What a reader can do next, by status. The message never says this itself, so nothing is said twice. */
function whatToTry(status: number, handle: string | undefined): string {
  const doiOrg =
    handle !== undefined && handle !== '' && handle.length <= MAX_SHOWN_HANDLE
      ? `<li>If it keeps failing, the same DOI at ${link('https://doi.org/' + encodeURLPath(handle), 'doi.org')} may work.</li>\n`
      : ''
  if (status === 502 || status === 503 || status === 504) {
    return `<h2>What you can do</h2>\n<ul>\n<li>Look it up again with the form below in a moment.</li>\n${doiOrg}</ul>\n`
  }
  if (status === 429) {
    return '<h2>What you can do</h2>\n<ul>\n<li>Wait a few seconds for your other lookups to finish, then use the form below.</li>\n</ul>\n'
  }
  if (status === 400 || status === 414 || status === 431) {
    return (
      '<h2>What you can do</h2>\n<ul>\n<li>Copy the DOI again from where you found it, whole and nothing else, and paste it in the form below.</li>\n' +
      `<li>A DOI looks like <code>${EXAMPLE_DOI}</code>: <code>10.</code>, a number, a slash, then anything.</li>\n</ul>\n`
    )
  }
  if (status >= 500) {
    return '<h2>What you can do</h2>\n<ul>\n<li>Try again with the form below; if it happens again, tell the people who run this resolver.</li>\n</ul>\n'
  }
  return ''
}

const MAX_SHOWN_HANDLE = 300

const LINE_END = /[\r\n]/
const ENDS_WITH_HIGH_SURROGATE = /[\ud800-\udbff]$/

/** Only the first line of a message: a stack trace must never reach a page. */
function firstLine(s: string): string {
  const end = s.search(LINE_END)
  return end === -1 ? s : s.slice(0, end)
}

/** A handle as shown on an error page: controls made visible, very long ones cut. */
function shownHandle(handle: string): string {
  const visible = showControls(handle)
  if (visible.length <= MAX_SHOWN_HANDLE) return visible
  let cut = visible.slice(0, MAX_SHOWN_HANDLE)
  // Never leave half of a surrogate pair at the end.
  if (ENDS_WITH_HIGH_SURROGATE.test(cut)) cut = cut.slice(0, -1)
  return `${cut}… (${handle.length} characters)`
}

export function renderErrorPage(ctx: PageContext, err: { status: number; message: string; handle?: string }): string {
  const title = STATUS_TITLES[err.status] ?? (err.status >= 500 ? 'Something went wrong' : 'This request could not be answered')
  const handle = err.handle !== undefined && err.handle !== '' ? `<p>DOI: <code>${escapeHtml(shownHandle(err.handle))}</code></p>\n` : ''
  return htmlDocument(
    title,
    `<h1>${escapeHtml(title)}</h1>
<p>${escapeHtml(firstLine(err.message))}</p>
${handle}${whatToTry(err.status, err.handle)}${searchForm(ctx, false, err.handle)}
<p class="links">Error ${err.status}, for the people who run this resolver.</p>`,
    ctx.baseUrl
  )
}

// ---------------------------------------------------------------- home page

export function renderHomePage(ctx: PageContext): string {
  const example = link(handleUrl(ctx, EXAMPLE_DOI), EXAMPLE_DOI)
  return htmlDocument(
    'DOI Resolver',
    `<h1>DOI Resolver</h1>
<p>Enter a DOI to go to the resource it identifies. The DOI is looked up in the DOI System and you are redirected to its current location.</p>
${searchForm(ctx, true)}
<p>You can also put a DOI straight after this address, e.g. ${example}, or read a record as JSON at <code>${escapeHtml(ctx.baseUrl)}api/handles/${EXAMPLE_DOI}</code>.</p>`,
    ctx.baseUrl
  )
}
