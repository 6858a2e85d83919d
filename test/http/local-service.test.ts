import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { setup } from '../support/app.js'
import { admin, str } from '../support/records.js'
import type { LocalServiceConfig } from '../../src/config/local-services.js'

// The local service, "appropriate copy" (behaviour.md §10, R10): readers on the library's network, or who
// chose the library at /settings, are sent to its link resolver instead of the publisher.

const CAMPUS_V4 = '192.0.2.10'
const CAMPUS_V6 = '2001:db8:1:2::5'
const OFF_CAMPUS = '203.0.113.9'

const SFX: LocalServiceConfig = {
  id: 'sfx',
  name: 'University Library',
  url: 'https://sfx.example.edu/sfxlcl41?sid=doi-proxy&id=doi:{doi}',
  networks: ['192.0.2.0/24', '2001:db8::/32'],
  prefixes: []
}

const RECORDS = {
  10.5555: [admin()],
  '10.5555/plain': [admin(), str(1, 'URL', 'http://example.org/plain')],
  '10.5555/alias': [str(1, 'HS_ALIAS', '10.5555/plain')],
  '10.5555/a&b c': [str(1, 'URL', 'http://example.org/special')],
  '10.1000': [admin()],
  '10.1000/x': [str(1, 'URL', 'http://example.org/x')],
  // A DataCite-like prefix whose namespace location answers content negotiation (behaviour.md R9).
  10.17879: [admin(), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/DATACITE</locs></HS_NAMESPACE>')],
  '10.SERV/DATACITE': [
    admin(),
    str(1, '10320/loc', '<locations><location weight="0" http_role="conneg" href_template="https://data.crosscite.org/{hdl}"/></locations>')
  ],
  '10.17879/x': [str(1, 'URL', 'https://example.org/landing')]
}

const SFX_PLAIN = 'https://sfx.example.edu/sfxlcl41?sid=doi-proxy&id=doi:10.5555%2Fplain'

async function withServices(services: LocalServiceConfig[] = [SFX], deps = {}) {
  return await setup({ records: RECORDS, overrides: { localServices: services, publicBaseUrl: 'https://doi.library.example' }, deps })
}

describe("a reader on the library's network (behaviour.md §10)", () => {
  it("on the campus IPv4 network is sent to the library's link resolver", async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4 })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe(SFX_PLAIN)
  })

  it('on the campus IPv6 network is sent there too', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V6 })
    expect(res.headers.location).toBe(SFX_PLAIN)
  })

  it('an IPv4-mapped IPv6 address counts as its IPv4 address', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.5555/plain', remoteAddress: `::ffff:${CAMPUS_V4}` })
    expect(res.headers.location).toBe(SFX_PLAIN)
  })

  it('off campus goes to the publisher', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.5555/plain', remoteAddress: OFF_CAMPUS })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/plain')
  })

  it('a service with prefixes is used only for DOIs under them', async () => {
    const { app } = await withServices([{ ...SFX, prefixes: ['10.1000'] }])
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4 })).headers.location).toBe('http://example.org/plain')
    expect((await app.inject({ url: '/10.1000/x', remoteAddress: CAMPUS_V4 })).headers.location).toBe(
      'https://sfx.example.edu/sfxlcl41?sid=doi-proxy&id=doi:10.1000%2Fx'
    )
  })

  it('the first service whose networks hold the reader wins', async () => {
    const law = {
      ...SFX,
      id: 'law',
      name: 'Law Library',
      url: 'https://law.example.edu/openurl?rft_id=info:doi/{doi}',
      networks: ['192.0.2.0/28']
    }
    const { app } = await withServices([law, SFX])
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: '192.0.2.3' })).headers.location).toBe(
      'https://law.example.edu/openurl?rft_id=info:doi/10.5555%2Fplain'
    )
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: '192.0.2.200' })).headers.location).toBe(SFX_PLAIN)
  })

  it('a service without networks applies to nobody who has not chosen it', async () => {
    const { app } = await withServices([{ ...SFX, networks: [] }])
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4 })).headers.location).toBe('http://example.org/plain')
  })

  it('0.0.0.0/0 and ::/0 apply it to everyone', async () => {
    const { app } = await withServices([{ ...SFX, networks: ['0.0.0.0/0', '::/0'] }])
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: OFF_CAMPUS })).headers.location).toBe(SFX_PLAIN)
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: '2001:db9::1' })).headers.location).toBe(SFX_PLAIN)
  })
})

