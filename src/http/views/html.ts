/**
 * Small HTML building blocks shared by the pages: escaping, the page shell, safe links.
 * Everything user- or upstream-supplied goes through escapeHtml before it reaches markup.
 */
import { PAGE_CSS } from './style.js'

const HTML_SPECIAL = /[&<>"']/
const HTML_SPECIAL_ALL = /[&<>"']/g
const HTML_ENTITY: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;'
}
const replaceSpecial = (ch: string): string => HTML_ENTITY[ch] ?? ch

/** Escapes the five HTML-special characters, as the reference's cgiEscape does. */
export function escapeHtml(s: string): string {
  // Most handles and URLs contain none of them: skip the replace pass.
  if (!HTML_SPECIAL.test(s)) return s
  return s.replace(HTML_SPECIAL_ALL, replaceSpecial)
}

const LINE_BREAK = /\r\n|\r|\n/g

/** Escaped text with its line breaks shown as <br> (behaviour.md R5 "newline becomes <br />"). */
export function textWithBreaks(s: string): string {
  return escapeHtml(s).replace(LINE_BREAK, '<br>')
}

function isControl(code: number): boolean {
  return code <= 0x1f || (code >= 0x7f && code <= 0x9f)
}

/** Makes control characters visible as \u escapes (four hex digits), so a page can show why an input was refused. */
export function showControls(s: string): string {
  let out = ''
  let start = 0
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i)
    if (!isControl(code)) continue
    out += s.slice(start, i) + '\\u' + code.toString(16).toUpperCase().padStart(4, '0')
    start = i + 1
  }
  return start === 0 ? s : out + s.slice(start)
}

/**
 * The reference's looksLikeURI (HDLProxy.java): no whitespace, a letter, then letters or
 * `+ - .`, then `:`.
 */
const URI_LIKE = /^[A-Za-z][A-Za-z+.-]*:[^ \t\r\n]*$/
export function looksLikeUri(s: string): boolean {
  return URI_LIKE.test(s)
}

/**
 * Only these schemes ever become an href (behaviour.md §4: a resolver must not be an XSS relay).
 * The scheme must start the string: browsers strip leading blanks and controls, so
 * ' javascript:' must not pass. Callers trim first and URL-encode the rest.
 */
const WEB_URL = /^(?:https?|ftp):/i
export function isWebUrl(s: string): boolean {
  return WEB_URL.test(s)
}

/** An <a> element; `href` must already be URL-encoded, `textHtml` already escaped. */
export function link(href: string, textHtml: string): string {
  return `<a href="${escapeHtml(href)}">${textHtml}</a>`
}

/** The page shell: doctype, charset, viewport, the inline stylesheet, no scripts; `head` adds to the head (the status page's own styles). */
export function htmlDocument(title: string, bodyHtml: string, homeUrl: string, head = ''): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
${PAGE_CSS}
</style>
${head}</head>
<body>
<main>
${bodyHtml}
<footer><a href="${escapeHtml(homeUrl)}">DOI Resolver</a></footer>
</main>
</body>
</html>
`
}
