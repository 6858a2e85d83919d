import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { notRecords, READING, sniff, SNIFF_BYTES } from '../../../src/handle/copy/sniff.js'

// Sources: plan-43 §1.11 (the formats and their shapes); RFC 1952 §2.3.1 (gzip: 1f 8b); POSIX pax "ustar
// Interchange Format" (magic at byte 257); file(1)'s magic for zip, bzip2, xz, zstd; Crossref REST API docs
// (message-type work-list); DataCite REST API docs ({"data":[…]}, type "dois"); DataCite data file README
// (doi,state,client_id,updated); docs/local-records.md (our {"handle","values"}).

const bytes = (s: string): Buffer => Buffer.from(s, 'utf8')
const tarHeader = (magic: string): Buffer => {
  const b = Buffer.alloc(512)
  b.write('0000.json.gz', 0)
  b.write(magic, 257, 'latin1')
  return b
}

describe('what an input is, told from its first bytes', () => {
  it.each([
    ['gzip', gzipSync(bytes('{"items":[]}')), 'gzip'], // RFC 1952
    ['POSIX tar', tarHeader('ustar\u000000'), 'tar'],
    ['GNU tar', tarHeader('ustar  \u0000'), 'tar'],
    ['Crossref annual inner file', bytes('{"items":[{"DOI":"10.1/a"}]}'), 'crossref-file'],
    ['Crossref annual inner file, spaced', bytes('{\n  "items" : [\n'), 'crossref-file'],
    [
      'Crossref REST page',
      bytes('{"status":"ok","message-type":"work-list","message-version":"1.0.0","message":{"items":[]}}'),
      'crossref-page'
    ],
    ['Crossref REST page without status', bytes('{"message-type":"work-list","message":{"items":[]}}'), 'crossref-page'],
    ['Crossref works, one a line', bytes('{"DOI":"10.1/a","indexed":{}}\n{"DOI":"10.1/b"}\n'), 'crossref-lines'],
    ['DataCite JSON line', bytes('{"id":"10.5281/z","type":"dois","attributes":{"doi":"10.5281/z"}}\n'), 'datacite-lines'],
    ['DataCite bare attributes', bytes('{"doi":"10.5281/z","url":"https://z.example/"}\n'), 'datacite-lines'],
    ['DataCite REST page', bytes('{"data":[{"id":"10.5281/z","type":"dois"}],"meta":{}}'), 'datacite-page'],
    ['DataCite DOI/state CSV', bytes('doi,state,client_id,updated\n10.5281/z,findable,cern.zenodo,2024-01-01\n'), 'datacite-states'],
    ['DataCite CSV, quoted header', bytes('"doi","state","client_id","updated"\n'), 'datacite-states'],
    ['our NDJSON', bytes('{"handle":"10.1000/182","values":[]}\n'), 'mirror-lines'],
    ['our NDJSON with a byte-order mark', bytes('\ufeff{"handle":"10.1000/182","values":[]}\n'), 'mirror-lines'],
    ['our JSON array', bytes('[{"handle":"10.1000/182","values":[]}]'), 'mirror-array']
  ])('%s is %s', (_, head, format) => {
    expect(sniff(head)).toEqual({ format })
  })

  it('a first line longer than the bytes read is told by the keys it starts with', () => {
    const line = '{"id":"10.5281/z","type":"dois","attributes":{"titles":[{"title":"' + 'x'.repeat(SNIFF_BYTES)
    expect(sniff(bytes(line).subarray(0, SNIFF_BYTES))).toEqual({ format: 'datacite-lines' })
    const work = '{"DOI":"10.1/a","author":[' + '{"family":"A"},'.repeat(SNIFF_BYTES / 10)
    expect(sniff(bytes(work).subarray(0, SNIFF_BYTES))).toEqual({ format: 'crossref-lines' })
  })

  it.each([
    ['nothing', bytes(''), 'the file is empty'],
    ['a zip', Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0]), 'a zip archive: unpack it, or give its files'],
    ['bzip2', bytes('BZh91AY&SY'), 'compressed with bzip2, which import does not read: recompress it with gzip, or decompress it'],
    [
      'xz',
      Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]),
      'compressed with xz, which import does not read: recompress it with gzip, or decompress it'
    ],
    [
      'zstd',
      Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 1]),
      'compressed with zstd, which import does not read: recompress it with gzip, or decompress it'
    ],
    [
      'a single Crossref work',
      bytes('{"status":"ok","message-type":"work","message":{}}'),
      'a Crossref API answer of message-type "work", not a page of works'
    ],
    [
      'JSON of another kind',
      bytes('{"name":"x"}\n'),
      'JSON, but neither a Crossref or DataCite file or page nor doi-proxy records (no DOI, doi or handle)'
    ],
    ['an array of something else', bytes('[1,2,3]'), 'a JSON array, but not of doi-proxy records ({"handle","values"})'],
    [
      'a line that is not an object',
      bytes('{"a":1} trailing\n'),
      'JSON, but neither a Crossref or DataCite file or page nor doi-proxy records (no DOI, doi or handle)'
    ],
    ['binary', Buffer.from([1, 2, 0, 3]), 'binary data, in none of the formats import reads'],
    ['text', bytes('hello world\n'), 'not a format import reads: it starts "hello world\\n"']
  ])('%s is refused: %s', (_, head, unknown) => {
    expect(sniff(head)).toEqual({ unknown })
  })
})

