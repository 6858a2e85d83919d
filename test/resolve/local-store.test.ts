import { mkdtemp, mkdir, readFile, rename, rm, unlink, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { chooseLocation } from '../../src/handle/locations.js'
import type { HandleRecord, HandleValue } from '../../src/handle/types.js'
import { valueString } from '../../src/handle/types.js'
import { buildSnapshot, describeProblem, jsonErrorOffset, LocalStoreError, openLocalStore, parseStoreFile } from '../../src/resolve/local-store.js'
import type { LocalStore, LocalStoreOptions, StoreProblem } from '../../src/resolve/local-store.js'
import { str } from '../support/records.js'

/** A logger that keeps what it is told, so tests can read the operator's view. */
function recordingLog (): LocalStoreOptions['log'] & { lines: Array<{ level: string, obj: object, msg: string }> } {
  const lines: Array<{ level: string, obj: object, msg: string }> = []
  return {
    lines,
    info: (obj, msg) => { lines.push({ level: 'info', obj, msg }) },
    warn: (obj, msg) => { lines.push({ level: 'warn', obj, msg }) },
    error: (obj, msg) => { lines.push({ level: 'error', obj, msg }) }
  }
}

const line = (handle: string, values: HandleValue[]): string => JSON.stringify({ handle, values })
const urlRecord = (handle: string, url: string): string => line(handle, [str(1, 'URL', url)])

/** Poll until check() is true, or fail after the deadline. Never a fixed sleep. */
async function eventually (check: () => boolean, what: string, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

function urlOf (values: HandleValue[] | undefined): string | undefined {
  const v = values?.find((x) => x.type === 'URL')
  return v === undefined ? undefined : valueString(v)
}

// ---------------------------------------------------------------------------------------------------------

describe('parseStoreFile: the record formats a user may write (issue 7 §1)', () => {
  interface Vector {
    name: string
    file: string
    text: string
    handles: string[]
    problems: Array<Partial<StoreProblem>>
  }
  const good = urlRecord('10.5555/a', 'https://example.org/a')
  const vectors: Vector[] = [
    { name: 'ndjson: one record per line, blank lines skipped', file: 'r.ndjson', text: `${good}\n\n${urlRecord('10.5555/b', 'https://example.org/b')}\n`, handles: ['10.5555/a', '10.5555/b'], problems: [] },
    { name: 'ndjson: CRLF line ends are fine', file: 'r.ndjson', text: `${good}\r\n${urlRecord('10.5555/b', 'https://example.org/b')}\r\n`, handles: ['10.5555/a', '10.5555/b'], problems: [] },
    { name: 'ndjson: a line that is not JSON is skipped and named by its line', file: 'r.ndjson', text: `${good}\n{"handle": "10.5555/x",\n${urlRecord('10.5555/c', 'https://example.org/c')}`, handles: ['10.5555/a', '10.5555/c'], problems: [{ file: 'r.ndjson', line: 2, message: expect.stringContaining('not valid JSON') as unknown as string }] },
    { name: 'ndjson: a bad value names the line and the field', file: 'r.ndjson', text: `${good}\n\n{"handle":"10.5555/x","values":[{"index":"1","type":"URL","data":{"format":"string","value":"u"}}]}`, handles: ['10.5555/a'], problems: [{ line: 3, message: '10.5555/x: values[0].index must be an integer' }] },
    { name: 'json: one record', file: 'r.json', text: good, handles: ['10.5555/a'], problems: [] },
    { name: 'json: a saved REST API answer (responseCode and all) is a record', file: 'r.json', text: JSON.stringify({ responseCode: 1, handle: '10.5555/api', values: [str(1, 'URL', 'https://example.org/')] }), handles: ['10.5555/api'], problems: [] },
    { name: 'json: an array of records; a bad one is named by its position', file: 'r.json', text: `[${good}, {"handle": ""}, ${urlRecord('10.5555/b', 'https://example.org/b')}]`, handles: ['10.5555/a', '10.5555/b'], problems: [{ item: 1, message: '"handle" must not be empty' }] },
    { name: 'json: a syntax error names its line', file: 'r.json', text: `[\n${good},\n{"handle": oops}\n]`, handles: [], problems: [{ line: 3, message: expect.stringContaining('not valid JSON') as unknown as string }] },
    { name: 'json: a byte-order mark from an editor is not an error', file: 'r.json', text: `\uFEFF${good}`, handles: ['10.5555/a'], problems: [] },
    { name: 'json: a number is not a record', file: 'r.json', text: '42', handles: [], problems: [{ message: expect.stringContaining('must be an object') as unknown as string }] },
    { name: 'another extension is refused', file: 'r.txt', text: good, handles: [], problems: [{ message: 'not a .json or .ndjson file' }] }
  ]
  it.each(vectors)('$name', ({ file, text, handles, problems }) => {
    const parsed = parseStoreFile(file, text)
    expect(parsed.records.map((r) => r.handle)).toEqual(handles)
    expect(parsed.problems).toHaveLength(problems.length)
    problems.forEach((p, i) => expect(parsed.problems[i]).toMatchObject(p))
  })
})

describe('parseStoreFile: what makes a record invalid (issue 7 §1; the REST API shape, behaviour.md R7)', () => {
  const value = (patch: Record<string, unknown>): Record<string, unknown> => ({ index: 1, type: 'URL', data: { format: 'string', value: 'https://example.org/' }, ttl: 86400, ...patch })
  const rec = (patch: Record<string, unknown>): string => JSON.stringify({ handle: '10.5555/r', values: [value({})], ...patch })
  const withValue = (patch: Record<string, unknown>): string => rec({ values: [value(patch)] })
  it.each([
    { why: 'handle missing', text: JSON.stringify({ values: [] }), message: '"handle" must be a string' },
    { why: 'handle empty', text: rec({ handle: '' }), message: '"handle" must not be empty' },
    { why: 'handle with a newline (behaviour.md §2: no control characters)', text: rec({ handle: '10.5555/a\nb' }), message: '"handle" "10.5555/a\\nb" contains a control character' },
    { why: 'handle with a trailing space (never reachable: requests are trimmed)', text: rec({ handle: '10.5555/a ' }), message: expect.stringContaining('starts or ends with whitespace') },
    { why: 'values not an array', text: rec({ values: {} }), message: '"values" of 10.5555/r must be an array' },
    { why: 'a value that is not an object', text: rec({ values: ['URL'] }), message: '10.5555/r: values[0] must be an object' },
    { why: 'index not an integer', text: withValue({ index: 1.5 }), message: '10.5555/r: values[0].index must be an integer' },
    { why: 'type missing', text: withValue({ type: undefined }), message: '10.5555/r: values[0].type must be a string' },
    { why: 'data missing', text: withValue({ data: undefined }), message: expect.stringContaining('values[0].data must be an object') },
    { why: 'data.format missing', text: withValue({ data: { value: 'x' } }), message: '10.5555/r: values[0].data.format must be a string' },
    { why: 'data.value missing', text: withValue({ data: { format: 'string' } }), message: '10.5555/r: values[0].data.value is missing' },
    { why: 'string format with a non-string value', text: withValue({ data: { format: 'string', value: 5 } }), message: '10.5555/r: values[0].data.value must be a string when the format is "string"' },
    { why: 'negative ttl', text: withValue({ ttl: -1 }), message: '10.5555/r: values[0].ttl must be a whole number of seconds, 0 or more' },
    { why: 'ttl neither seconds nor a date', text: withValue({ ttl: 'tomorrow' }), message: '10.5555/r: values[0].ttl must be seconds or an ISO-8601 date' },
    { why: 'ttl of another type', text: withValue({ ttl: true }), message: '10.5555/r: values[0].ttl must be seconds or an ISO-8601 date' },
    { why: 'timestamp not a date', text: withValue({ timestamp: 'yesterday' }), message: '10.5555/r: values[0].timestamp must be an ISO-8601 date' },
    { why: 'two values with one index', text: rec({ values: [value({}), value({ type: 'EMAIL' })] }), message: expect.stringContaining('values[1].index 1 is used twice') }
  ])('refuses a record: $why', ({ text, message }) => {
    const parsed = parseStoreFile('bad.ndjson', text)
    expect(parsed.records).toEqual([])
    expect(parsed.problems).toEqual([{ file: 'bad.ndjson', line: 1, message }])
  })

  it.each([
    { why: 'a missing ttl becomes the usual one day', value: value({ ttl: undefined }), ttl: 86400 },
    { why: 'an absolute ttl (ISO date) is kept', value: value({ ttl: '2030-01-01T00:00:00Z' }), ttl: '2030-01-01T00:00:00Z' },
    { why: 'ttl 0 (do not cache) is kept', value: value({ ttl: 0 }), ttl: 0 }
  ])('accepts a value: $why', ({ value: v, ttl }) => {
    const parsed = parseStoreFile('ok.json', JSON.stringify({ handle: '10.5555/r', values: [v] }))
    expect(parsed.problems).toEqual([])
    expect(parsed.records[0]?.values[0]?.ttl).toEqual(ttl)
  })

  it('keeps fields it does not know (permissions, references, extras) untouched', () => {
    const v = { ...value({}), permissions: '1110', references: [{ handle: '10.5555/x', index: 1 }], custom: { a: 1 } }
    const parsed = parseStoreFile('ok.json', JSON.stringify({ handle: '10.5555/r', values: [v] }))
    expect(parsed.records[0]?.values[0]).toEqual(v)
  })
})

describe('describeProblem: one line an operator can act on', () => {
  it.each([
    { p: { file: 'a.ndjson', line: 3, message: 'x' }, text: 'a.ndjson line 3: x' },
    { p: { file: 'a.json', item: 0, message: 'x' }, text: 'a.json record [0]: x' },
    { p: { file: 'a.json', message: 'x' }, text: 'a.json: x' }
  ])('$text', ({ p, text }) => { expect(describeProblem(p)).toBe(text) })
})

describe('buildSnapshot: duplicates (issue 7: the later file, sorted by name, wins)', () => {
  const file = (name: string, records: HandleRecord[]): { name: string, records: HandleRecord[], problems: StoreProblem[], rejected: boolean } =>
    ({ name, records, problems: [], rejected: false })
  const rec = (handle: string, url: string): HandleRecord => ({ handle, values: [str(1, 'URL', url)] })

  it('the record of the later file wins, whatever order the files were read in, and the duplicate is reported', () => {
    const snap = buildSnapshot([file('b.ndjson', [rec('10.5555/x', 'https://b/')]), file('a.ndjson', [rec('10.5555/X', 'https://a/')])])
    expect(urlOf(snap.records.get('10.5555/X'))).toBe('https://b/')
    expect(snap.duplicates).toEqual([{ handle: '10.5555/x', kept: 'b.ndjson', dropped: 'a.ndjson' }])
    expect(snap.stats).toEqual({ records: 1, files: 2, rejectedFiles: 0, problems: 1 })
  })

  it('within one file the later line wins', () => {
    const snap = buildSnapshot([file('a.ndjson', [rec('10.5555/x', 'https://first/'), rec('10.5555/x', 'https://second/')])])
    expect(urlOf(snap.records.get('10.5555/X'))).toBe('https://second/')
    expect(snap.duplicates).toHaveLength(1)
  })

  it('handles that differ beyond ASCII case are different records (behaviour.md §2.8)', () => {
    const snap = buildSnapshot([file('a.ndjson', [rec('10.5555/é', 'https://lower/'), rec('10.5555/É', 'https://upper/')])])
    expect(snap.records.size).toBe(2)
    expect(snap.duplicates).toEqual([])
  })
})

// ---------------------------------------------------------------------------------------------------------

describe('openLocalStore: a directory of record files', () => {
  let dir: string
  const stores: LocalStore[] = []
  const open = async (opts: Partial<LocalStoreOptions> = {}): Promise<LocalStore> => {
    const store = await openLocalStore({ dir, authoritativePrefixes: ['10.5555'], watch: false, log: recordingLog(), ...opts })
    stores.push(store)
    return store
  }

  beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'doi-proxy-store-')) })
  afterEach(async () => {
    await Promise.all(stores.splice(0).map(async (s) => { await s.close() }))
    await rm(dir, { recursive: true, force: true })
  })

  it('serves records from .json and .ndjson files, matching handles with ASCII case folding', async () => {
    await writeFile(join(dir, 'one.json'), urlRecord('10.5555/One', 'https://example.org/one'))
    await writeFile(join(dir, 'many.ndjson'), `${urlRecord('10.5555/two', 'https://example.org/two')}\n${urlRecord('10.9999/three', 'https://example.org/three')}\n`)
    const store = await open()
    expect(urlOf(store.get('10.5555/ONE'))).toBe('https://example.org/one')
    expect(urlOf(store.get('10.5555/Two'))).toBe('https://example.org/two')
    expect(store.get('10.5555/missing')).toBeUndefined()
    expect(store.stats()).toEqual({ records: 3, files: 2, rejectedFiles: 0, problems: 0 })
  })

  it('a bad file does not stop the others, and the log names the file, line and problem', async () => {
    const log = recordingLog()
    await writeFile(join(dir, 'a-broken.json'), '{"handle": "10.5555/x", "values": [')
    await writeFile(join(dir, 'b-mixed.ndjson'), `${urlRecord('10.5555/ok', 'https://example.org/ok')}\nnot json\n`)
    await writeFile(join(dir, 'c-good.json'), urlRecord('10.5555/good', 'https://example.org/good'))
    const store = await open({ log })
    expect(urlOf(store.get('10.5555/ok'))).toBe('https://example.org/ok')
    expect(urlOf(store.get('10.5555/good'))).toBe('https://example.org/good')
    expect(store.stats()).toEqual({ records: 2, files: 2, rejectedFiles: 1, problems: 2 })
    const said = log.lines.map((l) => l.msg)
    expect(said.filter((m) => m.startsWith('local store: skipped b-mixed.ndjson line 2: not valid JSON'))).toHaveLength(1)
    expect(said).toContain('local store: rejected a-broken.json; its records are not served')
  })

  it('ignores dot-files (a writer\'s temporary file) and other extensions', async () => {
    await writeFile(join(dir, '.partial.ndjson'), urlRecord('10.5555/hidden', 'https://example.org/'))
    await writeFile(join(dir, 'notes.txt'), urlRecord('10.5555/txt', 'https://example.org/'))
    await mkdir(join(dir, 'sub.json'))
    const store = await open()
    expect(store.get('10.5555/hidden')).toBeUndefined()
    expect(store.get('10.5555/txt')).toBeUndefined()
    expect(store.stats().records).toBe(0)
  })

  it('an empty directory is a store with no records', async () => {
    const store = await open()
    expect(store.stats()).toEqual({ records: 0, files: 0, rejectedFiles: 0, problems: 0 })
  })

  it('a missing directory stops the start with a message naming localStoreDir', async () => {
    const missing = join(dir, 'nope')
    await expect(openLocalStore({ dir: missing, authoritativePrefixes: [], watch: false, log: recordingLog() }))
      .rejects.toThrow(LocalStoreError)
    await expect(openLocalStore({ dir: missing, authoritativePrefixes: [], watch: false, log: recordingLog() }))
      .rejects.toThrow(/localStoreDir: .*nope.* does not exist/)
  })

  it('a file given as the directory stops the start', async () => {
    await writeFile(join(dir, 'file.ndjson'), '')
    await expect(openLocalStore({ dir: join(dir, 'file.ndjson'), authoritativePrefixes: [], watch: false, log: recordingLog() }))
      .rejects.toThrow(/localStoreDir: .* is not a directory/)
  })

  it.each([
    { handle: '10.5555/anything', authoritative: true },
    { handle: '10.5555', authoritative: true }, // the prefix record itself
    { handle: '10.abcd/x', authoritative: true }, // configured as 10.ABCD: ASCII case folding
    { handle: '10.55555/x', authoritative: false },
    { handle: '10.1000/x', authoritative: false },
    { handle: '0.NA/10.5555', authoritative: false }
  ])('authority: $handle is served only locally: $authoritative', async ({ handle, authoritative }) => {
    const store = await open({ authoritativePrefixes: ['10.5555', ' 10.ABCD ', ''] })
    expect(store.isAuthoritative(handle)).toBe(authoritative)
  })
})

