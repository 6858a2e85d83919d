/**
 * The local store's file format, pure (no I/O): which files are store files, and a store file's bytes parsed
 * and checked into records, with every problem described by file, line or array position.
 * `.ndjson`: one record per line; `.json`: one record or an array; records in the Handle REST API's own shape
 * `{"handle": …, "values": [...]}` (docs/local-records.md).
 */
import { hasControlChar } from '../../handle/name.js'
import { DEFAULT_TTL_SECONDS } from '../../handle/record.js'
import type { HandleRecord, HandleValue } from '../../handle/types.js'
import { checkMetadata } from './metadata.js'
import type { StoredMetadata } from './metadata.js'

/** One thing wrong in a store file. `line` is the 1-based line (ndjson, or a JSON syntax error); `item` the 0-based array position (json). */
export interface StoreProblem {
  file: string
  line?: number
  item?: number
  message: string
}

/** A problem as one human line: `records.ndjson line 3: values[0].index must be an integer`. */
export function describeProblem(p: StoreProblem): string {
  const where = p.line !== undefined ? ` line ${p.line}` : p.item !== undefined ? ` record [${p.item}]` : ''
  return `${p.file}${where}: ${p.message}`
}

const STORE_EXTENSIONS = ['.json', '.ndjson']

/** A file name the store reads: `.json`/`.ndjson`, and not a dot-file (an editor's or a writer's temporary file is never half-read). */
export function isStoreFileName(name: string): boolean {
  return !name.startsWith('.') && STORE_EXTENSIONS.some((ext) => name.endsWith(ext))
}

/** One store file parsed: the records that passed, what was wrong, and whether nothing in it can be used. */
export interface ParsedFile {
  name: string
  records: HandleRecord[]
  problems: StoreProblem[]
  /** The file could not be used at all. */
  rejected: boolean
}

/** Parse one file's bytes, and say whether the file is usable at all. Never throws. */
export function parseStoreBytes(name: string, bytes: Buffer): ParsedFile {
  let text: string
  try {
    text = bytes.toString('utf8')
  } catch {
    return {
      name,
      records: [],
      problems: [{ file: name, message: `too large to read (${bytes.length} bytes); split it into several files` }],
      rejected: true
    }
  }
  const { records, problems } = parseStoreFile(name, text)
  // A file-level problem (bad JSON, not a record, not an array) makes the whole file unusable; a bad ndjson line
  // or array item only costs that record.
  const rejected = !name.endsWith('.ndjson') && records.length === 0 && problems.some((p) => p.item === undefined)
  return { name, records, problems, rejected }
}

/**
 * Parse one store file's text. `.ndjson`: one record per line, blank lines allowed. `.json`: one record or an
 * array of records. Bad records are skipped and described; this never throws.
 */
export function parseStoreFile(name: string, text: string): { records: HandleRecord[]; problems: StoreProblem[] } {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text // an editor's byte-order mark is not content
  if (name.endsWith('.ndjson')) return parseNdjson(name, body)
  if (name.endsWith('.json')) return parseJson(name, body)
  return { records: [], problems: [{ file: name, message: 'not a .json or .ndjson file' }] }
}

function parseNdjson(file: string, text: string): { records: HandleRecord[]; problems: StoreProblem[] } {
  const records: HandleRecord[] = []
  const problems: StoreProblem[] = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').trim()
    if (line === '') continue
    const where = { file, line: i + 1 }
    let parsed: unknown
    try {
      parsed = JSON.parse(line)
    } catch (err) {
      problems.push({ ...where, message: `not valid JSON (${jsonErrorDetail(err)})` })
      continue
    }
    const checked = checkRecord(parsed)
    if (typeof checked === 'string') problems.push({ ...where, message: checked })
    else records.push(checked)
  }
  return { records, problems }
}

function parseJson(file: string, text: string): { records: HandleRecord[]; problems: StoreProblem[] } {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    const line = lineOfJsonError(text)
    return {
      records: [],
      problems: [{ file, ...(line === undefined ? {} : { line }), message: `not valid JSON (${jsonErrorDetail(err)})` }]
    }
  }
  if (!Array.isArray(parsed)) {
    const checked = checkRecord(parsed)
    return typeof checked === 'string' ? { records: [], problems: [{ file, message: checked }] } : { records: [checked], problems: [] }
  }
  const records: HandleRecord[] = []
  const problems: StoreProblem[] = []
  parsed.forEach((item: unknown, i) => {
    const checked = checkRecord(item)
    if (typeof checked === 'string') problems.push({ file, item: i, message: checked })
    else records.push(checked)
  })
  return { records, problems }
}

