import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from 'maxmind'
import type { Response } from 'maxmind'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { countryOf, lookupAddress, openCountryLookup } from '../../../src/resolve/lookup/geoip.js'
import type { CountryLookup } from '../../../src/resolve/lookup/geoip.js'
import { buildMmdb, Typed } from '../../support/mmdb-writer.js'
import type { MmdbNetwork } from '../../support/mmdb-writer.js'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'doi-proxy-geoip-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

async function writeDb(name: string, networks: MmdbNetwork[], ipVersion: 4 | 6 = 6): Promise<string> {
  const path = join(dir, name)
  await writeFile(path, buildMmdb(networks, { ipVersion }))
  return path
}

describe('the test MMDB writer, read back by the maxmind package', () => {
  // Every data-section type the writer emits, so a wrong control byte or size shows up as a wrong value here.
  const everyType = {
    text: 'Zürich — a string longer than twenty-nine bytes to need a size byte',
    long: 'x'.repeat(300), // size 30: two extra size bytes
    longer: 'y'.repeat(70_000), // size 31: three extra size bytes
    small: 7, // uint16
    big: 70_000, // uint32
    negative: -5, // int32, four bytes
    ratio: 51.5, // double
    huge: 2n ** 40n, // uint64
    yes: true,
    no: false,
    empty: {},
    list: ['en', 'de', 1],
    nested: { country: { iso_code: 'GB', names: { en: 'United Kingdom' } } },
    typedFloat: new Typed('float', 0.5),
    zero: 0,
    raw: new Uint8Array([1, 2, 3])
  }
  const readBack = {
    ...everyType,
    typedFloat: 0.5,
    raw: Buffer.from([1, 2, 3])
  }

  // spec: MaxMind DB 2.0 "IPv4 addresses in an IPv6 tree" — ::a.b.c.d, reached by 96 zero bits
  it.each([
    { ipVersion: 6 as const, lookup: '81.2.69.160', expected: readBack },
    { ipVersion: 6 as const, lookup: '81.2.69.1', expected: readBack },
    { ipVersion: 6 as const, lookup: '81.2.70.1', expected: null },
    { ipVersion: 6 as const, lookup: '2001:db8::1', expected: { v6: 'yes' } },
    { ipVersion: 6 as const, lookup: '2001:db9::1', expected: null },
    { ipVersion: 4 as const, lookup: '81.2.69.160', expected: readBack },
    { ipVersion: 4 as const, lookup: '81.2.70.1', expected: null }
  ])('an IPv$ipVersion tree answers $lookup with what was stored', async ({ ipVersion, lookup, expected }) => {
    const networks: MmdbNetwork[] = [{ cidr: '81.2.69.0/24', value: everyType }]
    if (ipVersion === 6) networks.push({ cidr: '2001:db8::/32', value: { v6: 'yes' } })
    const reader = await open<Response>(await writeDb(`types-v${ipVersion}.mmdb`, networks, ipVersion))
    expect(reader.get(lookup)).toEqual(expected)
  })

  // spec: MaxMind DB 2.0 "Database Metadata" — the fields and their types
  it('writes the metadata readers need', async () => {
    const reader = await open<Response>(await writeDb('meta.mmdb', [{ cidr: '10.0.0.0/8', value: 'x' }]))
    expect(reader.metadata).toMatchObject({
      binaryFormatMajorVersion: 2,
      binaryFormatMinorVersion: 0,
      ipVersion: 6,
      recordSize: 24,
      databaseType: 'Test-Country',
      languages: ['en'],
      description: { en: 'doi-proxy test database' }
    })
  })

  it('a more specific network wins inside a broader one, whatever the order given', async () => {
    const reader = await open<Response>(
      await writeDb('nested.mmdb', [
        { cidr: '10.1.2.0/24', value: 'inner' },
        { cidr: '10.0.0.0/8', value: 'outer' }
      ])
    )
    expect([reader.get('10.1.2.3'), reader.get('10.1.3.3'), reader.get('10.255.0.1'), reader.get('11.0.0.1')]).toEqual([
      'inner',
      'outer',
      'outer',
      null
    ])
  })
})

