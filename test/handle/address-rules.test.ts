import { describe, expect, it } from 'vitest'
import { addressRulesOf, refusedAddress } from '../../src/handle/address-rules.js'

// Issue 41: a landing check never follows a URL to a loopback, private or link-local address unless
// LANDING_ALLOW_PRIVATE says so. The ranges: RFC 6890 and the IANA special-purpose registries.
const STRICT = addressRulesOf(false)

describe('the addresses a landing check refuses', () => {
  it.each([
    ['0.0.0.0', '0.0.0.0 is a "this network" address'], // RFC 1122: Linux dials it as this host
    ['0.1.2.3', '0.1.2.3 is a "this network" address'],
    ['10.0.0.5', '10.0.0.5 is a private address'], // RFC 1918
    ['100.64.0.1', '100.64.0.1 is a shared (carrier-grade NAT) address'], // RFC 6598
    ['100.127.255.255', '100.127.255.255 is a shared (carrier-grade NAT) address'],
    ['127.0.0.1', '127.0.0.1 is a loopback address'],
    ['127.255.255.254', '127.255.255.254 is a loopback address'],
    ['169.254.169.254', '169.254.169.254 is a link-local address'], // cloud metadata services
    ['172.16.0.1', '172.16.0.1 is a private address'],
    ['172.31.255.255', '172.31.255.255 is a private address'],
    ['192.0.0.170', '192.0.0.170 is an IETF protocol address'],
    ['192.0.2.1', '192.0.2.1 is a documentation address'], // RFC 5737
    ['192.168.1.1', '192.168.1.1 is a private address'],
    ['198.18.0.1', '198.18.0.1 is a benchmarking address'], // RFC 2544
    ['198.51.100.7', '198.51.100.7 is a documentation address'],
    ['203.0.113.9', '203.0.113.9 is a documentation address'],
    ['224.0.0.1', '224.0.0.1 is a multicast address'],
    ['239.255.255.250', '239.255.255.250 is a multicast address'],
    ['240.0.0.1', '240.0.0.1 is a reserved address'],
    ['255.255.255.255', '255.255.255.255 is a reserved address'], // broadcast
    ['::', ':: is the unspecified address'],
    ['::1', '::1 is a loopback address'],
    ['[::1]', '[::1] is a loopback address'], // as a URL writes it
    ['0:0:0:0:0:0:0:1', '0:0:0:0:0:0:0:1 is a loopback address'],
    ['::127.0.0.1', '::127.0.0.1 is an IPv4-compatible address (deprecated)'], // RFC 4291 2.5.5.1
    ['fc00::1', 'fc00::1 is a unique local (private) address'], // RFC 4193
    ['fd12:3456::1', 'fd12:3456::1 is a unique local (private) address'],
    ['fe80::1', 'fe80::1 is a link-local address'],
    ['fe80::1%eth0', 'fe80::1%eth0 is a link-local address'], // a zone does not change the address
    ['FEBF::1', 'FEBF::1 is a link-local address'],
    ['fec0::1', 'fec0::1 is a site-local address (deprecated)'], // RFC 3879
    ['ff02::1', 'ff02::1 is a multicast address'],
    ['100::1', '100::1 is a discard-only address'], // RFC 6666
    ['2001:db8::1', '2001:db8::1 is a documentation address'], // RFC 3849
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:0:4136:e378:8000:63bf:3fff:fdd2 is a Teredo address'], // RFC 4380
    ['64:ff9b:1::a00:1', '64:ff9b:1::a00:1 is a local-use NAT64 address'] // RFC 8215
  ])('%s: %s', (ip, why) => {
    expect(refusedAddress(ip, STRICT)).toBe(why)
  })

  // RFC 4291 2.5.5.2, RFC 6052, RFC 3056: an IPv6 address carrying an IPv4 one is judged by the one it carries.
  it.each([
    ['::ffff:127.0.0.1', '::ffff:127.0.0.1 is a loopback address (127.0.0.1, IPv4-mapped)'],
    ['::ffff:7f00:1', '::ffff:7f00:1 is a loopback address (127.0.0.1, IPv4-mapped)'], // how a URL parser writes it
    ['[::ffff:7f00:1]', '[::ffff:7f00:1] is a loopback address (127.0.0.1, IPv4-mapped)'],
    ['::FFFF:10.1.2.3', '::FFFF:10.1.2.3 is a private address (10.1.2.3, IPv4-mapped)'],
    ['::ffff:a9fe:a9fe', '::ffff:a9fe:a9fe is a link-local address (169.254.169.254, IPv4-mapped)'],
    ['64:ff9b::7f00:1', '64:ff9b::7f00:1 is a loopback address (127.0.0.1, NAT64)'],
    ['64:ff9b::192.168.0.1', '64:ff9b::192.168.0.1 is a private address (192.168.0.1, NAT64)'],
    ['2002:7f00:1::1', '2002:7f00:1::1 is a loopback address (127.0.0.1, 6to4)'],
    ['2002:a00:5::', '2002:a00:5:: is a private address (10.0.0.5, 6to4)']
  ])('%s, carrying an IPv4 address: %s', (ip, why) => {
    expect(refusedAddress(ip, STRICT)).toBe(why)
  })

  it.each([
    '93.184.215.14',
    '8.8.8.8',
    '1.1.1.1',
    '9.255.255.255', // just below 10/8
    '11.0.0.0', // just above
    '100.63.255.255', // just below 100.64/10
    '100.128.0.0',
    '126.255.255.255',
    '128.0.0.0',
    '169.253.255.255',
    '172.15.255.255', // just below 172.16/12
    '172.32.0.0', // just above
    '192.167.255.255',
    '192.169.0.0',
    '223.255.255.255', // the last unicast address below 224/4
    '2606:4700::6810:84e5',
    '2a00:1450:4001:80e::200e',
    '::ffff:93.184.215.14', // IPv4-mapped, a public address
    '64:ff9b::808:808', // NAT64 to 8.8.8.8
    '2002:808:808::1', // 6to4 from 8.8.8.8
    'fbff:ffff::1', // just below fc00::/7
    'fe00::1' // between fc00::/7 and fe80::/10
  ])('%s is a public address: allowed', (ip) => {
    expect(refusedAddress(ip, STRICT)).toBeUndefined()
  })

  it.each([
    ['localhost', '"localhost" is not an IP address'], // names are resolved first, by the caller
    ['', '"" is not an IP address'],
    ['127.1', '"127.1" is not an IP address'], // a short form a resolver might read as 127.0.0.1: never dialled as such
    ['0x7f.0.0.1', '"0x7f.0.0.1" is not an IP address'],
    ['127.0.0.1%eth0', '"127.0.0.1%eth0" is not an IP address'], // a zone belongs to IPv6 only
    ['1'.repeat(100), `"${'1'.repeat(60)}…" is not an IP address`] // a hostile value is not echoed whole
  ])('%j is refused: %s', (text, why) => {
    expect(refusedAddress(text, STRICT)).toBe(why)
  })
})

