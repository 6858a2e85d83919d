import { describe, expect, it, onTestFinished } from 'vitest'
import { setup } from '../support/app.js'
import { FakeAgency } from '../support/fake-agency.js'
import { admin, str } from '../support/records.js'
import type { Config } from '../../src/config/schema.js'
import type { HandleValue } from '../../src/handle/types.js'

// docs/metadata.md: negotiated requests answered with the metadata itself (METADATA_MODE=fetch), against a
// real fake agency on 127.0.0.1 behind a real fake Handle API.

const DOI = '10.9999/paper'
const BIBTEX = '@article{paper, title = {A paper}}\n'
const CSL = '{"type":"article-journal","title":"A paper"}'
const BIB = { accept: 'application/x-bibtex' }

function recordsFor(agency: FakeAgency, extra: Record<string, HandleValue[]> = {}): Record<string, HandleValue[]> {
  const conneg = `<locations><location weight="0" http_role="conneg" href_template="${agency.origin}/{hdl}"/></locations>`
  return {
    10.9999: [admin(), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/FAKE</locs></HS_NAMESPACE>')],
    '10.SERV/FAKE': [admin(), str(1, '10320/loc', conneg)],
    [DOI]: [str(1, 'URL', 'https://publisher.example/paper')],
    '10.9999/other': [str(1, 'URL', 'https://publisher.example/other')],
    '10.9999/unknown-to-agency': [str(1, 'URL', 'https://publisher.example/unknown')],
    ...extra
  }
}

async function withAgency(
  opts: {
    overrides?: Partial<Config>
    extra?: (agency: FakeAgency) => Record<string, HandleValue[]>
    hosts?: (agency: FakeAgency) => string[]
    now?: () => number
  } = {}
) {
  const agency = await FakeAgency.start({
    [DOI]: { 'application/x-bibtex': BIBTEX, 'application/vnd.citationstyles.csl+json': CSL },
    '10.9999/other': { 'application/x-bibtex': '@misc{other}\n' }
  })
  onTestFinished(async () => {
    await agency.close()
  })
  const { app, upstream } = await setup({
    records: recordsFor(agency, opts.extra?.(agency)),
    overrides: {
      metadataMode: 'fetch',
      upstreamRetries: 0,
      ...opts.overrides,
      metadataHosts: opts.hosts?.(agency) ?? opts.overrides?.metadataHosts ?? [agency.host]
    },
    ...(opts.now === undefined ? {} : { deps: { now: opts.now } })
  })
  return { app, agency, upstream }
}

describe('METADATA_MODE=redirect (the default): as doi.org', () => {
  it('a BibTeX request is redirected to the agency, which is never asked by us', async () => {
    const { app, agency } = await withAgency({ overrides: { metadataMode: 'redirect' } })
    const res = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe(`${agency.origin}/10.9999%2Fpaper`)
    expect(agency.seen).toHaveLength(0)
  })
})

describe('METADATA_MODE=fetch: the metadata itself', () => {
  it("a BibTeX request gets the BibTeX, with the agency's status and Content-Type, Vary: Accept, a cite-as Link, CORS and X-Cache: MISS", async () => {
    const { app } = await withAgency()
    const res = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(res.statusCode).toBe(200)
    expect(res.body).toBe(BIBTEX)
    expect(res.headers['content-type']).toBe('application/x-bibtex; charset=utf-8')
    expect(res.headers.vary).toBe('Accept')
    expect(res.headers.link).toBe('<https://doi.org/10.9999/paper>; rel="cite-as"')
    expect(res.headers['access-control-allow-origin']).toBe('*')
    expect(res.headers['x-cache']).toBe('MISS')
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(res.headers.location).toBeUndefined()
  })

  it('an agency answering gzip-encoded: the reader gets the BibTeX itself, decoded (issue 25)', async () => {
    const { app, agency } = await withAgency()
    agency.gzip = true
    const res = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(res.statusCode).toBe(200)
    expect(res.body).toBe(BIBTEX)
    expect(res.headers['content-encoding']).toBeUndefined()
    expect(agency.seen.at(-1)?.headers['accept-encoding']).toBe('gzip, deflate, br')
  })

  it("a reader's urlappend never steers what we fetch from an agency: such a request is redirected, as doi.org does (found in review)", async () => {
    const { app, agency } = await withAgency()
    const res = await app.inject({ url: `/${DOI}?urlappend=%2F..%2F..%2Fsomething%3Fx%3D1`, headers: BIB })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe(`${agency.origin}/10.9999%2Fpaper/../../something?x=1`)
    expect(agency.seen).toHaveLength(0)
  })

  it('the same request again is answered from the cache: X-Cache: HIT, and the agency was asked once', async () => {
    const { app, agency } = await withAgency()
    await app.inject({ url: `/${DOI}`, headers: BIB })
    const res = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(res.statusCode).toBe(200)
    expect(res.body).toBe(BIBTEX)
    expect(res.headers['x-cache']).toBe('HIT')
    expect(agency.count(DOI)).toBe(1)
  })

  it('the same DOI in another case, with the same Accept, is answered from the cache: DOI names are case-insensitive', async () => {
    const { app, agency } = await withAgency()
    expect((await app.inject({ url: '/10.9999/PAPER', headers: BIB })).body).toBe(BIBTEX)
    const res = await app.inject({ url: '/10.9999/paper', headers: BIB })
    expect(res.statusCode).toBe(200)
    expect(res.body).toBe(BIBTEX)
    expect(res.headers['x-cache']).toBe('HIT')
    expect(agency.count(DOI)).toBe(1)
  })

  it('readers missing the same DOI in different cases at once make one request to the agency', async () => {
    const { app, agency } = await withAgency()
    agency.mode = { kind: 'slow', delayMs: 100 }
    const answers = await Promise.all(
      ['/10.9999/paper', '/10.9999/PAPER', '/10.9999/Paper'].map(
        async (url, i) => await app.inject({ url, headers: BIB, remoteAddress: `192.0.2.${i + 1}` })
      )
    )
    expect(answers.map((r) => r.body)).toEqual([BIBTEX, BIBTEX, BIBTEX])
    expect(agency.count(DOI)).toBe(1)
  })

  it('another media type of the same DOI is fetched and cached on its own', async () => {
    const { app, agency } = await withAgency()
    await app.inject({ url: `/${DOI}`, headers: BIB })
    const csl = await app.inject({ url: `/${DOI}`, headers: { accept: 'application/vnd.citationstyles.csl+json' } })
    expect(csl.body).toBe(CSL)
    expect(csl.headers['content-type']).toBe('application/vnd.citationstyles.csl+json; charset=utf-8')
    expect(agency.count(DOI)).toBe(2)
    expect((await app.inject({ url: `/${DOI}`, headers: BIB })).body).toBe(BIBTEX)
    expect(agency.count(DOI)).toBe(2)
  })

  it('many readers missing the same DOI and type at once make one request to the agency', async () => {
    const { app, agency } = await withAgency()
    agency.mode = { kind: 'slow', delayMs: 100 }
    const answers = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => await app.inject({ url: `/${DOI}`, headers: BIB, remoteAddress: `192.0.2.${i + 1}` }))
    )
    expect(answers.map((r) => r.statusCode)).toEqual(Array(8).fill(200))
    expect(agency.count(DOI)).toBe(1)
  })

  it('readers queued behind a one-at-a-time agency take the outcome of the fetch that ended while they waited, even a failure (found in review)', async () => {
    const { app, agency } = await withAgency({ overrides: { metadataAgencyConcurrency: 1 } })
    agency.mode = { kind: 'status', status: 500 }
    const answers = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => await app.inject({ url: `/${DOI}`, headers: BIB, remoteAddress: `192.0.2.${i + 1}` }))
    )
    expect(answers.map((r) => r.statusCode)).toEqual(Array(6).fill(502))
    expect(agency.count(DOI)).toBe(1)
  })

  it('a media type the agency does not have answers 406, as the agency does', async () => {
    const { app } = await withAgency()
    const res = await app.inject({ url: `/${DOI}`, headers: { accept: 'application/x-unknown-format' } })
    expect(res.statusCode).toBe(406)
    expect(res.headers.vary).toBe('Accept')
  })

  it('a DOI the agency does not know answers 404, in our words (not its HTML page)', async () => {
    const { app } = await withAgency()
    const res = await app.inject({ url: '/10.9999/unknown-to-agency', headers: BIB })
    expect(res.statusCode).toBe(404)
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8')
    expect(res.body).not.toContain('<html')
  })

  it("the agency sees the reader's Accept and our User-Agent, and none of the reader's other headers", async () => {
    const { app, agency } = await withAgency()
    await app.inject({
      url: `/${DOI}`,
      headers: {
        accept: 'application/x-bibtex',
        cookie: 'session=secret',
        authorization: 'Bearer secret',
        'x-forwarded-for': '203.0.113.9',
        referer: 'https://reader.example/'
      }
    })
    const seen = agency.seen[0]!.headers
    expect(seen.accept).toBe('application/x-bibtex')
    expect(seen['user-agent']).toMatch(/^doi-proxy\//)
    expect(seen.cookie).toBeUndefined()
    expect(seen.authorization).toBeUndefined()
    expect(seen['x-forwarded-for']).toBeUndefined()
    expect(seen.referer).toBeUndefined()
  })

  it("HEAD answers the metadata's headers without the body", async () => {
    const { app } = await withAgency()
    const res = await app.inject({ method: 'HEAD', url: `/${DOI}`, headers: BIB })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('application/x-bibtex; charset=utf-8')
    expect(res.body).toBe('')
  })

  it('a browser still gets the redirect to the landing page', async () => {
    const { app, agency } = await withAgency()
    const res = await app.inject({ url: `/${DOI}`, headers: { accept: 'text/html', 'user-agent': 'Mozilla/5.0' } })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://publisher.example/paper')
    expect(agency.seen).toHaveLength(0)
  })
})

