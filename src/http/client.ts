import { BlockList, isIP } from 'node:net'
import { parseCidr } from '../config/schema.js'
import { boundedMemo } from '../handle/memo.js'
import type { ClientTicket } from '../resolve/upstream/fair-queue.js'

/**
 * Who a request comes from, as the fair queue and the limits see it (behaviour.md §9): an IPv4
 * address, or an IPv6 /64 (one household or host usually holds a whole /64, so per-address keys
 * would let it take any number of shares). `request.ip` already honours TRUST_PROXY.
 */
export function clientKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  if (mapped?.[1] !== undefined) return mapped[1]
  if (isIP(ip) !== 6) return ip
  return `${expandIpv6(ip).slice(0, 4).join(':')}::/64`
}

/** The eight hextets of an IPv6 address, lower case, without leading zeros ('2001:db8::1' → 2001,db8,0,…,1). */
function expandIpv6(ip: string): string[] {
  const address = ip.split('%')[0] ?? ip // a zone id (fe80::1%eth0) is not part of the address
  const [head = '', tail] = address.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const missing = 8 - left.length - right.length
  const all = [...left, ...new Array<string>(Math.max(0, missing)).fill('0'), ...right]
  return all.map((h) => (h.includes('.') ? h : Number.parseInt(h, 16).toString(16)))
}

// Addresses whose answer a matcher remembers; the least recently seen goes first.
const MATCHED_ADDRESSES = 4096

/**
 * A matcher for a list of addresses and CIDRs (validated at start by the config schema). Answers are
 * remembered per address (bounded): BlockList.check builds a SocketAddress each time, and a client asks
 * from the same address again and again.
 */
export function networkMatcher(cidrs: readonly string[]): (ip: string) => boolean {
  if (cidrs.length === 0) return () => false
  const list = new BlockList()
  for (const item of cidrs) {
    const parsed = parseCidr(item)
    if (parsed !== undefined) list.addSubnet(parsed[0], parsed[1], parsed[2])
  }
  return boundedMemo(MATCHED_ADDRESSES, (ip) => {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1]
    const address = mapped ?? ip
    const family = isIP(address)
    return family !== 0 && list.check(address, family === 4 ? 'ipv4' : 'ipv6')
  })
}

/** The fair-queue ticket of a client address. */
export function ticketFor(ip: string, isTrusted: (ip: string) => boolean): ClientTicket {
  return { key: clientKey(ip), trusted: isTrusted(ip) }
}
