import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { findDois } from '../../../src/command/check/extract.js'
import type { FileKind, FoundDoi } from '../../../src/command/check/extract.js'
import { percentDecode } from '../../../src/handle/name.js'

const EXTRACT = new URL('../../../src/command/check/extract.ts', import.meta.url).pathname
const TSX = new URL('../../../node_modules/tsx/dist/loader.mjs', import.meta.url).href
const run = promisify(execFile)

// Files of about 1 MB built to make a DOI extractor slow: a quadratic one takes minutes to hours on each.
const HOSTILE: Record<string, string> = {
  'a DOI cut by ^ 100,000 times (each looks back for a URL)': "'10.1234/a^'.repeat(100_000)",
  'a DOI and a million )': "'10.1234/a' + ')'.repeat(1_000_000)",
  'a DOI and a million trailing full stops': "'10.1234/a' + '.'.repeat(1_000_000)",
  'a DOI inside a URL path with a million ^ separated DOIs': "'https://example.org/' + '10.1234/a^'.repeat(100_000)",
  'links and bare DOIs interleaved (each bare one asks whether it is in a link)': "'https://doi.org/10.1000/a 10.1234/b '.repeat(28_000)",
  'doi: shortDOIs and links interleaved': "'doi:10/abc https://doi.org/10/x '.repeat(30_000)",
  'a million ( then a )': "'10.1234/' + '('.repeat(1_000_000) + ')'",
  'one HTML line of entities': "'10.1234/' + '&amp;&#41;'.repeat(100_000)"
}

describe('findDois on a hostile file', () => {
  it('reads each 1 MB file built to be slow about as fast as 1 MB of plain text', { timeout: 90_000 }, async () => {
    // In a child process with a deadline: a quadratic extractor would block this test's own thread for hours.
    const script = `const { findDois } = await import(${JSON.stringify(EXTRACT)})
      const times = {}
      for (const [name, make] of Object.entries({ ${Object.entries(HOSTILE)
        .map(([name, make]) => `${JSON.stringify(name)}: () => ${make}`)
        .join(', ')} })) {
        const text = make()
        times[name] = Infinity
        for (let i = 0; i < 3; i++) { // the fastest of three: a busy machine slows one run, not the extractor
          const started = performance.now()
          findDois(text, 'html')
          times[name] = Math.min(times[name], Math.round(performance.now() - started))
        }
      }
      const plain = 'Some plain words of a reference list, doi 10.1234/abc. '.repeat(20_000)
      let baseline = Infinity
      for (let i = 0; i < 3; i++) {
        const started = performance.now()
        findDois(plain, 'html')
        baseline = Math.min(baseline, performance.now() - started)
      }
      console.log(JSON.stringify({ times, baseline }))`
    const { stdout } = await run(process.execPath, ['--import', TSX, '--input-type=module', '-e', script], { timeout: 60_000 }).catch(
      (err: Error & { killed?: boolean }) => {
        throw new Error(err.killed === true ? 'findDois did not finish the hostile files in 60 s' : err.message)
      }
    )
    const { times, baseline } = JSON.parse(stdout) as { times: Record<string, number>; baseline: number }
    expect(Object.keys(times)).toEqual(Object.keys(HOSTILE))
    // Against 1 MB of plain text read in the same child (a loaded machine slows both): a quadratic extractor
    // takes hours on these, a linear one a small multiple of the plain text's time.
    const bound = Math.max(1000, 20 * baseline)
    expect(Object.entries(times).filter(([, ms]) => ms >= bound)).toEqual([])
  })
})

/**
 * The extractor as its rules say it, without a thought for speed (quadratic): each DOI's context is
 * looked at from the start of the text. findDois must find exactly what this finds.
 */