describe('openCountryLookup', () => {
  let lookup: CountryLookup
  let v4Lookup: CountryLookup
  const networks: MmdbNetwork[] = [
    { cidr: '81.2.69.0/24', value: { country: { iso_code: 'GB' }, registered_country: { iso_code: 'FR' } } }, // GeoLite2-Country
    { cidr: '216.160.83.56/29', value: { registered_country: { iso_code: 'US' } } }, // GeoLite2: anycast/satellite ranges
    { cidr: '5.1.83.0/24', value: { country_code: 'DE' } }, // ip-location-db flat layout
    { cidr: '5.1.84.0/24', value: { country_code: 'fr' } }, // lower case in the file
    { cidr: '5.1.85.0/24', value: { country: { iso_code: 'EUROPE' } } }, // not an alpha-2 code
    { cidr: '5.1.86.0/24', value: { city: 'Nowhere' } }, // a record with no country at all
    { cidr: '2001:db8::/32', value: { country: { iso_code: 'JP' } } }
  ]
  beforeAll(async () => {
    lookup = await openCountryLookup(await writeDb('country-v6.mmdb', networks))
    v4Lookup = await openCountryLookup(
      await writeDb(
        'country-v4.mmdb',
        networks.filter((n) => !n.cidr.includes(':')),
        4
      )
    )
  })

  it.each([
    { ip: '81.2.69.160', expected: 'GB' }, // country.iso_code, preferred over registered_country
    { ip: '216.160.83.57', expected: 'US' }, // registered_country.iso_code when there is no country
    { ip: '5.1.83.9', expected: 'DE' }, // flat country_code
    { ip: '5.1.84.9', expected: 'FR' }, // upper-cased
    { ip: '2001:db8::7', expected: 'JP' }, // an IPv6 client
    { ip: '2001:DB8:0:0:0:0:0:7', expected: 'JP' }, // uncompressed, upper-case hex
    { ip: '::ffff:81.2.69.160', expected: 'GB' }, // Node's form of an IPv4 client on a dual-stack socket
    { ip: '::FFFF:81.2.69.160', expected: 'GB' },
    { ip: '::ffff:5102:45a0', expected: 'GB' }, // the same address in hex groups
    { ip: '0:0:0:0:0:ffff:5.1.83.9', expected: 'DE' },
    { ip: '5.1.85.9', expected: undefined }, // a code that is not two letters is no country
    { ip: '5.1.86.9', expected: undefined }, // a record without a country
    { ip: '8.8.8.8', expected: undefined }, // in no network
    { ip: '10.0.0.1', expected: undefined }, // private: not in the database
    { ip: '::ffff:10.0.0.1', expected: undefined },
    { ip: '2001:db9::1', expected: undefined },
    { ip: 'not-an-ip', expected: undefined }, // never thrown at the caller
    { ip: '', expected: undefined },
    { ip: '81.2.69.999', expected: undefined },
    { ip: 'fe80::1%eth0', expected: undefined } // a zone id: link-local, never a country
  ])('a client at "$ip" is in country $expected', ({ ip, expected }) => {
    expect(lookup.country(ip)).toBe(expected)
  })

  it.each([
    { ip: '81.2.69.160', expected: 'GB' },
    { ip: '::ffff:81.2.69.160', expected: 'GB' }, // mapped IPv4 still works against an IPv4-only database
    { ip: '2001:db8::7', expected: undefined }, // an IPv4-only database knows nothing about IPv6 clients
    { ip: '::1', expected: undefined }
  ])('with an IPv4-only database, a client at "$ip" is in country $expected', ({ ip, expected }) => {
    expect(v4Lookup.country(ip)).toBe(expected)
  })

  it.each([
    { name: 'a missing file', content: undefined },
    { name: 'a text file', content: 'this is not a MaxMind database\n' },
    { name: 'an empty file', content: '' },
    { name: 'a gzipped database', content: Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0]) }
  ])('$name as the database is a startup error naming geoipDatabase and the path', async ({ name, content }) => {
    const path = join(dir, `bad-${name.replace(/\W+/g, '-')}.mmdb`)
    if (content !== undefined) await writeFile(path, content)
    const error = await openCountryLookup(path).then(
      () => undefined,
      (err: unknown) => err
    )
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).message).toContain('geoipDatabase')
    expect((error as Error).message).toContain(path)
  })
})

describe('lookupAddress', () => {
  // [RFC 4291 §2.5.5.2] IPv4-mapped IPv6 addresses; Node reports IPv4 peers as ::ffff:a.b.c.d on dual-stack sockets
  it.each([
    { ip: '192.0.2.1', expected: '192.0.2.1' },
    { ip: '::ffff:192.0.2.1', expected: '192.0.2.1' },
    { ip: '::ffff:c000:201', expected: '192.0.2.1' },
    { ip: '::192.0.2.1', expected: '::c000:201' }, // IPv4-compatible (deprecated) is not mapped: stays IPv6
    { ip: '2001:DB8::1', expected: '2001:db8::1' },
    { ip: 'example.org', expected: undefined }
  ])('looks up "$ip" as $expected', ({ ip, expected }) => {
    expect(lookupAddress(ip)).toBe(expected)
  })
})

describe('countryOf', () => {
  // GeoIP2 Country layout: https://dev.maxmind.com/geoip/docs/databases/city-and-country ; ip-location-db: country_code
  it.each([
    { record: { country: { iso_code: 'GB' } }, expected: 'GB' },
    { record: { country: {}, registered_country: { iso_code: 'US' } }, expected: 'US' },
    { record: { country_code: 'de' }, expected: 'DE' },
    { record: { country: { iso_code: 5 } }, expected: undefined },
    { record: 'GB', expected: undefined },
    { record: null, expected: undefined }
  ])('a record $record gives $expected', ({ record, expected }) => {
    expect(countryOf(record)).toBe(expected)
  })
})
