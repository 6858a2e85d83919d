/**
 * The metadata fetch allow-list (docs/metadata.md): which URLs a metadata fetch may go to. A record
 * chooses the location that content negotiation lands on, so a record must not make us fetch anything
 * else: only http(s) URLs whose host (and port) is on the list, with no user info. Pure: no I/O.
 */

/** One allowed host: a lower-cased name or address, and a port (undefined: the scheme's default port only). */
export interface AllowedHost {
  host: string
  port: number | undefined
}

/** The registration agencies' public content-negotiation services (docs/metadata.md cites each). */
export const DEFAULT_METADATA_HOSTS: readonly string[] = [
  'data.crossref.org',
  'api.crossref.org',
  'data.crosscite.org',
  'data.datacite.org',
  'api.datacite.org',
  'data.medra.org',
  'data.jalc.or.jp'
]

const NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/
const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/

/**
 * One list entry, `host` or `host:port` (an IPv6 address in brackets, `[::1]:8080`), or a message saying
 * what is wrong with it. Names are compared lower-cased; no wildcards, no scheme, no path.
 */
export function parseAllowedHost(entry: string): AllowedHost | string {
  const text = entry.trim().toLowerCase()
  const m = /^(\[[0-9a-f:.]+\]|[^:/[\]]+)(?::(\d{1,5}))?$/.exec(text)
  if (m === null) return `"${entry}" is not a host or host:port (no scheme, path or wildcard)`
  const host = m[1] ?? ''
  const port = m[2] === undefined ? undefined : Number(m[2])
  if (port !== undefined && (port < 1 || port > 65535)) return `"${entry}" has a port outside 1–65535`
  const valid = host.startsWith('[') ? isBracketedIpv6(host) : IPV4.test(host) || (NAME.test(host) && !/^\d+(?:\.\d+)*$/.test(host))
  if (!valid) return `"${entry}" is not a host name or an IP address`
  return { host, port }
}

function isBracketedIpv6(host: string): boolean {
  try {
    return new URL(`http://${host}/`).hostname === host
  } catch {
    return false
  }
}

/**
 * A comma-separated list (or an array from a config file), read once: each entry written one way, `host` or
 * `host:port` (lower-cased, the port a plain number), as METADATA_HOSTS is held and allowedMetadataUrl reads
 * it; or a message naming the bad entry.
 */
export function parseAllowedHosts(raw: string | readonly unknown[]): string[] | string {
  const items =
    typeof raw === 'string'
      ? raw
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '')
      : raw
  const out: string[] = []
  for (const item of items) {
    if (typeof item !== 'string') return 'a list of host names'
    const parsed = parseAllowedHost(item)
    if (typeof parsed === 'string') return parsed
    out.push(parsed.port === undefined ? parsed.host : `${parsed.host}:${parsed.port}`)
  }
  return out
}

/**
 * The URL a metadata fetch may go to, parsed; or a reason it may not: a scheme other than http(s),
 * user info (never send credentials), or a host and port not on the list (entries as parseAllowedHosts
 * writes them). An entry without a port allows the scheme's default port only (80 for http, 443 for https).
 */
export function allowedMetadataUrl(href: string, allowed: readonly string[]): URL | string {
  let url: URL
  try {
    url = new URL(href)
  } catch {
    return 'not a URL'
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `the scheme ${url.protocol} is not http or https`
  if (url.username !== '' || url.password !== '') return 'the URL carries user info'
  const host = url.hostname.toLowerCase()
  // URL drops a default port: '' means 443 for https, 80 for http.
  const defaultPort = url.protocol === 'https:' ? 443 : 80
  const port = url.port === '' ? defaultPort : Number(url.port)
  const ok = allowed.includes(`${host}:${port}`) || (port === defaultPort && allowed.includes(host))
  return ok ? url : `the host ${url.host} is not on the metadata allow-list (METADATA_HOSTS)`
}
