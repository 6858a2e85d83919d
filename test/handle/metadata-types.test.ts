import { describe, expect, it } from 'vitest'
import { acceptCacheKey, acceptsContentType, chooseStoredType, normaliseMediaType } from '../../src/handle/metadata-types.js'

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

describe('whether an agency\'s answer is of a type that was asked for', () => {
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
    ['application/x-bibtex, */*;q=0.1', 'application/xhtml+xml', false]
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
    ['application/rdf+xml, application/*;q=0.1', 'application/x-bibtex']
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
