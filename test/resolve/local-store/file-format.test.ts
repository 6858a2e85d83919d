import { describe, expect, it } from 'vitest'
import { describeProblem, jsonErrorOffset, parseStoreFile } from '../../../src/resolve/local-store/file-format.js'
import type { StoreProblem } from '../../../src/resolve/local-store/file-format.js'
import { urlRecord } from '../../support/local-records.js'
import { str } from '../../support/records.js'

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
    {
      name: 'ndjson: one record per line, blank lines skipped',
      file: 'r.ndjson',
      text: `${good}\n\n${urlRecord('10.5555/b', 'https://example.org/b')}\n`,
      handles: ['10.5555/a', '10.5555/b'],
      problems: []
    },
    {
      name: 'ndjson: CRLF line ends are fine',
      file: 'r.ndjson',
      text: `${good}\r\n${urlRecord('10.5555/b', 'https://example.org/b')}\r\n`,
      handles: ['10.5555/a', '10.5555/b'],
      problems: []
    },
    {
      name: 'ndjson: a line that is not JSON is skipped and named by its line',
      file: 'r.ndjson',
      text: `${good}\n{"handle": "10.5555/x",\n${urlRecord('10.5555/c', 'https://example.org/c')}`,
      handles: ['10.5555/a', '10.5555/c'],
      problems: [{ file: 'r.ndjson', line: 2, message: expect.stringContaining('not valid JSON') as unknown as string }]
    },
    {
      name: 'ndjson: a bad value names the line and the field',
      file: 'r.ndjson',
      text: `${good}\n\n{"handle":"10.5555/x","values":[{"index":"1","type":"URL","data":{"format":"string","value":"u"}}]}`,
      handles: ['10.5555/a'],
      problems: [{ line: 3, message: '10.5555/x: values[0].index must be an integer' }]
    },
    { name: 'json: one record', file: 'r.json', text: good, handles: ['10.5555/a'], problems: [] },
    {
      name: 'json: a saved REST API answer (responseCode and all) is a record',
      file: 'r.json',
      text: JSON.stringify({ responseCode: 1, handle: '10.5555/api', values: [str(1, 'URL', 'https://example.org/')] }),
      handles: ['10.5555/api'],
      problems: []
    },
    {
      name: 'json: an array of records; a bad one is named by its position',
      file: 'r.json',
      text: `[${good}, {"handle": ""}, ${urlRecord('10.5555/b', 'https://example.org/b')}]`,
      handles: ['10.5555/a', '10.5555/b'],
      problems: [{ item: 1, message: '"handle" must not be empty' }]
    },
    {
      name: 'json: a syntax error names its line',
      file: 'r.json',
      text: `[\n${good},\n{"handle": oops}\n]`,
      handles: [],
      problems: [{ line: 3, message: expect.stringContaining('not valid JSON') as unknown as string }]
    },
    {
      name: 'json: a byte-order mark from an editor is not an error',
      file: 'r.json',
      text: `\uFEFF${good}`,
      handles: ['10.5555/a'],
      problems: []
    },
    {
      name: 'json: a number is not a record',
      file: 'r.json',
      text: '42',
      handles: [],
      problems: [{ message: expect.stringContaining('must be an object') as unknown as string }]
    },
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
  const value = (patch: Record<string, unknown>): Record<string, unknown> => ({
    index: 1,
    type: 'URL',
    data: { format: 'string', value: 'https://example.org/' },
    ttl: 86400,
    ...patch
  })
  const rec = (patch: Record<string, unknown>): string => JSON.stringify({ handle: '10.5555/r', values: [value({})], ...patch })
  const withValue = (patch: Record<string, unknown>): string => rec({ values: [value(patch)] })
  it.each([
    { why: 'handle missing', text: JSON.stringify({ values: [] }), message: '"handle" must be a string' },
    { why: 'handle empty', text: rec({ handle: '' }), message: '"handle" must not be empty' },
    {
      why: 'handle with a newline (behaviour.md §2: no control characters)',
      text: rec({ handle: '10.5555/a\nb' }),
      message: '"handle" "10.5555/a\\nb" contains a control character'
    },
    {
      why: 'handle with a trailing space (never reachable: requests are trimmed)',
      text: rec({ handle: '10.5555/a ' }),
      message: expect.stringContaining('starts or ends with whitespace')
    },
    { why: 'values not an array', text: rec({ values: {} }), message: '"values" of 10.5555/r must be an array' },
    { why: 'a value that is not an object', text: rec({ values: ['URL'] }), message: '10.5555/r: values[0] must be an object' },
    { why: 'index not an integer', text: withValue({ index: 1.5 }), message: '10.5555/r: values[0].index must be an integer' },
    { why: 'type missing', text: withValue({ type: undefined }), message: '10.5555/r: values[0].type must be a string' },
    { why: 'data missing', text: withValue({ data: undefined }), message: expect.stringContaining('values[0].data must be an object') },
    { why: 'data.format missing', text: withValue({ data: { value: 'x' } }), message: '10.5555/r: values[0].data.format must be a string' },
    { why: 'data.value missing', text: withValue({ data: { format: 'string' } }), message: '10.5555/r: values[0].data.value is missing' },
    {
      why: 'string format with a non-string value',
      text: withValue({ data: { format: 'string', value: 5 } }),
      message: '10.5555/r: values[0].data.value must be a string when the format is "string"'
    },
    { why: 'negative ttl', text: withValue({ ttl: -1 }), message: '10.5555/r: values[0].ttl must be a whole number of seconds, 0 or more' },
    {
      why: 'ttl neither seconds nor a date',
      text: withValue({ ttl: 'tomorrow' }),
      message: '10.5555/r: values[0].ttl must be seconds or an ISO-8601 date'
    },
    { why: 'ttl of another type', text: withValue({ ttl: true }), message: '10.5555/r: values[0].ttl must be seconds or an ISO-8601 date' },
    {
      why: 'timestamp not a date',
      text: withValue({ timestamp: 'yesterday' }),
      message: '10.5555/r: values[0].timestamp must be an ISO-8601 date'
    },
    {
      why: 'two values with one index',
      text: rec({ values: [value({}), value({ type: 'EMAIL' })] }),
      message: expect.stringContaining('values[1].index 1 is used twice')
    }
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
  ])('$text', ({ p, text }) => {
    expect(describeProblem(p)).toBe(text)
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
  ])('$text → $offset', ({ text, offset }) => {
    expect(jsonErrorOffset(text)).toBe(offset)
  })
})
