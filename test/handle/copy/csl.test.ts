import { describe, expect, it } from 'vitest'
import {
  copyUrlOf,
  cslDate,
  cslDateOfIso,
  cslName,
  cslNames,
  MAX_FIELD_LENGTH,
  MAX_NAMES,
  plainText,
  text
} from '../../../src/handle/copy/csl.js'

// Sources: CSL = CSL-JSON 1.0.2 schema (csl-data.json: date-variable `date-parts` [[y, m?, d?]], name-variable
// family/given/suffix/literal); JATS 1.3 (`<jats:p>`, `<jats:title>` in Crossref abstracts); behaviour.md §9
// (the redirect rule: ALLOWED_SCHEMES, no control characters); RFC 9110 §4.1 (≥ 8,000-octet URIs).

describe('the URL a copy record may redirect to', () => {
  it.each([
    ['https://www.nature.com/articles/nature14539', { url: 'https://www.nature.com/articles/nature14539' }],
    ['  http://ieeexplore.ieee.org/document/7780459/ ', { url: 'http://ieeexplore.ieee.org/document/7780459/' }], // trimmed, as locationFor does
    ['ftp://ftp.example.org/pub/a.pdf', { url: 'ftp://ftp.example.org/pub/a.pdf' }],
    ['https://bücher.example/a', { url: 'https://bücher.example/a' }], // kept as registered; Punycode at redirect time
    [
      'JavaScript:alert(1)',
      {
        problem:
          'the URL "JavaScript:alert(1)" is not one the resolver redirects to (scheme not in http, https, ftp, a control character or a bad host)'
      }
    ],
    [
      'data:text/html,<script>',
      {
        problem:
          'the URL "data:text/html,<script>" is not one the resolver redirects to (scheme not in http, https, ftp, a control character or a bad host)'
      }
    ],
    [
      'https://a.example/\u001b[2J',
      {
        problem:
          'the URL "https://a.example/\\u001b[2J" is not one the resolver redirects to (scheme not in http, https, ftp, a control character or a bad host)'
      }
    ],
    [
      '/relative/path',
      {
        problem:
          'the URL "/relative/path" is not one the resolver redirects to (scheme not in http, https, ftp, a control character or a bad host)'
      }
    ],
    [42, { problem: 'the record has no URL' }],
    ['', { problem: 'the record has no URL' }]
  ])('%j → %j', (raw, expected) => {
    expect(copyUrlOf(raw)).toEqual(expected)
  })

  // ALLOWED_SCHEMES (config/schema.ts) as configured: the same rule as records' (behaviour.md §9), less the schemes a
  // browser runs (security.md: no javascript: or data: relayed to readers).
  it.each([
    ['gopher://g.example/1/x', ['http', 'https', 'gopher'], { url: 'gopher://g.example/1/x' }],
    [
      'gopher://g.example/1/x',
      ['http', 'https'],
      {
        problem:
          'the URL "gopher://g.example/1/x" is not one the resolver redirects to (scheme not in http, https, a control character or a bad host)'
      }
    ],
    [
      'ftp://ftp.example.org/a',
      ['https'],
      {
        problem:
          'the URL "ftp://ftp.example.org/a" is not one the resolver redirects to (scheme not in https, a control character or a bad host)'
      }
    ],
    [
      'javascript:alert(1)',
      ['https', 'javascript'],
      {
        problem:
          'the URL "javascript:alert(1)" is not one the resolver redirects to (scheme not in https, a control character or a bad host)'
      }
    ],
    [
      'data:text/html,x',
      ['https', 'data'],
      {
        problem: 'the URL "data:text/html,x" is not one the resolver redirects to (scheme not in https, a control character or a bad host)'
      }
    ]
  ])('%j with ALLOWED_SCHEMES %j → %j', (raw, schemes, expected) => {
    expect(copyUrlOf(raw, schemes)).toEqual(expected)
  })
})

