/**
 * The local services ("appropriate copy", behaviour.md §10) as the settings give them: checked once at
 * start, so a bad template or network stops the start with a message naming it. src/config/schema.ts
 * calls these from its checks; `fail` throws its ConfigError with the setting's name and source.
 */
import { LINKOUT_STEPS } from '../handle/linkout.js'
import type { LinkoutStep } from '../handle/linkout.js'

export interface LocalServiceConfig {
  /** A safe token, unique, never `none`: the value of the doi_proxy_ls cookie and the metrics label. */
  id: string
  /** Shown to readers at /settings. */
  name: string
  /** An http(s) URL template with {doi} and optionally {return}; only when `linkout` names "service" (or there is no `linkout`). */
  url?: string | undefined
  /** Client networks (CIDRs) sent there without asking; empty: only readers who chose it. */
  networks: string[]
  /** DOI prefixes it is for (with networks); empty: every prefix. */
  prefixes: string[]
  /** The link-out chain (src/handle/linkout.ts), tried in order; absent: the service's `url`, as before. */
  linkout?: LinkoutStep[] | undefined
  /** An EZproxy starting-point template with {url}, for the "ezproxy" step. */
  ezproxy?: string | undefined
}

interface Checks {
  fail: (message: string) => never
  isCidr: (text: string) => boolean
}

const ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/
const PLACEHOLDER = /\{[^}]*\}/g
const KNOWN_PLACEHOLDERS = new Set(['{doi}', '{return}'])
const PRINTABLE_ASCII = /^[\x21-\x7e]+$/
const PREFIX = /^10\.[^\s/]+$/
const SERVICE_KEYS = new Set(['id', 'name', 'url', 'networks', 'prefixes', 'linkout', 'ezproxy'])

