import { isIPv4, isIPv6 } from 'node:net'

/**
 * A small writer for the MaxMind DB format, version 2.0 (https://maxmind.github.io/MaxMind-DB/), so tests can make
 * GeoIP databases instead of shipping binary fixtures. It writes: a binary search tree with 24-bit records, the
 * 16-byte all-zero data section separator, one data-section entry per distinct value (no pointers), then the
 * `\xAB\xCD\xEFMaxMind.com` marker and the metadata map.
 *
 * An IPv6 tree (ip_version 6) keeps IPv4 networks at ::a.b.c.d/(96+n), as GeoLite2 does, so readers find them
 * by walking 96 zero bits. An IPv4 tree (ip_version 4) holds IPv4 networks only.
 */

/** A value with an explicit MaxMind type, for fields whose type the spec fixes (the metadata, for example). */
export class Typed {
  constructor(
    readonly type: 'uint16' | 'uint32' | 'uint64' | 'uint128' | 'int32' | 'double' | 'float',
    readonly value: number | bigint
  ) {}
}

/**
 * What the writer stores. Plain JS values get a natural type: string → utf8_string, boolean → boolean,
 * Uint8Array → bytes, array → array, object → map, bigint → uint64 (uint128 when it needs it), integer 0..65535 →
 * uint16, up to 2^32-1 → uint32, a negative int32 → int32, any other number → double.
 */
export type MmdbValue = string | number | boolean | bigint | Uint8Array | Typed | MmdbValue[] | { [key: string]: MmdbValue }

export interface MmdbNetwork {
  /** CIDR, e.g. `81.2.69.0/24` or `2001:db8::/32`. */
  cidr: string
  value: MmdbValue
}

export interface MmdbOptions {
  ipVersion?: 4 | 6
  databaseType?: string
  languages?: string[]
  description?: Record<string, string>
  buildEpoch?: number
}

// Data field type numbers, from the spec's "Output Data Section" table.
const TYPE = {
  utf8String: 2,
  double: 3,
  bytes: 4,
  uint16: 5,
  uint32: 6,
  map: 7,
  int32: 8,
  uint64: 9,
  uint128: 10,
  array: 11,
  boolean: 14,
  float: 15
} as const

const RECORD_BITS = 24
const DATA_SECTION_SEPARATOR = Buffer.alloc(16)
const METADATA_MARKER = Buffer.concat([Buffer.from([0xab, 0xcd, 0xef]), Buffer.from('MaxMind.com')])

/** Build a whole .mmdb file in memory. Later, more specific networks win over the ones they sit inside. */
export function buildMmdb(networks: MmdbNetwork[], options: MmdbOptions = {}): Buffer {
  const ipVersion = options.ipVersion ?? 6
  const data = new DataSection()
  const root = buildTrie(networks, ipVersion, data)
  const tree = serialiseTree(root)
  const metadata = encodeValue({
    binary_format_major_version: new Typed('uint16', 2),
    binary_format_minor_version: new Typed('uint16', 0),
    build_epoch: new Typed('uint64', BigInt(options.buildEpoch ?? 1_700_000_000)),
    database_type: options.databaseType ?? 'Test-Country',
    description: options.description ?? { en: 'doi-proxy test database' },
    ip_version: new Typed('uint16', ipVersion),
    languages: options.languages ?? ['en'],
    node_count: new Typed('uint32', tree.nodeCount),
    record_size: new Typed('uint16', RECORD_BITS)
  })
  return Buffer.concat([tree.bytes, DATA_SECTION_SEPARATOR, data.bytes(), METADATA_MARKER, metadata])
}

// --- search tree ---

/** A trie node; a side is another node, a data-section offset, or nothing (no data for that network). */
interface TrieNode {
  children: [Side, Side]
}
type Side = TrieNode | { dataOffset: number } | undefined

function buildTrie(networks: MmdbNetwork[], ipVersion: 4 | 6, data: DataSection): TrieNode {
  const root: TrieNode = { children: [undefined, undefined] }
  const parsed = networks.map((network) => ({ ...parseCidr(network.cidr, ipVersion), value: network.value }))
  // Shorter prefixes first, so a more specific network splits the broader one instead of being overwritten by it.
  parsed.sort((a, b) => a.prefixLength - b.prefixLength)
  for (const { bits, prefixLength, value } of parsed) {
    insert(root, bits, prefixLength, { dataOffset: data.add(value) })
  }
  return root
}

