import { describe, expect, it } from 'vitest'
import { setup } from '../support/app.js'
import { admin, str } from '../support/records.js'
import type { LocalServiceConfig } from '../../src/config/local-services.js'

// Inbound OpenURL at /openurl, and the local service with the URL shapes real link resolvers use
// (behaviour.md §10). Vendor shapes and their sources are cited at each test; where a source is a
// public link seen in the wild rather than the vendor's own documentation, it says so.

const BASE = 'https://doi.library.example'
const CAMPUS = '192.0.2.10'
const OFF_CAMPUS = '203.0.113.9'
const RECORDS = {
  10.5555: [admin()],
  '10.5555/plain': [admin(), str(1, 'URL', 'http://example.org/plain')],
  '10.5555/alias': [str(1, 'HS_ALIAS', '10.5555/plain')],
  '10.5555/a+b': [str(1, 'URL', 'http://example.org/plus')],
  '10.5555/a&b': [str(1, 'URL', 'http://example.org/amp')],
  '10.5555/a b': [str(1, 'URL', 'http://example.org/space')],
  '10.5555/u1': [str(1, 'URL', 'http://example.org/u1')],
  '10.5555/u2': [str(1, 'URL', 'http://example.org/u2')],
  '10.5555/u3': [str(1, 'URL', 'http://example.org/u3')],
  10.1: [admin()],
  '10.1000/demo_DOI': [str(1, 'URL', 'https://www.doi.org/demo')]
}
const PLAIN = 'http://example.org/plain'

async function app(services: LocalServiceConfig[] = []) {
  return (await setup({ records: RECORDS, overrides: { localServices: services, publicBaseUrl: BASE } })).app
}

describe('OpenURLs that link resolvers and discovery systems send (behaviour.md §10)', () => {
  it.each([
    // Primo/Alma forwarding a full 1.0 KEV context: keys from Ex Libris "OpenURL Resolving",
    // https://developers.exlibrisgroup.com/alma/integrations/discovery/openurl_resolving/ (ctx_enc, ctx_ver, url_ver, rfr_id)
    [
      'Alma/Primo 1.0 KEV',
      '/openurl?ctx_enc=info:ofi/enc:UTF-8&ctx_ver=Z39.88-2004&url_ver=Z39.88-2004&rfr_id=info:sid/primo.exlibrisgroup.com&rft_val_fmt=info:ofi/fmt:kev:mtx:journal&rft.genre=article&rft.atitle=A+title&rft_id=info:pmid/12345&rft_id=info:doi/10.5555%2Fplain'
    ],
    // SFX's OpenURL 0.1 parser ("Local Source Configuration", SFX Advanced User's Guide,
    // https://knowledge.exlibrisgroup.com/SFX/Product_Documentation/01_Version_4.0/SFX_Advanced_User's_Guide/17_Local_Source_Configuration)
    ['SFX 0.1', '/openurl?sid=SilverPlatter:MX&genre=article&id=doi:10.5555/plain&aulast=Smith'],
    // A minimal 360 Link DOI request, as public scripts send to <hash>.search.serialssolutions.com (observed, not vendor-documented)
    ['360 Link minimal', '/openurl?rft_id=info:doi/10.5555/plain'],
    // Summon-generated context keys, encoded (observed links from summon.serialssolutions.com)
    [
      '360 Link / Summon',
      '/openurl?ctx_ver=Z39.88-2004&ctx_enc=info%3Aofi%2Fenc%3AUTF-8&rfr_id=info%3Asid%2Fsummon.serialssolutions.com&rft_val_fmt=info%3Aofi%2Ffmt%3Akev%3Amtx%3Ajournal&rft.genre=article&rft_id=info%3Adoi%2F10.5555%2Fplain'
    ],
    // Google Scholar → EBSCO Full Text Finder (resolver.ebscohost.com/openurl): 0.1 id=doi: with lower-case hex (observed public links)
    ['EBSCO Full Text Finder', '/openurl?sid=google&auinit=RE&aulast=Marx&atitle=A+title&id=doi%3a10.5555%2fplain&site=ftf-live'],
    // doi.org's own redirect to a library's local service ("DOI Handbook" §3.8.4.1, …/openurl?doi=10.1000/demo_DOI)
    ['doi.org to a local service', '/openurl?doi=10.5555/plain'],
    // rft.doi, common in discovery systems' links (non-standard)
    ['rft.doi', '/openurl?url_ver=Z39.88-2004&rft.doi=10.5555/plain'],
    // doi.org's legacy 1.0 form (DOI Handbook §3.8.4.2: rft_id=doi:…, url_ver=z39.88-2003, rfr_id=ori:rid:crossref.org)
    ['doi.org legacy 1.0', '/openurl?url_ver=z39.88-2003&rfr_id=ori:rid:crossref.org&rft_id=doi:10.5555/plain&rfr_dat=cr_pub%2B%2Bcr_aut']
  ])("%s: redirects to the DOI's URL", async (_name, url) => {
    const res = await (await app()).inject({ url })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe(PLAIN)
  })

  it("the handbook's return URL /openurl?id=doi:10.1000/demo_DOI&nols=y resolves normally, even on campus", async () => {
    const a = await app([
      { id: 'sfx', name: 'Library', url: 'https://sfx.example.edu/sfxlcl41?id=doi:{doi}', networks: ['192.0.2.0/24'], prefixes: [] }
    ])
    const res = await a.inject({ url: '/openurl?id=doi:10.1000/demo_DOI&nols=y', remoteAddress: CAMPUS })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://www.doi.org/demo')
  })

  it('a form POST works as the GET does; its "+" is a space, as browsers encode forms', async () => {
    const a = await app()
    const form = { 'content-type': 'application/x-www-form-urlencoded' }
    expect(
      (
        await a.inject({
          method: 'POST',
          url: '/openurl',
          payload: 'url_ver=Z39.88-2004&rft_id=info%3Adoi%2F10.5555%2Fplain',
          headers: form
        })
      ).headers.location
    ).toBe(PLAIN)
    expect((await a.inject({ method: 'POST', url: '/openurl', payload: 'doi=10.5555/a+b', headers: form })).headers.location).toBe(
      'http://example.org/space'
    )
  })

  it('in a GET query "+" is a plus, as in /{doi}', async () => {
    expect((await (await app()).inject({ url: '/openurl?doi=10.5555/a+b' })).headers.location).toBe('http://example.org/plus')
  })

  it('a pasted doi.org URL or a doi: prefix in the value is stripped (behaviour.md §2)', async () => {
    const a = await app()
    expect((await a.inject({ url: '/openurl?doi=https://doi.org/10.5555/plain' })).headers.location).toBe(PLAIN)
    expect((await a.inject({ url: '/openurl?rft.doi=doi:10.5555/plain' })).headers.location).toBe(PLAIN)
  })
})

