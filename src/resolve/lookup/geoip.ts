import { isIP } from 'node:net'
import { open } from 'maxmind'
import type { Reader, Response } from 'maxmind'
import { ConfigError } from '../../config/schema.js'

/**
 * The optional GeoIP source of the client country for the 10320/loc `country` chooser (behaviour.md: the `country`
 * parameter, else a configured header, else this). Reads any MaxMind DB country file: GeoLite2/GeoIP2 and db-ip
 * (`country.iso_code`, falling back to `registered_country.iso_code`) and the flat layout of some free databases
 * such as ip-location-db (`country_code` at the top level).
 */
export interface CountryLookup {
  /** ISO 3166 alpha-2, upper case; undefined when the address is invalid, private or not in the database. */
  country(ip: string): string | undefined
}

const CACHE_ENTRIES = 10_000

export async function openCountryLookup(path: string): Promise<CountryLookup> {
  let reader: Reader<Response>
  try {
    // No watchForUpdates: a watcher would keep the process alive and swap data under running requests;
    // an operator who updates the file restarts, as with every other setting.
    reader = await open<Response>(path, { cache: { max: CACHE_ENTRIES } })
  } catch (err) {
    throw new ConfigError(
      `invalid setting geoipDatabase (GEOIP_DATABASE): ${JSON.stringify(path)} cannot be opened as a MaxMind database (.mmdb): ${(err as Error).message}`,
      { cause: err }
    )
  }
  const ipVersion = reader.metadata.ipVersion
  if (ipVersion !== 4 && ipVersion !== 6) {
    throw new ConfigError(
      `invalid setting geoipDatabase (GEOIP_DATABASE): ${JSON.stringify(path)} is not a MaxMind database (.mmdb): its metadata has ip_version ${String(ipVersion)}`
    )
  }
  return {
    country(ip) {
      try {
        const address = lookupAddress(ip)
        if (address === undefined) return undefined
        // An IPv4-only tree cannot answer for IPv6; walking it with 128 bits would give a wrong answer, not none.
        if (ipVersion === 4 && isIP(address) !== 4) return undefined
        return countryOf(reader.get(address))
      } catch {
        return undefined // a lookup is only a hint for choosing a location: never fail the request over it
      }
    }
  }
}

/**
 * The address to look up, or undefined when it is not an IP address. IPv4-mapped IPv6 (`::ffff:1.2.3.4`, what Node
 * reports for IPv4 clients on a dual-stack socket) becomes the IPv4 address: not every database aliases ::ffff:0:0/96.
 */
export function lookupAddress(ip: string): string | undefined {
  const version = isIP(ip)
  if (version === 4) return ip
  if (version !== 6) return undefined
  const canonical = canonicalIPv6(ip)
  if (canonical === undefined) return undefined
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical)
  if (mapped === null) return canonical
  const high = parseInt(mapped[1] as string, 16)
  const low = parseInt(mapped[2] as string, 16)
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.')
}

/** The URL parser's compressed lower-case form; undefined for forms it refuses (zone ids like `fe80::1%eth0`). */
function canonicalIPv6(ip: string): string | undefined {
  try {
    return new URL(`http://[${ip}]/`).hostname.slice(1, -1)
  } catch {
    return undefined
  }
}

/** The record's country code in whichever layout the database uses; anything that is not two letters is unknown. */
export function countryOf(record: unknown): string | undefined {
  const code = isoCode(field(record, 'country')) ?? isoCode(field(record, 'registered_country')) ?? field(record, 'country_code')
  return typeof code === 'string' && /^[A-Za-z]{2}$/.test(code) ? code.toUpperCase() : undefined
}

function isoCode(entry: unknown): unknown {
  return field(entry, 'iso_code')
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined
}