describe('openLocalStore: reload when files change (issue 7 §1)', () => {
  let dir: string
  let store: LocalStore | undefined
  beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'doi-proxy-reload-')) })
  afterEach(async () => {
    await store?.close()
    store = undefined
    await rm(dir, { recursive: true, force: true })
  })

  describe.each([
    { mode: 'fs.watch', opts: { watch: true } },
    { mode: 'polling', opts: { watch: true, poll: true, pollIntervalMs: 50 } }
  ])('with $mode', ({ opts }) => {
    it('a changed file is served without a restart', async () => {
      await writeFile(join(dir, 'r.ndjson'), urlRecord('10.5555/changing', 'https://example.org/old'))
      store = await openLocalStore({ dir, authoritativePrefixes: [], log: recordingLog(), ...opts })
      expect(urlOf(store.get('10.5555/changing'))).toBe('https://example.org/old')
      await writeFile(join(dir, 'r.ndjson'), `${urlRecord('10.5555/changing', 'https://example.org/new')}\n${urlRecord('10.5555/added', 'https://example.org/added')}\n`)
      const s = store
      await eventually(() => urlOf(s.get('10.5555/changing')) === 'https://example.org/new', 'the new record is served')
      expect(urlOf(s.get('10.5555/added'))).toBe('https://example.org/added')
    })

    it('deleting a file removes its records', async () => {
      await writeFile(join(dir, 'keep.ndjson'), urlRecord('10.5555/keep', 'https://example.org/keep'))
      await writeFile(join(dir, 'gone.ndjson'), urlRecord('10.5555/gone', 'https://example.org/gone'))
      store = await openLocalStore({ dir, authoritativePrefixes: [], log: recordingLog(), ...opts })
      expect(store.get('10.5555/gone')).toBeDefined()
      await unlink(join(dir, 'gone.ndjson'))
      const s = store
      await eventually(() => s.get('10.5555/gone') === undefined, 'the deleted record is gone')
      expect(urlOf(s.get('10.5555/keep'))).toBe('https://example.org/keep')
      expect(s.stats().files).toBe(1)
    })

    it('touching a store file asks for a reload (docs/local-records.md: how to have a change read)', async () => {
      const log = recordingLog()
      await writeFile(join(dir, 'r.ndjson'), urlRecord('10.5555/touched', 'https://example.org/t'))
      store = await openLocalStore({ dir, authoritativePrefixes: [], log, ...opts })
      const reloads = (): number => log.lines.filter((l) => l.msg === 'local store loaded' && (l.obj as { reason?: string }).reason === 'change').length
      expect(reloads()).toBe(0)
      const later = new Date(Date.now() + 5000) // a modification time that differs even on a coarse clock
      await utimes(join(dir, 'r.ndjson'), later, later)
      await eventually(() => reloads() > 0, 'a reload after the touch')
      expect(urlOf(store.get('10.5555/touched'))).toBe('https://example.org/t')
    })
  })

  it('a file broken while the server runs is logged, and the other files keep serving', async () => {
    const log = recordingLog()
    await writeFile(join(dir, 'a.ndjson'), urlRecord('10.5555/a', 'https://example.org/a'))
    await writeFile(join(dir, 'b.json'), urlRecord('10.5555/b', 'https://example.org/b'))
    store = await openLocalStore({ dir, authoritativePrefixes: [], watch: true, log })
    await writeFile(join(dir, 'b.json'), '{ broken')
    const s = store
    await eventually(() => s.stats().rejectedFiles === 1, 'the broken file is rejected')
    expect(urlOf(s.get('10.5555/a'))).toBe('https://example.org/a')
    expect(s.get('10.5555/b')).toBeUndefined()
    expect(log.lines.some((l) => l.level === 'error' && l.msg.includes('b.json'))).toBe(true)
  })

  it('a reader never sees half a reload: 2,000 records replaced by 2,000 others', async () => {
    const N = 2000
    const version = (tag: string): string => Array.from({ length: N }, (_, i) => urlRecord(`10.5555/${tag}-${i}`, `https://example.org/${tag}/${i}`)).join('\n') + '\n'
    await writeFile(join(dir, 'big.ndjson'), version('old'))
    store = await openLocalStore({ dir, authoritativePrefixes: [], watch: true, log: recordingLog() })
    const s = store
    const seen = { old: 0, new: 0, mixed: 0 }
    let stop = false
    // A tight reader: one look per event-loop turn, interleaved with the reload's file reads.
    const reader = new Promise<void>((resolve) => {
      const look = (): void => {
        const present = ['old-0', `old-${N - 1}`, 'new-0', `new-${N - 1}`].map((h) => s.get(`10.5555/${h}`) !== undefined)
        if (present.join() === 'true,true,false,false') seen.old++
        else if (present.join() === 'false,false,true,true') seen.new++
        else seen.mixed++
        if (stop) resolve()
        else setImmediate(look)
      }
      look()
    })
    // Replace the file the way a careful writer does: write a dot-file, then rename it over the old one.
    await writeFile(join(dir, '.big.ndjson.tmp'), version('new'))
    await rename(join(dir, '.big.ndjson.tmp'), join(dir, 'big.ndjson'))
    await eventually(() => seen.new > 0, 'the reader sees the new records')
    stop = true
    await reader
    expect(seen.mixed).toBe(0)
    expect(seen.old).toBeGreaterThan(0)
    expect(s.stats().records).toBe(N)
  })
})

