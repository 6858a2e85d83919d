/**
 * Which RA? (`/doiRA/{dois}`, `/ra/{dois}`; behaviour.md R8, behaviour.md §7): split the list,
 * find the Registration Agency from the prefix record, and write the JSON array. Pure: the route looks
 * the DOIs and prefixes up (concurrently, bounded) and calls these.
 */
import { XMLParser } from 'fast-xml-parser'
import type { HandleValue } from './types.js'
import { asciiUpperCase, valueString } from './types.js'
import { hasControlChar, percentDecode } from './name.js'

/** One DOI of the list: `given` is echoed back as "DOI"; `doi` is what to look up (undefined: not decodable). */
export interface DoiListItem {
  given: string
  doi: string | undefined
}

/**
 * Split the raw (still encoded) text after '/doiRA/' on ',' FIRST, then percent-decode each part
 * ('+' stays '+'), so a ',' sent as %2C stays inside its DOI ([DOI-HB25] §4.7). Empty parts are kept
 * (they answer "Invalid DOI"). `given` is the decoded part (the raw part if it is not UTF-8); `doi` is
 * it without surrounding whitespace, as the proxy trims a handle.
 */
export function splitDoiList(raw: string): DoiListItem[] {
  return raw.split(',').map((part) => {
    const decoded = percentDecode(part)
    return decoded === undefined ? { given: part, doi: undefined } : { given: decoded, doi: decoded.trim() }
  })
}

/**
 * A DOI name starts with '10.' and has something after it in the prefix; a prefix alone ('10.1108') is
 * fine. Control characters are never part of a DOI (behaviour.md §2). Anything else: "Invalid DOI".
 */
export function isDoiName(doi: string): boolean {
  if (!doi.startsWith('10.')) return false
  const slash = doi.indexOf('/')
  const prefix = slash < 0 ? doi : doi.slice(0, slash)
  return prefix.length > 3 && !hasControlChar(doi)
}

/**
 * The RA's service handle from a prefix record (`0.NA/10.x`, what `/api/handles/10.x` returns): the
 * `<DOI.RA>` of HS_NAMESPACE first ([CR-GL1499]), else the HS_SERV data (behaviour.md R8). Types match
 * case-insensitively; malformed XML is ignored, never thrown.
 */
export function raServiceHandle(prefixValues: readonly HandleValue[]): string | undefined {
  for (const ns of stringsOfType(prefixValues, 'HS_NAMESPACE')) {
    const ra = doiRaOfNamespace(ns)
    if (ra !== undefined) return ra
  }
  for (const serv of stringsOfType(prefixValues, 'HS_SERV')) {
    const trimmed = serv.trim()
    if (trimmed !== '') return trimmed
  }
  return undefined
}

/** The text of each value of `type` (ASCII case-insensitive) whose data is a string. */
function stringsOfType(values: readonly HandleValue[], type: string): string[] {
  const out: string[] = []
  for (const v of values) {
    if (typeof v.type !== 'string' || asciiUpperCase(v.type) !== type) continue
    if (typeof v.data?.format === 'string' && v.data.format.toLowerCase() !== 'string') continue // e.g. base64 bytes
    const s = valueString(v)
    if (s !== undefined) out.push(s)
  }
  return out
}

// Entities are not expanded: a DOI.RA never needs them, and it rules out entity-expansion tricks.
const namespaceParser = new XMLParser({ ignoreAttributes: true, parseTagValue: false, trimValues: true, processEntities: false })

/** The first non-empty `<DOI.RA>` child of the document's root element (`<HS_NAMESPACE>`). */
function doiRaOfNamespace(xml: string): string | undefined {
  let doc: unknown
  try {
    doc = namespaceParser.parse(xml)
  } catch {
    return undefined
  }
  if (!isObject(doc)) return undefined
  for (const [name, root] of Object.entries(doc)) {
    if (name.startsWith('?') || !isObject(root)) continue
    const ra = firstText(root['DOI.RA'])
    if (ra !== undefined) return ra
  }
  return undefined
}

