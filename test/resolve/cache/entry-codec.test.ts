import { describe, expect, it } from 'vitest'
import { encodeEntry, readUnread, readUnreadLine } from '../../../src/resolve/cache/entry-codec.js'
import type { CachedAnswer } from '../../../src/resolve/cache/entry.js'

// A snapshot line is `["KEY",ENTRY]` with ENTRY as encodeEntry writes it (behaviour.md §11); a found
// record's values are kept unread at start and read when first asked for (src/resolve/cache/record-cache.ts).

const T = 1_795_591_539_528
const VALUES = [
  { index: 1, type: 'URL', data: { format: 'string', value: 'https://example.org/a"b' }, ttl: 86_400, timestamp: '2026-11-22T10:39:19Z' }
]
const FOUND: CachedAnswer = { kind: 'found', values: VALUES, storedAt: T, freshUntil: T + 3_600_000 }
const line = (key: string, entry: string): string => `[${JSON.stringify(key)},${entry}]`

describe("readUnreadLine: a found record's key and times, its values left as text", () => {
  const rows: Array<{ why: string; line: string; key?: string }> = [
    { why: 'a found record as the snapshot writes it', line: line('10.1000/ABC', encodeEntry(FOUND)), key: '10.1000/ABC' },
    { why: 'a key with a quote is left to the whole-line parser', line: line('10.1000/A"B', encodeEntry(FOUND)) },
    { why: 'a key with a backslash is left to the whole-line parser', line: line('10.1000/A\\B', encodeEntry(FOUND)) },
    {
      why: 'a not-found entry is left to the whole-line parser',
      line: line('10.1000/ABC', encodeEntry({ kind: 'not-found', storedAt: T, freshUntil: T + 60_000 }))
    },
    { why: 'a key we do not make (lower case) is no line of ours', line: line('10.1000/abc', encodeEntry(FOUND)) },
    { why: 'fresh until before stored is no entry', line: `["10.1000/ABC",[1,${T},${T - 1},1,[]]]` },
    { why: 'an absurd time is no entry', line: `["10.1000/ABC",[1,${T},9999999999999999,1,[]]]` },
    { why: 'another version is no entry of ours', line: `["10.1000/ABC",[2,${T},${T},1,[]]]` },
    { why: 'a line cut short is no entry', line: line('10.1000/ABC', encodeEntry(FOUND)).slice(0, -1) },
    { why: 'a raw control character in the key is no JSON', line: `["10.1000/A\u0001B",[1,${T},${T},1,[]]]` }
  ]
  it.each(rows)('$why', ({ line, key }) => {
    const read = readUnreadLine(line, 4096)
    expect(read?.[0]).toBe(key)
    if (key !== undefined) {
      expect(read?.[1]).toEqual({ kind: 'unread', storedAt: T, freshUntil: T + 3_600_000, text: JSON.stringify(VALUES) })
    }
  })
})

describe('an unread entry', () => {
  it('reads back to the entry it was written from', () => {
    const [, unread] = readUnreadLine(line('10.1000/ABC', encodeEntry(FOUND)), 4096) ?? []
    expect(unread === undefined ? undefined : readUnread(unread)).toEqual(FOUND)
  })
  it('is written again byte for byte as the entry it came from', () => {
    const [, unread] = readUnreadLine(line('10.1000/ABC', encodeEntry(FOUND)), 4096) ?? []
    expect(unread === undefined ? undefined : encodeEntry(unread)).toBe(encodeEntry(FOUND))
  })
  const bad: Array<{ why: string; text: string }> = [
    { why: 'not JSON', text: '[{"index":1' },
    { why: 'not a list', text: '{"index":1}' },
    { why: 'a value without a type', text: '[{"index":1,"data":{"format":"string","value":"x"}}]' },
    { why: 'an index that is not a number', text: '[{"index":"1","type":"URL","data":{}}]' }
  ]
  it.each(bad)('whose values are $why reads as nothing', ({ text }) => {
    expect(readUnread({ kind: 'unread', storedAt: T, freshUntil: T, text })).toBeUndefined()
  })
})
