import { describe, expect, it } from 'vitest'
import { carriedQuery, decodedOnceMore, doiFromOpenUrl } from '../../src/handle/openurl.js'
import { parseProxyQuery } from '../../src/handle/query.js'

// Which DOI an OpenURL names (behaviour.md §10 "Inbound OpenURL"). Each row is a query string as it
// reaches /openurl, decoded once as the proxy decodes queries, and the DOI text we take from it (the
// §2 path rules strip its prefix afterwards). The comment on each row says where the shape comes from.
const fieldsOf = (query: string): ReadonlyMap<string, readonly string[]> => parseProxyQuery(query).all

const VECTORS: Array<[query: string, expected: { doi: string; key: string } | undefined]> = [
  // Z39.88-2004 (OpenURL 1.0) KEV: the DOI is an rft_id in the info:doi/ namespace. OCLC, "Idiot's guide to
  // implementing OpenURL 1.0 for journal articles", http://nj.oclc.org/1cate/ig.html
  [
    'url_ver=Z39.88-2004&rft_val_fmt=info:ofi/fmt:kev:mtx:journal&rft_id=info:doi/10.1000/182',
    { doi: 'info:doi/10.1000/182', key: 'rft_id' }
  ],
  // The same with the value encoded once, as the standard asks ("values must be URL-encoded"): same source.
  ['url_ver=Z39.88-2004&rft_id=info%3Adoi%2F10.1000%2F182', { doi: 'info:doi/10.1000/182', key: 'rft_id' }],
  // rft_id repeats: a PubMed id first, the DOI second (Z39.88-2004 Part 1, an Entity may have several Identifiers).
  ['rft_id=info:pmid/12345678&rft_id=info:doi/10.1000/182', { doi: 'info:doi/10.1000/182', key: 'rft_id' }],
  // doi.org's legacy 1.0 form rft_id=doi:… ("DOI System and OpenURL" factsheet,
  // https://www.doi.org/the-identifier/resources/factsheets/doi-system-and-openurl; DOI Handbook §3.8.4.2)
  ['url_ver=z39.88-2003&rfr_id=ori:rid:crossref.org&rft_id=doi:10.1256/003590&rfr_dat=x', { doi: 'doi:10.1256/003590', key: 'rft_id' }],
  // OpenURL 0.1: id=doi:… (Van de Sompel et al., "OpenURL Syntax Description" 0.1f, 2000; Crossref's own endpoint
  // https://doi.crossref.org/openurl?pid=…&id=doi:10.1103/PhysRev.47.777, https://crossref.org/documentation/retrieve-metadata/openurl/)
  ['pid=email@address.com&id=doi:10.1103/PhysRev.47.777', { doi: 'doi:10.1103/PhysRev.47.777', key: 'id' }],
  // The DOI Handbook's return URL from a local resolver (§3.8.4.1, https://www.doi.org/the-identifier/resources/handbook/3_Resolution)
  ['id=doi:10.1000/demo_DOI&nols=y', { doi: 'doi:10.1000/demo_DOI', key: 'id' }],
  // Google Scholar → EBSCO Full Text Finder: 0.1 id=doi: with lower-case hex (public links to resolver.ebscohost.com/openurl)
  ['sid=google&auinit=RE&aulast=Marx&id=doi%3a10.1109%2fMS.2017.4121211&site=ftf-live', { doi: 'doi:10.1109/MS.2017.4121211', key: 'id' }],
  // id=info:doi/… (non-standard, seen mixed into 1.0 links; behaviour.md §10 accepts it)
  ['id=info:doi/10.1000/182', { doi: 'info:doi/10.1000/182', key: 'id' }],
  // id naming something else (a PubMed id, 0.1 "id=pmid:"): no DOI there (Alma "Base URL for the Services Page", PubMed variant)
  ['sid=Entrez:PubMed&id=pmid:12345678', undefined],
  // rft.doi, non-standard but common in discovery systems' OpenURLs (not in the journal matrix: research notes §0)
  ['ctx_ver=Z39.88-2004&rft.genre=article&rft.doi=10.1000/182', { doi: '10.1000/182', key: 'rft.doi' }],
  // A bare doi=: what doi.org itself sent to a library's local service (DOI Handbook §3.8.4.1: …/openurl?doi=10.1000/demo_DOI)
  ['doi=10.1000/demo_DOI', { doi: '10.1000/demo_DOI', key: 'doi' }],
  // Order: rft_id wins over id, id over rft.doi, rft.doi over doi (behaviour.md §10)
  ['doi=10.1000/d&rft.doi=10.1000/c&id=doi:10.1000/b&rft_id=info:doi/10.1000/a', { doi: 'info:doi/10.1000/a', key: 'rft_id' }],
  ['doi=10.1000/d&rft.doi=10.1000/c&id=doi:10.1000/b', { doi: 'doi:10.1000/b', key: 'id' }],
  ['doi=10.1000/d&rft.doi=10.1000/c', { doi: '10.1000/c', key: 'rft.doi' }],
  // Encoded twice (EZproxy qurl= built from an already encoded URL; nested %25xx in real qurls, tom5760/ezproxy-db#78):
  // after our one decoding the value is still info%3Adoi%2F…, so it is decoded once more.
  ['rft_id=info%253Adoi%252F10.1000%252F182', { doi: 'info:doi/10.1000/182', key: 'rft_id' }],
  ['id=doi%253A10.1000%252F182', { doi: 'doi:10.1000/182', key: 'id' }],
  ['rft.doi=10.1000%252F182', { doi: '10.1000/182', key: 'rft.doi' }],
  // A DOI whose suffix really holds %2F (encoded once: %252F) keeps it: its own '/' comes first.
  ['rft_id=info:doi/10.1000/a%252Fb', { doi: 'info:doi/10.1000/a%2Fb', key: 'rft_id' }],
  // '+' stays '+' in a GET query, as in the proxy's own query (behaviour.md §6)
  ['doi=10.1000/a+b', { doi: '10.1000/a+b', key: 'doi' }],
  // A pasted doi.org URL as rft_id (Zotero and others write https://doi.org/… identifiers)
  ['rft_id=https://doi.org/10.1000/182', { doi: 'https://doi.org/10.1000/182', key: 'rft_id' }],
  // No DOI at all: a title-only OpenURL (360 Link "OpenURL and ILL Forms" example keys)
  ['rft.atitle=global+warming&rft.jtitle=TCE&rft.issn=1234-5678', undefined],
  // Empty values are not DOIs
  ['doi=&rft.doi=', undefined],
  ['', undefined]
]