describe('CSL dates', () => {
  it.each([
    [{ 'date-parts': [[2015, 5, 28]] }, { 'date-parts': [[2015, 5, 28]] }],
    [{ 'date-parts': [[2016, 6]] }, { 'date-parts': [[2016, 6]] }],
    [{ 'date-parts': [['2019', '07']] }, { 'date-parts': [[2019, 7]] }], // Crossref has sent strings
    [{ 'date-parts': [[2015, 2, 30, 9]] }, { 'date-parts': [[2015, 2, 30]] }], // CSL keeps up to the day
    [{ 'date-parts': [[2015, 0]] }, { 'date-parts': [[2015]] }],
    [{ 'date-parts': [[null]] }, undefined], // Crossref's "no date"
    [{ 'date-parts': [] }, undefined],
    [null, undefined]
  ])('date-parts %j → %j', (raw, expected) => {
    expect(cslDate(raw)).toEqual(expected)
  })

  it.each([
    ['2021-03-30', { 'date-parts': [[2021, 3, 30]] }],
    ['2021-03', { 'date-parts': [[2021, 3]] }],
    [2022, { 'date-parts': [[2022]] }],
    ['2020-03-01/2020-05-31', { 'date-parts': [[2020, 3, 1]] }], // a DataCite range: its start
    ['2024-08-05T11:27:14.000Z', { 'date-parts': [[2024, 8, 5]] }],
    ['Spring 2020', undefined]
  ])('ISO %j → %j', (raw, expected) => {
    expect(cslDateOfIso(raw)).toEqual(expected)
  })
})

describe('CSL names', () => {
  it.each([
    [['LeCun', 'Yann', undefined], { family: 'LeCun', given: 'Yann' }],
    [['King', 'Martin Luther', undefined, 'Jr.'], { family: 'King', given: 'Martin Luther', suffix: 'Jr.' }],
    [[undefined, undefined, 'CMS Collaboration'], { literal: 'CMS Collaboration' }],
    [[undefined, 'Plato', undefined], { literal: 'Plato' }], // a given name alone is the whole name
    [['  ', undefined, undefined], undefined]
  ])('%j → %j', (args, expected) => {
    const [family, given, literal, suffix] = args
    expect(cslName(family, given, literal, suffix)).toEqual(expected)
  })

  it(`keeps at most ${MAX_NAMES} names`, () => {
    const names = Array.from({ length: MAX_NAMES + 10 }, (_, i) => ({ family: `F${i}` }))
    expect(cslNames<{ family: string }>(names, (n) => cslName(n.family, undefined, undefined))).toHaveLength(MAX_NAMES)
  })
})

describe('markup to plain text', () => {
  it.each([
    ['<jats:title>Abstract</jats:title><jats:p>One &amp; two.</jats:p>', 'One & two.'], // JATS heading dropped
    ['<jats:p>Line\n  one</jats:p>\n<jats:p>Line two</jats:p>', 'Line one Line two'],
    ['CO<sub>2</sub> &#x2013; &#8805;3 &lt;b&gt;', 'CO2 – ≥3 <b>'], // entities decoded after tags are dropped: never re-read as markup
    ['<mml:math><mml:mi>x</mml:mi></mml:math>-ray', 'x-ray'],
    ['&bogus; &#0;', '&bogus; &#0;'],
    ['A<br/>B<jats:sec><jats:title>Methods</jats:title>C</jats:sec>', 'A B C'], // block tags part words; only JATS headings are dropped
    ['<i></i>', undefined],
    ['Deep learning in 3 words', 'Deep learning in 3 words'], // nothing to clean: returned as it is
    ['Two  spaces,\ta tab\u00a0and a no-break space', 'Two spaces, a tab and a no-break space'] // any white space run is one space
  ])('%j → %j', (raw, expected) => {
    expect(plainText(raw)).toBe(expected)
  })

  it(`cuts a field at ${MAX_FIELD_LENGTH} characters`, () => {
    expect(text('x'.repeat(MAX_FIELD_LENGTH + 1))).toHaveLength(MAX_FIELD_LENGTH)
  })
})