/** Why a URL template is unusable, or undefined when it is fine. */
export function templateProblem(template: string): string | undefined {
  if (!template.includes('{doi}')) return `the URL template ${JSON.stringify(template)} has no {doi}`
  if (!PRINTABLE_ASCII.test(template)) {
    return `the URL template ${JSON.stringify(template)} must be printable ASCII without spaces (write others as %XX)`
  }
  const unknown = (template.match(PLACEHOLDER) ?? []).find((p) => !KNOWN_PLACEHOLDERS.has(p))
  if (unknown !== undefined) {
    return `the URL template ${JSON.stringify(template)} has an unknown placeholder ${unknown} (use {doi} and {return})`
  }
  let url: URL
  try {
    url = new URL(template.replace(PLACEHOLDER, 'x'))
  } catch {
    return `the URL template ${JSON.stringify(template)} is not a URL`
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `the URL template ${JSON.stringify(template)} is not an http(s) URL`
  return undefined
}

/** A URL template setting (LOCAL_SERVICE_URL): '' means none. */
export function parseTemplate(raw: unknown, checks: Checks): string | undefined {
  if (raw === '') return undefined
  if (typeof raw !== 'string') return checks.fail(`expected an http(s) URL template with {doi}, got ${JSON.stringify(raw)}`)
  const problem = templateProblem(raw.trim())
  return problem === undefined ? raw.trim() : checks.fail(problem)
}

/** The localServices setting: a list (the config file) or a JSON list (LOCAL_SERVICES). */
export function parseLocalServices(raw: unknown, checks: Checks): LocalServiceConfig[] {
  let list = raw
  if (typeof raw === 'string') {
    if (raw.trim() === '') return []
    try {
      list = JSON.parse(raw)
    } catch {
      return checks.fail(
        `expected a JSON list of services such as [{"id":"sfx","name":"Our library","url":"https://sfx.example/openurl?id=doi:{doi}"}], got ${JSON.stringify(raw)}`
      )
    }
  }
  if (!Array.isArray(list)) return checks.fail(`expected a list of services, got ${JSON.stringify(raw)}`)
  const services = list.map((item: unknown, i) => parseService(item, i, checks))
  checkIds(services, checks)
  return services
}

/** Ids must be unique over every service, the LOCAL_SERVICE_URL one (`local`) included. */
export function checkIds(services: readonly LocalServiceConfig[], checks: Pick<Checks, 'fail'>): void {
  const seen = new Set<string>()
  for (const s of services) {
    if (seen.has(s.id)) checks.fail(`two local services have the id ${JSON.stringify(s.id)}; ids must be unique`)
    seen.add(s.id)
  }
}

function parseService(item: unknown, index: number, checks: Checks): LocalServiceConfig {
  const at = `service ${index + 1}`
  if (item === null || typeof item !== 'object' || Array.isArray(item)) {
    return checks.fail(`${at}: expected an object {id, name, url, networks?, prefixes?}, got ${JSON.stringify(item)}`)
  }
  const o: Record<string, unknown> = Object.fromEntries(Object.entries(item))
  const extra = Object.keys(o).find((k) => !SERVICE_KEYS.has(k))
  if (extra !== undefined) {
    return checks.fail(`${at}: unknown key ${JSON.stringify(extra)} (expected id, name, url, networks, prefixes, linkout, ezproxy)`)
  }
  const { id, name, url } = o
  if (typeof id !== 'string' || !ID.test(id) || id.toLowerCase() === 'none') {
    return checks.fail(`${at}: the id ${JSON.stringify(id)} must be letters, digits, - or _ (at most 64, not "none")`)
  }
  const named = `service ${JSON.stringify(id)}`
  // eslint-disable-next-line no-control-regex
  if (typeof name !== 'string' || name.trim() === '' || name.length > 200 || /[\u0000-\u001f\u007f]/.test(name)) {
    return checks.fail(`${named}: the name must be a non-empty line of text, got ${JSON.stringify(name)}`)
  }
  const linkout = o.linkout === undefined ? undefined : parseLinkout(o.linkout, named, checks)
  // A chain without "service" never goes to the service's own URL: it may have none.
  if (url !== undefined || linkout === undefined || linkout.includes('service')) {
    if (typeof url !== 'string') {
      return checks.fail(
        `${named}: the url must be a URL template with {doi}, got ${JSON.stringify(url)}${linkout === undefined ? '' : ' (its linkout names "service")'}`
      )
    }
    const problem = templateProblem(url)
    if (problem !== undefined) return checks.fail(`${named}: ${problem}`)
  }
  const ezproxy = o.ezproxy === undefined ? undefined : parseEzproxy(o.ezproxy, named, checks)
  if (linkout?.includes('ezproxy') === true && ezproxy === undefined) {
    return checks.fail(
      `${named}: its linkout names "ezproxy" but it has no ezproxy template such as "https://login.ezproxy.example.edu/login?url={url}"`
    )
  }
  const networks = listOf(o.networks, `${named}: networks`, checks)
  const badNetwork = networks.find((n) => !checks.isCidr(n))
  if (badNetwork !== undefined) {
    return checks.fail(`${named}: ${JSON.stringify(badNetwork)} is not an address or CIDR such as 10.0.0.0/8 or 2001:db8::/32`)
  }
  const prefixes = listOf(o.prefixes, `${named}: prefixes`, checks)
  const badPrefix = prefixes.find((p) => !PREFIX.test(p))
  if (badPrefix !== undefined) return checks.fail(`${named}: ${JSON.stringify(badPrefix)} is not a DOI prefix such as 10.1234`)
  return {
    id,
    name: name.trim(),
    ...(url === undefined ? {} : { url }),
    networks,
    prefixes,
    ...(linkout === undefined ? {} : { linkout }),
    ...(ezproxy === undefined ? {} : { ezproxy })
  }
}

function parseLinkout(raw: unknown, named: string, checks: Checks): LinkoutStep[] {
  const expected = `a list of steps from ${LINKOUT_STEPS.map((s) => JSON.stringify(s)).join(', ')}`
  if (!Array.isArray(raw) || raw.length === 0) return checks.fail(`${named}: linkout must be ${expected}, got ${JSON.stringify(raw)}`)
  const steps: LinkoutStep[] = []
  for (const step of raw) {
    const known = LINKOUT_STEPS.find((s) => s === step)
    if (known === undefined) {
      return checks.fail(
        `${named}: linkout step ${JSON.stringify(step)} is not one of ${LINKOUT_STEPS.map((s) => JSON.stringify(s)).join(', ')}`
      )
    }
    steps.push(known)
  }
  if (new Set(steps).size !== steps.length) return checks.fail(`${named}: linkout names a step twice: ${JSON.stringify(raw)}`)
  return steps
}

/** An EZproxy starting-point URL template: http(s), printable ASCII, with {url} and no other placeholder. */
function parseEzproxy(raw: unknown, named: string, checks: Checks): string {
  const shape = 'an EZproxy template such as "https://login.ezproxy.example.edu/login?url={url}"'
  // EZproxy reads everything after url= as the target: {url} must come last.
  if (typeof raw !== 'string' || !raw.endsWith('{url}')) {
    return checks.fail(`${named}: ezproxy must be ${shape}, with {url} last, got ${JSON.stringify(raw)}`)
  }
  const others = (raw.match(PLACEHOLDER) ?? []).filter((p) => p !== '{url}')
  if (others.length > 0) return checks.fail(`${named}: the ezproxy template has an unknown placeholder ${others[0]} (use {url})`)
  if (!PRINTABLE_ASCII.test(raw)) {
    return checks.fail(`${named}: the ezproxy template must be printable ASCII without spaces, got ${JSON.stringify(raw)}`)
  }
  let url: URL | undefined
  try {
    url = new URL(raw.replace('{url}', 'x'))
  } catch {
    url = undefined
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    return checks.fail(`${named}: ezproxy must be ${shape}, got ${JSON.stringify(raw)}`)
  }
  return raw
}

function listOf(raw: unknown, what: string, checks: Checks): string[] {
  if (raw === undefined) return []
  const items = typeof raw === 'string' ? raw.split(',') : raw
  const strings = Array.isArray(items) ? items.filter((x) => typeof x === 'string') : []
  if (!Array.isArray(items) || strings.length !== items.length) {
    return checks.fail(`${what} must be a list of strings, got ${JSON.stringify(raw)}`)
  }
  return strings.map((x) => x.trim()).filter((x) => x !== '')
}