/** Text of an element as the parser gives it: a string, `{'#text': …}`, or an array of those. */
function firstText(node: unknown): string | undefined {
  if (Array.isArray(node)) {
    for (const n of node) {
      const t = firstText(n)
      if (t !== undefined) return t
    }
    return undefined
  }
  const text = isObject(node) ? node['#text'] : node
  if (typeof text !== 'string' && typeof text !== 'number') return undefined
  const trimmed = String(text).trim()
  return trimmed === '' ? undefined : trimmed
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x)
}

/** Display names of the RAs' service handles `10.SERV/<X>` (behaviour.md R8, a third-party mapping). */
const RA_NAMES: Readonly<Record<string, string>> = {
  CROSSREF: 'Crossref',
  DEFAULT: 'Crossref', // 10.SERV/DEFAULT is Crossref's legacy service
  DATACITE: 'DataCite',
  ETH: 'DataCite', // behaviour.md R8: third-party code maps 10.SERV/ETH to DataCite
  MEDRA: 'mEDRA',
  EIDR: 'EIDR',
  JALC: 'JaLC',
  KISTI: 'KISTI',
  ISTIC: 'ISTIC',
  AIRITI: 'Airiti',
  CNKI: 'CNKI',
  OP: 'OP'
}

/**
 * '10.SERV/X' (or the 2011 form '0.SERV/10.x', [CR-SUP]) → the RA's display name. X is matched
 * case-insensitively; `extra` (keys are X in upper case; configurable) wins over the built-in table.
 * undefined when the handle is not a service handle or X is unknown: the caller answers "Unknown".
 */
export function raDisplayName(serviceHandle: string, extra?: Readonly<Record<string, string>>): string | undefined {
  const m = /^(?:10\.SERV\/|0\.SERV\/10\.)(.+)$/i.exec(serviceHandle.trim())
  if (m?.[1] === undefined) return undefined
  const key = asciiUpperCase(m[1])
  if (extra !== undefined) {
    for (const [k, name] of Object.entries(extra)) if (asciiUpperCase(k) === key) return name
  }
  return Object.hasOwn(RA_NAMES, key) ? RA_NAMES[key] : undefined
}

export type RaStatus = 'Invalid DOI' | 'DOI does not exist' | 'Unknown'
export type RaEntry = { DOI: string; RA: string } | { DOI: string; status: RaStatus }

/**
 * One answer of the list, from what the route found. `doiExists`: the DOI's record (or, for a prefix
 * alone, the prefix record) exists; undefined when we cannot say (offline, not in the local records),
 * answered "Unknown" as doi.org answers a DOI it cannot look up, never "DOI does not exist". `prefixValues`: the prefix record's values, undefined if the
 * prefix could not be read.
 */
export function raEntry(
  item: DoiListItem,
  found: { doiExists: boolean | undefined; prefixValues?: readonly HandleValue[] | undefined },
  extra?: Readonly<Record<string, string>>
): RaEntry {
  if (item.doi === undefined || !isDoiName(item.doi)) return { DOI: item.given, status: 'Invalid DOI' }
  if (found.doiExists === undefined) return { DOI: item.given, status: 'Unknown' }
  if (!found.doiExists) return { DOI: item.given, status: 'DOI does not exist' }
  const service = found.prefixValues === undefined ? undefined : raServiceHandle(found.prefixValues)
  const ra = service === undefined ? undefined : raDisplayName(service, extra)
  return ra === undefined ? { DOI: item.given, status: 'Unknown' } : { DOI: item.given, RA: ra }
}

/**
 * The array as doi.org's documented example shows it: pretty-printed, 2-space indent, "DOI" first
 * (behaviour.md R8; the live whitespace is unconfirmed). Keys are written in a fixed order.
 */
export function serializeRa(entries: readonly RaEntry[]): string {
  const ordered = entries.map((e) => ('RA' in e ? { DOI: e.DOI, RA: e.RA } : { DOI: e.DOI, status: e.status }))
  return JSON.stringify(ordered, null, 2)
}