describe('negotiation as RFC 9110 says, in fetch mode', () => {
  it('style= and locale= are passed on to the agency, and each style is its own answer', async () => {
    const { app, agency } = await withAgency()
    agency.records.set(DOI, {
      'text/x-bibliography;style=apa;locale=fr-FR': 'Paper, A. (2020). Un article.\n',
      'text/x-bibliography;style=mla': 'Paper, A. "A paper." 2020.\n'
    })
    const apa = await app.inject({ url: `/${DOI}`, headers: { accept: 'text/x-bibliography; style=apa; locale=fr-FR' } })
    expect(apa.statusCode).toBe(200)
    expect(apa.body).toBe('Paper, A. (2020). Un article.\n')
    expect(agency.seen[0]?.headers.accept).toBe('text/x-bibliography; style=apa; locale=fr-FR')
    const mla = await app.inject({ url: `/${DOI}`, headers: { accept: 'text/x-bibliography;style=mla' } })
    expect(mla.body).toBe('Paper, A. "A paper." 2020.\n')
    expect((await app.inject({ url: `/${DOI}`, headers: { accept: 'text/x-bibliography; style=chicago' } })).statusCode).toBe(406)
  })

  it('a type the agency cannot write falls through to the next acceptable one (datacite/datacite#2448)', async () => {
    const { app, agency } = await withAgency()
    agency.mode = { kind: 'first-type-only' }
    const accept = 'application/vnd.crossref.unixref+xml;q=0.9, application/vnd.datacite.datacite+xml;q=0.8, application/x-bibtex;q=0.7'
    const res = await app.inject({ url: `/${DOI}`, headers: { accept } })
    expect(res.statusCode).toBe(200)
    expect(res.body).toBe(BIBTEX)
    expect(agency.seen.map((r) => r.headers.accept)).toEqual([accept, 'application/vnd.datacite.datacite+xml', 'application/x-bibtex'])
    // Held now: the same request is answered from the cache, asking nobody.
    const again = await app.inject({ url: `/${DOI}`, headers: { accept } })
    expect(again.body).toBe(BIBTEX)
    expect(again.headers['x-cache']).toBe('HIT')
    expect(agency.seen).toHaveLength(3)
  })

  it('when no type is held by the agency, its 406 is the answer', async () => {
    const { app, agency } = await withAgency()
    agency.mode = { kind: 'first-type-only' }
    const res = await app.inject({ url: `/${DOI}`, headers: { accept: 'application/rdf+xml, text/turtle;q=0.5' } })
    expect(res.statusCode).toBe(406)
    expect(agency.seen).toHaveLength(2)
  })

  it('a type the reader excluded with q=0 is never relayed, even when the agency answers it (RFC 9110 §12.4.2)', async () => {
    const { app } = await withAgency()
    // The fake agency reads no q and answers the first type it holds: BibTeX, which this reader refuses.
    const res = await app.inject({ url: `/${DOI}`, headers: { accept: 'application/x-bibtex;q=0, application/rdf+xml' } })
    expect(res.statusCode).toBe(502)
    expect(res.body).not.toContain(BIBTEX.trim())
  })

  it('a reader whose Accept is too long to fetch for gets the redirect, and it is not kept for other readers of the same negotiation', async () => {
    const { app, agency } = await withAgency()
    expect((await app.inject({ url: `/${DOI}` })).statusCode).toBe(302)
    // The same locatt as a plain BibTeX request (parameters are not part of it), but over the 1024 characters we pass on.
    const long = await app.inject({ url: `/${DOI}`, headers: { accept: `application/x-bibtex; x=${'a'.repeat(1100)}` } })
    expect(long.statusCode).toBe(302)
    const plain = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(plain.statusCode).toBe(200)
    expect(plain.body).toBe(BIBTEX)
    expect(agency.seen).toHaveLength(1)
  })
})

