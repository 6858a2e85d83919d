/**
 * How each kind of setting is read and checked: from the config file any JSON value, from the
 * environment a string. src/config/schema.ts gives every setting one of these; a parser's return type
 * must be its Config field's, or the table does not compile.
 */
import { isIP } from 'node:net'
import { parseAllowedHosts } from '../handle/metadata-hosts.js'
import { parseVerifyLevels } from '../handle/verify/levels.js'
import type { VerifyLevel } from '../handle/verify/types.js'
import { parseLocalServices, parseTemplate } from './local-services.js'
import type { LocalServiceConfig } from './local-services.js'

/** How a parser refuses a value; the loader makes the message name the setting and where it came from. */
export interface Refuse {
  /** "invalid setting <key> (<source>): expected <what>, got <the value as JSON>". */
  expected: (what: string) => never
  /** "invalid setting <key> (<source>): <message>", for a message that shows the value its own way, or never (a password). */
  because: (message: string) => never
}

export type Parse<T> = (raw: unknown, refuse: Refuse) => T

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/

/** An address or CIDR as [address, prefix length, family], or undefined when it is neither. */
export function parseCidr(text: string): [string, number, 'ipv4' | 'ipv6'] | undefined {
  const [address = '', bits] = text.split('/')
  const family = isIP(address)
  if (family === 0) return undefined
  const max = family === 4 ? 32 : 128
  const prefix = bits === undefined ? max : Number(bits)
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max || (bits !== undefined && !/^\d+$/.test(bits))) return undefined
  return [address, prefix, family === 4 ? 'ipv4' : 'ipv6']
}

const isCidr = (text: string): boolean => parseCidr(text) !== undefined

/** The empty string means "not set" (undefined); anything else is checked by `parse`. */
export function optional<T>(parse: Parse<T>): Parse<T | undefined> {
  return (raw, refuse) => (raw === '' ? undefined : parse(raw, refuse))
}

export function integer(min: number, max: number): Parse<number> {
  return (raw, refuse) => {
    const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN
    if (!Number.isSafeInteger(n)) return refuse.expected('an integer')
    if (n < min || n > max) return refuse.expected(`an integer from ${min} to ${max}`)
    return n
  }
}

/** 0 (off), or an integer from `min` to `max`. */
export function zeroOrInteger(min: number, max: number): Parse<number> {
  const checked = integer(0, max)
  return (raw, refuse) => {
    const n = checked(raw, refuse)
    if (n !== 0 && n < min) return refuse.expected(`0 or an integer from ${min} to ${max}`)
    return n
  }
}

/** One of `values`, spelled exactly. */
export function oneOf<T extends string>(values: readonly T[], expected: string): Parse<T> {
  return (raw, refuse) => values.find((value) => value === raw) ?? refuse.expected(expected)
}

export const flag: Parse<boolean> = (raw, refuse) => {
  if (typeof raw === 'boolean') return raw
  const s = typeof raw === 'string' ? raw.trim().toLowerCase() : ''
  if (['1', 'true', 'yes', 'on'].includes(s)) return true
  if (['0', 'false', 'no', 'off', ''].includes(s)) return false
  return refuse.expected('true or false')
}

/** A non-empty line of text. */
export const text: Parse<string> = (raw, refuse) => {
  if (typeof raw !== 'string') return refuse.expected('a string')
  if (CONTROL.test(raw)) return refuse.expected('a string without control characters')
  if (raw === '') return refuse.expected('a non-empty string')
  return raw
}

