import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { bibtexFields, citedWorksIn, entryKind, splitBibtex, withCited } from '../../../src/command/check/entries.js'
import type { EntryKind } from '../../../src/command/check/entries.js'
import { fileKind, findDois } from '../../../src/command/check/extract.js'

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/verify/${name}`, import.meta.url), 'utf8')

// Sources: BibTeX (Patashnik, BibTeXing 1988: @string, braces, entries in { } or ( )); RIS (Research
// Information Systems tags TY/TI/T1/AU/A1/PY/Y1/DO/ER); Citation File Format 1.2 (references,
// preferred-citation, identifiers); CSL-JSON schema 1.0 (DOI, title, issued, author).
const LAUGHS = [
  'a: &a [x, x, x, x, x, x, x, x, x]',
  ...'bcdefgh'.split('').map(
    (c, i) =>
      `${c}: &${c} [${Array(9)
        .fill('*' + 'abcdefgh'[i])
        .join(', ')}]`
  ),
  'references: [{doi: 10.1000/x, title: *h}]'
].join('\n')

describe('citedWorksIn: the works a reference file cites, on their lines', () => {
  it('reads BibTeX with LaTeX accents, braces, math, @strings, an organisation and a DOI link', () => {
    expect(citedWorksIn(fixture('refs.bib'), 'bibtex')).toEqual([
      {
        doi: '10.5555/accents',
        line: 4,
        endLine: 10,
        cited: { title: "On the DNA of Schrödinger's α cats: an École study", year: 2019, author: 'Müller, Hans' }
      },
      { doi: '10.5555/wrong-title', line: 12, endLine: 17, cited: { title: 'Deep nets for cats', year: 2020, author: 'Smith, Anna' } },
      {
        doi: '10.5555/year-off-one',
        line: 19,
        endLine: 25,
        cited: { title: 'Soil microbes of Iowa', year: 2018, author: 'van der Berg, Jan' }
      },
      {
        doi: '10.5555/year-off-two',
        line: 27,
        endLine: 34,
        cited: { title: 'A history of measurement – units and “standards”', year: 2015, author: 'World Health Organization' }
      },
      { doi: '10.5555/no-title', line: 36, endLine: 39, cited: { author: 'Nobody, N.' } }
    ])
  })

  it('reads RIS, taking the DO tag itself when citation-js drops a DOI it doubts', () => {
    expect(citedWorksIn(fixture('refs.ris'), 'ris')).toEqual([
      { doi: '10.5555/wrong-title', line: 1, endLine: 6, cited: { title: 'Deep nets for cats', year: 2020, author: 'Smith, Anna' } },
      {
        doi: '10.5555/year-off-one',
        line: 8,
        endLine: 13,
        cited: { title: 'Soil microbes of Iowa', year: 2018, author: 'van der Berg, Jan' }
      }
    ])
  })

  it("reads CITATION.cff's preferred-citation and references (doi or identifiers), not the software's own DOI", () => {
    expect(citedWorksIn(fixture('CITATION.cff'), 'cff')).toEqual([
      {
        doi: '10.5555/preferred',
        line: 9,
        endLine: 16,
        cited: { title: 'Resolving DOIs ourselves: a proxy', year: 2021, author: 'van der Berg, Jan' }
      },
      { doi: '10.5555/wrong-title', line: 18, endLine: 24, cited: { title: 'Deep nets for cats', year: 2020, author: 'Smith, Anna' } },
      {
        doi: '10.5555/by-identifier',
        line: 25,
        endLine: 32,
        cited: { title: 'A tool with an identifier', year: 2018, author: 'The Tool Team' }
      }
    ])
  })

  it('reads a CSL-JSON array, each item on its lines (braces and brackets inside strings do not count)', () => {
    expect(citedWorksIn(fixture('refs.json'), 'csl')).toEqual([
      {
        doi: '10.5555/year-off-one',
        line: 2,
        endLine: 9,
        cited: { title: 'Soil microbes of Iowa', year: 2018, author: 'van der Berg, Jan' }
      },
      { doi: '10.5555/wrong-title', line: 16, endLine: 23, cited: { title: 'Deep nets for cats', year: 2020, author: 'Anna Smith' } }
    ])
  })

  it.each<[EntryKind, string]>([
    ['bibtex', '@article{x, title = {unbalanced, doi = {10.1000/x}'],
    ['bibtex', 'https://example.org/refs.bib'], // never taken for a URL to fetch
    ['bibtex', '@'.repeat(10_000) + '{'.repeat(10_000)],
    ['ris', 'TY  - JOUR\nTI  - never ended\nDO  - 10.1000/x\n'],
    ['cff', 'references: [1, "x", {doi: 10.1000/x}]\n: : :'],
    ['cff', 'a: &a [*a]'],
    ['cff', LAUGHS], // a billion laughs: 9^8 nodes from 9 lines
    ['csl', '{"not": "closed"'],
    ['csl', '{"name": "a package.json", "version": "1.0.0"}'],
    ['csl', '[1, true, null, "x", {"DOI": 12}]']
  ])('a %s file it cannot read as such gives no entry, and no error: %j', (kind, text) => {
    expect(citedWorksIn(text, kind)).toEqual([])
  })

  it('keeps an entry it can read when another in the same .bib is broken', () => {
    const text =
      '@article{good, title = {Kept}, year = 2001, doi = {10.1000/good}}\n@article{bad, title = {x} # undefined # , doi = {10.1000/bad}\n'
    expect(citedWorksIn(text, 'bibtex')[0]).toEqual({ doi: '10.1000/good', line: 1, endLine: 1, cited: { title: 'Kept', year: 2001 } })
  })

  it('reads entries delimited by parentheses, and @comment/@preamble are not entries', () => {
    const text = '@comment{ignored}\n@preamble{"x"}\n@article(p,\n title = {In (parens)},\n doi = {10.1000/p})\n'
    expect(splitBibtex(text).map((c) => [c.type, c.key])).toEqual([
      ['comment', 'ignored'],
      ['preamble', '"x"'],
      ['article', 'p']
    ])
    expect(citedWorksIn(text, 'bibtex')).toEqual([{ doi: '10.1000/p', line: 3, endLine: 5, cited: { title: 'In (parens)' } }])
  })

  it('cuts what the batch would refuse: a title past 1,000 characters, an author past 200, a year out of 1000–2999', () => {
    const [work] = citedWorksIn(
      `@misc{x, title = {${'t'.repeat(1500)}}, author = {${'a'.repeat(300)}}, year = 3001, doi = {10.1000/x}}`,
      'bibtex'
    )
    expect(work!.cited.title).toHaveLength(1000)
    expect(work!.cited.author).toHaveLength(200)
    expect(work!.cited.year).toBeUndefined()
  })

  it('reads a .bib in time linear in its entries: 2,000 entries cost about four times 500', () => {
    // Speed is for bench/; this guards the shape: a quadratic reader costs sixteen times.
    const bibOf = (n: number): string =>
      Array.from({ length: n }, (_, i) => `@article{k${i},\n title = {Title {\\"o} ${i}},\n year = 2000,\n doi = {10.1000/${i}}\n}\n`).join(
        ''
      )
    const fastest = (text: string, n: number): number => {
      let best = Infinity
      for (let i = 0; i < 3; i++) {
        const started = performance.now()
        expect(citedWorksIn(text, 'bibtex')).toHaveLength(n)
        best = Math.min(best, performance.now() - started)
      }
      return best
    }
    const small = fastest(bibOf(500), 500)
    const large = fastest(bibOf(2000), 2000)
    expect(large / Math.max(small, 1)).toBeLessThan(9)
  })
})

