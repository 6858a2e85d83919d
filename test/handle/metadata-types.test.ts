import { describe, expect, it } from 'vitest'
import { acceptCacheKey, acceptsContentType, chooseStoredType, fallbackTypes, normaliseMediaType } from '../../src/handle/metadata-types.js'

describe('the cache key of an Accept header', () => {
  it('the same types written with other spacing or case share a key', () => {
    expect(acceptCacheKey('Application/X-BibTeX ;q=1')).toBe(acceptCacheKey('application/x-bibtex'))
    expect(acceptCacheKey('text/x-bibliography; style=apa')).toBe(acceptCacheKey('text/x-bibliography;style=apa'))
  })

  it('parameters the agency reads (style, locale) make another key', () => {
    expect(acceptCacheKey('text/x-bibliography; style=apa')).not.toBe(acceptCacheKey('text/x-bibliography; style=mla'))
  })

  it('an over-long header has no key (it is never cached)', () => {
    expect(acceptCacheKey(`application/x-bibtex;p=${'a'.repeat(600)}`)).toBeUndefined()
  })
})

describe("whether an agency's answer is of a type that was asked for", () => {
  it.each([
    ['application/x-bibtex', 'application/x-bibtex; charset=utf-8', true],
    ['application/x-bibtex', 'text/html; charset=utf-8', false],
    ['application/x-bibtex', undefined, false],
    ['application/x-bibtex, text/*;q=0.1', 'text/plain', true],
    ['application/x-bibtex, text/html;q=0', 'text/html', false],
    ['application/rdf+xml, */*;q=0.1', 'application/json', true],
    // A web page is never relayed, even to a reader whose Accept ends in */* (found in review).
    ['application/x-bibtex, */*;q=0.1', 'text/html; charset=utf-8', false],
    ['application/x-bibtex, text/*;q=0.1', 'text/html', false],
    ['application/x-bibtex, */*;q=0.1', 'application/xhtml+xml', false],
    // RFC 9110 §12.5.1: the most specific range decides, so q=0 on the type excludes it under */*
    ['application/x-bibtex;q=0, */*', 'application/x-bibtex', false],
    ['text/*;q=0, text/x-bibliography', 'text/x-bibliography; charset=utf-8', true],
    ['text/x-bibliography; style=apa', 'text/x-bibliography; charset=utf-8', true]
  ])('Accept %j, Content-Type %j → %s', (accept, type, ok) => {
    expect(acceptsContentType(accept, type)).toBe(ok)
  })
})

describe('which stored metadata a request gets', () => {
  const stored = ['application/x-bibtex', 'application/vnd.citationstyles.csl+json', 'text/x-bibliography;style=apa']
  it.each([
    ['application/x-bibtex', 'application/x-bibtex'],
    ['application/vnd.citationstyles.csl+json', 'application/vnd.citationstyles.csl+json'],
    ['application/rdf+xml;q=1, application/x-bibtex;q=0.5', 'application/x-bibtex'],
    ['application/x-bibtex;q=0.2, application/vnd.citationstyles.csl+json', 'application/vnd.citationstyles.csl+json'],
    ['text/x-bibliography; style=apa', 'text/x-bibliography;style=apa'],
    ['text/x-bibliography; style=mla', undefined],
    ['application/rdf+xml', undefined],
    ['application/x-bibtex;q=0', undefined],
    ['application/rdf+xml, application/*;q=0.1', 'application/x-bibtex'],
    // RFC 9110 §12.4.2: q=0 excludes a type even when a range would take it
    ['application/x-bibtex;q=0, */*', 'application/vnd.citationstyles.csl+json'],
    ['application/*;q=0, */*', 'text/x-bibliography;style=apa'],
    // RFC 9110 §12.5.1: the most specific range decides a type's q
    ['*/*;q=0.1, application/vnd.citationstyles.csl+json;q=0.5', 'application/vnd.citationstyles.csl+json'],
    ['text/*', 'text/x-bibliography;style=apa'],
    ['image/*', undefined],
    // q orders; a type not held falls through to the next acceptable one (datacite/datacite#2448)
    [
      'application/vnd.crossref.unixref+xml;q=0.9, application/vnd.datacite.datacite+xml;q=0.8, application/x-bibtex;q=0.7',
      'application/x-bibtex'
    ],
    // equal q: the earlier entry (RFC 9110 leaves ties to the server)
    ['application/vnd.citationstyles.csl+json, application/x-bibtex', 'application/vnd.citationstyles.csl+json'],
    // parameters: a set (order and spacing do not matter, names case-insensitive, quotes dropped) …
    ['text/x-bibliography; STYLE="apa"', 'text/x-bibliography;style=apa'],
    // … and another one is another representation: a styled request never gets another style
    ['text/x-bibliography; style=apa; locale=fr-FR', undefined],
    // a bibliography without parameters takes any held style (RFC 9110 §12.5.1: a type matches its parameterised forms)
    ['text/x-bibliography', 'text/x-bibliography;style=apa']
  ])('Accept %j → %j', (accept, chosen) => {
    expect(chooseStoredType(accept, stored)).toBe(chosen)
  })
})

describe('an unstyled stored bibliography', () => {
  const stored = ['text/x-bibliography', 'application/x-bibtex']
  it.each([
    ['text/x-bibliography', 'text/x-bibliography'],
    // not served for a style: the agency's default style need not be the one asked for
    ['text/x-bibliography; style=apa', undefined],
    ['text/x-bibliography; style=apa, application/x-bibtex;q=0.5', 'application/x-bibtex'],
    ['text/x-bibliography; locale=de-DE', undefined]
  ])('Accept %j → %j', (accept, chosen) => {
    expect(chooseStoredType(accept, stored)).toBe(chosen)
  })
})

describe('media types for --accept and stored keys', () => {
  it.each([
    ['application/x-bibtex', 'application/x-bibtex'],
    [' Text/X-Bibliography ; style=apa ; locale=en-GB', 'text/x-bibliography;style=apa;locale=en-GB'],
    ['application/*', undefined],
    ['application/x-bibtex;q=0.5', undefined],
    ['bibtex', undefined],
    ['text/x-bibliography; style', undefined]
  ])('%j → %j', (text, normalised) => {
    expect(normaliseMediaType(text)).toBe(normalised)
  })
})

describe('the types asked for one by one when an agency answers nothing for the whole Accept', () => {
  it.each<[string, string[]]>([
    // datacite/datacite#2448: unixref is not written for DataCite DOIs; the next types are asked in q order (RFC 9110 §12.5.1)
    [
      'application/vnd.crossref.unixref+xml;q=0.9,application/vnd.datacite.datacite+xml;q=0.8, application/x-bibtex;q=0.7',
      ['application/vnd.datacite.datacite+xml', 'application/x-bibtex']
    ],
    ['application/x-bibtex', []],
    // RFC 9110 §12.4.2: q=0 is never asked for; ranges are the agency's to read, not ours to ask one by one
    [
      'application/rdf+xml, application/x-bibtex;q=0, text/*;q=0.5, text/x-bibliography; style=apa;q=0.2',
      ['text/x-bibliography;style=apa']
    ],
    ['a/a, b/b, c/c, d/d, e/e, f/f', ['b/b', 'c/c', 'd/d']]
  ])('Accept %j → %j', (accept, types) => {
    expect(fallbackTypes(accept)).toEqual(types)
  })
})
