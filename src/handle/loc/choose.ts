/**
 * The choosers of the 10320/loc engine and the weighted draw (behaviour.md R3 "Selection
 * algorithm", [HNS92] Location.chooseLocationFromValue, behaviour.md §5). Pure: randomness is injected.
 */
import { BlockList, isIP } from 'node:net'
import { attr } from './xml.js'
import type { XmlElement } from './xml.js'

/** Anything the choosers can look at: its attributes as written. */
export interface Choosable {
  el: Pick<XmlElement, 'attrs'>
}

export interface ChooserInput {
  /** Chooser names, already split, trimmed and lower-cased (parseChooseBy). */
  chooseBy: readonly string[]
  /** `key:value` or `key` strings, user ones first, then the automatic ones (negotiate.ts). */
  locatt: readonly string[]
  /** Client country (any case), or undefined when unknown: the country chooser then changes nothing. */
  country: string | undefined
  /** Client IP for the address chooser, or undefined. */
  clientAddress: string | undefined
  /** Uniform in [0, 1). */
  random: () => number
  problems: string[]
}

/** The code's default (behaviour.md §5); the DOI docs' `locatt,country,weighted` differs only for `addresses`/`score`. */
export const DEFAULT_CHOOSE_BY: readonly string[] = ['locatt', 'address', 'country', 'score', 'weighted']

/** `chooseby` text → chooser names: split on ',', trimmed, lower-cased, blanks skipped; default when absent. */
export function parseChooseBy(text: string | undefined): readonly string[] {
  if (text === undefined) return DEFAULT_CHOOSE_BY
  return text
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '')
}

/**
 * Run the choosers in order, then the weighted draw. Before each chooser, a single remaining candidate
 * wins at once. A filter that would leave nothing is ignored. Unknown chooser names are noted and skipped.
 */
export function choose<T extends Choosable>(candidates: readonly T[], input: ChooserInput): T | undefined {
  return chooseFor(candidates, input).chosen
}

/**
 * `choose`, saying also whether every request with the same locatt gets the same candidate: false when
 * a country or address chooser could tell clients apart, or the weighted draw has more than one to pick
 * from. Only then may the answer be prepared once and given to everyone (one prepared answer per record).
 */
export function chooseFor<T extends Choosable>(
  candidates: readonly T[],
  input: ChooserInput
): { chosen: T | undefined; sameForEveryone: boolean } {
  let list = candidates
  let sameForEveryone = true
  for (const name of input.chooseBy) {
    if (list.length <= 1) break
    if (name === 'weighted') break
    if (
      (name === 'country' && list.some((c) => attr(c.el, 'country') !== undefined)) ||
      (name === 'address' && list.some((c) => attr(c.el, 'addresses') !== undefined))
    ) {
      sameForEveryone = false
    }
    const filtered = applyFilter(name, list, input)
    if (filtered !== undefined && filtered.length > 0) list = filtered
  }
  if (list.length > 1 && drawable(list) > 1) sameForEveryone = false
  return { chosen: weightedPick(list, input.random), sameForEveryone }
}

/** How many candidates the weighted draw can land on: those of positive weight, or all when none has one. */
function drawable(list: readonly Choosable[]): number {
  let positive = 0
  for (const c of list) if (weightOf(c) > 0) positive++
  return positive === 0 ? list.length : positive
}

function applyFilter<T extends Choosable>(name: string, list: readonly T[], input: ChooserInput): readonly T[] | undefined {
  switch (name) {
    case 'locatt':
      return byLocatt(list, input.locatt)
    case 'country':
      return input.country === undefined ? undefined : byCountry(list, input.country)
    case 'address':
      return input.clientAddress === undefined ? undefined : byAddress(list, input.clientAddress, input.problems)
    case 'score':
      return byScore(list)
    default:
      input.problems.push(`unknown 10320/loc chooser ${JSON.stringify(name)} ignored`)
      return undefined
  }
}

/**
 * Each locatt in turn narrows the list when it matches something: `key` keeps the candidates having that
 * attribute, `key:value` those whose attribute equals value exactly (case-sensitive). The key is trimmed,
 * the value is not ([HNS92] filterBasedOnLinkParam).
 */
function byLocatt<T extends Choosable>(list: readonly T[], locatts: readonly string[]): readonly T[] {
  let current = list
  for (const locatt of locatts) {
    const colon = locatt.indexOf(':')
    const key = (colon < 0 ? locatt : locatt.slice(0, colon)).trim()
    const value = colon < 0 ? undefined : locatt.slice(colon + 1)
    const matching = current.filter((c) => {
      const have = attr(c.el, key)
      return have !== undefined && (value === undefined || have === value)
    })
    if (matching.length > 0) current = matching
  }
  return current
}