describe('EZproxy-wrapped requests', () => {
  // EZproxy's qurl= carries a percent-encoded target, decoded once before the redirect (OCLC, "Create search widgets to
  // proxied resources", https://help.oclc.org/Library_Management/EZproxy/Manage_EZproxy/Create_search_widgets_to_proxied_resources);
  // a link built from an already encoded OpenURL arrives encoded twice (nested %25xx in real qurls: tom5760/ezproxy-db#78).
  function throughEzproxyQurl(target: string): string {
    const login = `https://login.ezproxy.example.edu/login?qurl=${encodeURIComponent(target)}`
    const qurl = new URL(login).searchParams.get('qurl') ?? '' // what EZproxy redirects the reader to
    return qurl.replace(BASE, '')
  }

  it('an OpenURL whose DOI was encoded twice is decoded once more', async () => {
    const overEncoded = `${BASE}/openurl?url_ver=Z39.88-2004&rft_id=${encodeURIComponent(encodeURIComponent('info:doi/10.5555/plain'))}`
    const arrives = throughEzproxyQurl(overEncoded)
    expect(arrives).toBe('/openurl?url_ver=Z39.88-2004&rft_id=info%253Adoi%252F10.5555%252Fplain')
    const res = await (await app()).inject({ url: arrives })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe(PLAIN)
  })

  it('an OpenURL 0.1 id encoded twice too', async () => {
    const res = await (await app()).inject({ url: '/openurl?sid=google&id=doi%253A10.5555%252Fplain' })
    expect(res.headers.location).toBe(PLAIN)
  })

  it('a url= starting point passes the target as it is', async () => {
    // "Starting point URLs and config.txt": http://ezproxy.abclib.org/login?url=http://www.sciencedb.com, the target unencoded
    // (https://www.oclc.org/content/support/worldwide/en_us/services/ezproxy/documentation/concept/starting_point_url.html)
    const login = `https://login.ezproxy.example.edu/login?url=${BASE}/openurl?id=doi:10.5555/plain&sid=x`
    const target = login.slice(login.indexOf('url=') + 4)
    expect((await (await app()).inject({ url: target.replace(BASE, '') })).headers.location).toBe(PLAIN)
  })
})