describe("freshness: the agency's Cache-Control, capped, and stale answers when it fails", () => {
  it("an answer is fresh for the agency's max-age at most METADATA_MAX_TTL_SECONDS; then the agency is asked again", async () => {
    let t = Date.parse('2026-11-23T12:00:00Z')
    const { app, agency } = await withAgency({ overrides: { metadataMaxTtlSeconds: 60 }, now: () => t })
    agency.cacheControl = 'public, max-age=600'
    await app.inject({ url: `/${DOI}`, headers: BIB })
    t += 59_000
    expect((await app.inject({ url: `/${DOI}`, headers: BIB })).headers['x-cache']).toBe('HIT')
    t += 2_000
    expect((await app.inject({ url: `/${DOI}`, headers: BIB })).headers['x-cache']).toBe('MISS')
    expect(agency.count(DOI)).toBe(2)
  })

  it('an answer the agency marks no-store is never cached', async () => {
    const { app, agency } = await withAgency()
    agency.cacheControl = 'no-store'
    await app.inject({ url: `/${DOI}`, headers: BIB })
    await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(agency.count(DOI)).toBe(2)
  })

  it('when the agency fails (5xx), an expired answer stands in: X-Cache: STALE', async () => {
    let t = Date.parse('2026-11-23T12:00:00Z')
    const { app, agency } = await withAgency({ now: () => t })
    agency.cacheControl = 'max-age=60'
    await app.inject({ url: `/${DOI}`, headers: BIB })
    t += 120_000
    agency.mode = { kind: 'status', status: 500 }
    const res = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(res.statusCode).toBe(200)
    expect(res.body).toBe(BIBTEX)
    expect(res.headers['x-cache']).toBe('STALE')
  })

  it("with nothing to stand in, the agency's 5xx is our 502 page", async () => {
    const { app, agency } = await withAgency()
    agency.mode = { kind: 'status', status: 502 }
    const res = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(res.statusCode).toBe(502)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
  })
})

