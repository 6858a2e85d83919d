import { describe, expect, it } from 'vitest'
import { parseBatchEntry, parseBatchLine, textEntries } from '../../src/handle/batch.js'
import type { BatchEntry } from '../../src/handle/batch.js'

// Sources: D§2 = behaviour.md §2 (what /{doi} accepts); issue 28 (the batch's own rules); shortdoi.org.

describe('textEntries: the lines of a text/plain batch', () => {
  it.each([
    ['10.1/a\n10.1/b\n', ['10.1/a', '10.1/b'], 'issue 28: one DOI a line'],
    ['10.1/a\r\n10.1/b', ['10.1/a', '10.1/b'], 'CRLF lines (Windows editors)'],
    ['\n\n  \t\n10.1/a\n', ['10.1/a'], 'issue 28: blank lines skipped'],
    ['# refs\n  # indented\n10.1/a', ['10.1/a'], 'issue 28: # comments skipped'],
    ['10.1/a\r10.1/b', ['10.1/a\r10.1/b'], 'a CR in the middle stays in its line, to be refused there'],
    ['', [], 'an empty body has no lines']
  ])('%j → %j (%s)', (body, entries) => {
    expect(textEntries(body)).toEqual(entries)
  })
})

describe('parseBatchLine: a line read as GET /{line} reads its path', () => {
  it.each([
    ['10.1000/182', '10.1000/182', 'plain'],
    ['doi:10.1000/182', '10.1000/182', 'D§2.4 doi:'],
    ['DOI: 10.1000/182', '10.1000/182', 'D§2.4, then trimmed'],
    ['urn:doi:10.1000:182', '10.1000/182', 'D§2.4 urn:doi: colon to slash'],
    ['info:doi/10.1000/182', '10.1000/182', 'D§2.4'],
    ['https://doi.org/10.1000/182', '10.1000/182', 'D§2.4 resolver URL'],
    ['http://dx.doi.org/10.1000/182', '10.1000/182', 'D§2.4 old resolver host'],
    ['https://doi.org/10.1000/182?x=1#y', '10.1000/182', "a pasted link's query and fragment are not part of the name"],
    ['10.1000%2F182', '10.1000/182', 'D§2.2 percent-decoded once'],
    ['10.1000/a%2520b', '10.1000/a%20b', 'D§2.2 decoded once only'],
    ['10.1000/a?b', '10.1000/a?b', 'a bare name keeps its ? (it is part of the name)'],
    [
      '10.1002/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-0',
      '10.1002/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-0',
      'SICI as written'
    ],
    ['10/abc', '10/abc', 'shortdoi.org: a shortDOI, looked up and followed'],
    ['10.1000', '10.1000', 'a prefix alone is a handle, as on Which RA?']
  ])('%j is %j (%s)', (line, handle) => {
    expect(parseBatchLine(line, 4096)).toEqual({ kind: 'doi', input: line, handle })
  })

  it.each([
    ['hello', 'not a DOI name: "hello" does not start', 'issue 28: not a DOI, no lookup'],
    ['11.1000/x', 'not a DOI name: "11.1000/x"', 'the directory prefix is 10.'],
    ['10./x', 'not a DOI name', 'an empty registrant code'],
    ['', 'not a DOI name: the line is empty', 'issue 45: an empty JSON string is a line that is not a DOI, like any other'],
    ['   ', 'not a DOI name: the line is empty', 'only blanks'],
    ['doi:', 'not a DOI name: the line has no name', 'a prefix and nothing after'],
    ['10.1/a\u0000b', 'control character (U+0000)', 'D§2.3 control characters'],
    ['10.1/a\rb', 'control character (U+000D)', 'D§2.3'],
    ['10.1/%ff', 'not valid UTF-8', 'D§2.2'],
    [`10.1/${'x'.repeat(5000)}`, 'too long', 'D§2 MAX_HANDLE_LENGTH']
  ])('%j is refused (%s)', (line, message) => {
    const parsed = parseBatchLine(line, 4096)
    expect(parsed).toEqual({ kind: 'invalid', input: line, message: expect.stringContaining(message) })
    if (parsed.kind === 'invalid') expect(parsed.message.length).toBeLessThan(300)
  })
})

// Issue 41: a JSON item of a verifying batch is `{doi, title, year, author}` (title ≤ 1,000 characters, year 1000–2999, author ≤ 200).
describe('parseBatchEntry: a JSON item, a string or the work a reference cites', () => {
  it.each<[BatchEntry, ReturnType<typeof parseBatchEntry>, string]>([
    ['10.1/a', { kind: 'doi', input: '10.1/a', handle: '10.1/a' }, 'a string is a line, as before'],
    [{ doi: '10.1/a' }, { kind: 'doi', input: '10.1/a', handle: '10.1/a' }, 'an object with only its DOI cites nothing'],
    [
      { doi: 'doi:10.1/a', title: 'Soil microbes', year: 2019, author: 'Müller, H.' },
      { kind: 'doi', input: 'doi:10.1/a', handle: '10.1/a', cited: { title: 'Soil microbes', year: 2019, author: 'Müller, H.' } },
      'issue 41: the cited work, its DOI read as a line is'
    ],
    [
      { doi: '10.1/a', year: '2019' },
      { kind: 'doi', input: '10.1/a', handle: '10.1/a', cited: { year: 2019 } },
      "a year's digits as a string (a .bib gives text)"
    ],
    [
      { doi: '10.1/a', title: '  ', author: null, year: '' },
      { kind: 'doi', input: '10.1/a', handle: '10.1/a' },
      'blank and null fields are absent'
    ],
    [
      { doi: '10.1/a', year: 99999 },
      { kind: 'invalid', input: '10.1/a', message: 'its year is not a year from 1000 to 2999' },
      'issue 41: year 1000-2999'
    ],
    [
      { doi: '10.1/a', year: 2019.5 },
      { kind: 'invalid', input: '10.1/a', message: 'its year is not a year from 1000 to 2999' },
      'a year is whole'
    ],
    [
      { doi: '10.1/a', title: 'x'.repeat(1001) },
      { kind: 'invalid', input: '10.1/a', message: 'its title is longer than 1000 characters' },
      'issue 41: title ≤ 1,000'
    ],
    [
      { doi: '10.1/a', author: 'x'.repeat(201) },
      { kind: 'invalid', input: '10.1/a', message: 'its author is longer than 200 characters' },
      'issue 41: author ≤ 200'
    ],
    [{ doi: '10.1/a', title: 7 }, { kind: 'invalid', input: '10.1/a', message: 'its title is not a string' }, 'a title is text'],
    [
      { doi: 'nope', title: 'x' },
      expect.objectContaining({ kind: 'invalid', input: 'nope' }) as never,
      'a DOI that is not one is refused first, as a line'
    ]
  ])('%j', (entry, expected, _source) => {
    expect(parseBatchEntry(entry, 1024)).toEqual(expected)
  })
})
