import { deflateRawSync, inflateRawSync } from 'node:zlib'
import { copyKeyOf } from './key.js'
import { AGENCIES, RECORD_KINDS } from './types.js'
import type { CopyHead, CopyRecord, Csl, EncodedRecord } from './types.js'

/**
 * One record's bytes in the copy (issue 43, docs/architecture.md "The registry copy's layout"), versioned:
 *
 *   0 layout version (1) · 1 kind (1 work, 2 alias, 3 registered) · 2 agency (1 crossref, 2 datacite, 3 other)
 *   3 flags (bit 0 covered, bit 1 has CSL, bit 2 abstract dropped) · 4–7 stamp · 8–11 importedAt (u32 BE, seconds)
 *   varint + UTF-8 DOI as registered · varint + UTF-8 URL or alias target (empty for registered)
 *   then, with CSL: u8 dictionary id + the CSL-JSON deflated raw with that preset dictionary.
 *
 * The redirect path reads the head only and never inflates. Deflate with a preset dictionary (node:zlib,
 * no dependency) made a 1,185-byte CSL 395 bytes in the plan's measurements; brotli q4 491, LZ4 worse.
 */

export const LAYOUT_VERSION = 1

/**
 * The preset dictionaries, by id. Never change one's bytes: records written with it could no longer be
 * read. A better one gets a new id (its id is recorded in the copy's `format` meta); 0 means none.
 */
export const CSL_DICTIONARIES: ReadonlyMap<number, Buffer> = new Map([
  [
    1,
    Buffer.from(
      '{"type":"article-journal","DOI":"10.","URL":"https://doi.org/10.","publisher":"","publisher-place":"","source":"Crossref",' +
        '"container-title":"Journal of ","volume":"","issue":"","page":"","ISSN":["","-"],"ISBN":[""],"language":"en",' +
        '"editor":[{"family":"","given":""}],"event":"Conference","abstract":"",' +
        '"title":"The ","author":[{"family":"","given":"","sequence":"first"},{"family":"","given":""}],"issued":{"date-parts":[[2020,1,1]]}}',
      'utf8'
    )
  ]
])

/** The dictionary new records are written with. */
export const CURRENT_DICTIONARY = 1

// zlib's level for the CSL: 3 took ~15 % less time than the default 6 on generated works' CSL (1.5 kB, the
// fastest of 12 rounds each) for 2 % more bytes; the reader inflates any level alike.
const CSL_LEVEL = 3
const FLAG_COVERED = 1
const FLAG_CSL = 2
const FLAG_ABSTRACT_DROPPED = 4
const HEAD_BYTES = 12
const U32_MAX = 0xffff_ffff

export interface EncodeOptions {
  /** When the record was written, seconds since 1970. */
  importedAt: number
  /** The agency's coverage vouches for it (a whole file or an update: freshness.ts). */
  covered: boolean
  /** The dictionary to deflate the CSL with (CURRENT_DICTIONARY unless testing). */
  dictionary?: number
}

/** A record's bytes. A stamp outside u32 seconds (a hostile or broken date) is clamped, never thrown on. */
export function encodeRecord(record: CopyRecord, opts: EncodeOptions): Buffer {
  const doi = Buffer.from(record.doi, 'utf8')
  const target = Buffer.from((record.kind === 'alias' ? record.aliasOf : record.kind === 'work' ? record.url : '') ?? '', 'utf8')
  const dictionaryId = opts.dictionary ?? CURRENT_DICTIONARY
  const csl = record.csl === undefined ? undefined : deflated(record.csl, dictionaryId)
  const flags =
    (opts.covered ? FLAG_COVERED : 0) | (csl !== undefined ? FLAG_CSL : 0) | (record.abstractDropped === true ? FLAG_ABSTRACT_DROPPED : 0)
  const head = Buffer.alloc(HEAD_BYTES)
  head[0] = LAYOUT_VERSION
  head[1] = RECORD_KINDS.indexOf(record.kind) + 1
  head[2] = AGENCIES.indexOf(record.agency) + 1
  head[3] = flags
  head.writeUInt32BE(u32(record.stamp), 4)
  head.writeUInt32BE(u32(opts.importedAt), 8)
  const parts = [head, varint(doi.length), doi, varint(target.length), target]
  if (csl !== undefined) parts.push(Buffer.of(dictionaryId), csl)
  return Buffer.concat(parts)
}