describe('a failing, slow or lying agency', () => {
  it('429 with Retry-After: 503 with Retry-After, and the agency is not asked again before the time is up', async () => {
    const { app, agency } = await withAgency()
    agency.mode = { kind: 'status', status: 429, headers: { 'retry-after': '120' } }
    const first = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(first.statusCode).toBe(503)
    expect(Number(first.headers['retry-after'])).toBeGreaterThan(0)
    const second = await app.inject({ url: '/10.9999/other', headers: BIB })
    expect(second.statusCode).toBe(503)
    expect(agency.seen).toHaveLength(1)
  })

  it('a body larger than METADATA_MAX_BODY_BYTES is a 502, never passed on', async () => {
    const { app, agency } = await withAgency({ overrides: { metadataMaxBodyBytes: 64 * 1024 } })
    agency.mode = { kind: 'huge', bytes: 5 * 1024 * 1024 }
    const res = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(res.statusCode).toBe(502)
    expect(res.body).not.toContain('aaaa')
  })

  it('an answer of a type nobody asked for (an HTML page) is a 502, never served under our name', async () => {
    const { app, agency } = await withAgency()
    agency.mode = { kind: 'wrong-type' }
    const res = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(res.statusCode).toBe(502)
    expect(res.body).not.toContain('alert(1)')
  })

  it('an agency slower than METADATA_TIMEOUT_MS is a 504', async () => {
    const { app, agency } = await withAgency({ overrides: { metadataTimeoutMs: 200 } })
    agency.mode = { kind: 'slow', delayMs: 3000 }
    const res = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(res.statusCode).toBe(504)
  })

  it('no more than METADATA_AGENCY_CONCURRENCY fetches are in flight to one agency, and every reader is answered', async () => {
    const dois = Array.from({ length: 6 }, (_, i) => `10.9999/many-${i}`)
    const { app, agency } = await withAgency({
      overrides: { metadataAgencyConcurrency: 2 },
      extra: () => Object.fromEntries(dois.map((d) => [d, [str(1, 'URL', 'https://publisher.example/x')]]))
    })
    for (const d of dois) agency.records.set(d, { 'application/x-bibtex': `@misc{${d}}\n` })
    agency.mode = { kind: 'slow', delayMs: 50 }
    const answers = await Promise.all(dois.map(async (d) => await app.inject({ url: `/${d}`, headers: BIB })))
    expect(answers.map((r) => r.statusCode)).toEqual(Array(6).fill(200))
    expect(agency.maxInFlight).toBeLessThanOrEqual(2)
  })
})

