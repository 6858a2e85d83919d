/**
 * The 10320/loc engine: which URL a handle redirects to when it has locations, plain URL values or
 * namespace (prefix-level) locations, and the action=showurls list (behaviour.md R2, R3, R9;
 * behaviour.md §4–§5). Pure and synchronous: no I/O, no clock, randomness injected.
 *
 * Two steps, because the engine needs other records that only the I/O layer can fetch:
 * 1. Ask what to fetch. `referencedHandles(values)` names the include targets, `includeNamespace`
 *    prefixes, `nshdl` handles and `overridePrefix` of a list of values. Fetch the includes and call
 *    `referencedHandles` again on what came back (nested includes, at most 20 levels; a name already
 *    fetched need not be fetched again). For an `includeNamespace` name, store the values of that
 *    prefix's namespace location handles under that name. For the namespace: read the prefix record
 *    (`overridePrefix` if set, else the handle's own prefix) with `namespaceLocHandles`; when it names
 *    none, use `nshdl`; fetch those handles and concatenate their values in order. Their includes are
 *    fetched the same way (`referencedHandles(namespaceValues)`). Skip all of it when `noNamespaceLocs`.
 * 2. Decide. `chooseLocation(request)` (or `renderShowUrls` for action=showurls). Anything that could not
 *    be fetched is simply absent: it is skipped and named in `problems`, never an exception.
 */
import { firstUrlValue } from './record.js'
import type { HandleValue } from './types.js'
import { chooseFor, parseChooseBy } from './loc/choose.js'
import { buildContext, legacyElement, namesFor } from './loc/context.js'
import type { Candidate, LocContext } from './loc/context.js'
import { headerLines, linkHeaders } from './loc/headers.js'
import type { HeadElement } from './loc/headers.js'
import { hasType, isType, LOC_TYPE, valueText } from './loc/values.js'
import { attr, parseXml, writeEmptyElement, xmlEscape } from './loc/xml.js'
import type { XmlElement } from './loc/xml.js'

export interface ReferencedHandles {
  /** `include` targets named in the values' 10320/loc roots, in order, without repeats. */
  includes: string[]
  /** `includeNamespace` prefixes: resolve like a namespace and store the result under this name in `includes`. */
  includeNamespaces: string[]
  /** `nshdl` handles: the namespace location handles to use when the prefix's HS_NAMESPACE names none. */
  nshdl: string[]
  /** Use this prefix's namespace locations instead of the handle's own prefix (first one found). */
  overridePrefix?: string
  /** A root says `no_nslocs`: namespace locations are ignored, so there is no need to fetch them. */
  noNamespaceLocs: boolean
}

/**
 * Handles this record's 10320/loc values refer to that the resolver must fetch: include targets, nshdl
 * (when no <locs>), overridePrefix. The same for every request of a record: the resolver keeps it with
 * the record's cache entry.
 */
export function referencedHandles(values: readonly HandleValue[]): ReferencedHandles {
  const roots = locRootsOf(values)
  const includes = roots.flatMap((r) => namesFor(r, 'include'))
  const includeNamespaces = roots.flatMap((r) => namesFor(r, 'includeNamespace'))
  const first = (name: string): string | undefined => roots.map((r) => attr(r, name)?.trim()).find((v) => v !== undefined && v !== '')
  const override = first('overridePrefix')
  const noNsLocs = roots
    .map((r) => attr(r, 'no_nslocs'))
    .find((v) => v !== undefined)
    ?.toLowerCase()
  return {
    includes: [...new Set(includes)],
    includeNamespaces: [...new Set(includeNamespaces)],
    nshdl: [...new Set(roots.map((r) => attr(r, 'nshdl')?.trim() ?? '').filter((h) => h !== ''))],
    ...(override === undefined ? {} : { overridePrefix: override }),
    noNamespaceLocs: noNsLocs === 'yes' || noNsLocs === 'true' || noNsLocs === '1'
  }
}

