import type { LookupAddress } from 'node:dns'
import { isIP } from 'node:net'
import type { LandingLookup } from '../../src/resolve/landing/address-guard.js'

/**
 * A name lookup for landing checks in tests: names map to addresses (or to a DNS error code such as
 * `ENOTFOUND` or `EAI_AGAIN`), every other name fails as unknown, so no test ever asks a real resolver.
 * `asked` records each name looked up.
 */
export function fakeLookup(names: Record<string, string | string[]>): LandingLookup & { asked: string[] } {
  const asked: string[] = []
  const lookup = ((hostname, _options, callback) => {
    asked.push(hostname)
    const entry = names[hostname.toLowerCase()]
    const values = entry === undefined ? ['ENOTFOUND'] : Array.isArray(entry) ? entry : [entry]
    const addresses: LookupAddress[] = []
    for (const value of values) {
      const family = isIP(value)
      if (family === 0) {
        const err: NodeJS.ErrnoException = new Error(`getaddrinfo ${value} ${hostname}`)
        err.code = value
        setImmediate(() => callback(err, []))
        return
      }
      addresses.push({ address: value, family })
    }
    setImmediate(() => callback(null, addresses))
  }) as LandingLookup & { asked: string[] }
  lookup.asked = asked
  return lookup
}

/** `lookup` with its first answer held `ms` (a slow resolver, or our event loop stalled meanwhile). */
export function slowFirst(lookup: LandingLookup, ms: number): LandingLookup {
  let first = true
  return (hostname, options, callback) => {
    const wait = first ? ms : 0
    first = false
    setTimeout(() => lookup(hostname, options, callback), wait)
  }
}