describe('how each format is read', () => {
  it.each([
    ['crossref-file', 'array', ['items'], 'crossref', true],
    ['crossref-page', 'array', ['message', 'items'], 'crossref', false],
    ['datacite-lines', 'lines', [], 'datacite', true],
    ['datacite-page', 'array', ['data'], 'datacite', false],
    ['datacite-states', 'csv', [], 'datacite', true],
    ['mirror-lines', 'lines', [], 'other', false],
    ['mirror-array', 'array', [], 'other', false]
  ] as const)('%s: %s at %j, %s, a data file: %s', (format, split, path, agency, dataFile) => {
    expect(READING[format]).toMatchObject({ split, path, agency, dataFile })
  })
})

// Sources: support.datacite.org "DataCite Public Data File" (a README, and dois/updated_YYYY-MM/YYYY-MM.csv.gz, a
// month's tabular report, beside the part_NNNN.jsonl.gz); docs/registry-copy.md §1 (import passes over the rest).
describe('an input in no format import reads: no records (passed over) or data it cannot read (malformed)', () => {
  it.each([
    ['README.txt', bytes('DataCite Public Data File 2024\n'), 'text, not records (it starts "DataCite Public Data File 2024\\n")'],
    ['README', bytes('\ufeff  Read me\n'), 'text, not records (it starts "Read me\\n")'],
    ['md5sums.txt', bytes('d41d8cd9  0.json.gz\n'), 'text, not records (it starts "d41d8cd9  0.json.gz\\n")'],
    [
      'dois/updated_2024-07/2024-07.csv.gz',
      bytes('doi,client_id,resource_type_general,updated\n10.5281/z,cern.zenodo,Dataset,2024-07-01\n'),
      'a CSV, not a DOI state list (its header: "doi,client_id,resource_type_general,updated")'
    ],
    ['dois/Thumbs.db', Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0]), 'a file the operating system keeps, not records'],
    ['notes.md', bytes(''), 'empty, not records'],
    // Meant to be data: named as data, or JSON, or binary.
    ['dois/updated_2024-07/part_0001.jsonl.gz', bytes('<html>502 Bad Gateway</html>\n'), undefined],
    ['crossref-2024.tar', bytes('<html>403</html>'), undefined],
    ['0001.json', bytes(''), undefined],
    ['manifest', bytes('{"name":"x"}\n'), undefined],
    ['list', bytes('[1,2]'), undefined],
    ['blob.bin', Buffer.from([1, 2, 0, 3]), undefined]
  ])('%s %j → %j', (name, head, expected) => {
    expect(notRecords(name, head)).toBe(expected)
  })
})