describe('what /openurl carries over and refuses', () => {
  it("the proxy's own parameters come along: noredirect shows the values", async () => {
    const res = await (await app()).inject({ url: '/openurl?rft_id=info:doi/10.5555/plain&noredirect' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('DOI Name Values')
  })

  it('urlappend comes along', async () => {
    const res = await (await app()).inject({ url: '/openurl?id=doi:10.5555/plain&urlappend=%23sec2' })
    expect(res.headers.location).toBe(`${PLAIN}#sec2`)
  })

  it("an alias answers its 301 to our own URL with the proxy's parameters only", async () => {
    const res = await (await app()).inject({ url: '/openurl?sid=x&rft.atitle=T&id=doi:10.5555/alias&nols=y' })
    expect(res.statusCode).toBe(301)
    expect(res.headers.location).toBe(`${BASE}/10.5555/plain?nols=y`)
  })

  it('a DOI that does not exist is the 404 page', async () => {
    const res = await (await app()).inject({ url: '/openurl?rft_id=info:doi/10.5555/missing' })
    expect(res.statusCode).toBe(404)
    expect(res.body).toContain('DOI Not Found')
  })

  it('no DOI: a 400 page that names the keys we read', async () => {
    const res = await (await app()).inject({ url: '/openurl?sid=google&rft.atitle=Global+warming&rft.issn=1234-5678&rft_id=info:pmid/123' })
    expect(res.statusCode).toBe(400)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(res.body).toContain('<html lang="en">')
    expect(res.body).toContain('<title>No DOI in this OpenURL</title>')
    for (const example of ['rft_id=info:doi/10.1000/182', 'id=doi:10.1000/182', 'rft.doi=10.1000/182', 'doi=10.1000/182']) {
      expect(res.body).toContain(example)
    }
  })

  it('a DOI with a control character is refused with 400, as in a path (behaviour.md §2.2)', async () => {
    const res = await (await app()).inject({ url: '/openurl?doi=10.5555/a%0Ab' })
    expect(res.statusCode).toBe(400)
    expect(res.body).toContain('control character')
  })

  it('limits apply: the rate limit counts /openurl lookups of uncached DOIs, never cached ones', async () => {
    const { app: a } = await setup({ records: RECORDS, overrides: { rateLimitMax: 2, rateLimitAllowList: [] } })
    expect((await a.inject({ url: '/openurl?doi=10.5555/u1', remoteAddress: OFF_CAMPUS })).statusCode).toBe(302)
    expect((await a.inject({ url: '/openurl?doi=10.5555/u2', remoteAddress: OFF_CAMPUS })).statusCode).toBe(302)
    const third = await a.inject({ url: '/openurl?doi=10.5555/u3', remoteAddress: OFF_CAMPUS })
    expect(third.statusCode).toBe(429)
    expect(third.headers['retry-after']).toBeDefined()
    expect((await a.inject({ url: '/openurl?doi=10.5555/u1', remoteAddress: OFF_CAMPUS })).statusCode).toBe(302)
  })
})

describe("the local service with real link resolvers' URL templates", () => {
  // Each template is what the library would configure; the check is what the link resolver reads back
  // from the query after its own (single) decoding.
  it.each([
    // Alma through Primo VE, patron-facing Services page: https://<Primo_domain>/openurl/<inst>/<view>? ("Base URL for the
    // Services Page", https://knowledge.exlibrisgroup.com/Alma/Product_Documentation/010Alma_Online_Help_(English)/060Alma-Primo_Integration/050Configuring_the_Primo_Front_End_for_Alma_Link_Resolver/020Base_URL_for_the_Services_Page)
    [
      'Alma (Primo VE)',
      'https://example.primo.exlibrisgroup.com/openurl/01EXAMPLE_INST/01EXAMPLE_INST:VIEW?url_ver=Z39.88-2004&ctx_ver=Z39.88-2004&rfr_id=info:sid/doi-proxy&rft_id=info:doi/{doi}',
      'rft_id',
      'info:doi/10.5555/a&b'
    ],
    // Alma uresolver: <Alma domain>/view/uresolver/<institution>/openurl? ("Fulfillment services",
    // https://developers.exlibrisgroup.com/alma/integrations/discovery/fulfillment_services)
    [
      'Alma (uresolver)',
      'https://eu03.alma.exlibrisgroup.com/view/uresolver/01EXAMPLE_INST/openurl?ctx_enc=info:ofi/enc:UTF-8&ctx_ver=Z39.88-2004&url_ver=Z39.88-2004&rft_id=info:doi/{doi}&svc_dat=viewit',
      'rft_id',
      'info:doi/10.5555/a&b'
    ],
    // SFX, 1.0: /sfxlcl41?url_ver=Z39.88-2004&rft_id=info:doi/… (SFX Advanced User's Guide, base; DOI form observed in public scripts)
    [
      'SFX (1.0)',
      'https://sfx.example.edu/sfxlcl41?url_ver=Z39.88-2004&ctx_ver=Z39.88-2004&rfr_id=info:sid/doi-proxy&rft_id=info:doi/{doi}',
      'rft_id',
      'info:doi/10.5555/a&b'
    ],
    // SFX, 0.1: /sfxlcl41?sid=…&id=doi:… ("OpenURL Syntax Description" 0.1, http://www.exlibrisgroup.com/sfx_openurl_syntax.htm)
    ['SFX (0.1)', 'https://sfx.example.edu/sfxlcl41?sid=doi-proxy&id=doi:{doi}', 'id', 'doi:10.5555/a&b'],
    // 360 Link: LIBHASH.search.serialssolutions.com ("360 Link: Google Scholar Setup", https://knowledge.exlibrisgroup.com/360_Services/360_Link/0Product_Documentation/Configuring_360_Link_and_Setting_Up_Sources_and_Targets/Setting_Up_Linking_Sources/Google_and_Google_Scholar/360_Link%3A_Google_Scholar_Setup)
    [
      '360 Link',
      'https://ab1cd2ef3g.search.serialssolutions.com/?url_ver=Z39.88-2004&ctx_ver=Z39.88-2004&rfr_id=info:sid/doi-proxy&rft_id=info:doi/{doi}',
      'rft_id',
      'info:doi/10.5555/a&b'
    ],
    // EBSCO Full Text Finder: resolver.ebscohost.com/openurl?custid=…&id=doi:… (observed public links; EBSCO documents no base URL publicly)
    [
      'EBSCO Full Text Finder',
      'https://resolver.ebscohost.com/openurl?custid=s1234567&groupid=main&profile=ftf&sid=doi-proxy&id=doi:{doi}',
      'id',
      'doi:10.5555/a&b'
    ],
    // doi.org's own shape for a local service (DOI Handbook §3.8.4.1: <resolver>/openurl?doi=…)
    ['doi.org local service', 'https://resolver.example.edu/openurl?doi={doi}', 'doi', '10.5555/a&b']
  ])('%s: the resolver reads the DOI back exactly', async (_name, template, key, expected) => {
    const a = await app([{ id: 'lib', name: 'Library', url: template, networks: ['192.0.2.0/24'], prefixes: [] }])
    const res = await a.inject({ url: '/10.5555/a%26b', remoteAddress: CAMPUS })
    expect(res.statusCode).toBe(302)
    const location = new URL(res.headers.location as string)
    expect(`${location.origin}${location.pathname}`).toBe(
      `${new URL(template.replace('{doi}', 'x')).origin}${new URL(template.replace('{doi}', 'x')).pathname}`
    )
    expect(location.searchParams.get(key)).toBe(expected)
  })

  it("EZproxy-wrapped (url=): EZproxy passes the resolver's URL on as it is, the DOI encoded once inside it", async () => {
    // "Starting point URLs and config.txt" (OCLC): login?url=<target, unencoded>
    const template = 'https://login.ezproxy.example.edu/login?url=https://sfx.example.edu/sfxlcl41?sid=doi-proxy&id=doi:{doi}'
    const a = await app([{ id: 'lib', name: 'Library', url: template, networks: ['192.0.2.0/24'], prefixes: [] }])
    const location = (await a.inject({ url: '/10.5555/a%26b', remoteAddress: CAMPUS })).headers.location as string
    const target = location.slice(location.indexOf('url=') + 4)
    expect(new URL(target).searchParams.get('id')).toBe('doi:10.5555/a&b')
  })

  it('an /openurl request from a reader on campus is diverted as /{doi} is', async () => {
    const a = await app([
      { id: 'sfx', name: 'Library', url: 'https://sfx.example.edu/sfxlcl41?id=doi:{doi}', networks: ['192.0.2.0/24'], prefixes: [] }
    ])
    const res = await a.inject({ url: '/openurl?rft_id=info:doi/10.5555/plain', remoteAddress: CAMPUS })
    expect(res.headers.location).toBe('https://sfx.example.edu/sfxlcl41?id=doi:10.5555%2Fplain')
    expect(res.headers['cache-control']).toBe('private, no-store')
  })
})