function insert(root: TrieNode, bits: number[], prefixLength: number, leaf: { dataOffset: number }): void {
  if (prefixLength === 0) throw new Error('a /0 network cannot be stored: the root is a node, not a record')
  let node = root
  for (let depth = 0; depth < prefixLength - 1; depth++) {
    const bit = bits[depth] as 0 | 1
    const side = node.children[bit]
    if (side === undefined || !('children' in side)) {
      // A broader network's data (or nothing) becomes the data of both halves below.
      const next: TrieNode = { children: [side, side] }
      node.children[bit] = next
      node = next
    } else {
      node = side
    }
  }
  node.children[bits[prefixLength - 1] as 0 | 1] = leaf
}

/** Number the nodes breadth first (the root must be node 0) and write each as two big-endian 24-bit records. */
function serialiseTree(root: TrieNode): { bytes: Buffer; nodeCount: number } {
  const order: TrieNode[] = [root]
  const numbers = new Map<TrieNode, number>([[root, 0]])
  for (let i = 0; i < order.length; i++) {
    for (const side of (order[i] as TrieNode).children) {
      if (side !== undefined && 'children' in side && !numbers.has(side)) {
        numbers.set(side, order.length)
        order.push(side)
      }
    }
  }
  const nodeCount = order.length
  const recordValue = (side: Side): number => {
    if (side === undefined) return nodeCount // "no data" is the node count itself
    if ('children' in side) return numbers.get(side) as number
    return nodeCount + DATA_SECTION_SEPARATOR.length + side.dataOffset
  }
  const bytes = Buffer.alloc(nodeCount * (RECORD_BITS / 4))
  order.forEach((node, n) => {
    node.children.forEach((side, i) => {
      const value = recordValue(side)
      if (value >= 2 ** RECORD_BITS) throw new Error('database too big for 24-bit records')
      bytes.writeUIntBE(value, n * 6 + i * 3, 3)
    })
  })
  return { bytes, nodeCount }
}

/** The bits of a network's address in tree order; IPv4 in an IPv6 tree lives under 96 zero bits. */
function parseCidr(cidr: string, ipVersion: 4 | 6): { bits: number[]; prefixLength: number } {
  const [address = '', lengthText = ''] = cidr.split('/')
  const prefixLength = Number(lengthText)
  if (isIPv4(address)) {
    if (!(prefixLength >= 0 && prefixLength <= 32)) throw new Error(`bad prefix length in ${cidr}`)
    const bits = bytesToBits(address.split('.').map(Number))
    return ipVersion === 4 ? { bits, prefixLength } : { bits: [...Array(96).fill(0), ...bits], prefixLength: 96 + prefixLength }
  }
  if (isIPv6(address) && ipVersion === 6) {
    if (!(prefixLength >= 0 && prefixLength <= 128)) throw new Error(`bad prefix length in ${cidr}`)
    return { bits: bytesToBits(ipv6Bytes(address)), prefixLength }
  }
  throw new Error(`cannot store ${cidr} in an IPv${ipVersion} tree`)
}

function bytesToBits(bytes: number[]): number[] {
  return bytes.flatMap((byte) => Array.from({ length: 8 }, (_, i) => (byte >> (7 - i)) & 1))
}

/** The 16 bytes of an IPv6 address (the URL parser canonicalises it to hex groups, embedded IPv4 included). */
function ipv6Bytes(address: string): number[] {
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1)
  const [head = '', tail] = canonical.split('::')
  const groups = (text: string | undefined): number[] => (text ? text.split(':').map((g) => parseInt(g, 16)) : [])
  const left = groups(head)
  const right = groups(tail)
  const all = [...left, ...Array(8 - left.length - right.length).fill(0), ...right]
  return all.flatMap((group) => [group >> 8, group & 0xff])
}

// --- data section ---

/** Each distinct value is written once; networks with equal values share it. */
class DataSection {
  private readonly chunks: Buffer[] = []
  private readonly offsets = new Map<string, number>()
  private size = 0

