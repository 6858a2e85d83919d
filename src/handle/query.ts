/**
 * Query parameters of the HTML proxy (behaviour.md §6, behaviour.md R4 "Parsing" and its table).
 * Pure: no I/O.
 */
import { percentDecode } from './name.js'
import { lookupParamsOf } from './lookup-params.js'
import type { LookupParams } from './lookup-params.js'

export type ProxyAction = 'redirect' | 'showvalues' | 'showurls' | 'api'

/**
 * What the proxy reads from the query string. It is the lookup's request too (LookupParams: `auth`, `cert`,
 * `bypassCache`, switches on by presence as `noredirect` is), passed whole to the resolver.
 */
export interface ProxyParams extends LookupParams {
  /** Every key (decoded, case kept) → every value in order, exactly as in the query string. */
  all: ReadonlyMap<string, readonly string[]>
  /** Presence semantics: any value, even '0' or 'false', turns it on ([HNS92] `getParameter(..) != null`), as `auth` and `cert`. */
  noredirect: boolean
  /** `ignore_aliases`, or its synonym `noalias`. */
  ignoreAliases: boolean
  /** undefined = no index filter (absent, or dropped because one value was not an integer). */
  indexes: number[] | undefined
  /** [] = no type filter. */
  types: string[]
  /** Decoded text to append to the redirect URL; a raw '#fragment' wins over a `urlappend` parameter. */
  urlappend: string | undefined
  /** User `locatt` values in order, then 'role:metadata' for action=metadata. */
  locatt: string[]
  action: ProxyAction
  /** `country` override for the 10320/loc country chooser; undefined when absent or empty. */
  country: string | undefined
  /** `nols` or `nosfx` present. */
  nols: boolean
}

/**
 * Parse a raw query string (without '?', and without any '#fragment', see splitRequestTarget).
 *
 * - Split on '&' and ';', empty pieces skipped (Java StringTokenizer); key=value at the first '=',
 *   a key without '=' gets ''.
 * - Keys and values are percent-decoded once with '+' kept as '+'. A key or value that is not valid UTF-8
 *   after decoding is kept raw (still encoded): the parser never throws, and a query parameter we do not
 *   understand must not turn a resolvable DOI into an error.
 * - `fragment` is the raw '#…' part (with its '#'). As in [HNS92] (`parseGetParams` adds it as `urlappend`
 *   before the query's own parameters, and `getParameter` returns the first), it wins over a `urlappend`
 *   parameter, and goes to the redirect with its '#', so '/10.1000/x#sec2' lands on '<url>#sec2'.
 */
export function parseProxyQuery(rawQuery: string, fragment?: string): ProxyParams {
  // Most requests have no query at all: they share one answer (nobody mutates it).
  if (rawQuery === '' && fragment === undefined) return NO_PARAMS
  return parseQuery(rawQuery, fragment)
}

function parseQuery(rawQuery: string, fragment?: string): ProxyParams {
  const all = parsePairs(rawQuery)
  const has = (key: string): boolean => all.has(key)
  const first = (key: string): string | undefined => all.get(key)?.[0]

  const rawAction = first('action')?.toLowerCase()
  const locatt = [...(all.get('locatt') ?? [])]
  // action=metadata is redirect plus locatt=role:metadata ([HNS92] HDLServletRequest constructor)
  if (rawAction === 'metadata') locatt.push('role:metadata')

  const country = first('country')
  return {
    all,
    noredirect: has('noredirect'),
    ...lookupParamsOf(has),
    ignoreAliases: has('ignore_aliases') || has('noalias'),
    indexes: parseIndexes(all.get('index')),
    types: [...(all.get('type') ?? [])],
    urlappend: fragment !== undefined ? decodeOrKeep(fragment) : first('urlappend'),
    locatt,
    action: chooseAction(rawAction, has('locs'), has('noredirect')),
    country: country === '' ? undefined : country,
    nols: has('nols') || has('nosfx')
  }
}

// The parameters of an empty query, made once.
const NO_PARAMS: ProxyParams = Object.freeze(parseQuery(''))

/** True when the request narrows the record with `index` or `type` (the values-not-found page applies). */
export function hasTypeOrIndexFilter(p: ProxyParams): boolean {
  return (p.indexes !== undefined && p.indexes.length > 0) || p.types.length > 0
}

function parsePairs(rawQuery: string): Map<string, string[]> {
  const all = new Map<string, string[]>()
  for (const piece of rawQuery.split(/[&;]/)) {
    if (piece === '') continue
    const eq = piece.indexOf('=')
    const key = decodeOrKeep(eq < 0 ? piece : piece.slice(0, eq))
    const value = eq < 0 ? '' : decodeOrKeep(piece.slice(eq + 1))
    const values = all.get(key)
    if (values === undefined) all.set(key, [value])
    else values.push(value)
  }
  return all
}

function decodeOrKeep(s: string): string {
  return percentDecode(s) ?? s
}

/**
 * An explicit `action` wins; unknown actions (and 'metadata', 'toolbar', '') redirect. Without one, our
 * synonym `locs` means showurls, then `noredirect` means showvalues ("applies only if no action was given").
 */
function chooseAction(rawAction: string | undefined, locs: boolean, noredirect: boolean): ProxyAction {
  if (rawAction !== undefined) {
    switch (rawAction) {
      case 'showvalues':
      case 'showurls':
      case 'api':
      case 'redirect':
        return rawAction
      default:
        return 'redirect'
    }
  }
  if (locs) return 'showurls'
  if (noredirect) return 'showvalues'
  return 'redirect'
}

/** Java Integer.parseInt: optional sign, decimal digits, 32-bit range; nothing else (no spaces, no '1.0'). */
const JAVA_INT = /^[+-]?\d+$/

/** One value that Integer.parseInt would reject drops the whole index filter ([HNS92] resolveHandle). */
function parseIndexes(values: readonly string[] | undefined): number[] | undefined {
  if (values === undefined || values.length === 0) return undefined
  const indexes: number[] = []
  for (const v of values) {
    if (!JAVA_INT.test(v)) return undefined
    const n = Number(v)
    if (n < -2147483648 || n > 2147483647) return undefined
    indexes.push(n)
  }
  return indexes
}