/** The head of a record's bytes (no inflating), or why they cannot be read (damaged, or written by a newer version). */
export function decodeHead(bytes: Uint8Array): CopyHead | string {
  if (bytes.length < HEAD_BYTES) return `a record of ${bytes.length} bytes is shorter than its head`
  if (bytes[0] !== LAYOUT_VERSION) return `a record of layout ${bytes[0]} (this version reads ${LAYOUT_VERSION})`
  const kind = RECORD_KINDS[(bytes[1] ?? 0) - 1]
  const agency = AGENCIES[(bytes[2] ?? 0) - 1]
  if (kind === undefined || agency === undefined) return `a record of unknown kind ${bytes[1]} or agency ${bytes[2]}`
  const flags = bytes[3] ?? 0
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const doi = readString(view, HEAD_BYTES)
  if (doi === undefined) return 'a record whose DOI runs past its end'
  const target = readString(view, doi.end)
  if (target === undefined) return 'a record whose URL runs past its end'
  return {
    kind,
    agency,
    covered: (flags & FLAG_COVERED) !== 0,
    hasCsl: (flags & FLAG_CSL) !== 0,
    abstractDropped: (flags & FLAG_ABSTRACT_DROPPED) !== 0,
    stamp: view.readUInt32BE(4),
    importedAt: view.readUInt32BE(8),
    doi: doi.text,
    target: target.text
  }
}

/** A record's CSL-JSON, undefined when it has none, or why it cannot be read. */
export function decodeCsl(bytes: Uint8Array, dictionaries: ReadonlyMap<number, Buffer> = CSL_DICTIONARIES): Csl | undefined | string {
  const head = decodeHead(bytes)
  if (typeof head === 'string') return head
  if (!head.hasCsl) return undefined
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const doi = readString(view, HEAD_BYTES)
  const target = doi === undefined ? undefined : readString(view, doi.end)
  if (target === undefined || target.end >= view.length) return 'a record whose metadata is cut off'
  const id = view[target.end] ?? 0
  const dictionary = id === 0 ? undefined : dictionaries.get(id)
  if (id !== 0 && dictionary === undefined) return `a record compressed with dictionary ${id}, which this version does not have`
  try {
    const json = inflateRawSync(view.subarray(target.end + 1), dictionary === undefined ? {} : { dictionary }).toString('utf8')
    const csl: unknown = JSON.parse(json)
    if (typeof csl !== 'object' || csl === null || Array.isArray(csl)) return 'a record whose metadata is not a JSON object'
    return csl as Csl
  } catch (err) {
    return `a record whose metadata cannot be read (${(err as Error).message})`
  }
}

function deflated(csl: Csl, dictionaryId: number): Buffer {
  const dictionary = dictionaryId === 0 ? undefined : CSL_DICTIONARIES.get(dictionaryId)
  if (dictionaryId !== 0 && dictionary === undefined) throw new RangeError(`no CSL dictionary ${dictionaryId}`)
  return deflateRawSync(
    Buffer.from(JSON.stringify(csl), 'utf8'),
    dictionary === undefined ? { level: CSL_LEVEL } : { dictionary, level: CSL_LEVEL }
  )
}

function u32(seconds: number): number {
  if (!Number.isFinite(seconds) || seconds <= 0) return 0
  return Math.min(U32_MAX, Math.floor(seconds))
}

/** LEB128, unsigned: 7 bits a byte, the high bit says more follow. */
export function varint(n: number): Buffer {
  const out: number[] = []
  let rest = n
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80)
    rest = Math.floor(rest / 0x80)
  }
  out.push(rest)
  return Buffer.from(out)
}

/** A varint-prefixed UTF-8 string at `at`, and where it ends; undefined when it runs past the buffer. */
function readString(view: Buffer, at: number): { text: string; end: number } | undefined {
  let length = 0
  let scale = 1
  let i = at
  for (;;) {
    if (i >= view.length || scale > 2 ** 28) return undefined
    const byte = view[i++] ?? 0
    length += (byte & 0x7f) * scale
    if (byte < 0x80) break
    scale *= 0x80
  }
  if (i + length > view.length) return undefined
  return { text: view.toString('utf8', i, i + length), end: i + length }
}

/** A record's key and bytes together, as the importer's workers hand them to the writer. */
export function encodeEntry(record: CopyRecord, opts: EncodeOptions): EncodedRecord {
  return { key: copyKeyOf(record.doi), value: encodeRecord(record, opts) }
}