describe('entryKind and withCited: which files hold entries, and which DOI found is whose', () => {
  it.each([
    ['refs.bib', 'bibtex'],
    ['a/b/Refs.BIBTEX', 'bibtex'],
    ['refs.ris', 'ris'],
    ['CITATION.cff', 'cff'],
    ['refs.json', 'csl'],
    ['README.md', undefined]
  ])('%s → %s', (path, kind) => {
    expect(entryKind(path)).toBe(kind)
  })

  it("gives each DOI found the entry it stands in; a DOI in another field (url) gets nothing of that entry's", () => {
    const text = fixture('refs.bib')
    const found = withCited(findDois(text, 'latex'), citedWorksIn(text, 'bibtex'))
    expect(found.map((f) => [f.doi, f.line, f.cited?.title ?? null])).toEqual([
      ['10.5555/accents', 9, "On the DNA of Schrödinger's α cats: an École study"],
      ['10.5555/wrong-title', 16, 'Deep nets for cats'],
      ['10.5555/year-off-one', 24, 'Soil microbes of Iowa'],
      ['10.5555/year-off-two', 32, expect.stringMatching(/^A history/)],
      ['10.5555/not-this-entry', 33, null],
      ['10.5555/no-title', 38, null]
    ])
  })
})

// Which DOI of an entry is the work its title names: its DOI field (BibTeX `doi`, RIS `DO`, CSL `DOI`, CFF `doi`
// or a doi identifier); with none, the DOI of a link or note (BibTeX `url`/`eprint`/`note`/`howpublished`,
// RIS `UR`/`L1`/`L2`/`N1`, CSL `URL`/`note`, CFF `url`). Any other DOI in the entry is checked for
// registration only: given the entry's title, a correct reference would read as a DOI naming another work.
const OWN_DOI: Array<[string, EntryKind, string, Array<[string, number, string | null]>]> = [
  [
    'bibtex: a url naming another DOI than doi',
    'bibtex',
    '@article{a,\n title = {Cats},\n doi = {10.1000/own},\n url = {https://doi.org/10.1000/other}\n}\n',
    [
      ['10.1000/own', 3, 'Cats'],
      ['10.1000/other', 4, null]
    ]
  ],
  [
    'bibtex: the url written before the doi',
    'bibtex',
    '@article{a,\n title = {Cats},\n url = {https://doi.org/10.1000/other},\n doi = {10.1000/own}\n}\n',
    [
      ['10.1000/other', 3, null],
      ['10.1000/own', 4, 'Cats']
    ]
  ],
  [
    'bibtex: both on one line',
    'bibtex',
    '@article{a, title = {Cats}, doi = {10.1000/own}, url = {https://doi.org/10.1000/other}}\n',
    [
      ['10.1000/own', 1, 'Cats'],
      ['10.1000/other', 1, null]
    ]
  ],
  [
    'bibtex: no doi field, the url gives it',
    'bibtex',
    '@article{a,\n title = {Cats},\n url = {https://doi.org/10.1000/own}\n}\n',
    [['10.1000/own', 3, 'Cats']]
  ],
  [
    'bibtex: no doi field, a BibLaTeX eprint gives it',
    'bibtex',
    '@article{a,\n title = {Cats},\n eprinttype = {doi},\n eprint = {10.1000/own}\n}\n',
    [['10.1000/own', 4, 'Cats']]
  ],
  [
    'bibtex: no doi field, a note gives it',
    'bibtex',
    '@misc{a,\n title = "Cats",\n note = {doi:10.1000/own}\n}\n',
    [['10.1000/own', 3, 'Cats']]
  ],
  [
    'bibtex: a note naming an erratum beside the doi',
    'bibtex',
    '@article{a,\n title = {Cats},\n doi = {10.1000/own},\n note = {Erratum: doi:10.1000/erratum}\n}\n',
    [
      ['10.1000/own', 3, 'Cats'],
      ['10.1000/erratum', 4, null]
    ]
  ],
  [
    'bibtex: the url rather than the note, when there is no doi',
    'bibtex',
    '@article{a,\n title = {Cats},\n note = {see 10.1000/other},\n url = {https://doi.org/10.1000/own}\n}\n',
    [
      ['10.1000/other', 3, null],
      ['10.1000/own', 4, 'Cats']
    ]
  ],
  [
    'ris: a UR naming another DOI than DO',
    'ris',
    'TY  - JOUR\nTI  - Cats\nUR  - https://doi.org/10.1000/other\nDO  - 10.1000/own\nER  - \n',
    [
      ['10.1000/other', 3, null],
      ['10.1000/own', 4, 'Cats']
    ]
  ],
  ['ris: no DO, UR gives it', 'ris', 'TY  - JOUR\nTI  - Cats\nUR  - https://doi.org/10.1000/own\nER  - \n', [['10.1000/own', 3, 'Cats']]],
  [
    'ris: no DO, L1 gives it (a UR to a publisher is no DOI)',
    'ris',
    'TY  - JOUR\nTI  - Cats\nUR  - https://journal.example/a/1\nL1  - https://doi.org/10.1000/own\nER  - \n',
    [['10.1000/own', 4, 'Cats']]
  ],
  [
    'csl: a URL naming another DOI than DOI',
    'csl',
    '[\n  {\n    "title": "Cats",\n    "DOI": "10.1000/own",\n    "URL": "https://doi.org/10.1000/other"\n  }\n]\n',
    [
      ['10.1000/own', 4, 'Cats'],
      ['10.1000/other', 5, null]
    ]
  ],
  [
    'csl: no DOI, the URL gives it',
    'csl',
    '[\n  {\n    "title": "Cats",\n    "URL": "https://doi.org/10.1000/own"\n  }\n]\n',
    [['10.1000/own', 4, 'Cats']]
  ],
  [
    'cff: a url naming another DOI than doi',
    'cff',
    'references:\n  - title: Cats\n    doi: 10.1000/own\n    url: https://doi.org/10.1000/other\n',
    [
      ['10.1000/own', 3, 'Cats'],
      ['10.1000/other', 4, null]
    ]
  ],
  [
    'cff: no doi, the url gives it',
    'cff',
    'references:\n  - title: Cats\n    url: https://doi.org/10.1000/own\n',
    [['10.1000/own', 3, 'Cats']]
  ]
]

