import { describe, expect, it } from 'vitest'
import { clientKey, networkMatcher } from '../../src/http/client.js'

// behaviour.md §9: a client is an IPv4 address or an IPv6 /64.
describe('clientKey: who a request comes from, for the fair queue and the limits', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'], // an IPv4 client on a dual-stack socket
    ['2001:db8:1:2:aaaa::1', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:bbbb::2', '2001:db8:1:2::/64'], // the same /64 written otherwise
    ['fe80::1%eth0', 'fe80:0:0:0::/64'] // a zone id is not part of the address
  ])('%s is %s', (ip, key) => {
    expect(clientKey(ip)).toBe(key)
  })
})

// TRUSTED_NETWORKS, RATE_LIMIT_ALLOW_LIST, STATUS_ALLOW and a local service's networks.
describe('networkMatcher: an address in a list of addresses and CIDRs', () => {
  const inList = networkMatcher(['10.0.0.0/8', '192.0.2.1', '2001:db8::/32'])
  it.each([
    ['10.1.2.3', true],
    ['::ffff:10.1.2.3', true],
    ['11.0.0.1', false],
    ['192.0.2.1', true],
    ['192.0.2.2', false],
    ['2001:db8:ffff::1', true],
    ['2001:db9::1', false],
    ['not an address', false],
    ['', false]
  ])('%j: %s, and the same when asked again', (ip, expected) => {
    expect(inList(ip)).toBe(expected)
    expect(inList(ip)).toBe(expected)
  })

  it('answers rightly after more distinct addresses than it remembers', () => {
    for (let i = 0; i < 5000; i++) inList(`172.16.${i >> 8}.${i & 255}`)
    expect(inList('10.9.9.9')).toBe(true)
    expect(inList('172.16.0.1')).toBe(false)
  })

  it('an empty list matches nothing', () => {
    expect(networkMatcher([])('127.0.0.1')).toBe(false)
  })
})