describe('redirects from the agency and the allow-list (METADATA_HOSTS)', () => {
  it("a redirect to a host on the list is followed, as data.crossref.org's to api.crossref.org", async () => {
    const api = await FakeAgency.start({ [DOI]: { 'application/x-bibtex': BIBTEX } })
    onTestFinished(async () => {
      await api.close()
    })
    const { app, agency } = await withAgency({ hosts: (data) => [data.host, api.host] })
    agency.mode = { kind: 'redirect', status: 303, location: `${api.origin}/works/10.9999%2Fpaper/transform` }
    const res = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(res.statusCode).toBe(200)
    expect(res.body).toBe(BIBTEX)
    expect(api.count(DOI)).toBe(1)
  })

  it('a redirect to a host off the list is never followed: 502, and that host is never asked', async () => {
    const elsewhere = await FakeAgency.start({ [DOI]: { 'application/x-bibtex': BIBTEX } })
    onTestFinished(async () => {
      await elsewhere.close()
    })
    const { app, agency } = await withAgency()
    agency.mode = { kind: 'redirect', status: 302, location: `${elsewhere.origin}/${DOI}` }
    const res = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(res.statusCode).toBe(502)
    expect(elsewhere.seen).toHaveLength(0)
  })

  it('more redirects than METADATA_MAX_REDIRECTS is a 502', async () => {
    const { app, agency } = await withAgency({ overrides: { metadataMaxRedirects: 2 } })
    agency.mode = { kind: 'redirect', status: 302, location: '/10.9999%2Fpaper' }
    const res = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(res.statusCode).toBe(502)
    expect(agency.count(DOI)).toBe(3)
  })

  it('a record whose negotiated location is off the list is answered with the redirect, never fetched', async () => {
    const { app, agency } = await withAgency({ overrides: { metadataHosts: ['data.crossref.org'] } })
    const res = await app.inject({ url: `/${DOI}`, headers: BIB })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe(`${agency.origin}/10.9999%2Fpaper`)
    expect(agency.seen).toHaveLength(0)
  })
})