function reference(text: string, kind: FileKind): FoundDoi[] {
  const source = kind === 'json' ? text.replace(/\\\//g, '/') : kind === 'latex' ? text.replace(/\\([_%#&])/g, '$1') : text
  const lineOf = (at: number): number => source.slice(0, at).split('\n').length
  const found: Array<FoundDoi & { at: number }> = []
  const links: Array<[number, number]> = []
  // eslint-disable-next-line no-control-regex
  for (const m of source.matchAll(/(?:https?:\/\/)?(?:dx\.|www\.)?doi\.org\/([^\s\u0000-\u001f\u007f-\u009f"'<>`{}[\]\\|^?#]+)/gi)) {
    links.push([m.index, m.index + m[0].length])
    const doi = referenceClean(m[1]!, kind, true)
    if (doi !== undefined) found.push({ doi, line: lineOf(m.index), at: m.index })
  }
  const inLink = (at: number): boolean => links.some(([from, to]) => from <= at && at < to)
  const inOtherUrl = (at: number): boolean => {
    const token = source
      .slice(0, at)
      .split(/[\s"'<>()[\]{}`|]/)
      .at(-1)!
    return token.includes('://') || token.toLowerCase().startsWith('www.')
  }
  // eslint-disable-next-line no-control-regex
  for (const m of source.matchAll(/(?<![\w.-])10\.\d{4,9}(?:\.\d+)*\/[^\s\u0000-\u001f\u007f-\u009f"'<>`{}[\]\\|^]+/g)) {
    if (inLink(m.index) || inOtherUrl(m.index)) continue
    const doi = referenceClean(m[0], kind, false)
    if (doi !== undefined) found.push({ doi, line: lineOf(m.index), at: m.index })
  }
  for (const m of source.matchAll(/\bdoi:\s?(10\/[a-z0-9]+)\b/gi)) {
    if (!inLink(m.index)) found.push({ doi: m[1]!, line: lineOf(m.index), at: m.index })
  }
  return found.sort((a, b) => a.at - b.at).map(({ doi, line }) => ({ doi, line }))
}

function referenceClean(raw: string, kind: FileKind, link: boolean): string | undefined {
  let s = kind === 'html' || kind === 'markdown' ? referenceEntities(raw) : raw
  // eslint-disable-next-line no-control-regex
  s = s.split(/[\u0000-\u001f\u007f-\u009f]/)[0]!
  for (;;) {
    const count = (ch: string): number => s.split(ch).length - 1
    if (s !== '' && '.,;:!?\'"*_~'.includes(s.at(-1)!)) s = s.slice(0, -1)
    else if (s.endsWith(')') && count('(') < count(')')) s = s.slice(0, -1)
    else break
  }
  if (link) {
    const decoded = percentDecode(s)
    if (decoded === undefined) return undefined
    s = decoded
  }
  return /^10(?:\.\d{4,9}(?:\.\d+)*)?\/\S/.test(s) ? s : undefined
}

function referenceEntities(s: string): string {
  const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }
  return s.replace(/&(?:#(\d+)|#x([0-9a-f]+)|(amp|lt|gt|quot|apos));/gi, (whole, dec?: string, hex?: string, name?: string) => {
    if (name !== undefined) return named[name.toLowerCase()]!
    const code = dec !== undefined ? Number(dec) : parseInt(hex!, 16)
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
  })
}

// Pieces that make the rules meet: prefixes, links, URL boundaries, brackets, punctuation, escapes, controls.
const PIECES = [
  '10.1234/',
  '10.12345.6/',
  '10/',
  '10.1/',
  'a',
  'B9',
  'x',
  '0',
  '(',
  ')',
  '^',
  ' ',
  '\n',
  '.',
  ',',
  ';',
  ':',
  '!',
  '?',
  '"',
  "'",
  '*',
  '_',
  '~',
  '-',
  '/',
  'https://',
  'http://',
  '://',
  'www.',
  'WWW.',
  'doi.org/',
  'dx.doi.org/',
  'doi:',
  'doi: ',
  'urn:doi:',
  '%2F',
  '%0A',
  '%',
  '%E2%82',
  '&amp;',
  '&#41;',
  '&#x28;',
  '&lt;',
  '&bogus;',
  '&#27;',
  '&#x9b;',
  '&#X1b;',
  '<',
  '>',
  '[',
  ']',
  '{',
  '}',
  '`',
  '|',
  '\\',
  '\\/',
  '\\_',
  '#',
  '\x1b',
  '\u009b',
  '\x7f',
  '\t',
  'é',
  '😀'
]
// And DOIs whose ends are in doubt: brackets, punctuation and escapes of both, after each way of writing one.
const STARTS = [
  '10.1234/',
  'doi:10.1234/',
  'https://doi.org/10.1234/',
  'https://doi.org/10/',
  'doi:10/',
  'https://x.org/10.1234/',
  'www.x/10.1234/',
  '(10.1234/'
]
const ENDS = ['a', '(', ')', '.', ',', ';', ':', '!', '_', '~', '&#41;', '&#x28;', '%29', '%28', '\\)', '&#27;', '&#x9b;']
const DOUBTFUL = fc
  .array(fc.tuple(fc.constantFrom(...STARTS), fc.array(fc.constantFrom(...ENDS), { maxLength: 8 }), fc.constantFrom(' ', '\n', ')', '')), {
    maxLength: 6
  })
  .map((dois) => dois.map(([start, end, after]) => start + end.join('') + after).join(''))
const KINDS: FileKind[] = ['markdown', 'html', 'latex', 'json', 'text']

describe('findDois against a reference that follows the rules naively', () => {
  it('finds the same DOIs on the same lines in generated files', () => {
    const texts = fc.oneof(
      { arbitrary: fc.array(fc.constantFrom(...PIECES), { maxLength: 60 }).map((pieces) => pieces.join('')), weight: 4 },
      { arbitrary: DOUBTFUL, weight: 4 },
      { arbitrary: fc.string({ unit: 'binary', maxLength: 80 }), weight: 1 }
    )
    fc.assert(
      fc.property(texts, fc.constantFrom(...KINDS), (text, kind) => {
        expect(findDois(text, kind)).toEqual(reference(text, kind))
      }),
      { numRuns: 5000 }
    )
  }, 60_000)

  it('agrees on what each named rule is about (the reference is not vacuous)', () => {
    const text = 'https://doi.org/10.1000/a (10.1234/b)) https://example.org/10.1234/c www.x/10.1234/d doi:10/e 10.1234/f\x1b.'
    expect(reference(text, 'text').map((f) => f.doi)).toEqual(['10.1000/a', '10.1234/b', '10/e', '10.1234/f'])
    expect(findDois(text, 'text')).toEqual(reference(text, 'text'))
  })
})
