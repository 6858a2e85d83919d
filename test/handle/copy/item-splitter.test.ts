import { describe, expect, it } from 'vitest'
import { createItemSplitter, createLineSplitter } from '../../../src/handle/copy/item-splitter.js'
import type { SplitProblem } from '../../../src/handle/copy/item-splitter.js'

// Sources: RFC 8259 (JSON: strings, escapes \" and \\, nesting); plan-43 §1.11 (items of the array at a
// path, cut chunk by chunk, never a whole file; an item over REGISTRY_COPY_MAX_RECORD_BYTES skipped unheld);
// JSON Lines (jsonlines.org: one value a line, \n, a \r before it allowed).

interface Split {
  items: string[]
  problems: SplitProblem[]
}

function splitArray(path: string[], chunks: string[], maxBytes = 1 << 20, dropKeys?: string[]): Split {
  const out: Split = { items: [], problems: [] }
  const s = createItemSplitter({
    path,
    maxBytes,
    ...(dropKeys === undefined ? {} : { dropKeys }),
    onItem: (i) => out.items.push(i.bytes.toString('utf8')),
    onProblem: (p) => out.problems.push(p)
  })
  for (const c of chunks) s.write(Buffer.from(c, 'utf8'))
  s.end()
  return out
}

/** Every way of cutting `text` in two, and one byte at a time. */
function everyCut(text: string): string[][] {
  const cuts = [[text], [...text]]
  for (let i = 1; i < text.length; i++) cuts.push([text.slice(0, i), text.slice(i)])
  return cuts
}

const CROSSREF = '{"items":[{"DOI":"10.1/a","title":["say \\"hi\\" \\\\"]},{"DOI":"10.1/b","x":[[1,{"y":"]}"}]]}, {"DOI":"10.1/c"} ]}'
const CROSSREF_ITEMS = ['{"DOI":"10.1/a","title":["say \\"hi\\" \\\\"]}', '{"DOI":"10.1/b","x":[[1,{"y":"]}"}]]}', '{"DOI":"10.1/c"}']

describe('items cut from a JSON array at a path', () => {
  it.each(everyCut(CROSSREF).map((chunks) => [chunks.map((c) => c.length).join('+'), chunks]))(
    'chunks of %s bytes give the same items (escapes, brackets in strings, nesting)',
    (_, chunks) => {
      expect(splitArray(['items'], chunks as string[])).toEqual({ items: CROSSREF_ITEMS, problems: [] })
    }
  )

  it.each([
    // Crossref REST page: the items under message, other keys (facets, next-cursor) before and after.
    [
      ['message', 'items'],
      '{"status":"ok","message":{"facets":{"items":[9]},"items":[{"DOI":"a"},{"DOI":"b"}],"next-cursor":"x"}}',
      ['{"DOI":"a"}', '{"DOI":"b"}']
    ],
    // DataCite REST page.
    [['data'], '{"data":[{"id":"a"}],"meta":{"total":1},"links":{}}', ['{"id":"a"}']],
    // Our JSON array: the root.
    [[], '[{"handle":"a"} , {"handle":"b"}]', ['{"handle":"a"}', '{"handle":"b"}']],
    // An "items" key deeper than the path is not it.
    [['items'], '{"meta":{"items":[1,2]},"items":[{"a":1}]}', ['{"a":1}']],
    // Scalars are items too (the mapper names them).
    [['items'], '{"items":[1, "two", null,true]}', ['1', '"two"', 'null', 'true']],
    // Keys with escapes are compared decoded only as far as needed: an escaped key is another key.
    [['items'], '{"it\\u0065ms":[{"a":1}],"items":[]}', []]
  ])('at %j of %s', (path, text, items) => {
    expect(splitArray(path, [text])).toEqual({ items, problems: [] })
  })

  it('an item over maxBytes is named and skipped, never held, and the next ones still come', () => {
    const big = `{"DOI":"10.1/big","t":"${'x'.repeat(5000)}"}`
    const text = `{"items":[{"DOI":"a"},${big},{"DOI":"b"}]}`
    const chunks = text.match(/[\s\S]{1,700}/g)!
    expect(splitArray(['items'], chunks, 1000)).toEqual({
      items: ['{"DOI":"a"}', '{"DOI":"b"}'],
      problems: [
        { item: 2, offset: 22, message: 'the item is larger than 1000 bytes (REGISTRY_COPY_MAX_RECORD_BYTES): skipped', fatal: false }
      ]
    })
  })

  it('a file cut off inside an item names it; the items before it came', () => {
    expect(splitArray(['items'], ['{"items":[{"DOI":"a"},{"DOI":"b","ti'])).toEqual({
      items: ['{"DOI":"a"}'],
      problems: [{ item: 2, offset: 22, message: 'the file ends inside this item: it was cut off', fatal: true }]
    })
  })

  it('a file cut off between items says so', () => {
    expect(splitArray(['items'], ['{"items":[{"DOI":"a"},'])).toMatchObject({
      items: ['{"DOI":"a"}'],
      problems: [{ message: 'the file ends before its JSON does: it was cut off', fatal: true }]
    })
  })

  it('an unbalanced bracket between items stops the file, naming the byte', () => {
    expect(splitArray(['items'], ['{"items":[{"DOI":"a"}},{"DOI":"b"}]}'])).toEqual({
      items: ['{"DOI":"a"}'],
      problems: [{ offset: 21, message: 'JSON error at byte 21: an unexpected }; the rest of the file is skipped', fatal: true }]
    })
  })

  it('an item broken inside but balanced is handed on whole, for its parse to name', () => {
    expect(splitArray(['items'], ['{"items":[{"DOI":"a",,},{"DOI":"b"}]}']).items).toEqual(['{"DOI":"a",,}', '{"DOI":"b"}'])
  })

  it('no array at the path is said', () => {
    expect(splitArray(['items'], ['{"other":[1]}']).problems).toEqual([
      { offset: 13, message: 'no array of items at "items"', fatal: true }
    ])
  })

  it('text that is no JSON is said at once', () => {
    expect(splitArray(['items'], ['hello']).problems).toEqual([
      { offset: 0, message: 'JSON error at byte 0: the file does not start with { or [', fatal: true }
    ])
  })
})

