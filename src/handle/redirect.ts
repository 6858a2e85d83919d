import { domainToASCII } from 'node:url'
import { encodeURL, hasControlChar } from './name.js'

/** The scheme of an absolute URL, lower-cased, or undefined for a relative or odd one. */
export function schemeOf(url: string): string | undefined {
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(url)
  return m?.[1]?.toLowerCase()
}

/**
 * The Location header for a chosen URL (behaviour.md §4): trimmed, urlappend appended verbatim,
 * a non-ASCII host of an http/https/ftp URL converted to Punycode (the reference's encodeIRIToURI),
 * then encoded like the reference's encodeURL. Undefined when it must not be redirected to:
 * a scheme outside the allow-list, or a control character anywhere.
 */
export function locationFor(url: string, urlappend: string | undefined, allowedSchemes: readonly string[]): string | undefined {
  const target = url.trim() + (urlappend ?? '')
  const scheme = schemeOf(target)
  if (scheme === undefined || !allowedSchemes.includes(scheme)) return undefined
  if (hasControlChar(target)) return undefined
  const withAsciiHost = scheme === 'http' || scheme === 'https' || scheme === 'ftp' ? punycodeHost(target) : target
  return withAsciiHost === undefined ? undefined : encodeURL(withAsciiHost)
}

/** Replace a non-ASCII host with its Punycode form; leaves ASCII URLs untouched. Undefined if the host is invalid. */
function punycodeHost(url: string): string | undefined {
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)([^/?#]*)(.*)$/s.exec(url)
  if (m === null) return url
  const [, head = '', authority = '', rest = ''] = m
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(authority)) return url
  const at = authority.lastIndexOf('@')
  const userinfo = at >= 0 ? authority.slice(0, at + 1) : ''
  const hostPort = authority.slice(at + 1)
  const portMatch = /:(\d*)$/.exec(hostPort)
  const host = portMatch === null ? hostPort : hostPort.slice(0, portMatch.index)
  const ascii = domainToASCII(host)
  if (ascii === '') return undefined
  return `${head}${userinfo}${ascii}${portMatch === null ? '' : portMatch[0]}${rest}`
}

/**
 * behaviour.md §9: urlappend never changes where a redirect goes. True when two Locations, as sent
 * (encoded), go to the same scheme, host and port with the same user info, as a browser parses them
 * (WHATWG URL). Compare what is sent, never the text before encoding: '\\@evil.example' reads as a
 * path before encoding ('\\' is '/' in http URLs) but as user info once encoded ('%5C@evil.example').
 */
export function sameTarget(location: string, appended: string): boolean {
  const before = parseUrl(location)
  const after = parseUrl(appended)
  if (before === undefined || after === undefined) return false
  return (
    before.protocol === after.protocol &&
    before.host === after.host &&
    before.username === after.username &&
    before.password === after.password
  )
}

function parseUrl(s: string): URL | undefined {
  try {
    return new URL(s)
  } catch {
    return undefined
  }
}
