import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { parseAllowedHosts } from '../../src/handle/metadata-hosts.js'
import { parseReadingList, runMirror } from '../../src/command/mirror.js'
import { runMetadataMirror } from '../../src/command/mirror-metadata.js'
import type { MetadataMirrorSummary } from '../../src/command/mirror-metadata.js'
import { createMetadataFetcher } from '../../src/resolve/metadata/agencies.js'
import { createUpstreamClient } from '../../src/resolve/upstream/client.js'
import { setup } from '../support/app.js'
import { FakeAgency } from '../support/fake-agency.js'
import { FakeUpstream } from '../support/fake-upstream.js'
import { admin, str } from '../support/records.js'

// docs/metadata.md "Offline metadata": `mirror --accept` copies metadata into the local store.
const BIBTEX = '@article{paper, title = {A paper}}\n'
const CSL = '{"title":"A paper"}'

async function world(opts: { hosts?: (agency: FakeAgency) => string } = {}) {
  const agency = await FakeAgency.start({
    '10.9999/paper': { 'application/x-bibtex': BIBTEX, 'application/vnd.citationstyles.csl+json': CSL },
    '10.9999/bibtex-only': { 'application/x-bibtex': '@misc{b}\n' }
  })
  const conneg = `<locations><location weight="0" http_role="conneg" href_template="${agency.origin}/{hdl}"/></locations>`
  const upstream = await FakeUpstream.start({
    10.9999: [admin(), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/FAKE</locs></HS_NAMESPACE>')],
    '10.SERV/FAKE': [admin(), str(1, '10320/loc', conneg)],
    '10.9999/paper': [str(1, 'URL', 'https://publisher.example/paper')],
    '10.9999/bibtex-only': [str(1, 'URL', 'https://publisher.example/b')],
    '10.9999/alias': [str(1, 'HS_ALIAS', '10.9999/paper')]
  })
  const client = createUpstreamClient({
    baseUrl: upstream.url,
    userAgent: 'doi-proxy-test',
    timeoutMs: 5000,
    connectTimeoutMs: 2000,
    connections: 4,
    maxBodyBytes: 1 << 20
  })
  const hosts = parseAllowedHosts(opts.hosts?.(agency) ?? agency.host) as string[]
  const fetcher = createMetadataFetcher({
    hosts,
    userAgent: 'doi-proxy-test',
    timeoutMs: 5000,
    connectTimeoutMs: 2000,
    maxBodyBytes: 1 << 20,
    connectionsPerHost: 2,
    maxRedirects: 3,
    retry: { retries: 0, baseMs: 1, maxMs: 1 }
  })
  const dir = await mkdtemp(join(tmpdir(), 'doi-proxy-mirror-metadata-'))
  const out = join(dir, 'records', 'list.ndjson')
  onTestFinished(async () => {
    await fetcher.close()
    await client.close()
    await upstream.close()
    await agency.close()
    await rm(dir, { recursive: true, force: true })
  })
  const mirror = async (dois: string[], types: string[]): Promise<MetadataMirrorSummary> => {
    const list = parseReadingList(dois.join('\n'))
    await runMirror({ upstream: client, list, outPath: out, options: { concurrency: 2, retries: 0, delayMs: 0 } })
    return await runMetadataMirror({
      fetcher,
      hosts,
      list,
      outPath: out,
      types,
      options: { concurrency: 2, retries: 0, delayMs: 0, timeoutMs: 5000 }
    })
  }
  return { agency, upstream, out, mirror }
}

describe('mirror --accept', () => {
  it('an offline server answers BibTeX and CSL-JSON from what the mirror copied, asking nobody', async () => {
    const { out, mirror } = await world()
    const summary = await mirror(['10.9999/paper'], ['application/x-bibtex', 'application/vnd.citationstyles.csl+json'])
    expect(summary).toMatchObject({ wanted: 2, fetched: 2, skipped: 0, failed: [], unavailable: [] })
    const { app, upstream } = await setup({ overrides: { offline: true, localStoreDir: dirname(out), localStoreWatch: false } })
    const bib = await app.inject({ url: '/10.9999/paper', headers: { accept: 'application/x-bibtex' } })
    expect(bib.statusCode).toBe(200)
    expect(bib.body).toBe(BIBTEX)
    expect(bib.headers['content-type']).toBe('application/x-bibtex; charset=utf-8')
    const csl = await app.inject({ url: '/10.9999/paper', headers: { accept: 'application/vnd.citationstyles.csl+json' } })
    expect(csl.body).toBe(CSL)
    expect(upstream.seen).toHaveLength(0)
  })

  it('running it again asks the agency nothing: what is held is skipped', async () => {
    const { agency, mirror } = await world()
    await mirror(['10.9999/paper'], ['application/x-bibtex'])
    const again = await mirror(['10.9999/paper'], ['application/x-bibtex'])
    expect(again).toMatchObject({ fetched: 0, skipped: 1 })
    expect(agency.seen).toHaveLength(1)
  })

  it('a type the agency does not have is reported unavailable, not failed', async () => {
    const { mirror } = await world()
    const summary = await mirror(['10.9999/bibtex-only'], ['application/vnd.citationstyles.csl+json'])
    expect(summary.failed).toEqual([])
    expect(summary.unavailable).toEqual([
      { handle: '10.9999/bibtex-only', type: 'application/vnd.citationstyles.csl+json', reason: 'the agency answered 406' }
    ])
  })

  it("an alias brings its target's metadata: the alias answers its 301, the target the BibTeX", async () => {
    const { out, mirror } = await world()
    const summary = await mirror(['10.9999/alias'], ['application/x-bibtex'])
    expect(summary.fetched).toBe(1)
    const { app } = await setup({ overrides: { offline: true, localStoreDir: dirname(out), localStoreWatch: false } })
    expect((await app.inject({ url: '/10.9999/alias', headers: { accept: 'application/x-bibtex' } })).statusCode).toBe(301)
    expect((await app.inject({ url: '/10.9999/paper', headers: { accept: 'application/x-bibtex' } })).body).toBe(BIBTEX)
  })

  it('a location off METADATA_HOSTS is never fetched', async () => {
    const { agency, mirror } = await world({ hosts: () => 'data.crossref.org' })
    const summary = await mirror(['10.9999/paper'], ['application/x-bibtex'])
    expect(summary.unavailable[0]?.reason).toMatch(/not on the metadata allow-list/)
    expect(agency.seen).toHaveLength(0)
  })

  it('leaves no temporary file behind for the store to trip on', async () => {
    const { out, mirror } = await world()
    await mirror(['10.9999/paper'], ['application/x-bibtex'])
    expect(await readdir(dirname(out))).toEqual(['list.ndjson'])
    expect(JSON.parse((await readFile(out, 'utf8')).split('\n').find((l) => l.includes('"10.9999/paper"'))!).metadata).toEqual({
      'application/x-bibtex': { contentType: 'application/x-bibtex; charset=utf-8', body: BIBTEX }
    })
  })
})
