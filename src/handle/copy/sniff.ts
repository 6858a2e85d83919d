import type { Agency } from './types.js'

/**
 * What an input of `doi-proxy import` is, from its first bytes (plan-43 §1.11), never from its name: the
 * agencies' files are renamed, recompressed and split by the people who download them. The caller reads up
 * to SNIFF_BYTES, and after a gzip header gunzips and asks again with the inner bytes.
 */

/** How much of an input (after gunzip) is read to tell its format. */
export const SNIFF_BYTES = 64 * 1024

/** The formats import reads, each item of which becomes a record. */
export const ITEM_FORMATS = [
  'crossref-file',
  'crossref-page',
  'crossref-lines',
  'datacite-lines',
  'datacite-page',
  'datacite-states',
  'mirror-lines',
  'mirror-array'
] as const
export type ItemFormat = (typeof ITEM_FORMATS)[number]

/** `gzip` and `tar` hold other inputs; the rest hold items. */
export type Format = 'gzip' | 'tar' | ItemFormat

/** How the items of a format are cut out and read. */
export interface FormatReading {
  /** `array`: the items of the JSON array at `path` (object keys from the root); `lines`: one JSON a line; `csv`: rows under a header. */
  split: 'array' | 'lines' | 'csv'
  path: readonly string[]
  agency: Agency
  /** Which mapper reads an item (handle/copy/*-record.ts). */
  mapper: 'crossref' | 'datacite' | 'datacite-state' | 'mirror'
  /** One of an agency's public data files: a whole set of them vouches for the agency's DOIs (coverage, whole prefixes). */
  dataFile: boolean
  /** What a person is told it is. */
  words: string
  /** Top-level keys of an item no mapper reads, whose object or array value the splitter drops unread (item-splitter.ts). */
  dropKeys?: readonly string[]
}

// A Crossref work's cited references: half a work's bytes, and no part of its CSL (crossref-record.ts).
const CROSSREF_DROPPED = ['reference']

export const READING: Readonly<Record<ItemFormat, FormatReading>> = {
  // Crossref's annual public data file: a tar (or a directory, from the torrent) of *.json.gz, each {"items":[work…]}.
  'crossref-file': {
    split: 'array',
    path: ['items'],
    agency: 'crossref',
    mapper: 'crossref',
    dataFile: true,
    words: 'Crossref data file',
    dropKeys: CROSSREF_DROPPED
  },
  // A page of Crossref's REST API /works: {"status","message-type":"work-list","message":{"items":[…]}}.
  'crossref-page': {
    split: 'array',
    path: ['message', 'items'],
    agency: 'crossref',
    mapper: 'crossref',
    dataFile: false,
    words: 'Crossref API page',
    dropKeys: CROSSREF_DROPPED
  },
  'crossref-lines': {
    split: 'lines',
    path: [],
    agency: 'crossref',
    mapper: 'crossref',
    dataFile: false,
    words: 'Crossref works, one a line'
  },
  // DataCite's public data file: dois/updated_YYYY-MM/part_NNNN.jsonl.gz, {"id","type":"dois","attributes"} (or bare attributes) a line.
  'datacite-lines': { split: 'lines', path: [], agency: 'datacite', mapper: 'datacite', dataFile: true, words: 'DataCite JSON lines' },
  // A page of DataCite's REST API /dois: {"data":[…],"meta","links"}.
  'datacite-page': { split: 'array', path: ['data'], agency: 'datacite', mapper: 'datacite', dataFile: false, words: 'DataCite API page' },
  // DataCite's DOI/state CSV: doi,state,client_id,updated.
  'datacite-states': { split: 'csv', path: [], agency: 'datacite', mapper: 'datacite-state', dataFile: true, words: 'DataCite DOI states' },
  // Ours: the local store's and `doi-proxy mirror`'s {"handle","values"[,"metadata"]}, a line or in one array.
  'mirror-lines': { split: 'lines', path: [], agency: 'other', mapper: 'mirror', dataFile: false, words: 'doi-proxy records' },
  'mirror-array': { split: 'array', path: [], agency: 'other', mapper: 'mirror', dataFile: false, words: 'doi-proxy records (an array)' }
}

// Magic numbers of what import does not read, to say what to do instead (file(1)'s magic).
const OTHER_MAGIC: ReadonlyArray<[bytes: number[], what: string]> = [
  [[0x50, 0x4b, 0x03, 0x04], 'a zip archive: unpack it, or give its files'],
  [[0x42, 0x5a, 0x68], 'compressed with bzip2, which import does not read: recompress it with gzip, or decompress it'],
  [[0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00], 'compressed with xz, which import does not read: recompress it with gzip, or decompress it'],
  [[0x28, 0xb5, 0x2f, 0xfd], 'compressed with zstd, which import does not read: recompress it with gzip, or decompress it']
]