describe('the sample store shipped in config/sample-records (issue 7 §4)', () => {
  const sampleDir = join(import.meta.dirname, '../../config/sample-records')

  it('loads without a single problem', async () => {
    const log = recordingLog()
    const store = await openLocalStore({ dir: sampleDir, authoritativePrefixes: ['10.5555'], watch: false, log })
    try {
      expect(store.stats()).toMatchObject({ rejectedFiles: 0, problems: 0 })
      expect(log.lines.filter((l) => l.level !== 'info')).toEqual([])
    } finally {
      await store.close()
    }
  })

  it.each([
    { handle: '10.5555/sample', type: 'URL', value: 'https://www.doi.org/' },
    { handle: '10.5555/sample-alias', type: 'HS_ALIAS', value: '10.5555/sample' },
    { handle: '10.5555/sample-values', type: 'EMAIL', value: 'data-steward@example.org' },
    { handle: '10.5555', type: 'HS_SERV', value: '10.SERV/CROSSREF' }
  ])('$handle has a $type value $value', async ({ handle, type, value }) => {
    const { records } = parseStoreFile('sample.ndjson', await readFile(join(sampleDir, 'sample.ndjson'), 'utf8'))
    const values = records.find((r) => r.handle === handle)?.values ?? []
    expect(values.filter((v) => v.type === type).map(valueString)).toEqual([value])
  })

  it.each([
    { country: undefined, href: 'https://www.doi.org/the-identifier/what-is-a-doi/' },
    { country: 'GB', href: 'https://www.doi.org/the-identifier/resources/handbook/' }
  ])('10.5555/sample-loc redirects a visitor from $country to $href (its 10320/loc)', async ({ country, href }) => {
    const { records } = parseStoreFile('sample.ndjson', await readFile(join(sampleDir, 'sample.ndjson'), 'utf8'))
    const values = records.find((r) => r.handle === '10.5555/sample-loc')?.values ?? []
    const decision = chooseLocation({ handle: '10.5555/sample-loc', values, includes: new Map(), namespaceValues: [], locatt: [], country, random: () => 0.5 })
    expect(decision).toMatchObject({ kind: 'redirect', href })
  })

  it('the values-only record has no URL (it shows the values page)', async () => {
    const { records } = parseStoreFile('sample.ndjson', await readFile(join(sampleDir, 'sample.ndjson'), 'utf8'))
    const values = records.find((r) => r.handle === '10.5555/sample-values')?.values ?? []
    expect(values.map((v) => v.type).sort()).toEqual(['DESC', 'EMAIL', 'HS_ADMIN'])
  })
})

describe('jsonErrorOffset: where a hand-edited JSON file goes wrong', () => {
  it.each([
    { text: '{"a": oops}', offset: 6 },
    { text: '[1, 2,]', offset: 6 },
    { text: '{"a": 1', offset: 7 }, // truncated: the end of the text
    { text: '{"a": "x\\q"}', offset: 8 },
    { text: '{"a": 1} 2', offset: 9 },
    { text: '{a: 1}', offset: 1 },
    { text: '"\u0001"', offset: 1 },
    { text: '{"a": [true, false, null, -1.5e3, "\\u00e9"]}', offset: undefined }
  ])('$text → $offset', ({ text, offset }) => { expect(jsonErrorOffset(text)).toBe(offset) })
})
