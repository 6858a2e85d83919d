import { describe, expect, it } from 'vitest'
import { fileKind, findDois } from '../../../src/command/check/extract.js'
import type { FileKind } from '../../../src/command/check/extract.js'

// Sources: CR = Crossref, "DOIs and matching regular expressions" (10.\d{4,9}/…, trailing punctuation);
// R = Writing R Extensions §1.1.1 (<doi:…> in DESCRIPTION); CFF = Citation File Format 1.2 (doi: key);
// D§2.4 = behaviour.md §2.4 (the prefixes and resolver URLs /{doi} accepts); shortdoi.org.

describe('findDois: the DOIs written in a file', () => {
  it.each<[FileKind, string, string[], string]>([
    ['text', 'See 10.1000/182 for details.', ['10.1000/182'], "CR: a bare DOI, the full stop is the sentence's"],
    ['text', 'doi:10.1000/182, and urn:doi:10.1000/183;', ['10.1000/182', '10.1000/183'], 'D§2.4 prefixes; trailing , and ;'],
    ['text', 'info:doi/10.1000/182', ['10.1000/182'], 'D§2.4'],
    ['text', 'https://doi.org/10.1000/182?utm=x#sec', ['10.1000/182'], "a link's query and fragment are not the DOI"],
    ['text', 'http://dx.doi.org/10.1000/182', ['10.1000/182'], 'D§2.4 the old resolver host'],
    [
      'text',
      'https://doi.org/10.1000%2F182 and https://doi.org/10.5555/a%20b',
      ['10.1000/182', '10.5555/a b'],
      "a link's path is percent-decoded"
    ],
    ['text', 'https://doi.org/10/abc and doi:10/xyz', ['10/abc', '10/xyz'], 'shortdoi.org: only as a link or with doi:'],
    ['text', 'page 10/12 of the report', [], 'a bare 10/12 is not a shortDOI'],
    ['text', '(see 10.1000/182)', ['10.1000/182'], 'CR: an unbalanced ) closes the sentence'],
    [
      'text',
      '10.1002/(SICI)1097-4571(199806)49:8%3C693::AID-ASI4%3E3.0.CO;2-0',
      ['10.1002/(SICI)1097-4571(199806)49:8%3C693::AID-ASI4%3E3.0.CO;2-0'],
      'balanced parentheses stay; a bare DOI is not decoded'
    ],
    [
      'text',
      'https://doi.org/10.1002/(SICI)1097-4571(199806)49:8%3C693::AID-ASI4%3E3.0.CO;2-0',
      ['10.1002/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-0'],
      'a SICI link, decoded'
    ],
    [
      'text',
      'https://onlinelibrary.wiley.com/doi/10.1002/asi.1234 and www.example.org/10.1234/x',
      [],
      'a path on another site is not a DOI reference'
    ],
    ['text', 'version 110.1000/3 and v10.12345/6', [], 'a DOI starts at a word boundary'],
    ['text', 'line one\n\nline three has 10.1000/3\n', ['10.1000/3'], 'lines are counted'],
    [
      'markdown',
      '[the paper](https://doi.org/10.1000/182) and [10.1000/183](https://doi.org/10.1000/183)',
      ['10.1000/182', '10.1000/183', '10.1000/183'],
      'Markdown links; the link text is a DOI too'
    ],
    [
      'markdown',
      '<https://doi.org/10.1000/182> `10.1000/183` *10.1000/184*',
      ['10.1000/182', '10.1000/183', '10.1000/184'],
      'an autolink, code, emphasis'
    ],
    ['html', '<a href="https://doi.org/10.1000/a&amp;b">10.1000/a&amp;b</a>', ['10.1000/a&b', '10.1000/a&b'], 'HTML entities decoded'],
    ['html', "<a href='https://doi.org/10.1000/182'>x</a>", ['10.1000/182'], 'single-quoted attribute'],
    [
      'latex',
      '@article{x, doi = {10.1000/a\\_b}, url = {https://doi.org/10.1000/182}}',
      ['10.1000/a_b', '10.1000/182'],
      "BibTeX braces; LaTeX's \\_ is _"
    ],
    ['latex', '\\href{https://doi.org/10.1000/182}{paper} \\doi{10.1000/183}', ['10.1000/182', '10.1000/183'], 'LaTeX commands'],
    ['text', 'Description: Methods from Smith (2020) <doi:10.1000/182>.', ['10.1000/182'], 'R: <doi:…> in DESCRIPTION'],
    [
      'text',
      "doi: 10.5281/zenodo.1234\nidentifiers:\n  - value: '10.5281/zenodo.999'",
      ['10.5281/zenodo.1234', '10.5281/zenodo.999'],
      'CFF: YAML, quoted or not'
    ],
    [
      'text',
      'See :doi:`10.1000/182` and `link <https://doi.org/10.1000/183>`_',
      ['10.1000/182', '10.1000/183'],
      'reStructuredText roles and links'
    ],
    [
      'json',
      '{"doi": "10.1000/182", "url": "https:\\/\\/doi.org\\/10.1000\\/183"}',
      ['10.1000/182', '10.1000/183'],
      'JSON, with \\/ escapes'
    ],
    ['text', 'Registrant sub-codes: 10.1000.10/182', ['10.1000.10/182'], 'a registrant code may have sub-codes'],
    ['text', 'no DOI here, just 10.1 and 10.', [], 'nothing that is a DOI'],
    [
      'text',
      '10.1000/a\x1b[2J\x1b]52;c;cHduZWQ=\x07 and doi:10.1000/b\x1bc',
      ['10.1000/a', '10.1000/b'],
      'a DOI holds no control character: ESC ends it'
    ],
    [
      'text',
      'https://doi.org/10.1000/c\u009b2J and 10.1000/d\u009d0;x\u009c and 10.1000/e\x7f',
      ['10.1000/c', '10.1000/d', '10.1000/e'],
      'nor C1 (CSI, OSC) or DEL'
    ],
    [
      'html',
      '10.1234/abc&#27;[2J and 10.1234/d&#x9b;2J and <b>10.1234/e.&#X1B;c</b>',
      ['10.1234/abc', '10.1234/d', '10.1234/e'],
      'nor one written as an entity (ESC, CSI): it ends the DOI once decoded'
    ],
    ['markdown', '*10.1234/f&#7;* 10.1234/g&#127;', ['10.1234/f', '10.1234/g'], 'in Markdown too (BEL, DEL)']
  ])('%s %j → %j (%s)', (kind, text, dois) => {
    expect(findDois(text, kind).map((f) => f.doi)).toEqual(dois)
  })

  it('says on which line each DOI is', () => {
    expect(findDois('a\n10.1000/1\n\nhttps://doi.org/10.1000/2 10.1000/3\n', 'text')).toEqual([
      { doi: '10.1000/1', line: 2 },
      { doi: '10.1000/2', line: 4 },
      { doi: '10.1000/3', line: 4 }
    ])
  })
})

describe('fileKind: which files a directory walk reads', () => {
  it.each([
    ['docs/index.md', 'markdown'],
    ['README.Rmd', 'markdown'],
    ['site/a.html', 'html'],
    ['paper.tex', 'latex'],
    ['refs.bib', 'latex'],
    ['CITATION.cff', 'text'],
    ['DESCRIPTION', 'text'],
    ['inst/CITATION', 'text'],
    ['zenodo.json', 'json'],
    ['nb.ipynb', 'json'],
    ['docs/index.rst', 'text'],
    ['notes.txt', 'text'],
    ['image.png', undefined],
    ['Makefile', undefined],
    ['.hidden', undefined]
  ])('%s → %s', (path, kind) => {
    expect(fileKind(path)).toBe(kind)
  })
})
