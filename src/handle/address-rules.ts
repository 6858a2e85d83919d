import { isIP } from 'node:net'

/**
 * The addresses a request made for someone else's URL never goes to (a landing page's, issue 41: no
 * server-side request forgery through a registered URL): this host, private and shared networks,
 * link-local (cloud metadata services), multicast, reserved and documentation ranges, and the IPv6 forms
 * that carry an IPv4 address (IPv4-mapped, NAT64, 6to4) when the address they carry is one of these.
 * LANDING_ALLOW_PRIVATE lifts the rules: `true` for every address, or CIDRs for those networks only (an
 * intranet repository; the tests' 127.0.0.2/32). Pure: the caller resolves names and checks each address
 * it would dial.
 */

interface Net {
  family: 4 | 6
  /** The network's first address, as a number of 32 (IPv4) or 128 (IPv6) bits. */
  base: bigint
  bits: number
}

interface Range {
  net: Net
  /** What an address of the range is, for "… is <what>". */
  what: string
  /** An IPv6 range whose addresses carry an IPv4 address at these bits: judged by the one they carry. */
  carries?: { shift: bigint; form: string }
}

/** Special-purpose ranges (RFC 6890 and the IANA registries), most specific first. */
const RANGES: readonly Range[] = [
  ...v4('0.0.0.0/8', 'a "this network" address'), // RFC 1122 3.2.1.3: Linux dials 0.0.0.0 as this host
  ...v4('10.0.0.0/8', 'a private address'), // RFC 1918
  ...v4('100.64.0.0/10', 'a shared (carrier-grade NAT) address'), // RFC 6598
  ...v4('127.0.0.0/8', 'a loopback address'), // RFC 1122
  ...v4('169.254.0.0/16', 'a link-local address'), // RFC 3927; cloud metadata at 169.254.169.254
  ...v4('172.16.0.0/12', 'a private address'), // RFC 1918
  ...v4('192.0.0.0/24', 'an IETF protocol address'), // RFC 6890
  ...v4('192.0.2.0/24', 'a documentation address'), // RFC 5737
  ...v4('192.168.0.0/16', 'a private address'), // RFC 1918
  ...v4('198.18.0.0/15', 'a benchmarking address'), // RFC 2544
  ...v4('198.51.100.0/24', 'a documentation address'), // RFC 5737
  ...v4('203.0.113.0/24', 'a documentation address'), // RFC 5737
  ...v4('224.0.0.0/4', 'a multicast address'), // RFC 5771
  ...v4('240.0.0.0/4', 'a reserved address'), // RFC 1112; 255.255.255.255 is broadcast
  ...v6('::/128', 'the unspecified address'), // RFC 4291 2.5.2
  ...v6('::1/128', 'a loopback address'), // RFC 4291 2.5.3
  ...v6('::ffff:0:0/96', '', { shift: 0n, form: 'IPv4-mapped' }), // RFC 4291 2.5.5.2
  ...v6('::/96', 'an IPv4-compatible address (deprecated)'), // RFC 4291 2.5.5.1: never routed
  ...v6('64:ff9b::/96', '', { shift: 0n, form: 'NAT64' }), // RFC 6052: a public IPv4 address through a NAT64 is fine
  ...v6('64:ff9b:1::/48', 'a local-use NAT64 address'), // RFC 8215
  ...v6('100::/64', 'a discard-only address'), // RFC 6666
  ...v6('2001::/32', 'a Teredo address'), // RFC 4380: its server and client IPv4 addresses are in it, the client's obfuscated
  ...v6('2001:db8::/32', 'a documentation address'), // RFC 3849
  ...v6('2002::/16', '', { shift: 80n, form: '6to4' }), // RFC 3056: bits 16 to 47
  ...v6('fc00::/7', 'a unique local (private) address'), // RFC 4193
  ...v6('fe80::/10', 'a link-local address'), // RFC 4291 2.5.6
  ...v6('fec0::/10', 'a site-local address (deprecated)'), // RFC 3879
  ...v6('ff00::/8', 'a multicast address') // RFC 4291 2.7
]

function v4(cidr: string, what: string): Range[] {
  return [{ net: netOf(cidr), what }]
}

function v6(cidr: string, what: string, carries?: Range['carries']): Range[] {
  return [{ net: netOf(cidr), what, ...(carries === undefined ? {} : { carries }) }]
}

/** Which addresses LANDING_ALLOW_PRIVATE lets through: every one, or those of its networks. */
export interface AddressRules {
  allowAll: boolean
  allowed: readonly Net[]
}

/**
 * The rules from LANDING_ALLOW_PRIVATE: `false` refuses every range above, `true` none, a list of CIDRs (or
 * addresses) lets their networks through. The list is the configuration's, checked at start: an entry that is
 * not a CIDR is a fault of the caller, thrown.
 */