/** An http(s) base URL, without its trailing slashes. */
export const httpUrl: Parse<string> = (raw, refuse) => {
  if (typeof raw !== 'string') return refuse.expected('an http(s) URL')
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return refuse.expected('an http(s) URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return refuse.expected('an http(s) URL')
  if (url.search !== '' || url.hash !== '') return refuse.expected('a URL without ?query or #fragment')
  return raw.replace(/\/+$/, '')
}

/** URL schemes, lower-cased. */
export const schemes: Parse<string[]> = (raw, refuse) => {
  const items: unknown[] = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(',') : refuse.expected('a comma-separated list')
  const out = items.map((s) => (typeof s === 'string' ? s.trim().toLowerCase() : refuse.expected('a list of strings')))
  if (out.some((s) => !/^[a-z][a-z0-9+.-]*$/.test(s))) return refuse.expected('a list of URL schemes such as http,https')
  return out
}

/** `KEY=Name,…` (or a JSON object of strings), keys upper-cased. */
export const names: Parse<Record<string, string>> = (raw, refuse) => {
  const out: Record<string, string> = {}
  if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
    const entries: Array<[string, unknown]> = Object.entries(raw)
    for (const [key, value] of entries) {
      if (typeof value !== 'string') return refuse.expected('an object of strings')
      out[key.toUpperCase()] = value
    }
    return out
  }
  if (typeof raw !== 'string') return refuse.expected('KEY=Name pairs')
  for (const pair of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = pair.indexOf('=')
    if (eq <= 0 || eq === pair.length - 1) return refuse.expected('KEY=Name pairs separated by commas')
    out[pair.slice(0, eq).trim().toUpperCase()] = pair.slice(eq + 1).trim()
  }
  return out
}

/** A list from the file, or comma-separated items from the environment (trimmed, empty ones dropped). */
function items(raw: unknown): unknown[] | undefined {
  return Array.isArray(raw)
    ? raw
    : typeof raw === 'string'
      ? raw
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean)
      : undefined
}

/** The items that are strings passing `ok`, or undefined when one is not. */
function allStrings(list: readonly unknown[], ok: (item: string) => boolean): string[] | undefined {
  const out: string[] = []
  for (const item of list) {
    if (typeof item !== 'string' || !ok(item)) return undefined
    out.push(item)
  }
  return out
}

/** Client addresses or CIDRs. */
export const networks: Parse<string[]> = (raw, refuse) => {
  const list = items(raw) ?? refuse.expected('comma-separated addresses or CIDRs')
  return allStrings(list, isCidr) ?? refuse.expected('comma-separated addresses or CIDRs such as 10.0.0.0/8')
}

/** Fastify's trustProxy: a boolean, a number of proxies, or the proxies' addresses/CIDRs. */
export const proxyTrust: Parse<boolean | number | string[]> = (raw, refuse) => {
  const expected = "true, false, a number of proxies (0 to 16) or the proxies' addresses/CIDRs"
  if (typeof raw === 'boolean') return raw
  if (typeof raw === 'number') return Number.isInteger(raw) && raw >= 0 && raw <= 16 ? raw : refuse.expected(expected)
  const lower = typeof raw === 'string' ? raw.trim().toLowerCase() : undefined
  // Digits are a hop count ('1': one proxy in front), not a boolean.
  if (lower !== undefined && /^\d+$/.test(lower)) return Number(lower) <= 16 ? Number(lower) : refuse.expected(expected)
  if (lower !== undefined && ['true', 'yes', 'on'].includes(lower)) return true
  if (lower !== undefined && ['false', 'no', 'off', ''].includes(lower)) return false
  const list: unknown[] = Array.isArray(raw)
    ? raw
    : lower !== undefined
      ? lower
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean)
      : []
  const cidrs = list.length === 0 ? undefined : allStrings(list, isCidr)
  return cidrs ?? refuse.expected(expected)
}

/** DOI prefixes such as 10.5555. */
export const prefixes: Parse<string[]> = (raw, refuse) => {
  const list = items(raw) ?? refuse.expected('comma-separated prefixes such as 10.5555')
  return allStrings(list, (p) => /^[^\s/]+$/.test(p)) ?? refuse.expected('comma-separated prefixes such as 10.5555 (no spaces, no slash)')
}

