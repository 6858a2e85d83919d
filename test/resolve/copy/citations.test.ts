import { readFileSync } from 'node:fs'
import { afterAll, describe, expect, it, onTestFinished } from 'vitest'
import { crossrefRecordOf } from '../../../src/handle/copy/crossref-record.js'
import { dataciteRecordOf } from '../../../src/handle/copy/datacite-record.js'
import type { Csl } from '../../../src/handle/copy/types.js'
import { CitationBusy, CitationError, CitationUnknownFormat, createCitations } from '../../../src/resolve/copy/citations.js'
import type { CitationOptions, Citations } from '../../../src/resolve/copy/citations.js'

// Citations formatted from the copy's CSL-JSON (plan-43 §1.10) with citation-js 0.7, a real worker thread
// for bibliographies. Vectors: the copy's fixtures through the T2 mappers; the expected bodies are citation-js
// 0.7.22's (citeproc-js with its bundled apa, vancouver, harvard1 and en-US), checked by hand against the
// styles, with our changes: the BibTeX key as the agencies write it (`LeCun_2015`, docs/metadata.md), UTF-8
// BibTeX, RIS one tag a line without the 20-character `ID`.

const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/copy/${name}`, import.meta.url), 'utf8')
const works = (JSON.parse(fixture('crossref-works.json')) as { items: unknown[] }).items
const dois = fixture('datacite-dois.jsonl')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as unknown)

function cslOf(mapped: ReturnType<typeof crossrefRecordOf>): Csl {
  if (typeof mapped === 'string' || mapped.csl === undefined) throw new Error(`no CSL: ${String(mapped)}`)
  return mapped.csl
}
const ALL = { abstracts: true }
const nature = cslOf(crossrefRecordOf(works[0], ALL))
const chapter = cslOf(crossrefRecordOf(works[3], ALL))
const scipy = cslOf(dataciteRecordOf(dois[0], ALL))
const schema = cslOf(dataciteRecordOf(dois[1], ALL))

const quiet = { info: () => {}, warn: () => {} }
function citations(opts: Partial<CitationOptions> = {}): Citations {
  const c = createCitations({ queueMax: 8, cacheMax: 100, log: quiet, ...opts })
  onTestFinished(() => c.close())
  return c
}

// One formatter for the vectors: citeproc's first entry costs ~0.5 s (and tsx in the worker, here).
const shared = createCitations({ queueMax: 64, cacheMax: 100, log: quiet })
afterAll(() => shared.close())

async function failure(p: Promise<unknown>): Promise<CitationError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e
  )
  if (!(err instanceof CitationError)) throw new Error(`expected a CitationError, got ${String(err)}`)
  return err
}

describe('bibliographies (text/x-bibliography), formatted in the worker thread', () => {
  it.each([
    // CSL style apa (APA 7th): authors, (year), title, container, volume(issue), pages, the DOI as a URL.
    [
      'apa',
      nature,
      'LeCun, Y., Bengio, Y., & Hinton, G. (2015). Deep learning. Nature, 521(7553), 436–444. https://doi.org/10.1038/nature14539\n'
    ],
    // CSL style vancouver (ICMJE): numbered, family + initials, [Internet], date;volume(issue):pages, "Available from".
    [
      'vancouver',
      nature,
      '1.  LeCun Y, Bengio Y, Hinton G. Deep learning. Nature [Internet]. 2015 May 28;521(7553):436–44. Available from: https://doi.org/10.1038/nature14539\n'
    ],
    // CSL style harvard1 (Cite Them Right): (year) “title,” container, vol(issue), pp.; doi: prefix.
    [
      'harvard1',
      nature,
      'LeCun, Y., Bengio, Y. and Hinton, G. (2015) “Deep learning,” Nature, 521(7553), pp. 436–444. doi:10.1038/nature14539.\n'
    ],
    // A chapter with an editor and a title in Japanese (Crossref book-chapter → CSL chapter).
    [
      'apa',
      chapter,
      'Sato, Y. (2020). 学術情報の流通. In H. Tanaka (Ed.), Scholarly Communication in East Asia (pp. 57–88). Oxford University Press. https://doi.org/10.1093/oso/9780198850182.003.0004\n'
    ],
    [
      'harvard1',
      chapter,
      'Sato, Y. (2020) “学術情報の流通,” in Tanaka, H. (ed.) Scholarly Communication in East Asia. Oxford: Oxford University Press (Oxford Scholarship Online), pp. 57–88. doi:10.1093/oso/9780198850182.003.0004.\n'
    ],
    // A DataCite software record: an organisation among the creators, its version in parentheses (APA).
    [
      'apa',
      scipy,
      'Virtanen, P., Gommers, R., & SciPy Developers. (2019). scipy/scipy: SciPy 1.3.0 (v1.3.0). Zenodo. https://doi.org/10.5281/zenodo.3233118\n'
    ]
  ])('%s of %#', async (style, csl, body) => {
    expect(await shared.render(csl, 'text/x-bibliography', { style, locale: 'en-US' })).toEqual({
      contentType: 'text/x-bibliography; charset=utf-8',
      body
    })
  })

  it('without a style, a bibliography is APA in en-US, as the agencies format it', async () => {
    const plain = await shared.render(nature, 'text/x-bibliography')
    expect(plain.body).toBe((await shared.render(nature, 'text/x-bibliography', { style: 'apa', locale: 'en-US' })).body)
    expect(plain.body).toMatch(/^LeCun, Y\., Bengio, Y\., & Hinton, G\. \(2015\)/)
  })

  it('a record of 5,000 authors is formatted as the style says (APA: 19, an ellipsis, the last)', async () => {
    const many = { ...nature, DOI: '10.5555/many', author: Array.from({ length: 5000 }, (_, i) => ({ family: `F${i}`, given: 'G' })) }
    const { body } = await shared.render(many, 'text/x-bibliography', { style: 'apa' })
    expect(body).toMatch(/^F0, G\., F1, G\., .* F18, G\., … F4999, G\. \(2015\)\. Deep learning\./)
  })
})

describe('BibTeX and RIS', () => {
  it('BibTeX of a journal article, keyed as the agencies key it', async () => {
    expect(await shared.render(nature, 'application/x-bibtex')).toEqual({
      contentType: 'application/x-bibtex; charset=utf-8',
      body: [
        '@article{LeCun_2015,',
        '\tauthor = {LeCun, Yann and Bengio, Yoshua and Hinton, Geoffrey},',
        '\tjournal = {Nature},',
        '\tdoi = {10.1038/nature14539},',
        '\tissn = {0028-0836},',
        '\tnumber = {7553},',
        '\tyear = {2015},',
        '\tmonth = {may 28},',
        '\tpages = {436--444},',
        '\tpublisher = {{Springer Science and Business Media LLC}},',
        '\ttitle = {Deep learning},',
        '\turl = {https://doi.org/10.1038/nature14539},',
        '\tvolume = {521},',
        '}\n'
      ].join('\n')
    })
  })

  it('BibTeX keeps a title in Japanese (UTF-8, as the agencies write it; ASCII-only TeX would leave it empty)', async () => {
    const { body } = await shared.render(chapter, 'application/x-bibtex')
    expect(body).toContain('@inbook{Sato_2020,\n')
    expect(body).toContain('\ttitle = {学術情報の流通},\n')
    expect(body).toContain('\teditor = {Tanaka, Hiroshi},\n')
  })

  it('RIS of a journal article, one tag a line, ending in ER', async () => {
    expect(await shared.render(nature, 'application/x-research-info-systems')).toEqual({
      contentType: 'application/x-research-info-systems; charset=utf-8',
      body:
        'TY  - JOUR\nAU  - LeCun, Yann\nAU  - Bengio, Yoshua\nAU  - Hinton, Geoffrey\nDA  - 2015/5/28/\nPY  - 2015\nDB  - Crossref\n' +
        'DO  - 10.1038/nature14539\nIS  - 7553\nJ2  - Nature\nLA  - en\nSN  - 0028-0836\nSP  - 436-444\nT2  - Nature\nTI  - Deep learning\n' +
        'UR  - https://doi.org/10.1038/nature14539\nVL  - 521\nER  - \n'
    })
  })

  it('RIS keeps a long title on one line and leaves out the ID that would cut the DOI at 20 characters', async () => {
    const { body } = await shared.render(schema, 'application/x-research-info-systems')
    expect(body).toBe(
      'TY  - JOUR\nAB  - The DataCite Metadata Schema is a list of core metadata properties.\nAU  - DataCite Metadata Working Group\n' +
        'DA  - 2021/3/30/\nPY  - 2021\nDB  - DataCite\nDO  - 10.14454/fxws-0523\nLA  - en\n' +
        'TI  - DataCite Metadata Schema Documentation for the Publication and Citation of Research Data and Other Research Outputs: Version 4.4\n' +
        'UR  - https://doi.org/10.14454/fxws-0523\nER  - \n'
    )
  })
})

describe('a hostile record never breaks the formatter nor the format', () => {
  const evil: Csl = {
    DOI: '10.5555/ev}il_1',
    URL: 'https://x.example/a}b',
    type: 'no-such-type',
    title: 'A}, author={Evil} <script>x</script>\u0007\u001b[31m\nline two % \\end 50% & $x$ #1 a_b',
    author: 'not a list',
    editor: [{ family: 'O}Brien\u0000', given: 'J' }, 42, null, { given: 'a given name alone' }],
    issued: { 'date-parts': 'garbage' },
    volume: { nested: 1 },
    page: 12,
    'citation-key': 'not, a key}'
  }

  it('BibTeX: every value escaped, so no field closes its braces and starts another', async () => {
    const { body } = await shared.render(evil, 'application/x-bibtex')
    expect(body).toBe(
      [
        '@misc{10_5555_ev_il_1,',
        '\tdoi = {10.5555/ev%7Dil_1},',
        '\teditor = {O\\}Brien, J},',
        '\tpages = {12},',
        '\ttitle = {A\\}, author=\\{{Evil}\\} <script>x</script>[31m line two \\% \\textbackslash{}end 50\\% \\& \\$x\\$ \\#1 a\\_b},',
        '\turl = {https://x.example/a%7Db},',
        '\thowpublished = {https://x.example/a%7Db},',
        '}\n'
      ].join('\n')
    )
  })

  it('RIS: a line break in a value cannot start a tag of its own; controls are dropped', async () => {
    const { body } = await shared.render(evil, 'application/x-research-info-systems')
    expect(body).toBe(
      'TY  - GEN\nDO  - 10.5555/ev}il_1\nSP  - 12\nTI  - A}, author={Evil} <script>x</script>[31m line two % \\end 50% & $x$ #1 a_b\n' +
        'UR  - https://x.example/a}b\nER  - \n'
    )
  })

  it('a bibliography of it is plain text on one line, without the controls', async () => {
    const { body } = await shared.render(evil, 'text/x-bibliography', { style: 'apa' })
    expect(body).toBe(
      'O}Brien, J. (Ed.). (n.d.). A}, author={Evil} <script>x</script>[31m line two % \\end 50% & $x$ #1 a_b (p. 12). https://doi.org/10.5555/ev}il_1\n'
    )
  })

  it('a 10 MB title is cut to 20,000 characters, and the citation still comes', async () => {
    const huge = { ...nature, DOI: '10.5555/huge', title: 'x'.repeat(10_000_000) }
    for (const type of ['application/x-bibtex', 'application/x-research-info-systems', 'text/x-bibliography']) {
      const { body } = await shared.render(huge, type)
      expect(body).toContain('x'.repeat(20_000))
      expect(body).not.toContain('x'.repeat(20_001))
    }
  })

  it('a record that is no CSL at all still gives a citation of what there is', async () => {
    const { body } = await shared.render({ title: ['not', 'a string'], author: [[]], DOI: 42 } as Csl, 'text/x-bibliography')
    expect(body).toBe('(N.d.). https://doi.org/42\n') // APA: no author, no date, no title: the date leads
  })
})

describe('what is not held, and a full queue', () => {
  it('an unknown style names the styles held', async () => {
    const err = await failure(shared.render(nature, 'text/x-bibliography', { style: 'chicago-author-date' }))
    expect(err).toBeInstanceOf(CitationUnknownFormat)
    expect(err.kind).toBe('unknown')
    expect(err.message).toBe('the style "chicago-author-date" is not held here; the styles held are apa, vancouver, harvard1')
    expect((err as CitationUnknownFormat).held).toEqual(['apa', 'vancouver', 'harvard1'])
  })

  it('an unknown locale names the locale held', async () => {
    const err = await failure(shared.render(nature, 'text/x-bibliography', { style: 'apa', locale: 'fr-FR' }))
    expect(err.message).toBe('the locale "fr-FR" is not held here; the locales held are en-US')
  })

  it('a type that is no citation format names those held', async () => {
    const err = await failure(shared.render(nature, 'application/rdf+xml'))
    expect(err.message).toBe(
      '"application/rdf+xml" is not a citation format held here; those held are application/x-bibtex, application/x-research-info-systems, text/x-bibliography'
    )
  })

  it('lists every media type and parameters it answers, APA first for a bare text/x-bibliography', () => {
    expect(shared.formats.keys.slice(0, 5)).toEqual([
      'application/x-bibtex',
      'application/x-research-info-systems',
      'text/x-bibliography;style=apa',
      'text/x-bibliography;style=vancouver',
      'text/x-bibliography;style=harvard1'
    ])
    expect(shared.formats.keys).toContain('text/x-bibliography;style=vancouver;locale=en-US')
  })

  it('a full queue refuses at once with Retry-After seconds; a citation already formatted still comes', async () => {
    const outcomes: string[] = []
    const c = citations({ queueMax: 1, count: (format, outcome) => outcomes.push(`${format} ${outcome}`) })
    await c.render(nature, 'text/x-bibliography') // formatted and kept
    const running = c.render(chapter, 'text/x-bibliography') // in the thread
    const waiting = c.render(scipy, 'text/x-bibliography') // the one place in the queue
    const refused = await failure(c.render(schema, 'text/x-bibliography'))
    expect(refused).toBeInstanceOf(CitationBusy)
    expect(refused.kind).toBe('busy')
    expect((refused as CitationBusy).retryAfterSeconds).toBeGreaterThanOrEqual(1)
    expect((await c.render(nature, 'text/x-bibliography')).body).toMatch(/^LeCun/) // kept: never queued
    expect((await c.render(nature, 'application/x-bibtex')).body).toMatch(/^@article/) // BibTeX: never queued
    expect((await running).body).toMatch(/^Sato/)
    expect((await waiting).body).toMatch(/^Virtanen/)
    expect(outcomes).toContain('bibliography queue_full')
  })

  it('the same citation asked many times at once takes one place in the queue', async () => {
    const c = citations({ queueMax: 1 })
    const running = c.render(chapter, 'text/x-bibliography')
    const same = await Promise.all(Array.from({ length: 10 }, () => c.render(scipy, 'text/x-bibliography', { style: 'vancouver' })))
    expect(new Set(same.map((s) => s.body))).toEqual(
      new Set([
        '1.  Virtanen P, Gommers R, SciPy Developers. scipy/scipy: SciPy 1.3.0 [Internet]. Zenodo; 2019. Available from: https://doi.org/10.5281/zenodo.3233118\n'
      ])
    )
    await running
  })

  it('a record changed since it was formatted is formatted again (the kept body is for the record as it was)', async () => {
    const first = await shared.render(nature, 'text/x-bibliography', { style: 'vancouver' })
    const renamed = await shared.render({ ...nature, title: 'Deep learning, revised' }, 'text/x-bibliography', { style: 'vancouver' })
    expect(first.body).toContain('Deep learning. Nature')
    expect(renamed.body).toContain('Deep learning, revised. Nature')
  })
})

describe('every wait is bounded, and close ends the thread', () => {
  it('a bibliography not formatted in time fails with a timeout (the thread is replaced)', async () => {
    const c = citations({ timeoutMs: 1 })
    const err = await failure(c.render(nature, 'text/x-bibliography'))
    expect([err.kind, err.message]).toEqual(['timeout', 'the citation was not formatted within 1 ms'])
  })

  it('close during work fails the citations in the thread and waiting, and every one asked after', async () => {
    const c = citations()
    const inThread = failure(c.render(nature, 'text/x-bibliography'))
    const queued = failure(c.render(chapter, 'text/x-bibliography'))
    await c.close()
    expect((await inThread).kind).toBe('closed')
    expect((await queued).kind).toBe('closed')
    expect((await failure(c.render(scipy, 'text/x-bibliography'))).kind).toBe('closed')
    await c.close() // twice is fine
  })
})
