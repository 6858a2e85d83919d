import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { pino } from 'pino'
import { buildMmdb } from '../support/mmdb-writer.js'
import { setup } from '../support/app.js'
import { admin, LOC_XML, str } from '../support/records.js'

// A DataCite-like prefix whose HS_NAMESPACE names a conneg handle (behaviour.md R9 "Prefix-level locations").
const CONNEG_LOC = '<locations><location weight="0" http_role="conneg" href_template="https://data.crosscite.org/{hdl}"/></locations>'
const RECORDS = {
  10.17879: [
    admin(),
    str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><DOI.RA>10.SERV/DATACITE</DOI.RA><locs>10.SERV/DATACITE</locs></HS_NAMESPACE>')
  ],
  '10.SERV/DATACITE': [admin(), str(1, '10320/loc', CONNEG_LOC)],
  '10.17879/91968401496': [str(1, 'URL', 'https://datastore.uni-muenster.de/doi/10.17879/91968401496')],
  10.5555: [admin()],
  '10.5555/loc': [admin(), str(1, 'URL', 'http://example.org/loc-url'), str(2, '10320/loc', LOC_XML)],
  '10.5555/sc': [
    str(
      1,
      '10320/loc',
      '<locations http_sc="303"><location href="http://example.org/a" /><location href="http://example.org/b" http_sc="307" weight="0" id="b"/></locations>'
    )
  ],
  '10.5555/links': [
    str(1, 'URL', 'http://example.org/landing'),
    str(
      2,
      '10320/loc',
      '<locations><location href="http://example.org/landing"/><location href="http://example.org/paper.pdf" rel="item" media-type="application/pdf" weight="0"/></locations>'
    )
  ],
  '10.5555/broken': [str(1, 'URL', 'http://example.org/fallback'), str(2, '10320/loc', '<locations><location href="http://x" weight=')]
}

const LANDING = 'https://datastore.uni-muenster.de/doi/10.17879/91968401496'
const CONNEG = 'https://data.crosscite.org/10.17879%2F91968401496'