/** A redis:// or rediss:// URL; its password is never shown in a message. */
export const redisUrl: Parse<string> = (raw, refuse) => {
  const bad = (expected: string): never =>
    refuse.because(`expected ${expected}, got ${JSON.stringify(String(raw).replace(/\/\/([^@/]*):[^@/]*@/, '//$1:***@'))}`)
  if (typeof raw !== 'string') return bad('a redis:// or rediss:// URL')
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return bad('a redis:// or rediss:// URL')
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') return bad('a redis:// or rediss:// URL')
  if (url.hostname === '' || !/^\/?\d{0,2}$/.test(url.pathname) || url.search !== '' || url.hash !== '') {
    return bad('a redis:// URL with a host and at most a database number, such as redis://valkey:6379/0')
  }
  return raw
}

/** host:port entries (Sentinels, Cluster nodes). */
export const redisNodes: Parse<string[]> = (raw, refuse) => {
  const list = items(raw) ?? refuse.expected('comma-separated host:port entries')
  const hostPort = (item: string): boolean => {
    const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(item)
    return m !== null && Number(m[2]) >= 1 && Number(m[2]) <= 65535
  }
  return allStrings(list, hostPort) ?? refuse.expected('comma-separated host:port entries such as redis-1:6379,redis-2:6379')
}

/** A password: never named in a message. */
export const secret: Parse<string> = (raw, refuse) => {
  if (typeof raw !== 'string' || CONTROL.test(raw)) return refuse.because('expected a string without control characters (value not shown)')
  return raw
}

/** A bearer token (RFC 6750's b64token characters), at least `minLength` long so it cannot be guessed: never named in a message. */
export function bearerToken(minLength: number): Parse<string> {
  return (raw, refuse) => {
    if (typeof raw !== 'string' || !/^[A-Za-z0-9\-._~+/]+=*$/.test(raw)) {
      return refuse.because('expected a token of the characters A-Z a-z 0-9 - . _ ~ + / (value not shown)')
    }
    if (raw.length < minLength) {
      return refuse.because(
        `expected at least ${minLength} characters, got ${raw.length} (value not shown); make one with: openssl rand -hex 32`
      )
    }
    return raw
  }
}

/** host or host:port entries, lower-cased (src/handle/metadata-hosts.ts). */
export const hosts: Parse<string[]> = (raw, refuse) => {
  const parsed =
    typeof raw === 'string' || Array.isArray(raw) ? parseAllowedHosts(raw) : refuse.expected('comma-separated host or host:port entries')
  if (typeof parsed === 'string') return refuse.expected(`comma-separated host or host:port entries (${parsed})`)
  return parsed
}

/** The local services' own checks (src/config/local-services.ts). */
export const localServices: Parse<LocalServiceConfig[]> = (raw, refuse) => parseLocalServices(raw, { fail: refuse.because, isCidr })
export const urlTemplate: Parse<string | undefined> = (raw, refuse) => parseTemplate(raw, { fail: refuse.because, isCidr })

/** The levels of `check --verify` a server runs (src/handle/verify/levels.ts): a comma list, or a list in the file. */
export const verifyLevels: Parse<VerifyLevel[]> = (raw, refuse) => {
  const list = items(raw)
  if (list === undefined || !list.every((item) => typeof item === 'string')) {
    return refuse.expected('a comma list of metadata, retraction, landing (or nothing)')
  }
  const levels = parseVerifyLevels(list.join(','))
  return typeof levels === 'string' ? refuse.because(levels) : levels
}

/** `false`, `true`, or the addresses/CIDRs of the only networks allowed (LANDING_ALLOW_PRIVATE). */
export const flagOrNetworks: Parse<boolean | string[]> = (raw, refuse) => {
  const expected = 'true, false, or comma-separated addresses or CIDRs such as 127.0.0.2/32'
  if (typeof raw === 'boolean') return raw
  const lower = typeof raw === 'string' ? raw.trim().toLowerCase() : undefined
  if (lower !== undefined && ['1', 'true', 'yes', 'on'].includes(lower)) return true
  if (lower !== undefined && ['0', 'false', 'no', 'off', ''].includes(lower)) return false
  const list = items(raw) ?? refuse.expected(expected)
  if (list.length === 0) return false
  return allStrings(list, isCidr) ?? refuse.expected(expected)
}