function locRootsOf(values: readonly HandleValue[]): XmlElement[] {
  const roots: XmlElement[] = []
  for (const v of values) {
    if (!hasType(v, LOC_TYPE)) continue
    const root = parseXml(valueText(v) ?? '')
    if (typeof root !== 'string') roots.push(root)
  }
  return roots
}

/** The HS_NAMESPACE settings of a prefix record that matter here ([HNS92] NamespaceInfo.getLocationTemplateHandles). */
export interface NamespaceLocs {
  /** Handles named by `<locs>` children, in order. */
  handles: string[]
  /** Some `<locs no_nslocs="yes">`: parent namespaces' locations are not inherited. */
  noParentLocs: boolean
}

/** From a PREFIX record's values: the HS_NAMESPACE `<locs>` handles and their no_nslocs flag. A broken HS_NAMESPACE names none. */
export function namespaceLocs(prefixValues: readonly HandleValue[]): NamespaceLocs {
  for (const v of prefixValues) {
    if (!isType(v, 'HS_NAMESPACE')) continue
    const root = parseXml(valueText(v) ?? '')
    if (typeof root === 'string') continue
    const locs = root.children.filter((c) => c.name === 'locs')
    return {
      handles: locs.map((c) => c.text).filter((h) => h !== ''),
      noParentLocs: locs.some((c) => ['yes', 'true', '1'].includes(attr(c, 'no_nslocs')?.toLowerCase() ?? ''))
    }
  }
  return { handles: [], noParentLocs: false }
}

/** From a PREFIX record's values: the handles named in HS_NAMESPACE <locs> (behaviour.md R9 "Prefix-level locations"). */
export function namespaceLocHandles(prefixValues: readonly HandleValue[]): string[] {
  return namespaceLocs(prefixValues).handles
}

export interface LocationRequest {
  /** The handle as the user gave it (for {hdl}). */
  handle: string
  /** The handle's own values, already filtered by the type/index query filters. */
  values: readonly HandleValue[]
  /** Fetched include targets (and includeNamespace results), keyed by the name written in the XML. */
  includes: ReadonlyMap<string, readonly HandleValue[]>
  /** The values of the namespace location handles (their 10320/loc etc.), in order. */
  namespaceValues: readonly HandleValue[]
  /** The user's locatt parameters first, then the automatic ones from negotiate.ts. */
  locatt: readonly string[]
  /** Client country (ISO 3166 alpha-2, any case), or undefined: the country chooser then changes nothing. */
  country?: string | undefined
  /** Client IPv4/IPv6 address for the `address` chooser, or undefined. */
  clientAddress?: string | undefined
  /** Uniform in [0, 1). */
  random: () => number
}

export type LocationDecision =
  | {
      kind: 'redirect'
      /** The chosen URL, trimmed; the caller adds urlappend, checks the scheme and encodes it. */
      href: string
      status: 301 | 302 | 303 | 307 | 308
      /** Complete Link header values, in order. */
      linkHeaders: string[]
      /** From 10320/headers, templates expanded; only headers a record may set (behaviour.md §9). */
      extraHeaders: Array<[string, string]>
      /** From 10320/headers lines starting with '<': rebuilt, escaped <link>/<meta> HTML for the redirect page's <head>. */
      headLines: string[]
      /** Send `Vary: Accept`. */
      vary: boolean
      /** The chosen location's http_role names conneg: a content-negotiated answer (never sent to a local service, behaviour.md §10). */
      negotiated: boolean
      /** Every request with the same locatt gets this answer: no country, address or random draw decided it. */
      sameForEveryone: boolean
      /**
       * The chosen location is one of the record's own URL values (not a 10320/loc location), and no
       * 10320/headers line could depend on which: another record of the namespace with one URL value
       * would get this answer with its own URL (the door's copy redirects, src/http/prepared-answers.ts).
       */
      urlOnly: boolean
      /** The values the answer depends on (their TTLs bound Expires). */
      usedValues: HandleValue[]
      /** What was skipped as broken, for one log line per record. */
      problems: string[]
    }
  | { kind: 'none'; vary: boolean; problems: string[] } // no usable location → values page