describe('LANDING_ALLOW_PRIVATE', () => {
  it('true lets every address through', () => {
    const all = addressRulesOf(true)
    for (const ip of ['127.0.0.1', '10.0.0.5', '::1', '::ffff:127.0.0.1', '169.254.169.254']) {
      expect(refusedAddress(ip, all)).toBeUndefined()
    }
    expect(refusedAddress('not-an-ip', all)).toBe('"not-an-ip" is not an IP address')
  })

  it('CIDRs let their networks through, and only them (the tests: 127.0.0.2/32)', () => {
    const rules = addressRulesOf(['127.0.0.2/32', '10.1.0.0/16', 'fd00:1::/32'])
    expect(refusedAddress('127.0.0.2', rules)).toBeUndefined()
    expect(refusedAddress('::ffff:127.0.0.2', rules)).toBeUndefined() // the address it carries is allowed
    expect(refusedAddress('10.1.200.3', rules)).toBeUndefined()
    expect(refusedAddress('fd00:1:2::3', rules)).toBeUndefined()
    expect(refusedAddress('127.0.0.1', rules)).toBe('127.0.0.1 is a loopback address')
    expect(refusedAddress('10.2.0.1', rules)).toBe('10.2.0.1 is a private address')
    expect(refusedAddress('fd00:2::1', rules)).toBe('fd00:2::1 is a unique local (private) address')
    expect(refusedAddress('::ffff:127.0.0.1', rules)).toBe('::ffff:127.0.0.1 is a loopback address (127.0.0.1, IPv4-mapped)')
  })

  it('an address alone is its own network; a /0 allows its whole family', () => {
    expect(refusedAddress('192.168.0.9', addressRulesOf(['192.168.0.9']))).toBeUndefined()
    expect(refusedAddress('192.168.0.8', addressRulesOf(['192.168.0.9']))).toBe('192.168.0.8 is a private address')
    expect(refusedAddress('10.9.9.9', addressRulesOf(['0.0.0.0/0']))).toBeUndefined()
    expect(refusedAddress('::1', addressRulesOf(['0.0.0.0/0']))).toBe('::1 is a loopback address')
  })

  it('false refuses every range, and an entry that is not a CIDR is refused when the rules are made', () => {
    expect(refusedAddress('127.0.0.2', addressRulesOf(false))).toBe('127.0.0.2 is a loopback address')
    expect(() => addressRulesOf(['127.0.0.0/33'])).toThrow(/127\.0\.0\.0\/33/)
    expect(() => addressRulesOf(['example.org'])).toThrow(/example\.org/)
  })
})