describe("a reader's own choice (the doi_proxy_ls cookie)", () => {
  it('off campus, a reader who chose the library is sent there', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.5555/plain', remoteAddress: OFF_CAMPUS, headers: { cookie: 'other=1; doi_proxy_ls=sfx' } })
    expect(res.headers.location).toBe(SFX_PLAIN)
  })

  it('on campus, a reader who chose none goes to the publisher', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4, headers: { cookie: 'doi_proxy_ls=none' } })
    expect(res.headers.location).toBe('http://example.org/plain')
  })

  it('a cookie naming a service that is not configured is ignored: the network decides', async () => {
    const { app } = await withServices()
    expect(
      (await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4, headers: { cookie: 'doi_proxy_ls=gone' } })).headers.location
    ).toBe(SFX_PLAIN)
    expect(
      (await app.inject({ url: '/10.5555/plain', remoteAddress: OFF_CAMPUS, headers: { cookie: 'doi_proxy_ls=gone' } })).headers.location
    ).toBe('http://example.org/plain')
  })

  it('the chosen service of several is the one used, whatever the network', async () => {
    const law = { ...SFX, id: 'law', name: 'Law Library', url: 'https://law.example.edu/openurl?rft_id=info:doi/{doi}', networks: [] }
    const { app } = await withServices([SFX, law])
    const res = await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4, headers: { cookie: 'doi_proxy_ls=law' } })
    expect(res.headers.location).toBe('https://law.example.edu/openurl?rft_id=info:doi/10.5555%2Fplain')
  })
})

describe('answers that are never diverted', () => {
  it.each(['nols=y', 'nosfx=y', 'nols'])('?%s goes to the publisher, even on campus and with the cookie', async (query) => {
    const { app } = await withServices()
    const res = await app.inject({ url: `/10.5555/plain?${query}`, remoteAddress: CAMPUS_V4, headers: { cookie: 'doi_proxy_ls=sfx' } })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/plain')
  })

  it('a DOI that does not exist is still the 404 page', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.5555/missing', remoteAddress: CAMPUS_V4 })
    expect(res.statusCode).toBe(404)
    expect(res.body).toContain('DOI Not Found')
  })

  it('an alias still answers its 301 to our own URL; the target is then diverted', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.5555/alias', remoteAddress: CAMPUS_V4 })
    expect(res.statusCode).toBe(301)
    expect(res.headers.location).toBe('https://doi.library.example/10.5555/plain')
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4 })).headers.location).toBe(SFX_PLAIN)
  })

  it('noredirect shows the values page', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.5555/plain?noredirect', remoteAddress: CAMPUS_V4 })
    expect(res.statusCode).toBe(200)
    expect(res.body).toContain('DOI Name Values')
  })

  it('noredirect with action=redirect redirects to the publisher, not the library', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.5555/plain?noredirect&action=redirect', remoteAddress: CAMPUS_V4 })
    expect(res.headers.location).toBe('http://example.org/plain')
  })

  it('action=showurls lists the locations', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.5555/plain?action=showurls', remoteAddress: CAMPUS_V4 })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toContain('text/xml')
  })

  it('action=metadata goes where the record says', async () => {
    const { app } = await withServices()
    expect((await app.inject({ url: '/10.5555/plain?action=metadata', remoteAddress: CAMPUS_V4 })).headers.location).toBe(
      'http://example.org/plain'
    )
  })

  it('the REST API and Which RA? answer their JSON', async () => {
    const { app } = await withServices()
    const api = await app.inject({ url: '/api/handles/10.5555/plain', remoteAddress: CAMPUS_V4 })
    expect(api.statusCode).toBe(200)
    expect(api.json()).toMatchObject({ responseCode: 1, handle: '10.5555/plain' })
    const ra = await app.inject({ url: '/doiRA/10.5555/plain', remoteAddress: CAMPUS_V4 })
    expect(ra.statusCode).toBe(200)
    expect(ra.headers.location).toBeUndefined()
    expect(ra.body).toContain('"DOI"')
  })

  it("a citation tool asking for BibTeX gets the registration agency's metadata service", async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.17879/x', remoteAddress: CAMPUS_V4, headers: { accept: 'application/x-bibtex' } })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://data.crosscite.org/10.17879%2Fx')
  })

  it('a browser asking for the same DOI is sent to the library', async () => {
    const { app } = await withServices()
    const res = await app.inject({
      url: '/10.17879/x',
      remoteAddress: CAMPUS_V4,
      headers: { accept: 'text/html', 'user-agent': 'Mozilla/5.0' }
    })
    expect(res.headers.location).toBe('https://sfx.example.edu/sfxlcl41?sid=doi-proxy&id=doi:10.17879%2Fx')
  })
})

describe('caching headers', () => {
  it('a diverted answer is private and never stored', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4 })
    expect(res.headers['cache-control']).toBe('private, no-store')
    expect(res.headers.expires).toBeUndefined()
  })

  it('with a service configured, the publisher redirect is private and varies with the cookie', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.5555/plain', remoteAddress: OFF_CAMPUS })
    expect(res.headers['cache-control']).toBe('private')
    expect(res.headers.vary).toBe('Cookie')
    expect(res.headers.expires).toBeDefined()
  })

  it('a negotiable DOI keeps Vary: Accept next to Cookie', async () => {
    const { app } = await withServices()
    const res = await app.inject({ url: '/10.17879/x', remoteAddress: OFF_CAMPUS })
    expect(res.headers.vary).toBe('Accept, Cookie')
  })

  it('without a service, redirects carry no Cache-Control: shared caches may keep them as before', async () => {
    const { app } = await setup({ records: RECORDS })
    const res = await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4, headers: { cookie: 'doi_proxy_ls=sfx' } })
    expect(res.headers.location).toBe('http://example.org/plain')
    expect(res.headers['cache-control']).toBeUndefined()
  })
})