  add(value: MmdbValue): number {
    const encoded = encodeValue(value)
    const key = encoded.toString('hex')
    const known = this.offsets.get(key)
    if (known !== undefined) return known
    const offset = this.size
    this.chunks.push(encoded)
    this.offsets.set(key, offset)
    this.size += encoded.length
    return offset
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks)
  }
}

export function encodeValue(value: MmdbValue): Buffer {
  if (value instanceof Typed) return encodeTyped(value)
  if (typeof value === 'string') return field(TYPE.utf8String, Buffer.from(value, 'utf8'))
  if (typeof value === 'boolean') return controlBytes(TYPE.boolean, value ? 1 : 0) // the size IS the value
  if (typeof value === 'bigint') return encodeTyped(new Typed(value < 2n ** 64n ? 'uint64' : 'uint128', value))
  if (typeof value === 'number') return encodeTyped(new Typed(naturalNumberType(value), value))
  if (value instanceof Uint8Array) return field(TYPE.bytes, Buffer.from(value))
  if (Array.isArray(value)) return Buffer.concat([controlBytes(TYPE.array, value.length), ...value.map(encodeValue)])
  const entries = Object.entries(value)
  // A map's size is its number of pairs; keys are utf8 strings.
  return Buffer.concat([controlBytes(TYPE.map, entries.length), ...entries.flatMap(([k, v]) => [encodeValue(k), encodeValue(v)])])
}

function naturalNumberType(value: number): Typed['type'] {
  if (!Number.isInteger(value)) return 'double'
  if (value >= 0 && value <= 0xffff) return 'uint16'
  if (value >= 0 && value <= 0xffffffff) return 'uint32'
  if (value < 0 && value >= -(2 ** 31)) return 'int32'
  return 'double'
}

function encodeTyped({ type, value }: Typed): Buffer {
  switch (type) {
    case 'double': {
      const b = Buffer.alloc(8)
      b.writeDoubleBE(Number(value))
      return field(TYPE.double, b)
    }
    case 'float': {
      const b = Buffer.alloc(4)
      b.writeFloatBE(Number(value))
      return field(TYPE.float, b)
    }
    case 'int32': {
      // Negative numbers need all four bytes (two's complement); readers zero-pad shorter payloads.
      const b = Buffer.alloc(4)
      b.writeInt32BE(Number(value))
      return field(TYPE.int32, Number(value) < 0 ? b : minimalUnsigned(BigInt(value)))
    }
    default:
      return field(TYPE[type], minimalUnsigned(BigInt(value)))
  }
}

/** Unsigned integers are big-endian with leading zero bytes dropped (0 has an empty payload). */
function minimalUnsigned(value: bigint): Buffer {
  if (value < 0n) throw new Error(`unsigned value is negative: ${value}`)
  const bytes: number[] = []
  for (let v = value; v > 0n; v >>= 8n) bytes.unshift(Number(v & 0xffn))
  return Buffer.from(bytes)
}

function field(type: number, payload: Buffer): Buffer {
  return Buffer.concat([controlBytes(type, payload.length), payload])
}

/**
 * The control byte: type in the top 3 bits (0 = "extended", the real type − 7 in the next byte), size in the low 5
 * bits, with sizes 29, 285 and 65,821 and up spilling into 1, 2 or 3 following bytes.
 */
function controlBytes(type: number, size: number): Buffer {
  const typeBits = type <= 7 ? type : 0
  const extended = type <= 7 ? [] : [type - 7]
  let sizeBits: number
  let sizeBytes: number[]
  if (size < 29) {
    sizeBits = size
    sizeBytes = []
  } else if (size < 285) {
    sizeBits = 29
    sizeBytes = [size - 29]
  } else if (size < 65_821) {
    sizeBits = 30
    sizeBytes = [(size - 285) >> 8, (size - 285) & 0xff]
  } else {
    const rest = size - 65_821
    sizeBits = 31
    sizeBytes = [(rest >> 16) & 0xff, (rest >> 8) & 0xff, rest & 0xff]
  }
  return Buffer.from([(typeBits << 5) | sizeBits, ...extended, ...sizeBytes])
}
