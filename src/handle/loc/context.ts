/**
 * Building the candidate list of the 10320/loc engine from the handle's values, its includes and the
 * namespace locations, with the root settings (behaviour.md R2 "Choosing among several URL
 * values", R3; [HNS92] Location.determineLocContext and processIncludes). Pure: no I/O.
 */
import type { HandleValue } from '../types.js'
import { parseNumber } from './choose.js'
import { hrefOf } from './headers.js'
import { attr } from './xml.js'
import type { XmlElement } from './xml.js'
import { hasType, isLocationType, isType, locationElements, readLocationSet, valueText } from './values.js'
import type { LocationSet } from './values.js'

export type CandidateSource = 'own' | 'include' | 'legacy' | 'namespace'

/** One location the engine may redirect to. */
export interface Candidate {
  /** The element as written (legacy URL values: a synthetic `<location mode weight href>`). Choosers read its attributes. */
  el: XmlElement
  /** Where to go: `href`, else `href_template` expanded; trimmed, never empty. */
  href: string
  source: CandidateSource
}

export interface ContextInput {
  handle: string
  values: readonly HandleValue[]
  includes: ReadonlyMap<string, readonly HandleValue[]>
  namespaceValues: readonly HandleValue[]
}

export interface LocContext {
  /** False: reference case A (no 10320/loc, links or headers, no namespace locations): the plain URL rule applies. */
  engine: boolean
  /** Usable candidates in reference order: own, include, legacy URL values, namespace. */
  candidates: Candidate[]
  /** Some location has an http_role containing "conneg" (so the answer depends on Accept). */
  vary: boolean
  /** Roots whose attributes give chooseby and http_sc: the handle's own 10320/loc roots, then the namespace ones. */
  choiceRoots: XmlElement[]
  /** Name of the handle's first 10320/loc root (showurls reuses it), or undefined. */
  firstRootName: string | undefined
  /** 10320/links roots, then 10320/loc roots, whose `rel` locations become Link headers. */
  linkRoots: XmlElement[]
  headerTexts: string[]
  usedValues: HandleValue[]
  problems: string[]
}

/** Maximum include depth, as [HNS92]. */
const MAX_INCLUDE_DEPTH = 20

/** Root settings: the first root (in the order added) that has the attribute decides. */
class Settings {
  readonly roots: XmlElement[] = []
  add(roots: readonly XmlElement[]): void {
    this.roots.push(...roots)
  }
  raw(name: string): string | undefined {
    for (const root of this.roots) {
      const v = attr(root, name)
      if (v !== undefined) return v
    }
    return undefined
  }

  /** XTag.getBoolAttribute: yes/true/1 and no/false/0, anything else false. */
  bool(name: string): boolean {
    const v = this.raw(name)?.toLowerCase()
    return v === 'yes' || v === 'true' || v === '1'
  }

  /** XTag.getDoubleAttribute(name, 0); undefined when no root has it. */
  number(name: string): number | undefined {
    const v = this.raw(name)
    return v === undefined ? undefined : parseNumber(v, 0)
  }
}

/** What include processing collects, in the reference's order. */
interface Gathered {
  locations: XmlElement[]
  locRoots: XmlElement[]
  linkRoots: XmlElement[]
  headers: string[]
  used: HandleValue[]
}

function emptyGathered(): Gathered {
  return { locations: [], locRoots: [], linkRoots: [], headers: [], used: [] }
}

/** The names a root gives for `key` (`include` or `includeNamespace`): the attribute, then child elements. */
export function namesFor(root: XmlElement, key: 'include' | 'includeNamespace'): string[] {
  const a = attr(root, key)?.trim()
  const kids = root.children.filter((c) => c.name === key).map((c) => c.text)
  return [...(a === undefined ? [] : [a]), ...kids].filter((n) => n !== '')
}

/** The names a root includes, in the reference's order: `includeNamespace` first, then `include`. */
function includeNames(root: XmlElement): string[] {
  return [...namesFor(root, 'includeNamespace'), ...namesFor(root, 'include')]
}

/**
 * Follow includes level by level ([HNS92] processIncludes): a level's locations come before the next
 * level's, whose links and headers come before this level's. A name seen before is not included again
 * (so loops end), and a name the resolver could not fetch is skipped; both are noted.
 */