function jsonErrorDetail(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** The 1-based line of the first JSON syntax error (V8's message does not always say where it is). */
function lineOfJsonError(text: string): number | undefined {
  const position = jsonErrorOffset(text)
  if (position === undefined) return undefined
  let line = 1
  for (let i = 0; i < position && i < text.length; i++) if (text.charCodeAt(i) === 0x0a) line++
  return line
}

/**
 * Where JSON text first goes wrong: a small recursive scanner, run only after JSON.parse has failed.
 * Returns the offset of the offending character (text.length for a truncated document).
 */
export function jsonErrorOffset(text: string): number | undefined {
  let i = 0
  const fail = (at: number): never => {
    throw new JsonSyntaxAt(at)
  }
  const skipSpace = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++
  }
  const literal = (word: string): void => {
    if (text.startsWith(word, i)) i += word.length
    else fail(i)
  }
  const string = (): void => {
    i++ // opening quote
    while (i < text.length) {
      const c = text.charCodeAt(i)
      if (c === 0x22) {
        i++
        return
      }
      if (c < 0x20) fail(i)
      if (c === 0x5c) {
        const e = text[i + 1] ?? ''
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail(i)
          i += 6
        } else if ('"\\/bfnrt'.includes(e) && e !== '') {
          i += 2
        } else {
          fail(i)
        }
      } else {
        i++
      }
    }
    fail(i)
  }
  const number = (): void => {
    const m = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i, i + 400))
    if (m === null) fail(i)
    else i += m[0].length
  }
  const sequence = (close: string, item: () => void): void => {
    i++ // opening bracket
    skipSpace()
    if (text[i] === close) {
      i++
      return
    }
    for (;;) {
      item()
      skipSpace()
      if (text[i] === ',') {
        i++
        continue
      }
      if (text[i] === close) {
        i++
        return
      }
      fail(i)
    }
  }
  const value = (): void => {
    skipSpace()
    const c = text[i]
    if (c === '{') {
      sequence('}', () => {
        skipSpace()
        if (text[i] !== '"') fail(i)
        string()
        skipSpace()
        if (text[i] !== ':') fail(i)
        i++
        value()
      })
    } else if (c === '[') sequence(']', value)
    else if (c === '"') string()
    else if (c === 't') literal('true')
    else if (c === 'f') literal('false')
    else if (c === 'n') literal('null')
    else number()
  }
  try {
    value()
    skipSpace()
    return i < text.length ? i : undefined
  } catch (err) {
    return err instanceof JsonSyntaxAt ? err.offset : undefined // nesting too deep to scan: no line, still no throw
  }
}

class JsonSyntaxAt extends Error {
  constructor(readonly offset: number) {
    super(`JSON syntax error at ${offset}`)
  }
}

/** A record of the store: a handle record, and optionally its metadata by media type (docs/metadata.md). */
export type LocalRecord = HandleRecord & { metadata?: StoredMetadata }

/** A checked record, or a message saying what is wrong with it. Extra fields (responseCode from a saved API answer) are ignored. */
export function checkRecord(raw: unknown): LocalRecord | string {
  if (!isPlainObject(raw)) return 'a record must be an object {"handle": …, "values": [...]}'
  const handle = raw.handle
  if (typeof handle !== 'string') return '"handle" must be a string'
  if (handle === '') return '"handle" must not be empty'
  if (hasControlChar(handle)) return `"handle" ${JSON.stringify(handle)} contains a control character`
  if (handle.trim() !== handle) return `"handle" ${JSON.stringify(handle)} starts or ends with whitespace, so no request can reach it`
  if (!Array.isArray(raw.values)) return `"values" of ${handle} must be an array`
  const values: HandleValue[] = []
  const indexes = new Set<number>()
  for (let i = 0; i < raw.values.length; i++) {
    const checked = checkValue(raw.values[i])
    if (typeof checked === 'string') return `${handle}: values[${i}]${checked}`
    if (indexes.has(checked.index)) {
      return `${handle}: values[${i}].index ${checked.index} is used twice (an index is unique within a record)`
    }
    indexes.add(checked.index)
    values.push(checked)
  }
  const metadata = checkMetadata(raw.metadata, handle)
  if (typeof metadata === 'string') return metadata
  return metadata === undefined ? { handle, values } : { handle, values, metadata }
}

/** A checked value (ttl defaulted), or a message starting with the field that is wrong (`.index must …`). */
function checkValue(raw: unknown): HandleValue | string {
  if (!isPlainObject(raw)) return ' must be an object'
  if (!Number.isSafeInteger(raw.index)) return '.index must be an integer'
  if (typeof raw.type !== 'string') return '.type must be a string'
  const data = raw.data
  if (!isPlainObject(data)) return '.data must be an object {"format": …, "value": …}'
  if (typeof data.format !== 'string') return '.data.format must be a string'
  if (!('value' in data) || data.value === undefined) return '.data.value is missing'
  if (['string', 'base64', 'hex'].includes(data.format) && typeof data.value !== 'string') {
    return `.data.value must be a string when the format is "${data.format}"`
  }
  const ttl = raw.ttl ?? DEFAULT_TTL_SECONDS
  if (typeof ttl === 'number' && !(Number.isSafeInteger(ttl) && ttl >= 0)) return '.ttl must be a whole number of seconds, 0 or more'
  if (typeof ttl === 'string' && Number.isNaN(Date.parse(ttl))) return '.ttl must be seconds or an ISO-8601 date'
  if (typeof ttl !== 'number' && typeof ttl !== 'string') return '.ttl must be seconds or an ISO-8601 date'
  if (raw.timestamp !== undefined && (typeof raw.timestamp !== 'string' || Number.isNaN(Date.parse(raw.timestamp)))) {
    return '.timestamp must be an ISO-8601 date'
  }
  return { ...raw, ttl } as HandleValue
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}