/** The redirect for a request, or 'none' when nothing can be redirected to (the values page is shown). */
export function chooseLocation(req: LocationRequest, plan?: LocationPlan): LocationDecision {
  const { ctx, derived, problems } = contextFor(req, plan)
  if (!ctx.engine) return legacyOnlyDecision(req.values, problems)
  const { chosen, sameForEveryone } = chooseFor(ctx.candidates, {
    chooseBy: derived.chooseBy,
    locatt: req.locatt,
    country: req.country,
    clientAddress: req.clientAddress,
    random: req.random,
    problems
  })
  if (chosen === undefined) return { kind: 'none', vary: ctx.vary, problems: unique(problems) }
  return {
    kind: 'redirect',
    href: chosen.href,
    status: statusFor(chosen, ctx, problems),
    linkHeaders: derived.linkHeaders,
    extraHeaders: derived.extraHeaders,
    headLines: headLinesFor(derived.headElements, chosen.href),
    vary: ctx.vary,
    negotiated: CONNEG_ROLE.test(attr(chosen.el, 'http_role') ?? ''),
    sameForEveryone,
    urlOnly: chosen.source === 'legacy' && derived.headElements.length === 0,
    usedValues: ctx.usedValues,
    problems: unique(problems)
  }
}

/**
 * What one record's 10320/loc gives before any request is looked at: the candidates in the reference
 * order and what follows from them alone (chooser order, Link headers, 10320/headers lines). The same
 * for every request of the record, its spelling and its namespace locations: the resolver keeps it with
 * the record's cache entry, so it is built once per record, not once per request.
 */
export interface LocationPlan {
  ctx: LocContext
  derived: { chooseBy: readonly string[]; linkHeaders: string[]; extraHeaders: Array<[string, string]>; headElements: HeadElement[] }
}

/** The head elements for a chosen target: a meta refresh survives only when it goes where the redirect goes. */
function headLinesFor(elements: readonly HeadElement[], href: string): string[] {
  if (elements.length === 0) return NO_LINES
  return elements.filter((e) => e.refreshTo === undefined || e.refreshTo === href.trim()).map((e) => e.html)
}
const NO_LINES: string[] = []

/** The plan of a record for the handle as written, with its includes and namespace locations. */
export function planLocations(req: Pick<LocationRequest, 'handle' | 'values' | 'includes' | 'namespaceValues'>): LocationPlan {
  const ctx = buildContext(req)
  const chooseBy = parseChooseBy(rootSetting(ctx, 'choose_by') ?? rootSetting(ctx, 'chooseby'))
  const linkHeadersOf = ctx.engine ? linkHeaders(ctx.linkRoots, req.handle, ctx.problems) : []
  const { extraHeaders, headElements } = ctx.engine
    ? headerLines(ctx.headerTexts, req.handle, ctx.problems)
    : { extraHeaders: [], headElements: [] }
  return { ctx, derived: { chooseBy, linkHeaders: linkHeadersOf, extraHeaders, headElements } }
}

/** The plan for a request (the one given, or built now), and a problems list of its own (choosing may add to it). */
function contextFor(req: LocationRequest, plan: LocationPlan = planLocations(req)): LocationPlan & { problems: string[] } {
  return { ctx: plan.ctx, derived: plan.derived, problems: plan.ctx.problems.length === 0 ? [] : [...plan.ctx.problems] }
}