/** Candidates whose `country` equals the client's, case-insensitively (the list is kept when none does). */
function byCountry<T extends Choosable>(list: readonly T[], country: string): readonly T[] {
  const mine = country.trim().toLowerCase()
  return list.filter((c) => attr(c.el, 'country')?.trim().toLowerCase() === mine)
}

/** Candidates whose comma-separated `addresses` CIDR list contains the client address. */
function byAddress<T extends Choosable>(list: readonly T[], clientAddress: string, problems: string[]): readonly T[] {
  const client = normaliseAddress(clientAddress)
  if (client === undefined) return list
  return list.filter((c) => {
    const ranges = attr(c.el, 'addresses')
    return ranges !== undefined && ranges.split(',').some((r) => inRange(client, r.trim(), problems))
  })
}

interface Address {
  ip: string
  family: 'ipv4' | 'ipv6'
}

function normaliseAddress(raw: string): Address | undefined {
  let ip = raw.trim()
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  if (mapped?.[1] !== undefined) ip = mapped[1] // an IPv4 client seen through an IPv6 socket
  const version = isIP(ip)
  if (version === 0) return undefined
  return { ip, family: version === 4 ? 'ipv4' : 'ipv6' }
}

/** Is `client` inside `range` (`a.b.c.d/n`, `x::/n`, or a single address)? A broken range is noted and matches nothing. */
function inRange(client: Address, range: string, problems: string[]): boolean {
  if (range === '') return false
  const m = /^([^/]+)(?:\/(\d{1,3}))?$/.exec(range)
  const version = m?.[1] === undefined ? 0 : isIP(m[1])
  const maxBits = version === 4 ? 32 : 128
  const bits = m?.[2] === undefined ? maxBits : Number(m[2])
  if (m?.[1] === undefined || version === 0 || bits > maxBits) {
    problems.push(`10320/loc addresses entry ${JSON.stringify(range)} is not a CIDR range; ignored`)
    return false
  }
  const family = version === 4 ? 'ipv4' : 'ipv6'
  if (family !== client.family) return false
  const block = new BlockList()
  block.addSubnet(m[1], bits, family)
  return block.check(client.ip, family)
}

/**
 * The candidates with the highest `score` (default 0, non-numeric 0). As in [HNS92] the best score
 * starts at 0, so when every score is negative nothing is kept and the filter is ignored.
 */
function byScore<T extends Choosable>(list: readonly T[]): readonly T[] {
  const scores = list.map((c) => parseNumber(attr(c.el, 'score'), 0))
  const best = scores.reduce((a, b) => Math.max(a, b), 0) // no spread: a huge candidate list must not overflow the stack
  return list.filter((_c, i) => scores[i] === best)
}

/**
 * Proportional draw ([HNS92] sendWeightedRedirect, behaviour.md R3 step 4): r = random·total, walk from the
 * LAST candidate to the first adding weights, take the first whose running sum reaches r. Weight
 * defaults to 1, negatives count as 0. Two deliberate differences from the Java code:
 * - a weight-0 candidate is never taken by the walk (Java takes one when r is exactly 0), so "weight 0
 *   is never drawn unless all are 0" holds for every random value;
 * - when every weight is 0 the pick is uniform (Java's Math.round gives the two ends half a share).
 */
export function weightedPick<T extends Choosable>(list: readonly T[], random: () => number): T | undefined {
  if (list.length === 0) return undefined
  const weights = list.map((c) => weightOf(c))
  const total = weights.reduce((a, b) => a + b, 0)
  const u = clampUnit(random())
  if (total > 0) {
    const r = u * total
    let running = 0
    let lastPositive: T | undefined
    for (let i = list.length - 1; i >= 0; i--) {
      const w = weights[i] ?? 0
      if (w <= 0) continue
      running += w
      lastPositive = list[i]
      if (running >= r) return list[i]
    }
    return lastPositive // only reachable through rounding
  }
  return list[Math.min(list.length - 1, Math.floor(u * list.length))]
}

/** The draw weight: `weight` as a number, default 1, negative → 0, non-numeric → the default 1. */
export function weightOf(c: Choosable): number {
  return Math.max(0, parseNumber(attr(c.el, 'weight'), 1))
}

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/

/** A decimal number as Java's Double.parseDouble reads the usual forms (trimmed); `fallback` for anything else, NaN and infinities included. */
export function parseNumber(text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback
  const t = text.trim()
  if (!DECIMAL.test(t)) return fallback
  const n = Number(t)
  return Number.isFinite(n) ? n : fallback
}

function clampUnit(u: number): number {
  if (!(u >= 0)) return 0
  return u >= 1 ? 1 - Number.EPSILON : u
}