function processIncludes(
  roots: readonly XmlElement[],
  input: ContextInput,
  settings: Settings,
  seen: Set<string>,
  out: Gathered,
  problems: string[],
  depth: number
): void {
  const names = roots.flatMap(includeNames)
  if (names.length === 0) return
  if (depth > MAX_INCLUDE_DEPTH) {
    problems.push(`10320/loc includes nested deeper than ${MAX_INCLUDE_DEPTH}; the rest ignored`)
    return
  }
  const level: LocationSet = { locRoots: [], linkRoots: [], headers: [], used: [] }
  for (const name of names) {
    if (seen.has(name)) {
      problems.push(`10320/loc include ${JSON.stringify(name)} seen before (a loop or a repeat); used once`)
      continue
    }
    seen.add(name)
    const values = input.includes.get(name)
    if (values === undefined) {
      problems.push(`10320/loc include ${JSON.stringify(name)} could not be resolved; skipped`)
      continue
    }
    const set = readLocationSet(values, `include ${name}`, problems)
    level.locRoots.push(...set.locRoots)
    level.linkRoots.push(...set.linkRoots)
    level.headers.push(...set.headers)
    level.used.push(...set.used)
  }
  out.locations.push(...locationElements(level.locRoots))
  out.used.push(...level.used)
  settings.add(level.locRoots)
  processIncludes(level.locRoots, input, settings, seen, out, problems, depth + 1)
  out.locRoots.push(...level.locRoots)
  out.linkRoots.push(...level.linkRoots)
  out.headers.push(...level.headers)
}

/** Build the engine's view of a request's records. Never throws: what is broken is skipped and noted in `problems`. */
export function buildContext(input: ContextInput): LocContext {
  const problems: string[] = []
  const own = readLocationSet(input.values, 'record', problems)
  const settings = new Settings()
  settings.add(own.locRoots)
  const included = emptyGathered()
  processIncludes(own.locRoots, input, settings, new Set([input.handle]), included, problems, 0)
  const hasLocalHeaders = own.linkRoots.length + included.linkRoots.length + own.headers.length + included.headers.length > 0

  const ns = settings.bool('no_nslocs') ? undefined : namespacePartOf(input, settings, problems)
  const suppressNsHeaders = settings.bool('suppressNsHeaders') || (hasLocalHeaders && settings.bool('suppressNsHeadersIfLocalHeaders'))

  const engine = input.values.some(isLocationType) || (ns !== undefined && ns.locations.length > 0)
  const legacy = engine && !settings.bool('no_legacy') ? legacyCandidates(input.values, own.locRoots.length > 0, settings) : []

  const elements: Array<{ el: XmlElement; source: CandidateSource }> = [
    ...locationElements(own.locRoots).map((el) => ({ el, source: 'own' as const })),
    ...included.locations.map((el) => ({ el, source: 'include' as const })),
    ...legacy.map((el) => ({ el, source: 'legacy' as const })),
    ...(ns?.locations ?? []).map((el) => ({ el, source: 'namespace' as const }))
  ]
  const nsHeadersUsed = ns !== undefined && !suppressNsHeaders
  return {
    engine,
    candidates: engine ? usableCandidates(elements, input.handle, problems) : [],
    vary: engine && elements.some(({ el }) => (attr(el, 'http_role') ?? '').includes('conneg')),
    choiceRoots: [...own.locRoots, ...(ns?.ownRoots ?? [])],
    firstRootName: own.locRoots[0]?.name,
    linkRoots: [
      ...own.linkRoots,
      ...included.linkRoots,
      ...(nsHeadersUsed ? ns.linkRoots : []),
      ...own.locRoots,
      ...included.locRoots,
      ...(nsHeadersUsed ? ns.locRoots : [])
    ],
    headerTexts: [...own.headers, ...included.headers, ...(nsHeadersUsed ? ns.headers : [])],
    usedValues: [...own.used, ...input.values.filter((v) => legacy.length > 0 && isLegacyUrl(v)), ...included.used, ...(ns?.used ?? [])],
    problems: [...new Set(problems)]
  }
}

interface NamespacePart extends Gathered {
  /** The namespace handles' own 10320/loc roots (not their includes): they give chooseby and http_sc. */
  ownRoots: XmlElement[]
}

// Every record under a prefix shares its namespace locations: with no includes fetched, the part depends
// on the namespace values alone, and the loader keeps one list of them per prefix (src/resolve/lookup/locations-loader.ts).
// So it is read once per list, not once per record (weakly held: gone with the list).
const namespaceParts = new WeakMap<readonly HandleValue[], { part: NamespacePart; problems: string[] }>()