describe("an entry's cited work belongs to its own DOI only", () => {
  const found = { bibtex: 'refs.bib', ris: 'refs.ris', csl: 'refs.json', cff: 'CITATION.cff' } as const
  it.each(OWN_DOI)('%s', (_name, kind, text, expected) => {
    const dois = withCited(findDois(text, fileKind(found[kind])!), citedWorksIn(text, kind))
    expect(dois.map((d) => [d.doi, d.line, d.cited?.title ?? null])).toEqual(expected)
  })
})

describe("bibtexFields: an entry's fields as written", () => {
  it.each<[string, Record<string, string>]>([
    ['@article{k, doi = {10.1000/x}, url = "https://doi.org/10.1000/y"}', { doi: '{10.1000/x}', url: '"https://doi.org/10.1000/y"' }],
    ['@article(k,\n  Title = {a, {b}, c} # " d",\n  year = 2019\n)', { title: '{a, {b}, c} # " d"', year: '2019' }],
    ['@article{k, note = "a {"} b", doi = {10.1000/x},}', { note: '"a {"} b"', doi: '{10.1000/x}' }],
    ['@article{k, doi = {10.1000/first}, doi = {10.1000/second}}', { doi: '{10.1000/first}' }],
    ['@article{k, junk without equals, doi = {10.1000/x}}', { doi: '{10.1000/x}' }],
    ['@article{k, doi = {never closed', { doi: '{never closed' }],
    ['@article{k}', {}],
    ['no entry', {}]
  ])('%j', (entry, fields) => {
    expect(Object.fromEntries(bibtexFields(entry))).toEqual(fields)
  })

  it('reads a hostile entry in one pass', () => {
    const started = performance.now()
    bibtexFields('@a{k' + ', x = {'.repeat(50_000) + ','.repeat(50_000))
    expect(performance.now() - started).toBeLessThan(500)
  })
})