/** The format of an input from its first bytes (at most SNIFF_BYTES of them), or why it is none import reads. */
export function sniff(head: Uint8Array): { format: Format } | { unknown: string } {
  if (head.length === 0) return { unknown: 'the file is empty' }
  if (head[0] === 0x1f && head[1] === 0x8b) return { format: 'gzip' }
  // POSIX ustar ("ustar\0") and GNU tar ("ustar ") both put their magic at byte 257 of the first header.
  if (head.length >= 262 && ascii(head, 257, 5) === 'ustar') return { format: 'tar' }
  for (const [bytes, what] of OTHER_MAGIC) if (bytes.every((b, i) => head[i] === b)) return { unknown: what }
  let text = Buffer.from(head.buffer, head.byteOffset, head.byteLength).toString('utf8')
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  text = text.trimStart()
  if (text.startsWith('{')) return objectFormat(text)
  if (text.startsWith('[')) {
    if (/"handle"\s*:/.test(text) && /"values"\s*:/.test(text)) return { format: 'mirror-array' }
    return { unknown: 'a JSON array, but not of doi-proxy records ({"handle","values"})' }
  }
  const firstLine = (text.split('\n', 1)[0] ?? '').trim().toLowerCase().replace(/"/g, '')
  if (/^doi,state(,|$)/.test(firstLine)) return { format: 'datacite-states' }
  if (text.includes('\u0000')) return { unknown: 'binary data, in none of the formats import reads' }
  return { unknown: `not a format import reads: it starts ${JSON.stringify(text.slice(0, 40))}` }
}

/** A JSON object at the start: one of the pages or files, else JSON lines told apart by their first line's keys. */
function objectFormat(text: string): { format: Format } | { unknown: string } {
  if (/^\{\s*"items"\s*:\s*\[/.test(text)) return { format: 'crossref-file' }
  const crossref = /^\{\s*(?:"status"\s*:\s*"[^"]*"\s*,\s*)?"message-type"\s*:\s*"([^"]*)"/.exec(text)
  if (crossref !== null) {
    if (crossref[1] === 'work-list') return { format: 'crossref-page' }
    return { unknown: `a Crossref API answer of message-type ${JSON.stringify(crossref[1]?.slice(0, 40))}, not a page of works` }
  }
  if (/^\{\s*"data"\s*:\s*\[/.test(text)) return { format: 'datacite-page' }
  const newline = text.indexOf('\n')
  const line = newline < 0 ? text : text.slice(0, newline)
  let keys: Set<string>
  let type: unknown
  try {
    const first = JSON.parse(line) as unknown
    if (first === null || typeof first !== 'object' || Array.isArray(first)) return { unknown: 'its first line is not a JSON object' }
    keys = new Set(Object.keys(first))
    type = (first as { type?: unknown }).type
  } catch {
    // A first line longer than the bytes sniffed (a 1,000-author work): its top-level keys, as far as they go.
    keys = new Set([...line.matchAll(/"([A-Za-z-]+)"\s*:/g)].map((m) => m[1] ?? ''))
    type = /"type"\s*:\s*"dois"/.test(line) ? 'dois' : undefined
  }
  if (keys.has('handle') && keys.has('values')) return { format: 'mirror-lines' }
  if (type === 'dois' || keys.has('attributes') || keys.has('doi')) return { format: 'datacite-lines' }
  if (keys.has('DOI')) return { format: 'crossref-lines' }
  return { unknown: 'JSON, but neither a Crossref or DataCite file or page nor doi-proxy records (no DOI, doi or handle)' }
}

function ascii(bytes: Uint8Array, at: number, length: number): string {
  return String.fromCharCode(...bytes.subarray(at, at + length))
}

// Names the agencies and doi-proxy give their data (records, or a tar of them): what bears one was meant to be read.
const DATA_NAME = /\.(?:json|jsonl|ndjson|tar|tgz)(?:\.gz)?$/i
// Files an operating system leaves beside others (hidden ones, .DS_Store and ._*, are never read at all: sources.ts).
const SYSTEM_FILES = new Set(['thumbs.db', 'desktop.ini'])

/**
 * Why an input (a file, or an entry of a tar) in no format import reads holds no records, so it is passed over
 * rather than named malformed; undefined when it looks meant to be data and is not readable (it then keeps its
 * file from counting whole: the copy must not claim all of a file it did not read). `head` is its first bytes,
 * after gunzip. Not records: a file an operating system keeps; text that is no JSON (a README, a checksum list,
 * a CSV report such as DataCite's monthly YYYY-MM.csv.gz) unless its name says JSON or tar. An HTML page saved
 * under a data file's name, binary data, JSON of another shape, an empty data file: meant to be data.
 */
export function notRecords(name: string, head: Uint8Array): string | undefined {
  const base = (name.split('/').pop() ?? name).toLowerCase()
  if (SYSTEM_FILES.has(base)) return 'a file the operating system keeps, not records'
  if (DATA_NAME.test(base)) return undefined
  const bytes = Buffer.from(head.buffer, head.byteOffset, head.byteLength)
  if (bytes.includes(0)) return undefined
  let text = bytes.toString('utf8')
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  const start = text.trimStart()
  if (start === '') return 'empty, not records'
  if (start.startsWith('{') || start.startsWith('[')) return undefined
  const firstLine = (start.split('\n', 1)[0] ?? '').trim()
  if (firstLine.includes(',') && !firstLine.includes(' ')) {
    return `a CSV, not a DOI state list (its header: ${JSON.stringify(firstLine.slice(0, 80))})`
  }
  return `text, not records (it starts ${JSON.stringify(start.slice(0, 40))})`
}