describe('content negotiation through namespace locations (issue 3)', () => {
  it.each([
    ['BibTeX from doi2bib', { accept: 'application/x-bibtex; charset=utf-8' }, CONNEG],
    ['CSL-JSON from citation.js', { accept: 'application/vnd.citationstyles.csl+json' }, CONNEG],
    ['a formatted APA citation', { accept: 'text/x-bibliography; style=apa' }, CONNEG],
    [
      "Zotero's three-type list",
      { accept: 'application/vnd.datacite.datacite+json, application/vnd.crossref.unixref+xml, application/vnd.citationstyles.csl+json' },
      CONNEG
    ],
    [
      'a browser',
      {
        accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
        'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0'
      },
      LANDING
    ],
    ["curl's */*", { accept: '*/*', 'user-agent': 'curl/8.5.0' }, LANDING],
    ['no Accept at all', {}, LANDING]
  ])('%s is redirected to the right place, with Vary: Accept', async (_name, headers, location) => {
    const { app } = await setup({ records: RECORDS })
    const res = await app.inject({ url: '/10.17879/91968401496', headers })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe(location)
    expect(res.headers.vary).toBe('Accept')
  })

  it('the prefix record and the conneg handle are fetched once and then cached', async () => {
    const { app, upstream } = await setup({ records: RECORDS })
    await app.inject({ url: '/10.17879/91968401496' })
    await app.inject({ url: '/10.17879/91968401496', headers: { accept: 'application/x-bibtex' } })
    expect(upstream.count('10.17879')).toBe(1)
    expect(upstream.count('10.SERV/DATACITE')).toBe(1)
  })

  it('Expires is capped at one hour when namespace locations are involved', async () => {
    const now = Date.parse('2026-11-22T12:00:00Z')
    const { app } = await setup({ records: RECORDS, deps: { now: () => now } })
    const res = await app.inject({ url: '/10.17879/91968401496' })
    expect(res.headers.expires).toBe('Sun, 22 Nov 2026 13:00:00 GMT')
  })

  it('a namespace handle that does not resolve falls back to the landing page', async () => {
    const { '10.SERV/DATACITE': _gone, ...records } = RECORDS
    const { app } = await setup({ records })
    const res = await app.inject({ url: '/10.17879/91968401496', headers: { accept: 'application/x-bibtex' } })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe(LANDING)
  })

  // Byte for byte doi.org's own output for this DOI (behaviour.md R3, [OBS-MS]).
  it('action=showurls lists the candidates as XML with href filled in, as doi.org does', async () => {
    const { app } = await setup({ records: RECORDS })
    const res = await app.inject({ url: '/10.17879/91968401496?action=showurls' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('text/xml; charset=utf-8')
    expect(res.body).toBe(
      '<locations>\n' +
        `<location mode="legacy" weight="1.0" href="${LANDING}"/>\n` +
        `<location weight="0" http_role="conneg" href="${CONNEG}" href_template="https://data.crosscite.org/{hdl}"/>\n` +
        '</locations>\n'
    )
  })

  it('locs is a synonym of action=showurls', async () => {
    const { app } = await setup({ records: RECORDS })
    const res = await app.inject({ url: '/10.17879/91968401496?locs' })
    expect(res.headers['content-type']).toBe('text/xml; charset=utf-8')
  })
})

describe("the record's own 10320/loc (reference transcript, second probe)", () => {
  it.each([
    ['/10.5555/loc', 'http://example.org/loc-a'],
    ['/10.5555/loc?locatt=country:gb', 'http://example.org/loc-b'],
    ['/10.5555/loc?locatt=view:metadata', 'http://example.org/meta'],
    ['/10.5555/loc?locatt=id:2', 'http://example.org/loc-b'],
    ['/10.5555/loc?locatt=id:9', 'http://example.org/loc-a'],
    ['/10.5555/loc?index=1', 'http://example.org/loc-url'],
    ['/10.5555/loc?type=URL', 'http://example.org/loc-url'],
    ['/10.5555/loc?urlappend=%26x%3D1&locatt=id:2', 'http://example.org/loc-b&x=1'],
    ['/10.5555/loc?country=GB', 'http://example.org/loc-b']
  ])('%s redirects to %s', async (url, location) => {
    const { app } = await setup({ records: RECORDS })
    const res = await app.inject({ url })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe(location)
  })

  it('the client country from a configured header chooses the country location', async () => {
    const { app } = await setup({ records: RECORDS, overrides: { countryHeader: 'CF-IPCountry' } })
    const res = await app.inject({ url: '/10.5555/loc', headers: { 'cf-ipcountry': 'GB' } })
    expect(res.headers.location).toBe('http://example.org/loc-b')
  })

  it('http_sc on the root and on a location set the redirect status', async () => {
    const { app } = await setup({ records: RECORDS })
    expect((await app.inject({ url: '/10.5555/sc' })).statusCode).toBe(303)
    expect((await app.inject({ url: '/10.5555/sc?locatt=id:b' })).statusCode).toBe(307)
  })

  it('a location with rel becomes a Link header', async () => {
    const { app } = await setup({ records: RECORDS })
    const res = await app.inject({ url: '/10.5555/links' })
    expect(res.headers.location).toBe('http://example.org/landing')
    const link = [res.headers.link ?? []].flat().join(', ')
    expect(link).toContain('<http://example.org/paper.pdf>')
    expect(link).toContain('rel="item"')
  })

  it('10320/links values become Link headers and 10320/headers lines become headers on the redirect', async () => {
    const records = {
      10.5555: [admin()],
      '10.5555/linked': [
        str(1, 'URL', 'http://example.org/landing'),
        str(
          2,
          '10320/links',
          '<links><location rel="describedby" href="http://example.org/meta.json" media-type="application/json"/></links>'
        ),
        str(3, '10320/headers', 'X-Robots-Tag: noindex\n<link rel="canonical" href="http://example.org/landing">')
      ]
    }
    const { app } = await setup({ records })
    const res = await app.inject({ url: '/10.5555/linked' })
    expect(res.statusCode).toBe(302)
    const link = [res.headers.link ?? []].flat().join(', ')
    expect(link).toContain('<http://example.org/meta.json>')
    expect(link).toContain('rel="describedby"')
    expect(res.headers['x-robots-tag']).toBe('noindex')
    expect(res.body).toContain('<link rel="canonical" href="http://example.org/landing">')
  })

  it('malformed 10320/loc XML is skipped: the URL value is used, never a 500', async () => {
    const { app } = await setup({ records: RECORDS })
    const res = await app.inject({ url: '/10.5555/broken' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/fallback')
  })

  it("without a country parameter or header, the GeoIP database names the client's country", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-geoip-'))
    const path = join(dir, 'country.mmdb')
    writeFileSync(path, buildMmdb([{ cidr: '192.0.2.0/24', value: { country: { iso_code: 'GB' } } }]))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const { app } = await setup({ records: RECORDS, overrides: { geoipDatabase: path } })
    expect((await app.inject({ url: '/10.5555/loc', remoteAddress: '192.0.2.10' })).headers.location).toBe('http://example.org/loc-b')
    expect((await app.inject({ url: '/10.5555/loc', remoteAddress: '198.51.100.1' })).headers.location).toBe('http://example.org/loc-a')
    expect((await app.inject({ url: '/10.5555/loc?country=us', remoteAddress: '192.0.2.10' })).headers.location).toBe(
      'http://example.org/loc-a'
    )
  })

  it('a broken record is logged once, not on every request', async () => {
    const lines: Array<Record<string, unknown>> = []
    const logger = pino(
      { level: 'warn' },
      {
        write: (line: string) => {
          lines.push(JSON.parse(line) as Record<string, unknown>)
        }
      }
    )
    const { app } = await setup({ records: RECORDS, deps: { logger } })
    for (let i = 0; i < 3; i++) expect((await app.inject({ url: '/10.5555/broken' })).statusCode).toBe(302)
    expect(lines.filter((l) => l.msg === 'skipped broken 10320/loc data')).toHaveLength(1)
  })

  it('behind a trusted proxy, the address chooser reads the client from X-Forwarded-For', async () => {
    const records = {
      10.5555: [admin()],
      '10.5555/campus': [
        str(
          1,
          '10320/loc',
          '<locations><location href="http://public.example/" weight="1"/><location href="http://campus.example/" addresses="203.0.113.0/24" weight="0"/></locations>'
        )
      ]
    }
    const trusted = await setup({ records, overrides: { trustProxy: true } })
    const headers = { 'x-forwarded-for': '203.0.113.9' }
    expect((await trusted.app.inject({ url: '/10.5555/campus', headers })).headers.location).toBe('http://campus.example/')
    const untrusted = await setup({ records })
    expect((await untrusted.app.inject({ url: '/10.5555/campus', headers })).headers.location).toBe('http://public.example/')
    expect((await untrusted.app.inject({ url: '/10.5555/campus', remoteAddress: '203.0.113.9' })).headers.location).toBe(
      'http://campus.example/'
    )
  })

  it('the weighted choice uses the injected random source', async () => {
    const records = {
      10.5555: [admin()],
      '10.5555/w': [
        str(
          1,
          '10320/loc',
          '<locations><location href="http://a.example/" weight="1"/><location href="http://b.example/" weight="1"/></locations>'
        )
      ]
    }
    const low = await setup({ records, deps: { random: () => 0.1 } })
    const high = await setup({ records, deps: { random: () => 0.9 } })
    const a = (await low.app.inject({ url: '/10.5555/w' })).headers.location
    const b = (await high.app.inject({ url: '/10.5555/w' })).headers.location
    expect(new Set([a, b])).toEqual(new Set(['http://a.example/', 'http://b.example/']))
  })
})