/** namespacePart, read once per namespace values list when no includes are involved. */
function namespacePartOf(input: ContextInput, settings: Settings, problems: string[]): NamespacePart {
  if (input.includes.size > 0) return namespacePart(input, settings, problems)
  let known = namespaceParts.get(input.namespaceValues)
  if (known === undefined) {
    const own: string[] = []
    known = { part: namespacePart(input, new Settings(), own), problems: own }
    namespaceParts.set(input.namespaceValues, known)
  }
  // With nothing to include, the namespace's own roots are all it adds to the settings.
  settings.add(known.part.ownRoots)
  problems.push(...known.problems)
  return known.part
}

/** Namespace locations: the namespace handles' 10320/loc etc., then their includes. */
function namespacePart(input: ContextInput, settings: Settings, problems: string[]): NamespacePart {
  const set = readLocationSet(input.namespaceValues, 'namespace', problems)
  settings.add(set.locRoots)
  const included = emptyGathered()
  processIncludes(set.locRoots, input, settings, new Set(), included, problems, 0)
  return {
    ownRoots: set.locRoots,
    locations: [...locationElements(set.locRoots), ...included.locations],
    locRoots: [...set.locRoots, ...included.locRoots],
    linkRoots: [...set.linkRoots, ...included.linkRoots],
    headers: [...set.headers, ...included.headers],
    used: [...set.used, ...included.used]
  }
}

/**
 * URL values as `<location mode="legacy" weight=… href=…>` ([HNS92] extractLegacyURLs). Plain URL
 * gets urlWeight (default 0 when the handle has its own 10320/loc, 1.0 otherwise); URL.xxx gets
 * urlSubtypeWeight (default 0), or urlWeight when there is no plain URL. Attribute order mode, weight,
 * href is the order the reference's showurls output shows.
 */
function legacyCandidates(values: readonly HandleValue[], hasOwnLoc: boolean, settings: Settings): XmlElement[] {
  const urlWeight = settings.number('urlWeight') ?? (hasOwnLoc ? 0 : 1)
  const hasPlainUrl = values.some((v) => isPlainUrl(v))
  const subtypeWeight = hasPlainUrl ? (settings.number('urlSubtypeWeight') ?? 0) : urlWeight
  const out: XmlElement[] = []
  for (const v of values) {
    if (!isLegacyUrl(v)) continue
    const weight = isPlainUrl(v) ? urlWeight : subtypeWeight
    out.push(legacyElement(valueText(v) ?? '', weight))
  }
  return out
}

/** URL or 0.TYPE/URL exactly; their subtypes (URL.xxx) weigh as subtypes ([HNS92] Location, behaviour.md R3). */
function isPlainUrl(v: HandleValue): boolean {
  return isType(v, 'URL') || isType(v, '0.TYPE/URL')
}

/** A legacy URL value: URL or 0.TYPE/URL, or a subtype of either. */
function isLegacyUrl(v: HandleValue): boolean {
  return hasType(v, 'URL') || hasType(v, '0.TYPE/URL')
}

/** A synthetic legacy location, weight written as a Java double ("1.0", "0.0"). */
export function legacyElement(href: string, weight: number): XmlElement {
  return {
    name: 'location',
    attrs: [
      ['mode', 'legacy'],
      ['weight', javaDouble(weight)],
      ['href', href]
    ],
    children: [],
    text: ''
  }
}

function javaDouble(n: number): string {
  // The two weights nearly every record gets, without a toFixed each time.
  if (n === 1) return '1.0'
  if (n === 0) return '0.0'
  return Number.isInteger(n) && Math.abs(n) < 1e7 ? n.toFixed(1) : String(n)
}

/** Candidates with an href (template expanded, trimmed); one with neither href nor href_template, or a blank one, is dropped and noted. */
function usableCandidates(
  elements: ReadonlyArray<{ el: XmlElement; source: CandidateSource }>,
  handle: string,
  problems: string[]
): Candidate[] {
  const out: Candidate[] = []
  for (const { el, source } of elements) {
    const href = hrefOf(el, handle)?.trim()
    if (href === undefined || href === '') {
      problems.push(`${source} location without href or href_template dropped`)
      continue
    }
    out.push({ el, href, source })
  }
  return out
}