describe('the DOI in an OpenURL (behaviour.md §10)', () => {
  it.each(VECTORS)('%s', (query, expected) => {
    expect(doiFromOpenUrl(fieldsOf(query))).toEqual(expected)
  })
})

describe('decoding once more', () => {
  it.each([
    ['info%3Adoi%2F10.1000%2F182', 'info:doi/10.1000/182'],
    ['10.1000%2F182', '10.1000/182'],
    ['doi:10.1000%2F182', 'doi:10.1000/182'],
    ['10.1000/50%25', '10.1000/50%25'],
    ['10.5555/percent%20x', '10.5555/percent%20x']
  ])('%s → %s', (value, expected) => {
    expect(decodedOnceMore(value)).toBe(expected)
  })
})

describe("the proxy's own parameters carried over", () => {
  it('keeps nols, noredirect, type, index, urlappend and drops OpenURL keys', () => {
    const fields = fieldsOf(
      'rft_id=info:doi/10.1000/182&nols=y&noredirect&type=URL&index=1&index=2&urlappend=%3Fa%3D1%26b%3D2&rft.atitle=x&sid=google'
    )
    const query = carriedQuery(fields)
    const params = parseProxyQuery(query)
    expect([...params.all.keys()].sort()).toEqual(['index', 'nols', 'noredirect', 'type', 'urlappend'])
    expect(params.indexes).toEqual([1, 2])
    expect(params.urlappend).toBe('?a=1&b=2')
    expect(params.nols).toBe(true)
  })

  it('a plus and a percent survive the round trip', () => {
    expect(parseProxyQuery(carriedQuery(fieldsOf('urlappend=%2Ba%25'))).urlappend).toBe('+a%')
  })
})