export function addressRulesOf(allowPrivate: boolean | readonly string[]): AddressRules {
  if (typeof allowPrivate === 'boolean') return { allowAll: allowPrivate, allowed: [] }
  return { allowAll: false, allowed: allowPrivate.map(netOf) }
}

/**
 * Why a request must not go to `ip`: "127.0.0.1 is a loopback address", "::ffff:a00:1 is a private address
 * (10.0.0.1, IPv4-mapped)", "… is not an IP address"; undefined when it may. An address of an allowed network
 * may, and so may one carrying an address of an allowed network.
 */
export function refusedAddress(ip: string, rules: AddressRules): string | undefined {
  const shown = ip.length > 60 ? `${ip.slice(0, 60)}…` : ip
  const address = addressOf(ip)
  if (address === undefined) return `${JSON.stringify(shown)} is not an IP address`
  if (rules.allowAll) return undefined
  const carried = carriedOf(address)
  if (isAllowed(address, rules) || (carried !== undefined && isAllowed(carried.address, rules))) return undefined
  const range = rangeOf(address)
  if (range === undefined) return undefined
  if (carried === undefined) return `${shown} is ${range.what}`
  const inner = rangeOf(carried.address)
  return inner === undefined ? undefined : `${shown} is ${inner.what} (${textOf(carried.address)}, ${carried.form})`
}

interface Address {
  family: 4 | 6
  value: bigint
}

function isAllowed(address: Address, rules: AddressRules): boolean {
  return rules.allowed.some((net) => within(address, net))
}

function within(address: Address, net: Net): boolean {
  if (address.family !== net.family) return false
  const width = address.family === 4 ? 32n : 128n
  const shift = width - BigInt(net.bits)
  return address.value >> shift === net.base >> shift
}

/** The most specific range holding the address (RANGES is ordered so the first found is it). */
function rangeOf(address: Address): Range | undefined {
  return RANGES.find((range) => within(address, range.net))
}

/** The IPv4 address an IPv6 one carries (IPv4-mapped, NAT64, 6to4), with the form's name. */
function carriedOf(address: Address): { address: Address; form: string } | undefined {
  const carries = rangeOf(address)?.carries
  if (address.family !== 6 || carries === undefined) return undefined
  return { address: { family: 4, value: (address.value >> carries.shift) & 0xffffffffn }, form: carries.form }
}

/** An IPv4 or IPv6 address (an IPv6 zone, `%eth0`, is dropped: the address is judged alone), or undefined. */
function addressOf(text: string): Address | undefined {
  const unbracketed = text.replace(/^\[(.*)\]$/, '$1')
  const bare = unbracketed.includes(':') ? unbracketed.replace(/%[^%]*$/, '') : unbracketed
  const family = isIP(bare)
  if (family === 4) return { family, value: ipv4Value(bare) }
  if (family === 6) return { family, value: ipv6Value(bare) }
  return undefined
}

/** A CIDR (or an address: its own /32 or /128) as a network; throws on anything else. */
function netOf(cidr: string): Net {
  const [text = '', bits] = cidr.split('/')
  const address = addressOf(text)
  const width = address?.family === 4 ? 32 : 128
  const prefix = bits === undefined ? width : /^\d+$/.test(bits) ? Number(bits) : NaN
  if (address === undefined || !(prefix >= 0 && prefix <= width)) throw new RangeError(`not an address or CIDR: ${JSON.stringify(cidr)}`)
  return { family: address.family, base: address.value, bits: prefix }
}

function ipv4Value(text: string): bigint {
  return text.split('.').reduce((value, part) => (value << 8n) | BigInt(Number(part)), 0n)
}

/** An IPv6 address isIP accepted, as 128 bits: `::` expanded, a dotted IPv4 tail read as two groups. */
function ipv6Value(text: string): bigint {
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  const hex = dotted === null ? text : text.slice(0, dotted.index) + groupsOfIpv4(dotted[1] ?? '')
  const [head = '', tail] = hex.split('::')
  const groups = (part: string): string[] => (part === '' ? [] : part.split(':'))
  const missing = tail === undefined ? 0 : 8 - groups(head).length - groups(tail).length
  const all = [...groups(head), ...Array<string>(missing).fill('0'), ...groups(tail ?? '')]
  return all.reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n)
}

function groupsOfIpv4(text: string): string {
  const value = ipv4Value(text)
  return `${(value >> 16n).toString(16)}:${(value & 0xffffn).toString(16)}`
}

function textOf(address: Address): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((address.value >> shift) & 0xffn)).join('.')
}