describe('the URL template', () => {
  it('{doi} and {return} are filled in as query values', async () => {
    const service = { ...SFX, url: 'https://sfx.example.edu/sfxlcl41?id=doi:{doi}&back={return}' }
    const { app } = await withServices([service])
    const res = await app.inject({ url: '/10.5555/a%26b%20c', remoteAddress: CAMPUS_V4 })
    expect(res.headers.location).toBe(
      'https://sfx.example.edu/sfxlcl41?id=doi:10.5555%2Fa%26b%20c&back=https%3A%2F%2Fdoi.library.example%2F10.5555%2Fa%2526b%2520c%3Fnols%3Dy'
    )
  })

  it('the {return} URL brings the reader to the publisher', async () => {
    const service = { ...SFX, url: 'https://sfx.example.edu/sfxlcl41?id=doi:{doi}&back={return}' }
    const { app } = await withServices([service])
    const diverted = await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4 })
    const back = new URL(diverted.headers.location as string).searchParams.get('back') ?? ''
    const res = await app.inject({ url: back.replace('https://doi.library.example', ''), remoteAddress: CAMPUS_V4 })
    expect(res.headers.location).toBe('http://example.org/plain')
  })
})

describe('the loop guard', () => {
  it('a reader sent back without nols within 10 seconds goes to the publisher, not round again', async () => {
    const { app } = await withServices()
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4 })).headers.location).toBe(SFX_PLAIN)
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4 })).headers.location).toBe('http://example.org/plain')
  })

  it('after 10 seconds the reader is sent to the library again', async () => {
    let now = Date.parse('2026-11-23T12:00:00Z')
    const { app } = await withServices([SFX], { now: () => now })
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4 })).headers.location).toBe(SFX_PLAIN)
    now += 9_000
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4 })).headers.location).toBe('http://example.org/plain')
    now += 1_001
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4 })).headers.location).toBe(SFX_PLAIN)
  })

  it('is per reader and per DOI: another reader, or another DOI, is still diverted', async () => {
    const { app } = await withServices()
    await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4 })
    expect((await app.inject({ url: '/10.5555/plain', remoteAddress: '192.0.2.11' })).headers.location).toBe(SFX_PLAIN)
    expect((await app.inject({ url: '/10.1000/x', remoteAddress: CAMPUS_V4 })).headers.location).toBe(
      'https://sfx.example.edu/sfxlcl41?sid=doi-proxy&id=doi:10.1000%2Fx'
    )
  })
})

describe('metrics', () => {
  it('count diversions by service and reason, bypasses by reason and loop-guard hits', async () => {
    const { app } = await withServices()
    await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4 })
    await app.inject({ url: '/10.5555/plain', remoteAddress: CAMPUS_V4 })
    await app.inject({ url: '/10.5555/plain', remoteAddress: OFF_CAMPUS, headers: { cookie: 'doi_proxy_ls=sfx' } })
    await app.inject({ url: '/10.5555/plain?nols=y', remoteAddress: CAMPUS_V4 })
    await app.inject({ url: '/10.1000/x', remoteAddress: CAMPUS_V4, headers: { cookie: 'doi_proxy_ls=none' } })
    const text = (await app.inject({ url: '/metrics' })).body
    expect(text).toContain('doi_proxy_local_service_diversions_total{service="sfx",reason="network"} 1')
    expect(text).toContain('doi_proxy_local_service_diversions_total{service="sfx",reason="cookie"} 1')
    expect(text).toContain('doi_proxy_local_service_bypasses_total{reason="nols"} 1')
    expect(text).toContain('doi_proxy_local_service_bypasses_total{reason="cookie_none"} 1')
    expect(text).toContain('doi_proxy_local_service_loop_guard_total 1')
  })
})

describe('privacy', () => {
  it("the reader's cookie is never logged, not even in the access log or a failure's warning", async () => {
    const lines: string[] = []
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString().trim().split('\n'))
        done()
      }
    })
    const { app, upstream } = await setup({
      records: RECORDS,
      overrides: { localServices: [SFX], logRequests: true, upstreamRetries: 0 },
      deps: { logger: pino({ level: 'info' }, sink) }
    })
    const cookie = 'doi_proxy_ls=sfx; session=secret-value'
    await app.inject({ url: '/10.5555/plain', remoteAddress: OFF_CAMPUS, headers: { cookie } })
    await app.inject({
      method: 'POST',
      url: '/settings',
      payload: 'service=sfx',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }
    })
    upstream.mode = { kind: 'status', status: 500 }
    await app.inject({ url: '/10.5555/uncached', remoteAddress: OFF_CAMPUS, headers: { cookie } })
    expect(lines.length).toBeGreaterThanOrEqual(3)
    expect(lines.join('\n')).not.toMatch(/doi_proxy_ls|secret-value/)
  })
})
