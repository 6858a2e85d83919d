import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { setup } from '../support/app.js'
import { FakeAgency } from '../support/fake-agency.js'
import { admin, str } from '../support/records.js'

// docs/metadata.md "Offline metadata": metadata held in local records answers negotiated requests.
const SAMPLES = 'config/sample-records'
const BIB = { accept: 'application/x-bibtex' }

describe('the shipped samples negotiate with no network', () => {
  it('an offline instance answers BibTeX for 10.5072/sample-dataset from the local store, and asks nobody', async () => {
    const { app, upstream } = await setup({ overrides: { offline: true, localStoreDir: SAMPLES } })
    const res = await app.inject({ url: '/10.5072/sample-dataset', headers: BIB })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('application/x-bibtex; charset=utf-8')
    expect(res.body).toMatch(/^@misc\{https:\/\/doi\.org\/10\.5072\/sample-dataset,/)
    expect(res.headers.vary).toBe('Accept')
    expect(res.headers.link).toBe('<https://doi.org/10.5072/sample-dataset>; rel="cite-as"')
    expect(res.headers['x-cache']).toBe('HIT')
    expect(upstream.seen).toHaveLength(0)
  })

  it('CSL-JSON for the sample is JSON a citation tool can read', async () => {
    const { app } = await setup({ overrides: { offline: true, localStoreDir: SAMPLES } })
    const res = await app.inject({ url: '/10.5072/sample-dataset', headers: { accept: 'application/vnd.citationstyles.csl+json' } })
    expect(res.statusCode).toBe(200)
    expect(JSON.parse(res.body)).toMatchObject({ DOI: '10.5072/sample-dataset', title: expect.any(String) })
  })

  it.each(['10.5555/sample', '10.5072/sample-dataset'])(
    'a citation tool asking the quick-start server for CSL-JSON of %s gets it, offline',
    async (doi) => {
      const { app, upstream } = await setup({ overrides: { offline: true, localStoreDir: SAMPLES } })
      // citation-js/citation-js packages/plugin-doi: Accept: application/vnd.citationstyles.csl+json, then JSON.parse
      const res = await app.inject({ url: `/${doi}`, headers: { accept: 'application/vnd.citationstyles.csl+json' } })
      expect(res.statusCode).toBe(200)
      expect(res.headers['content-type']).toBe('application/vnd.citationstyles.csl+json; charset=utf-8')
      expect(JSON.parse(res.body)).toMatchObject({ DOI: doi, title: expect.any(String), URL: `https://doi.org/${doi}` })
      expect(upstream.seen).toHaveLength(0)
    }
  )

  it.each(['10.5555/sample', '10.5072/sample-dataset'])(
    'an APA citation of %s is held, so `Accept: text/x-bibliography; style=apa` answers it',
    async (doi) => {
      const { app } = await setup({ overrides: { offline: true, localStoreDir: SAMPLES } })
      const res = await app.inject({ url: `/${doi}`, headers: { accept: 'text/x-bibliography; style=apa' } })
      expect(res.statusCode).toBe(200)
      expect(res.body).toContain(`https://doi.org/${doi}`)
    }
  )

  it('another style is not served from an APA citation: 406, naming what is held', async () => {
    const { app } = await setup({ overrides: { offline: true, localStoreDir: SAMPLES } })
    const res = await app.inject({ url: '/10.5555/sample', headers: { accept: 'text/x-bibliography; style=chicago-author-date' } })
    expect(res.statusCode).toBe(406)
    expect(res.body).toContain('text/x-bibliography;style=apa')
  })

  it("a browser still gets the 302 to the sample's URL", async () => {
    const { app } = await setup({ overrides: { offline: true, localStoreDir: SAMPLES } })
    const res = await app.inject({ url: '/10.5555/sample', headers: { accept: 'text/html', 'user-agent': 'Mozilla/5.0' } })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://www.doi.org/')
  })

  it('a type the sample does not hold answers 406, naming the types it holds', async () => {
    const { app } = await setup({ overrides: { offline: true, localStoreDir: SAMPLES } })
    const res = await app.inject({ url: '/10.5072/sample-dataset', headers: { accept: 'application/rdf+xml' } })
    expect(res.statusCode).toBe(406)
    expect(res.body).toContain('application/x-bibtex')
  })

  it("curl's */* still gets the redirect to the landing page", async () => {
    const { app } = await setup({ overrides: { offline: true, localStoreDir: SAMPLES } })
    const res = await app.inject({ url: '/10.5072/sample-dataset', headers: { accept: '*/*', 'user-agent': 'curl/8.5.0' } })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://www.doi.org/the-identifier/what-is-a-doi/')
  })

  it("a negotiated request for a record without stored metadata is redirected to the agency's service, as doi.org would", async () => {
    const { app } = await setup({ overrides: { offline: true, localStoreDir: SAMPLES } })
    const res = await app.inject({ url: '/10.5072/sample-namespace', headers: BIB })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://data.crosscite.org/10.5072%2Fsample-namespace')
  })
})

describe('stored metadata in fetch mode', () => {
  it('stored metadata answers and the agency is never asked', async () => {
    const agency = await FakeAgency.start({ '10.7777/local': { 'application/x-bibtex': '@misc{from-the-agency}\n' } })
    onTestFinished(async () => {
      await agency.close()
    })
    const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-metadata-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const conneg = `<locations><location weight="0" http_role="conneg" href_template="${agency.origin}/{hdl}"/></locations>`
    const records = [
      { handle: '10.7777', values: [admin(), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.7777/ns</locs></HS_NAMESPACE>')] },
      { handle: '10.7777/ns', values: [str(1, '10320/loc', conneg)] },
      {
        handle: '10.7777/local',
        values: [str(1, 'URL', 'https://example.org/local')],
        metadata: { 'application/x-bibtex': { contentType: 'application/x-bibtex', body: '@misc{stored}\n' } }
      }
    ]
    writeFileSync(join(dir, 'records.ndjson'), records.map((r) => JSON.stringify(r)).join('\n'))
    const { app } = await setup({
      overrides: { metadataMode: 'fetch', metadataHosts: [agency.host], localStoreDir: dir, localStoreWatch: false }
    })
    const res = await app.inject({ url: '/10.7777/local', headers: BIB })
    expect(res.body).toBe('@misc{stored}\n')
    expect(agency.seen).toHaveLength(0)
    // A type not stored is fetched from the agency in this mode.
    const csl = await app.inject({ url: '/10.7777/local', headers: { accept: 'application/vnd.citationstyles.csl+json' } })
    expect(csl.statusCode).toBe(406)
    expect(agency.seen).toHaveLength(1)
  })
})