/** Reference case A and behaviour.md §4: the first URL value in record order, status 302, nothing else. */
function legacyOnlyDecision(values: readonly HandleValue[], problems: string[]): LocationDecision {
  const url = firstUrlValue(values)
  const href = url === undefined ? undefined : valueText(url)?.trim()
  if (url === undefined || href === undefined || href === '') return { kind: 'none', vary: false, problems: unique(problems) }
  return {
    kind: 'redirect',
    href,
    status: 302,
    linkHeaders: [],
    extraHeaders: [],
    headLines: [],
    vary: false,
    negotiated: false,
    sameForEveryone: true,
    urlOnly: true,
    usedValues: [url],
    problems: unique(problems)
  }
}

// `conneg` as a word of http_role (a list such as "conneg browser"); `no_conneg` is the opposite, not negotiation.
const CONNEG_ROLE = /(?:^|[\s,])conneg(?:$|[\s,])/i

/** A root attribute: the handle's own 10320/loc roots first, then the namespace ones. */
function rootSetting(ctx: LocContext, name: string): string | undefined {
  for (const root of ctx.choiceRoots) {
    const v = attr(root, name)
    if (v !== undefined) return v
  }
  return undefined
}

const REDIRECT_STATUSES = [301, 302, 303, 307, 308] as const
type RedirectStatus = (typeof REDIRECT_STATUSES)[number]

/**
 * http_sc of the location, else of the roots (own, then namespace), else 302. A value that is not one of
 * the five redirect codes is noted and skipped, so a broken location-level value does not hide a good
 * root-level one (the reference would fall back to 302).
 */
function statusFor(chosen: Candidate, ctx: LocContext, problems: string[]): RedirectStatus {
  for (const el of [chosen.el, ...ctx.choiceRoots]) {
    const v = attr(el, 'http_sc')?.trim()
    if (v === undefined || v === '') continue
    const code = REDIRECT_STATUSES.find((s) => String(s) === v)
    if (code !== undefined) return code
    problems.push(`http_sc ${JSON.stringify(v)} is not 301, 302, 303, 307 or 308; ignored`)
  }
  return 302
}

/**
 * action=showurls: the XML list of every candidate with href filled in, as the reference writes it
 * (behaviour.md R3 "action=showurls output"), or undefined when there is no candidate. Attributes come in
 * source order; a filled-in href goes just before href_template (doi.org's own output has that order).
 */
export function renderShowUrls(req: LocationRequest, plan?: LocationPlan): string | undefined {
  const { ctx } = contextFor(req, plan)
  const elements = ctx.engine ? ctx.candidates.map(withHref) : legacyOnlyList(req.values)
  if (elements.length === 0) return undefined
  const root = xmlEscape(ctx.engine ? (ctx.firstRootName ?? 'locations') : 'locations')
  return `<${root}>\n${elements.map((el) => writeEmptyElement(el.name, el.attrs) + '\n').join('')}</${root}>\n`
}

function withHref(c: Candidate): XmlElement {
  if (attr(c.el, 'href') !== undefined) return c.el
  const attrs = [...c.el.attrs]
  const at = attrs.findIndex(([k]) => k === 'href_template')
  attrs.splice(at < 0 ? attrs.length : at, 0, ['href', c.href])
  return { ...c.el, attrs }
}

/**
 * Legacy-only showurls ([HNS92] legacyOnlyUrlTypesDoShowLocations): the exact URL (or 0.TYPE/URL)
 * values, the first with weight 1.0 and the rest 0.0; if there is none, the URL subtypes the same way.
 */
function legacyOnlyList(values: readonly HandleValue[]): XmlElement[] {
  const withText = values.filter((v) => (valueText(v) ?? '').trim() !== '')
  const exact = withText.filter((v) => isType(v, 'URL') || isType(v, '0.TYPE/URL'))
  const chosen = exact.length > 0 ? exact : withText.filter((v) => hasType(v, 'URL') || hasType(v, '0.TYPE/URL'))
  return chosen.map((v, i) => legacyElement(valueText(v) ?? '', i === 0 ? 1 : 0))
}

function unique(list: readonly string[]): string[] {
  return list.length === 0 ? [] : [...new Set(list)]
}
