import { describe, expect, it } from 'vitest'
import { automaticLocatt, negotiate, negotiationHeadersOf } from '../../src/handle/negotiate.js'
import type { NegotiationHeaders } from '../../src/handle/negotiate.js'

// Rules: behaviour.md R9 "Mechanism" ([HNS92] HDLServletRequest.processAcceptHeader and
// processAcceptLanguageHeader), behaviour.md §5.

const FIREFOX_UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'
const CHROME_UA = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36'
const BROWSER = ['http_role:browser', 'ctype:text/html', 'media-type:text/html']
const both = (type: string): string[] => [`ctype:${type}`, `media-type:${type}`]

describe('automatic locatt values from the request headers', () => {
  it.each<[string, NegotiationHeaders, string[]]>([
    // zotero/translators "DOI Content Negotiation.js" (2025): three types, no q; Zotero's UA is a Mozilla one
    [
      'Zotero asks for DataCite JSON, Crossref unixref and CSL-JSON',
      {
        accept: 'application/vnd.datacite.datacite+json, application/vnd.crossref.unixref+xml, application/vnd.citationstyles.csl+json',
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Zotero/7.0'
      },
      [
        ...both('application/vnd.datacite.datacite+json'),
        ...both('application/vnd.crossref.unixref+xml'),
        ...both('application/vnd.citationstyles.csl+json'),
        'http_role:conneg'
      ]
    ],
    // citation-js/citation-js packages/plugin-doi/src/api.js
    [
      'citation.js asks for CSL-JSON',
      { accept: 'application/vnd.citationstyles.csl+json' },
      [...both('application/vnd.citationstyles.csl+json'), 'http_role:conneg']
    ],
    // doi2bib: the media-type parameter is not part of the value (the RA service reads it)
    [
      'doi2bib asks for BibTeX with a charset',
      { accept: 'application/x-bibtex; charset=utf-8' },
      [...both('application/x-bibtex'), 'http_role:conneg']
    ],
    // [CN-DOI]: formatted citations; style= is for the RA service
    [
      'a formatted APA citation',
      { accept: 'text/x-bibliography; style=apa; locale=fr-FR' },
      [...both('text/x-bibliography'), 'http_role:conneg']
    ],
    ['Firefox 128', { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', userAgent: FIREFOX_UA }, BROWSER],
    [
      'Chrome 126',
      {
        accept:
          'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7',
        userAgent: CHROME_UA
      },
      BROWSER
    ],
    // R9 step 2: curl's */* is not negotiation
    ['curl with its default */*', { accept: '*/*', userAgent: 'curl/8.5.0' }, ['http_role:no_conneg']],
    ['no Accept and no User-Agent', {}, ['http_role:no_conneg']],
    ['*/* from a Mozilla User-Agent is a browser', { accept: '*/*', userAgent: FIREFOX_UA }, BROWSER],
    ['*/* from Opera (any case) is a browser', { accept: '*/*', userAgent: '  OPERA/9.80 (Windows NT 6.1) Presto/2.12' }, BROWSER],
    // an empty Accept is no preference: a browser by its User-Agent (Java would read "" as a type; see negotiate.ts)
    ['an empty Accept with a Mozilla User-Agent', { accept: '', userAgent: FIREFOX_UA }, BROWSER],
    ['an empty Accept from a script', { accept: '', userAgent: 'python-requests/2.31' }, ['http_role:no_conneg']],
    // q-values: sorted by q, highest first, stable for ties
    [
      'q-values order the types',
      { accept: 'application/rdf+xml;q=0.5, text/turtle;q=0.7, application/x-bibtex' },
      [...both('application/x-bibtex'), ...both('text/turtle'), ...both('application/rdf+xml'), 'http_role:conneg']
    ],
    // text/html below the top q: still negotiation, and text/html is listed too (it is not a wildcard)
    [
      'text/html at q=0.5 under BibTeX',
      { accept: 'text/html;q=0.5, application/x-bibtex' },
      [...both('application/x-bibtex'), ...both('text/html'), 'http_role:conneg']
    ],
    ['BibTeX at q=0.5 under text/html is a browser', { accept: 'application/x-bibtex;q=0.5, text/html' }, BROWSER],
    // the list stops at the first wildcard
    [
      'BibTeX, then */* as a fallback',
      { accept: 'application/x-bibtex, */*;q=0.1' },
      [...both('application/x-bibtex'), 'http_role:conneg']
    ],
    [
      'RIS, then text/* as a fallback',
      { accept: 'application/x-research-info-systems, text/*;q=0.2, application/json;q=0.1' },
      [...both('application/x-research-info-systems'), 'http_role:conneg']
    ],
    // any type with '*' counts as a browser type: axios' default is a "browser" at q=1
    ['axios default Accept', { accept: 'application/json, text/plain, */*' }, BROWSER],
    ['image/* at the top q is a browser without the text/html pair', { accept: 'image/png' }, ['http_role:browser']],
    ['application/pdf is a browser type', { accept: 'application/pdf' }, ['http_role:browser']],
    // a browser type at q=0 does not count; all q=0 → browser branch
    // RFC 9110 §12.4.2: "a value of 0 means not acceptable": a type at q=0 is never a ctype: locatt (the
    // reference lists it last, so a location for it could be chosen); the reference's order is kept otherwise
    [
      'text/html at q=0 does not count, nor is it asked for',
      { accept: 'text/html;q=0, application/x-bibtex;q=0.1' },
      [...both('application/x-bibtex'), 'http_role:conneg']
    ],
    // RFC 9110 §12.4.2: q=0 excludes, whatever else is listed
    [
      'a type excluded with q=0 is not asked for',
      { accept: 'application/vnd.citationstyles.csl+json, application/x-bibtex;q=0' },
      [...both('application/vnd.citationstyles.csl+json'), 'http_role:conneg']
    ],
    // RFC 9110 §12.5.1: q-values order the choice; a type we cannot serve falls through to the next (datacite/datacite#2448)
    [
      'datacite#2448: every acceptable type by q, for the engine to fall through',
      { accept: 'application/vnd.crossref.unixref+xml;q=0.9,application/vnd.datacite.datacite+xml;q=0.8, application/x-bibtex;q=0.7' },
      [
        ...both('application/vnd.crossref.unixref+xml'),
        ...both('application/vnd.datacite.datacite+xml'),
        ...both('application/x-bibtex'),
        'http_role:conneg'
      ]
    ],
    ['every q=0', { accept: 'application/json;q=0, text/html;q=0' }, BROWSER],
    // an unparsable q keeps the default 1; only q= is read; the type is lower-cased
    [
      'an unparsable q is ignored',
      { accept: 'Application/X-BibTeX;q=abc, text/html;q=0.9' },
      [...both('application/x-bibtex'), ...both('text/html'), 'http_role:conneg']
    ],
    [
      'several Accept headers are one list',
      { accept: ['text/turtle', 'application/ld+json;q=0.5'] },
      [...both('text/turtle'), ...both('application/ld+json'), 'http_role:conneg']
    ],
    // R9: action=metadata suppresses the http_role values only
    [
      'action=metadata: no http_role for a CSL-JSON request',
      { accept: 'application/vnd.citationstyles.csl+json', action: 'metadata' },
      both('application/vnd.citationstyles.csl+json')
    ],
    ['action=METADATA: no http_role for curl', { accept: '*/*', userAgent: 'curl/8.5.0', action: 'METADATA' }, []],
    [
      'action=metadata from a browser keeps the text/html pair',
      { accept: '*/*', userAgent: FIREFOX_UA, action: 'metadata' },
      both('text/html')
    ],
    // R9 step 4: one language: per Accept-Language entry, lower-cased, by q
    [
      'Accept-Language entries follow, by q',
      { accept: 'text/html', userAgent: FIREFOX_UA, acceptLanguage: 'fr-CH, fr;q=0.9, en;q=0.8, de;q=0.95, *;q=0.5' },
      [...BROWSER, 'language:fr-ch', 'language:de', 'language:fr', 'language:en', 'language:*']
    ],
    ['Accept-Language alone', { acceptLanguage: 'en-US,en;q=0.5' }, ['http_role:no_conneg', 'language:en-us', 'language:en']],
    // RFC 9110 §12.5.4 with §12.4.2: a language at q=0 is not acceptable
    ['a language at q=0 is no locatt', { acceptLanguage: 'de, fr;q=0' }, ['http_role:no_conneg', 'language:de']]
  ])('%s', (_name, headers, expected) => {
    expect(automaticLocatt(headers)).toEqual(expected)
  })
})

describe('negotiation keys: which requests get the same redirect', () => {
  it.each([
    ['curl and wget: both tools without a preference', { accept: '*/*', userAgent: 'curl/8.5.0' }, { userAgent: 'Wget/1.21' }, true],
    ['two browsers', { accept: '*/*', userAgent: FIREFOX_UA }, { accept: '*/*', userAgent: 'Mozilla/5.0 (Macintosh) Safari/605' }, true],
    ['a browser and a tool', { accept: '*/*', userAgent: FIREFOX_UA }, { accept: '*/*', userAgent: 'curl/8.5.0' }, false],
    ['BibTeX and CSL JSON', { accept: 'application/x-bibtex' }, { accept: 'application/vnd.citationstyles.csl+json' }, false],
    [
      'the same tool in two languages',
      { userAgent: 'curl/8.5.0', acceptLanguage: 'en' },
      { userAgent: 'curl/8.5.0', acceptLanguage: 'de' },
      false
    ]
  ])('%s', (_name, a, b, same) => {
    expect(negotiate(a).key === negotiate(b).key).toBe(same)
    expect(negotiate(a).locatt).toEqual(automaticLocatt(a))
  })
})

// The three headers behaviour.md §5 negotiates on, read from Node's lower-case names; nothing else.
describe('negotiationHeadersOf: what negotiation reads of a request', () => {
  it('takes Accept, Accept-Language and User-Agent, and nothing else', () => {
    expect(
      negotiationHeadersOf({ accept: 'application/x-bibtex', 'accept-language': 'de', 'user-agent': 'Zotero/7', cookie: 'a=b' } as Record<
        string,
        string
      >)
    ).toEqual({ accept: 'application/x-bibtex', acceptLanguage: 'de', userAgent: 'Zotero/7' })
  })
  it('an absent header is undefined', () => {
    expect(negotiationHeadersOf({})).toEqual({ accept: undefined, acceptLanguage: undefined, userAgent: undefined })
  })
})
