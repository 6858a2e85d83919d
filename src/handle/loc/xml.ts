/**
 * The small XML dialect of 10320/loc, 10320/links and HS_NAMESPACE values: parsed with fast-xml-parser
 * into plain elements (attributes kept in source order), and written back the way the reference's
 * XTag.write does for action=showurls (behaviour.md R3 "action=showurls output").
 * Pure: no I/O.
 */
import { XMLParser } from 'fast-xml-parser'
import { boundedMemo } from '../memo.js'

/** One element: its name, attributes in source order (a repeated attribute keeps its last value), child elements, text. */
export interface XmlElement {
  name: string
  attrs: ReadonlyArray<readonly [string, string]>
  children: XmlElement[]
  text: string
}

// Entities are decoded by us (decodeEntities), not by the parser: that matches the reference's
// XUtil.decodeString (the five XML entities and numeric ones, anything else kept as written) and means
// a DOCTYPE can never expand entities.
const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  parseAttributeValue: false,
  parseTagValue: false,
  trimValues: true,
  allowBooleanAttributes: true,
  processEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true
})

// Parsing is the costly part of the 10320/loc engine and every request of a cached record asks for the
// same strings again (the record's and its prefix's values), so results are memoised. The memo is bounded:
// when full it is emptied, which costs one re-parse per string. Parsed elements are never mutated.
/** Parse the first root element of an XML string; a string describing the problem when there is none. */
export const parseXml: (xml: string) => XmlElement | string = boundedMemo(4096, parseXmlUncached)

function parseXmlUncached(xml: string): XmlElement | string {
  let nodes: unknown
  try {
    nodes = parser.parse(xml)
  } catch (err) {
    return `malformed XML (${err instanceof Error ? err.message : String(err)})`
  }
  const root = Array.isArray(nodes) ? elementsOf(nodes)[0] : undefined
  return root ?? 'no XML element found'
}

type ParsedNode = Record<string, unknown>

function elementsOf(nodes: unknown[]): XmlElement[] {
  const out: XmlElement[] = []
  for (const node of nodes) {
    const el = toElement(node)
    if (el !== undefined) out.push(el)
  }
  return out
}

function toElement(node: unknown): XmlElement | undefined {
  if (node === null || typeof node !== 'object') return undefined
  const name = Object.keys(node).find((k) => k !== ':@' && !k.startsWith('#') && !k.startsWith('?'))
  if (name === undefined) return undefined
  const body = (node as ParsedNode)[name]
  const kids = Array.isArray(body) ? body : []
  return {
    name,
    attrs: attributesOf((node as ParsedNode)[':@']),
    children: elementsOf(kids),
    text: decodeEntities(kids.map(textOf).join('')).trim()
  }
}

function attributesOf(raw: unknown): Array<readonly [string, string]> {
  if (raw === null || typeof raw !== 'object') return []
  // A value-less attribute (allowBooleanAttributes) reads as present and empty.
  return Object.entries(raw).map(([k, v]) => [k, typeof v === 'string' ? decodeEntities(v) : ''] as const)
}

function textOf(node: unknown): string {
  if (node === null || typeof node !== 'object' || !('#text' in node)) return ''
  const t = (node as ParsedNode)['#text']
  return typeof t === 'string' ? t : ''
}

const ENTITY = /&(#[xX][0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);/g
const NAMED: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }

/** &amp; &lt; &gt; &quot; &apos; (any case, as XUtil) and numeric references; anything else is kept as written. */
export function decodeEntities(s: string): string {
  if (!s.includes('&')) return s
  return s.replace(ENTITY, (whole, body: string) => {
    if (body.startsWith('#')) {
      const code = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10)
      return code <= 0x10ffff ? String.fromCodePoint(code) : whole
    }
    return NAMED[body.toLowerCase()] ?? whole
  })
}

/** The value of an attribute (exact, case-sensitive name, as the reference's HashMap), or undefined. */
export function attr(el: Pick<XmlElement, 'attrs'>, name: string): string | undefined {
  for (const [k, v] of el.attrs) if (k === name) return v
  return undefined
}

/**
 * XUtil.encodeString: & < > " ' become entities, and every character from U+00FF up becomes &#N;.
 * One difference: we write astral characters as one reference to their code point, where Java writes
 * two (invalid) surrogate references.
 */
export function xmlEscape(s: string): string {
  let out = ''
  for (const ch of s) {
    const code = ch.codePointAt(0) ?? 0
    if (ch === '&') out += '&amp;'
    else if (ch === '<') out += '&lt;'
    else if (ch === '>') out += '&gt;'
    else if (ch === '"') out += '&quot;'
    else if (ch === "'") out += '&#39;'
    else if (code >= 255) out += `&#${code};`
    else out += ch
  }
  return out
}

/** An empty element as XTag writes it: `<name a="v"/>`, attributes in the given order, escaped. */
export function writeEmptyElement(name: string, attrs: ReadonlyArray<readonly [string, string]>): string {
  const written = attrs.map(([k, v]) => ` ${xmlEscape(k)}="${xmlEscape(v)}"`).join('')
  return `<${xmlEscape(name)}${written}/>`
}
