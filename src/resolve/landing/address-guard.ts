import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { isIP } from 'node:net'
import { refusedAddress, type AddressRules } from '../../handle/address-rules.js'

/**
 * The landing checks' guard against server-side request forgery (issue 41): a registered URL must not
 * reach this host or its networks. At connect time, as a `lookup` for undici's `connect`: the name is
 * resolved here, every address checked, and only a checked one is handed to the socket, so a name that
 * resolves to a public address for a check and a private one for the connection (DNS rebinding) gains
 * nothing. A URL naming an IP address is judged before any request (Node dials it without a lookup).
 */

/** A name lookup as node:dns's, in the `all: true` form the guard asks of it (tests give their own). */
export type LandingLookup = (
  hostname: string,
  options: LookupOptions & { all: true },
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void
) => void

/** The error a refused address fails the connection with: its message names the rule. */
export const REFUSED_ADDRESS = 'ELANDINGREFUSED'

function refusedError(hostname: string, why: string): NodeJS.ErrnoException {
  // "journal.test resolves to 10.0.0.5, a private address": refusedAddress's "10.0.0.5 is a private address", read on.
  const err: NodeJS.ErrnoException = new Error(`${hostname} resolves to ${why.replace(' is ', ', ')} (LANDING_ALLOW_PRIVATE)`)
  err.code = REFUSED_ADDRESS
  return err
}

type ConnectLookup = (
  hostname: string,
  options: LookupOptions,
  callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void
) => void

/**
 * A `lookup` for net/tls `connect` that refuses a name any of whose addresses the rules refuse (a name with
 * one private address among public ones is refused whole: which one the socket dials is not ours to pick).
 * Answers both forms Node asks: one address, or all of them (`autoSelectFamily`).
 */
export function guardedLookup(rules: AddressRules, lookup: LandingLookup = dnsLookup as unknown as LandingLookup): ConnectLookup {
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err !== null) return callback(err, [])
      if (addresses.length === 0) {
        const none: NodeJS.ErrnoException = new Error(`${hostname} has no address`)
        none.code = 'ENOTFOUND'
        return callback(none, [])
      }
      for (const { address } of addresses) {
        const why = refusedAddress(address, rules)
        if (why !== undefined) return callback(refusedError(hostname, why), [])
      }
      if (options.all === true) return callback(null, addresses)
      const [first] = addresses
      return callback(null, first?.address ?? '', first?.family ?? 4)
    })
  }
}

/**
 * Why a URL must not be fetched before any lookup: not http(s), user information in it (a registered URL
 * has no business with credentials), or a host that is an IP address the rules refuse. Undefined when it may.
 */
export function refusedUrl(url: URL, rules: AddressRules): { reason: 'bad-url' | 'refused-address'; detail: string } | undefined {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { reason: 'bad-url', detail: `${url.protocol} is not http or https` }
  if (url.username !== '' || url.password !== '') return { reason: 'bad-url', detail: 'a URL with user information' }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  if (isIP(host) === 0) return undefined
  const why = refusedAddress(host, rules)
  return why === undefined ? undefined : { reason: 'refused-address', detail: `${why} (LANDING_ALLOW_PRIVATE)` }
}