// A Crossref work's `reference` list is read by no mapper: its value comes out as null, never held (plan-43 §8:
// biblio-glutton skips them too). Keys as in Crossref's REST API work JSON.
const WITH_REFERENCES =
  '{"items":[{"DOI":"10.1/a","reference":[{"key":"r1","unstructured":"say \\"]}\\\\"},{"key":"r2"}],"title":["T"]},' +
  '{"DOI":"10.1/b","x":{"reference":[1]},"reference" : {"a":[]} ,"note":"reference"},' +
  '{"DOI":"10.1/c","reference":"kept: not an object or array","y":["reference",[2]]},["reference",[3]]]}'
const WITHOUT_REFERENCES = [
  '{"DOI":"10.1/a","reference":null,"title":["T"]}',
  '{"DOI":"10.1/b","x":{"reference":[1]},"reference" : null ,"note":"reference"}',
  '{"DOI":"10.1/c","reference":"kept: not an object or array","y":["reference",[2]]}',
  '["reference",[3]]'
]

describe('dropped keys: the top-level values of an item the mappers never read', () => {
  it.each(everyCut(WITH_REFERENCES).map((chunks) => [chunks.map((c) => c.length).join('+'), chunks]))(
    'chunks of %s bytes: an object or array under the key is null, deeper keys and string values untouched',
    (_, chunks) => {
      const split = splitArray(['items'], chunks as string[], 1 << 20, ['reference'])
      expect(split).toEqual({ items: WITHOUT_REFERENCES, problems: [] })
      for (const item of split.items) expect(() => JSON.parse(item) as unknown).not.toThrow()
    }
  )

  it('the bytes dropped still count for maxBytes: an item is as large as it is in the file', () => {
    const text = `{"items":[{"DOI":"a","reference":[${'1,'.repeat(600)}1]},{"DOI":"b","reference":[1]}]}`
    const split = splitArray(['items'], text.match(/[\s\S]{1,100}/g)!, 1000, ['reference'])
    expect(split.items).toEqual(['{"DOI":"b","reference":null}'])
    expect(split.problems).toMatchObject([
      { item: 1, message: 'the item is larger than 1000 bytes (REGISTRY_COPY_MAX_RECORD_BYTES): skipped' }
    ])
  })
})

function splitLines(chunks: string[], maxBytes = 1 << 20): { items: Array<[number, string]>; problems: SplitProblem[] } {
  const out = { items: [] as Array<[number, string]>, problems: [] as SplitProblem[] }
  const s = createLineSplitter({
    maxBytes,
    onItem: (i) => out.items.push([i.index, i.bytes.toString('utf8')]),
    onProblem: (p) => out.problems.push(p)
  })
  for (const c of chunks) s.write(Buffer.from(c, 'utf8'))
  s.end()
  return out
}

describe('items a line', () => {
  const TEXT = '{"a":1}\r\n\n  \n{"b":"x\\ny"}\n{"c":3}'
  it.each(everyCut(TEXT).map((chunks) => [chunks.map((c) => c.length).join('+'), chunks]))(
    'chunks of %s bytes give the same lines, numbered as in the file, blank ones and \\r left out',
    (_, chunks) => {
      expect(splitLines(chunks as string[])).toEqual({
        items: [
          [1, '{"a":1}'],
          [4, '{"b":"x\\ny"}'],
          [5, '{"c":3}']
        ],
        problems: []
      })
    }
  )

  it('a line over maxBytes is named and skipped', () => {
    expect(splitLines(['{"a":1}\n', 'x'.repeat(300), 'x'.repeat(300), '\n{"b":2}\n'], 500)).toEqual({
      items: [
        [1, '{"a":1}'],
        [3, '{"b":2}']
      ],
      problems: [
        { item: 2, offset: 8, message: 'the line is longer than 500 bytes (REGISTRY_COPY_MAX_RECORD_BYTES): skipped', fatal: false }
      ]
    })
  })
})
