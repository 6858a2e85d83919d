/**
 * Reading the 10320/loc family out of handle values: type matching as the reference does it, and the
 * parsed locations, links and headers of a list of values. Pure: no I/O.
 */
import type { HandleValue } from '../types.js'
import { hasType, valueString } from '../types.js'
import { parseXml } from './xml.js'
import type { XmlElement } from './xml.js'

export const LOC_TYPE = '10320/loc'
export const LINKS_TYPE = '10320/links'
export const HEADERS_TYPE = '10320/headers'

export { hasType, isType } from '../types.js'

/** True when the value is a 10320/loc, 10320/links or 10320/headers value (or a subtype of one). */
export function isLocationType(v: HandleValue): boolean {
  return hasType(v, LOC_TYPE) || hasType(v, LINKS_TYPE) || hasType(v, HEADERS_TYPE)
}

/** The text of a value: string data as is; base64 data decoded as UTF-8 (handle servers send binary data that way). */
export function valueText(v: HandleValue): string | undefined {
  const s = valueString(v)
  if (s === undefined) return undefined
  return v.data?.format === 'base64' ? Buffer.from(s, 'base64').toString('utf8') : s
}

/** What a list of values contributes to the engine. */
export interface LocationSet {
  /** Parsed 10320/loc root elements, in value order. */
  locRoots: XmlElement[]
  /** Parsed 10320/links root elements, in value order. */
  linkRoots: XmlElement[]
  /** 10320/headers texts, in value order. */
  headers: string[]
  /** Every location-type value read, parsable or not: their TTLs bound Expires, as in [HNS92] modifyExpiration. */
  used: HandleValue[]
}

/**
 * Parse the 10320/loc, 10320/links and 10320/headers values of `values`. A value that does not parse is
 * skipped and described in `problems` (`where` names its source); it never throws.
 */
export function readLocationSet(values: readonly HandleValue[], where: string, problems: string[]): LocationSet {
  const set: LocationSet = { locRoots: [], linkRoots: [], headers: [], used: [] }
  for (const v of values) {
    if (!isLocationType(v)) continue
    set.used.push(v)
    const text = valueText(v)
    if (text === undefined) {
      problems.push(`${where}: ${v.type} at index ${v.index} has no text data`)
      continue
    }
    if (hasType(v, HEADERS_TYPE)) {
      set.headers.push(text)
      continue
    }
    const root = parseXml(text)
    if (typeof root === 'string') {
      problems.push(`${where}: ${v.type} at index ${v.index} skipped: ${root}`)
      continue
    }
    if (hasType(v, LOC_TYPE)) set.locRoots.push(root)
    else set.linkRoots.push(root)
  }
  return set
}

/** The <location> (or older <loc_template>) children of location roots; tag names compared case-insensitively as [HNS92]. */
export function locationElements(roots: readonly XmlElement[]): XmlElement[] {
  const out: XmlElement[] = []
  for (const root of roots) {
    for (const child of root.children) {
      const name = child.name.toLowerCase()
      if (name === 'location' || name === 'loc_template') out.push(child)
    }
  }
  return out
}
