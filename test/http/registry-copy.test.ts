import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import { describe, expect, it, onTestFinished } from 'vitest'
import type { Config } from '../../src/config/schema.js'
import { encodeEntry } from '../../src/handle/copy/record-codec.js'
import type { CopyRecord } from '../../src/handle/copy/types.js'
import type { HandleValue } from '../../src/handle/types.js'
import { openCopy } from '../../src/resolve/copy/store.js'
import { createCopyWriter } from '../../src/resolve/copy/writer.js'
import { buildApp } from '../../src/app.js'
import { ConfigError } from '../../src/config/schema.js'
import pino from 'pino'
import { setup, testConfig } from '../support/app.js'
import { PROBE_RECORDS, admin, str } from '../support/records.js'
import { useTestRedis } from '../support/redis.js'
import { crossrefWork, FakeAgencyFeeds } from '../support/fake-agency-feeds.js'
import { mirrorRecord } from '../support/copy-files.js'
import { takeLease } from '../../src/resolve/copy/updater.js'
import type { UpdateOutcome } from '../../src/resolve/copy/updater.js'
import type { StatusSnapshot } from '../../src/status/snapshot.js'

// Issue 43, plan-43 §1.7–§1.10: the registry copy as a tier of the resolver (after local records and the
// cache, before the upstream), its freshness online, its words offline, its metadata. Each copy is a real
// LMDB store written with the copy's own writer in a temporary directory.

const NOW = Date.parse('2026-11-27T12:00:00.000Z')
const NOW_S = NOW / 1000
const DAY = 86400

const CSL = {
  type: 'article-journal',
  DOI: '10.7001/fresh',
  title: 'A fresh article',
  author: [{ family: 'Lovelace', given: 'Ada' }],
  issued: { 'date-parts': [[2026, 11, 20]] },
  'container-title': 'Journal of Copies',
  volume: '3',
  issue: '2',
  page: '10-19'
}

const RECORDS: CopyRecord[] = [
  { doi: '10.7001/fresh', kind: 'work', agency: 'crossref', url: 'https://publisher.example/fresh', stamp: NOW_S - DAY, csl: CSL },
  { doi: '10.7001/old', kind: 'work', agency: 'crossref', url: 'https://publisher.example/old-in-copy', stamp: NOW_S - 30 * DAY },
  { doi: '10.7001/no-csl', kind: 'work', agency: 'crossref', url: 'https://publisher.example/no-csl', stamp: NOW_S - DAY },
  { doi: '10.7002/held', kind: 'work', agency: 'datacite', url: 'https://repository.example/held', stamp: NOW_S - DAY },
  { doi: '10.7003/secret', kind: 'registered', agency: 'datacite', stamp: NOW_S - DAY },
  { doi: '10.7001/by-ftp', kind: 'work', agency: 'crossref', url: 'ftp://files.example/by-ftp', stamp: NOW_S - DAY }
]

// The upstream's own records: what it answers once the copy is too old, or does not hold a DOI.
const UPSTREAM: Record<string, HandleValue[]> = {
  ...PROBE_RECORDS,
  // As doi.org holds them: the prefix names Crossref's service, whose 10320/loc answers negotiated requests.
  '10.7001': [admin(), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/CROSSREF</locs></HS_NAMESPACE>')],
  '10.SERV/CROSSREF': [
    admin(),
    str(
      1,
      '10320/loc',
      '<locations><location id="1" weight="0" http_role="conneg" href_template="https://data.crossref.org/{hdl}" /></locations>'
    )
  ],
  '10.7001/old': [admin(), str(1, 'URL', 'https://publisher.example/old-upstream')],
  '10.7001/elsewhere': [admin(), str(1, 'URL', 'https://publisher.example/elsewhere')]
}

/** A copy holding RECORDS, with 10.7002 marked whole as of 2025-04-30. */
async function makeCopy(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-copy-'))
  onTestFinished(() => {
    rmSync(dir, { recursive: true, force: true })
  })
  const copy = openCopy({ dir, writable: true })
  const writer = createCopyWriter(copy, { maxBytes: 0, minFreeBytes: 0, nowS: () => NOW_S })
  writer.putBatch(RECORDS.map((r) => encodeEntry(r, { importedAt: NOW_S - DAY, covered: false })))
  writer.markWhole('10.7002', 'datacite', Date.parse('2025-04-30T00:00:00Z') / 1000)
  await copy.close()
  return dir
}

async function withCopy(overrides: Partial<Config> = {}) {
  const dir = await makeCopy()
  const ctx = await setup({
    overrides: { registryCopy: dir, upstreamRetries: 0, ...overrides },
    records: UPSTREAM,
    deps: { now: () => NOW }
  })
  return { ...ctx, dir }
}

const CSL_JSON = { accept: 'application/vnd.citationstyles.csl+json' }

/** A figure from /metrics (a line's name with its labels as written), 0 when absent. */
async function metric(app: { inject: (o: { url: string }) => Promise<{ body: string }> }, name: string): Promise<number> {
  const text = (await app.inject({ url: '/metrics' })).body
  const line = text.split('\n').find((l) => l.startsWith(`${name} `))
  return Number(line?.slice(name.length + 1) ?? 0)
}

/** An answer as a reader sees it: the headers that do not change by the second or by connection. */
interface Answer {
  status: number
  headers: Record<string, unknown>
  body: string
}

function answerOf(status: number, headers: Record<string, unknown>, body: string): Answer {
  const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...kept } = headers
  return { status, headers: kept, body }
}

describe('online, the copy answers a fresh record before the upstream', () => {
  it('a DOI the copy holds fresh redirects to its URL with X-Cache: COPY, and the upstream is not asked for it', async () => {
    const { app, upstream } = await withCopy()
    const res = await app.inject({ url: '/10.7001/fresh' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://publisher.example/fresh')
    expect(res.headers['x-cache']).toBe('COPY')
    expect(upstream.count('10.7001/fresh')).toBe(0)
  })

  it('asked again, the record is read from the copy again and still says COPY', async () => {
    const { app } = await withCopy()
    await app.inject({ url: '/10.7001/FRESH' })
    const again = await app.inject({ url: '/10.7001/fresh' })
    expect(again.headers['x-cache']).toBe('COPY')
    expect(again.headers.location).toBe('https://publisher.example/fresh')
    expect(await metric(app, 'doi_proxy_copy_lookups_total{result="hit"}')).toBe(2)
  })

  it('a record older than REGISTRY_COPY_MAX_AGE_SECONDS is asked of the upstream, whose answer is kept as today', async () => {
    const { app, upstream } = await withCopy()
    const first = await app.inject({ url: '/10.7001/old' })
    expect(first.headers['x-cache']).toBe('MISS')
    expect(first.headers.location).toBe('https://publisher.example/old-upstream')
    const again = await app.inject({ url: '/10.7001/old' })
    expect(again.headers['x-cache']).toBe('HIT')
    expect(upstream.count('10.7001/old')).toBe(1)
  })

  it('with REGISTRY_COPY_MAX_AGE_SECONDS long enough, the same record answers from the copy', async () => {
    const { app } = await withCopy({ registryCopyMaxAgeSeconds: 60 * DAY })
    const res = await app.inject({ url: '/10.7001/old' })
    expect(res.headers['x-cache']).toBe('COPY')
    expect(res.headers.location).toBe('https://publisher.example/old-in-copy')
  })

  it('a DOI the copy does not hold is asked of the upstream', async () => {
    const { app, upstream } = await withCopy()
    const res = await app.inject({ url: '/10.7001/elsewhere' })
    expect(res.headers['x-cache']).toBe('MISS')
    expect(res.headers.location).toBe('https://publisher.example/elsewhere')
    expect(upstream.count('10.7001/elsewhere')).toBe(1)
  })

  it('a DOI absent from a prefix the copy holds whole is still asked of the upstream (it may have been registered since)', async () => {
    const { app, upstream } = await withCopy()
    upstream.set('10.7002/registered-since', [admin(), str(1, 'URL', 'https://repository.example/registered-since')])
    const res = await app.inject({ url: '/10.7002/registered-since' })
    expect(res.statusCode).toBe(302)
    expect(res.headers['x-cache']).toBe('MISS')
    expect(res.headers.location).toBe('https://repository.example/registered-since')
    expect(upstream.count('10.7002/registered-since')).toBe(1)
  })

  it('when the upstream fails, the too-old copy record stands in, marked STALE', async () => {
    const { app, upstream } = await withCopy()
    upstream.mode = { kind: 'status', status: 503 }
    const res = await app.inject({ url: '/10.7001/old' })
    expect(res.statusCode).toBe(302)
    expect(res.headers['x-cache']).toBe('STALE')
    expect(res.headers.location).toBe('https://publisher.example/old-in-copy')
  })

  it('a DOI the upstream says does not exist is not found, whatever the copy is too old to vouch for', async () => {
    const { app, upstream } = await withCopy()
    upstream.delete('10.7001/old')
    const res = await app.inject({ url: '/10.7001/old' })
    expect(res.statusCode).toBe(404)
  })

  it('the REST API shows the record as doi.org holds it: the URL at index 1, ttl 86400, the agency’s date', async () => {
    const { app } = await withCopy()
    const res = await app.inject({ url: '/api/handles/10.7001/fresh' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-cache']).toBe('COPY')
    expect(res.json()).toEqual({
      responseCode: 1,
      handle: '10.7001/fresh',
      values: [
        {
          index: 1,
          type: 'URL',
          data: { format: 'string', value: 'https://publisher.example/fresh' },
          ttl: 86400,
          timestamp: new Date((NOW_S - DAY) * 1000).toISOString()
        }
      ]
    })
  })

  it('the batch API says source "copy" for a DOI the copy answered', async () => {
    const { app } = await withCopy()
    const res = await app.inject({
      method: 'POST',
      url: '/api/batch',
      headers: { 'content-type': 'text/plain' },
      payload: '10.7001/fresh\n10.7001/elsewhere\n'
    })
    const lines = res.body
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { input: string; source: string; registered: boolean; url: string })
    expect(lines).toEqual([
      expect.objectContaining({ input: '10.7001/fresh', registered: true, source: 'copy', url: 'https://publisher.example/fresh' }),
      expect.objectContaining({ input: '10.7001/elsewhere', registered: true, source: 'upstream' })
    ])
  })

  it('a negotiated request for CSL-JSON of a record the copy answered gets the copy’s CSL-JSON', async () => {
    const { app } = await withCopy()
    const res = await app.inject({ url: '/10.7001/fresh', headers: CSL_JSON })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('application/vnd.citationstyles.csl+json; charset=utf-8')
    expect(res.headers['x-cache']).toBe('COPY')
    expect(res.headers.link).toBe('<https://doi.org/10.7001/fresh>; rel="cite-as"')
    expect(JSON.parse(res.body)).toEqual(CSL)
  })
})

describe('the copy’s records stay out of the shared tiers', () => {
  it('the cache snapshot holds the upstream’s records, never the copy’s', async () => {
    const snapshotDir = mkdtempSync(join(tmpdir(), 'doi-proxy-copy-snapshot-'))
    onTestFinished(() => {
      rmSync(snapshotDir, { recursive: true, force: true })
    })
    const cacheFile = join(snapshotDir, 'cache.snapshot')
    const { app } = await withCopy({ cacheFile })
    expect((await app.inject({ url: '/10.7001/fresh' })).headers['x-cache']).toBe('COPY')
    expect((await app.inject({ url: '/10.7001/elsewhere' })).headers['x-cache']).toBe('MISS')
    await app.close()
    const text = readFileSync(cacheFile, 'utf8')
    // Keys are folded (ASCII upper case).
    expect(text).toContain('"10.7001/ELSEWHERE"')
    expect(text).not.toContain('10.7001/FRESH')
  })
})

describe('the copy’s records stay out of Redis', () => {
  const redis = useTestRedis()

  it('the shared tier gets the upstream’s records, never the copy’s', async () => {
    const { app } = await withCopy({ redisUrl: redis().url })
    expect((await app.inject({ url: '/10.7001/fresh' })).headers['x-cache']).toBe('COPY')
    expect((await app.inject({ url: '/10.7001/elsewhere' })).headers['x-cache']).toBe('MISS')
    const client = redis().client()
    onTestFinished(() => {
      client.disconnect()
    })
    // The shared tier writes without waiting: wait for the upstream's record to be there.
    let keys: string[] = []
    for (let i = 0; i < 100 && !keys.some((k) => k.includes('10.7001/ELSEWHERE')); i++) {
      keys = await client.keys('*')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(keys.some((k) => k.includes('10.7001/ELSEWHERE'))).toBe(true)
    expect(keys.filter((k) => k.includes('FRESH'))).toEqual([])
  })
})

describe('offline, the copy answers alone', () => {
  const OFFLINE = { offline: true }

  it('a DOI the copy holds redirects, however old, with X-Cache: COPY, and nobody is asked', async () => {
    const { app, upstream } = await withCopy(OFFLINE)
    const res = await app.inject({ url: '/10.7001/old' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://publisher.example/old-in-copy')
    expect(res.headers['x-cache']).toBe('COPY')
    expect(upstream.seen).toHaveLength(0)
  })

  it('a DOI the copy does not hold is a 404 saying it is not in this resolver’s copy, never that it does not exist', async () => {
    const { app } = await withCopy(OFFLINE)
    const res = await app.inject({ url: '/10.7001/elsewhere' })
    expect(res.statusCode).toBe(404)
    expect(res.body).toContain('DOI Not in This Resolver&#39;s Copy of the Registry')
    expect(res.body).toContain('it is not in this resolver&#39;s copy of the registry')
    expect(res.body).toContain('may well exist')
  })

  it('in a prefix the copy holds whole, the page names the prefix and the date it is complete to', async () => {
    const { app } = await withCopy(OFFLINE)
    const res = await app.inject({ url: '/10.7002/missing' })
    expect(res.statusCode).toBe(404)
    expect(res.body).toContain('holds every DOI of 10.7002 registered by 2025-04-30, and not this one; it may have been registered since')
  })

  it.each([
    ['10.7001/elsewhere', "It is not in this resolver's copy of the registry"],
    [
      '10.7002/missing',
      "This resolver's copy of the registry holds every DOI of 10.7002 registered by 2025-04-30, and not this one; it may have been registered since"
    ]
  ])('the REST API says of %s what the page says, never that it does not exist', async (handle, words) => {
    const { app } = await withCopy(OFFLINE)
    const res = await app.inject({ url: `/api/handles/${handle}` })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({
      responseCode: 301,
      message: `${words}; this resolver is offline and did not ask the DOI System`,
      handle
    })
    const page = await app.inject({ url: `/${handle}` })
    expect(page.body).toContain(words.charAt(0).toLowerCase() + words.slice(1).replaceAll("'", '&#39;'))
  })

  it('a DOI registered at DataCite without a public URL is unknown, and the page says why', async () => {
    const { app } = await withCopy(OFFLINE)
    const res = await app.inject({ url: '/10.7003/secret' })
    expect(res.statusCode).toBe(404)
    expect(res.body).toContain('registered at DataCite, but its URL is not public')
  })

  it('the batch API says registered null for a DOI the copy does not hold, with the copy’s words', async () => {
    const { app } = await withCopy(OFFLINE)
    const res = await app.inject({
      method: 'POST',
      url: '/api/batch',
      headers: { 'content-type': 'text/plain' },
      payload: '10.7001/old\n10.7002/missing\n'
    })
    const lines = res.body
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(lines[0]).toMatchObject({ registered: true, source: 'copy', url: 'https://publisher.example/old-in-copy' })
    expect(lines[1]).toMatchObject({ registered: null, source: 'copy', status: 404 })
    expect(lines[1]!.error).toContain('holds every DOI of 10.7002 registered by 2025-04-30')
    expect(lines[1]!.error).toContain('offline (OFFLINE=true)')
  })

  it('Which RA? names the agency from the prefix record the copy makes up', async () => {
    const { app } = await withCopy(OFFLINE)
    const res = await app.inject({ url: '/ra/10.7001/fresh,10.7002/held' })
    expect(res.json()).toEqual([
      { DOI: '10.7001/fresh', RA: 'Crossref' },
      { DOI: '10.7002/held', RA: 'DataCite' }
    ])
  })

  it('CSL-JSON is negotiated from the copy, offline', async () => {
    const { app, upstream } = await withCopy(OFFLINE)
    const res = await app.inject({ url: '/10.7001/fresh', headers: CSL_JSON })
    expect(res.statusCode).toBe(200)
    expect(JSON.parse(res.body)).toEqual(CSL)
    expect(upstream.seen).toHaveLength(0)
  })

  it('a type the copy does not offer is a 406 naming what it offers, offline', async () => {
    const { app } = await withCopy(OFFLINE)
    const res = await app.inject({ url: '/10.7001/fresh', headers: { accept: 'application/rdf+xml' } })
    expect(res.statusCode).toBe(406)
    expect(res.body).toContain('application/vnd.citationstyles.csl+json')
  })

  it('a browser still gets the redirect to the DOI’s URL, with the prefix’s service records in place', async () => {
    const { app } = await withCopy(OFFLINE)
    const res = await app.inject({ url: '/10.7001/fresh', headers: { accept: 'text/html', 'user-agent': 'Mozilla/5.0' } })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://publisher.example/fresh')
  })
})

// What citation-js 0.7 (citeproc-js with its bundled styles) makes of CSL above, checked by hand: BibTeX keyed
// as the agencies key it, RIS one tag a line, APA 7 and Vancouver (ICMJE: page ranges shortened, 10–9).
const CITATIONS: ReadonlyArray<[string, string, string]> = [
  [
    'application/x-bibtex',
    'application/x-bibtex; charset=utf-8',
    '@article{Lovelace_2026,\n\tauthor = {Lovelace, Ada},\n\tjournal = {Journal of Copies},\n\tdoi = {10.7001/fresh},\n\tnumber = {2},\n\tyear = {2026},\n\tmonth = {nov 20},\n\tpages = {10--19},\n\ttitle = {A fresh article},\n\tvolume = {3},\n}\n'
  ],
  [
    'application/x-research-info-systems',
    'application/x-research-info-systems; charset=utf-8',
    'TY  - JOUR\nAU  - Lovelace, Ada\nDA  - 2026/11/20/\nPY  - 2026\nDO  - 10.7001/fresh\nIS  - 2\nSP  - 10-19\nT2  - Journal of Copies\nTI  - A fresh article\nVL  - 3\nER  - \n'
  ],
  [
    'text/x-bibliography; style=apa',
    'text/x-bibliography; charset=utf-8',
    'Lovelace, A. (2026). A fresh article. Journal of Copies, 3(2), 10–19. https://doi.org/10.7001/fresh\n'
  ],
  [
    'text/x-bibliography; style=vancouver',
    'text/x-bibliography; charset=utf-8',
    '1.  Lovelace A. A fresh article. Journal of Copies. 2026 Nov 20;3(2):10–9. \n'
  ]
]

describe('citations formatted from the copy’s metadata', () => {
  describe.each([
    ['online', {}],
    ['offline', { offline: true }]
  ])('%s', (_mode, overrides) => {
    it.each(CITATIONS)('Accept: %s is answered from the copy', async (accept, contentType, body) => {
      const { app, upstream } = await withCopy(overrides)
      const res = await app.inject({ url: '/10.7001/fresh', headers: { accept } })
      expect(res.statusCode).toBe(200)
      expect(res.headers['content-type']).toBe(contentType)
      expect(res.headers['x-cache']).toBe('COPY')
      expect(res.body).toBe(body)
      expect(upstream.count('10.7001/fresh')).toBe(0)
    })
  })

  it('a bibliography without a style is APA, as the agencies format it', async () => {
    const { app } = await withCopy({ offline: true })
    const res = await app.inject({ url: '/10.7001/fresh', headers: { accept: 'text/x-bibliography' } })
    expect(res.body).toBe(CITATIONS[2]![2])
  })

  it('offline, a style the copy does not hold is a 406 naming the styles it holds', async () => {
    const { app } = await withCopy({ offline: true })
    const res = await app.inject({ url: '/10.7001/fresh', headers: { accept: 'text/x-bibliography; style=chicago-author-date' } })
    expect(res.statusCode).toBe(406)
    expect(res.headers['x-cache']).toBe('COPY')
    expect(res.body).toBe(
      'No metadata of the type asked for (Accept) is held for this DOI. Held: application/vnd.citationstyles.csl+json, ' +
        'application/x-bibtex, application/x-research-info-systems, text/x-bibliography; style=apa, ' +
        'text/x-bibliography; style=vancouver, text/x-bibliography; style=harvard1, text/x-bibliography; locale=en-US\n'
    )
  })

  it('online, a style the copy does not hold is redirected to the agency, which formats it', async () => {
    const { app } = await withCopy()
    const res = await app.inject({ url: '/10.7001/fresh', headers: { accept: 'text/x-bibliography; style=chicago-author-date' } })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://data.crossref.org/10.7001%2Ffresh')
  })

  it('bibliographies beyond REGISTRY_COPY_CITATION_QUEUE are a 503 with Retry-After, counted on /metrics', async () => {
    const { app } = await withCopy({ offline: true, registryCopyCitationQueue: 1 })
    // One is formatted (citeproc's first takes half a second), one waits, the third finds the queue full.
    const answers = await Promise.all(
      ['apa', 'vancouver', 'harvard1'].map((style) =>
        app.inject({ url: '/10.7001/fresh', headers: { accept: `text/x-bibliography; style=${style}` } })
      )
    )
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 200, 503])
    const busy = answers.find((a) => a.statusCode === 503)!
    expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(busy.body).toContain('citation formatter is busy')
    const metrics = (await app.inject({ url: '/metrics' })).body
    expect(metrics).toContain('doi_proxy_copy_citations_total{format="bibliography",outcome="queue_full"} 1')
    expect(metrics).toContain('doi_proxy_copy_citations_total{format="bibliography",outcome="done"} 2')
  })
})

describe('the server keeps the copy fresh (REGISTRY_COPY_UPDATE_HOURS)', () => {
  const THROUGH = NOW_S - 2 * DAY

  /** A copy covering Crossref to two days ago, holding 10.7001/moved at its old URL. */
  async function copyToUpdate(): Promise<string> {
    const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-copy-update-'))
    onTestFinished(() => {
      rmSync(dir, { recursive: true, force: true })
    })
    const copy = openCopy({ dir, writable: true })
    const writer = createCopyWriter(copy, { maxBytes: 0, minFreeBytes: 0, nowS: () => THROUGH })
    writer.putBatch([
      encodeEntry(
        { doi: '10.7001/moved', kind: 'work', agency: 'crossref', url: 'https://publisher.example/before', stamp: THROUGH - DAY },
        { importedAt: THROUGH, covered: true }
      )
    ])
    writer.extendCoverage('crossref', { base: THROUGH, through: THROUGH })
    await copy.close()
    return dir
  }

  it('asks Crossref what changed since the copy’s coverage, writes it in, and serves the new URL from the copy', async () => {
    const feeds = await FakeAgencyFeeds.start({
      works: [crossrefWork('10.7001/moved', 'https://publisher.example/after', new Date((NOW_S - 3600) * 1000).toISOString())]
    })
    onTestFinished(() => feeds.close())
    const dir = await copyToUpdate()
    const runs: Array<[string, UpdateOutcome | Error]> = []
    const { app } = await setup({
      overrides: {
        registryCopy: dir,
        registryCopyUpdateHours: 1,
        registryCopyMinFreeBytes: 0,
        crossrefApiUrl: feeds.url,
        dataciteApiUrl: feeds.url,
        contactEmail: 'ops@example.org',
        upstreamRetries: 0
      },
      records: UPSTREAM,
      deps: { now: () => NOW, copyUpdates: { firstCheckMs: 0, feedMinIntervalMs: 0, onRun: (agency, r) => runs.push([agency, r]) } }
    })
    for (let i = 0; i < 500 && runs.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(runs.map(([agency, r]) => [agency, r instanceof Error ? r.message : r.outcome])).toEqual([['crossref', 'done']])
    // DataCite is not asked: the copy holds none of its records.
    expect(feeds.requestsTo('/dois')).toEqual([])
    expect(
      feeds.requestsTo('/works').every((r) => r.mailto === 'ops@example.org' && r.userAgent?.endsWith('(mailto:ops@example.org)'))
    ).toBe(true)
    const res = await app.inject({ url: '/10.7001/moved' })
    expect(res.statusCode).toBe(302)
    expect(res.headers['x-cache']).toBe('COPY')
    expect(res.headers.location).toBe('https://publisher.example/after')
    const metrics = (await app.inject({ url: '/metrics' })).body
    expect(metrics).toContain('doi_proxy_copy_updates_total{agency="crossref",outcome="done"} 1')
    expect(metrics).toContain(`doi_proxy_copy_as_of_seconds{agency="crossref"} ${NOW_S}`)
    const status = (await app.inject({ url: '/status.json' })).json<StatusSnapshot>()
    expect(status.registryCopy).toMatchObject({
      records: 1,
      updateHours: 1,
      lease: null,
      agencies: [
        {
          agency: 'crossref',
          records: 1,
          asOf: new Date(NOW).toISOString(),
          lastUpdate: { outcome: 'done', at: new Date(NOW).toISOString(), pages: 1, records: 1, error: null },
          pending: null
        }
      ]
    })
  })

  it('warns at start when it would ask Crossref without CONTACT_EMAIL', async () => {
    const dir = await copyToUpdate()
    const lines: string[] = []
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) })
    const settings = { registryCopy: dir, registryCopyUpdateHours: 1, registryCopyMinFreeBytes: 0 }
    // A first check an hour away: nothing is asked during the test.
    const later = { now: () => NOW, copyUpdates: { firstCheckMs: 3_600_000 } }
    await setup({ overrides: { ...settings, contactEmail: undefined }, records: UPSTREAM, deps: { ...later, logger } })
    await setup({ overrides: { ...settings, contactEmail: 'ops@example.org' }, records: UPSTREAM, deps: { ...later, logger } })
    const warned = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => /CONTACT_EMAIL/.test(l.msg))
    expect(warned).toEqual([expect.objectContaining({ level: 40, msg: expect.stringContaining('without a mailto') })])
  })

  it('/status shows the copy by agency and who holds the update lease, escaped', async () => {
    const dir = await copyToUpdate()
    const copy = openCopy({ dir, writable: true })
    takeLease(copy, '<img src=x onerror=alert(1)>:42', NOW)
    await copy.close()
    const { app } = await setup({ overrides: { registryCopy: dir }, records: UPSTREAM, deps: { now: () => NOW } })
    const status = (await app.inject({ url: '/status.json' })).json<StatusSnapshot>()
    expect(status.registryCopy).toMatchObject({
      records: 1,
      updatedAt: new Date(THROUGH * 1000).toISOString(),
      updateHours: 0,
      agencies: [{ agency: 'crossref', records: 1, asOf: new Date(THROUGH * 1000).toISOString(), lastUpdate: null, pending: null }],
      lease: { holder: '<img src=x onerror=alert(1)>:42', until: new Date(NOW + 5 * 60_000).toISOString() }
    })
    const page = (await app.inject({ url: '/status' })).body
    expect(page).toContain('<h2 id="h-copy">Registry copy</h2>')
    expect(page).toContain('<td>crossref</td><td class="num">1</td><td>2026-11-25 12:00:00</td><td>—</td><td>—</td>')
    expect(page).toContain('Being updated by <code>&lt;img src=x onerror=alert(1)&gt;:42</code>')
    expect(page).not.toContain('<img src=x')
  })

  it('/status has no registry copy section without a copy', async () => {
    const { app } = await setup({ records: UPSTREAM })
    expect((await app.inject({ url: '/status.json' })).json<StatusSnapshot>().registryCopy).toBeNull()
    expect((await app.inject({ url: '/status' })).body).not.toContain('Registry copy')
  })

  it('without the setting, the copy is opened read-only and nobody is asked', async () => {
    const feeds = await FakeAgencyFeeds.start()
    onTestFinished(() => feeds.close())
    const dir = await copyToUpdate()
    const { app } = await setup({
      overrides: { registryCopy: dir, crossrefApiUrl: feeds.url, dataciteApiUrl: feeds.url },
      records: UPSTREAM,
      deps: { now: () => NOW, copyUpdates: { firstCheckMs: 0, feedMinIntervalMs: 0 } }
    })
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(feeds.seen).toEqual([])
    expect((await app.inject({ url: '/10.7001/moved' })).headers.location).toBe('https://publisher.example/before')
  })
})

describe('the door answers the copy’s works from the copy, and the cache keeps none of them', () => {
  /** The app listening on 127.0.0.1 (the door is on the raw listener; app.inject goes to the route). */
  async function listening(overrides: Partial<Config> = {}, now = (): number => NOW) {
    const dir = await makeCopy()
    const ctx = await setup({ overrides: { registryCopy: dir, upstreamRetries: 0, ...overrides }, records: UPSTREAM, deps: { now } })
    await ctx.app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = ctx.app.server.address() as { port: number }
    const get = async (path: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET'): Promise<Answer> => {
      const res = await request(`http://127.0.0.1:${port}${path}`, { headers, method })
      return answerOf(res.statusCode, res.headers, await res.body.text())
    }
    const route = async (path: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET'): Promise<Answer> => {
      const res = await ctx.app.inject({ url: path, headers, method })
      return answerOf(res.statusCode, res.headers, res.body)
    }
    const served = async (): Promise<number> => await metric(ctx.app, 'doi_proxy_prepared_answers_total')
    return { ...ctx, dir, get, route, served }
  }

  const BROWSER = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'accept-language': 'en' }

  for (const [asked, headers] of [
    ['no Accept', {}],
    ['a browser’s Accept', BROWSER]
  ] as const) {
    it(`with ${asked}, another work of a prefix the route answered is redirected by the door with the bytes the route gives it`, async () => {
      const { get, route, served } = await listening()
      expect((await get('/10.7001/fresh', headers)).status).toBe(302)
      const before = await served()
      const door = await get('/10.7001/no-csl', headers)
      expect(await served()).toBe(before + 1)
      expect(door).toEqual(await route('/10.7001/no-csl', headers))
      expect(door).toMatchObject({ status: 302, headers: { location: 'https://publisher.example/no-csl', 'x-cache': 'COPY' } })
    })
  }

  it('a request for CSL-JSON is never given the door’s redirect: the copy’s metadata answers it', async () => {
    const { get, served } = await listening()
    await get('/10.7001/no-csl')
    await get('/10.7001/no-csl', CSL_JSON)
    const before = await served()
    const res = await get('/10.7001/fresh', CSL_JSON)
    expect(await served()).toBe(before)
    expect(res.status).toBe(200)
    expect(JSON.parse(res.body)).toEqual(CSL)
  })

  it('a HEAD of another work of the prefix gets from the door the route’s headers and no body', async () => {
    const { get, route, served } = await listening()
    await get('/10.7001/fresh')
    const before = await served()
    const door = await get('/10.7001/no-csl', {}, 'HEAD')
    expect(await served()).toBe(before + 1)
    expect(door).toEqual(await route('/10.7001/no-csl', {}, 'HEAD'))
    expect(door).toMatchObject({ status: 302, body: '' })
  })

  it('offline, the copy’s works asked again and again leave the record cache empty', async () => {
    const { app, get } = await listening({ offline: true })
    for (let i = 0; i < 3; i++) {
      for (const doi of ['10.7001/fresh', '10.7001/no-csl', '10.7002/held']) expect((await get(`/${doi}`)).headers['x-cache']).toBe('COPY')
    }
    expect(await metric(app, 'doi_proxy_copy_lookups_total{result="hit"}')).toBeGreaterThanOrEqual(9)
    expect(await metric(app, 'doi_proxy_cache_entries')).toBe(0)
  })

  it('a record imported again while the server runs is redirected to its new URL at the next request, by the door too', async () => {
    const { get, dir, served } = await listening()
    await get('/10.7001/fresh')
    expect((await get('/10.7001/no-csl')).headers.location).toBe('https://publisher.example/no-csl')
    const before = await served()
    const file = join(dir, 'moved.ndjson')
    writeFileSync(file, `${JSON.stringify(mirrorRecord('10.7001/no-csl', 'https://publisher.example/moved', '2026-11-27T11:00:00Z'))}\n`)
    // Another process writes it, as `doi-proxy import` does beside a running server.
    const imported = spawnSync(process.execPath, ['--import', 'tsx', 'src/command/cli.ts', 'import', '--to', dir, file], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1', REGISTRY_COPY_MIN_FREE_BYTES: '0' }
    })
    expect(imported.status, imported.stderr).toBe(0)
    await new Promise((resolve) => setTimeout(resolve, 110))
    expect((await get('/10.7001/no-csl')).headers.location).toBe('https://publisher.example/moved')
    expect(await served()).toBe(before + 1)
  })

  it('a copy record too old to answer online is not the door’s: the upstream answers it', async () => {
    const { get, upstream } = await listening()
    await get('/10.7001/fresh')
    const res = await get('/10.7001/old')
    expect(res.headers).toMatchObject({ location: 'https://publisher.example/old-upstream', 'x-cache': 'MISS' })
    expect(upstream.count('10.7001/old')).toBe(1)
  })

  it('what the door learned of one prefix is not used for another', async () => {
    const { get, served } = await listening()
    await get('/10.7001/fresh')
    const before = await served()
    expect((await get('/10.7002/held')).headers.location).toBe('https://repository.example/held')
    expect(await served()).toBe(before)
  })

  it('a reader’s very long Accept-Language is answered by the route, and nothing is kept for it', async () => {
    const { get, route, served } = await listening()
    const long = { 'accept-language': Array.from({ length: 400 }, (_, i) => `x-l${i}`).join(',') }
    await get('/10.7001/fresh', long)
    const before = await served()
    const res = await get('/10.7001/no-csl', long)
    expect(await served()).toBe(before)
    expect(res).toEqual(await route('/10.7001/no-csl', long))
  })

  it('a work whose URL has a scheme outside ALLOWED_SCHEMES shows its values, though the door knows its prefix', async () => {
    const { get, served } = await listening({ allowedSchemes: ['https', 'http'] })
    await get('/10.7001/fresh')
    const before = await served()
    const res = await get('/10.7001/by-ftp')
    expect(res.status).toBe(200)
    expect(res.body).toContain('ftp://files.example/by-ftp')
    expect(await served()).toBe(before)
  })

  it('a local record stands in front of the copy at the door too', async () => {
    const local = mkdtempSync(join(tmpdir(), 'doi-proxy-copy-local-'))
    onTestFinished(() => {
      rmSync(local, { recursive: true, force: true })
    })
    const values = [
      {
        index: 1,
        type: 'URL',
        data: { format: 'string', value: 'https://library.example/no-csl' },
        ttl: 86400,
        timestamp: '2026-11-01T00:00:00Z'
      }
    ]
    writeFileSync(join(local, 'ours.ndjson'), `${JSON.stringify({ handle: '10.7001/no-csl', values })}\n`)
    const { get, served } = await listening({ localStoreDir: local })
    await get('/10.7001/fresh')
    const before = await served()
    const res = await get('/10.7001/no-csl')
    expect(await served()).toBe(before)
    expect(res.headers.location).toBe('https://library.example/no-csl')
    expect(res.headers['x-cache']).toBe('HIT')
  })

  it('once the prefix’s namespace locations run out, the route answers the prefix’s works again (and the door after it)', async () => {
    let now = NOW
    const { get, route, served } = await listening({}, () => now)
    await get('/10.7001/fresh')
    now += 2 * DAY * 1000
    const before = await served()
    const later = await get('/10.7001/no-csl')
    expect(await served()).toBe(before)
    expect(later).toEqual(await route('/10.7001/no-csl'))
    expect((await get('/10.7001/fresh')).headers.location).toBe('https://publisher.example/fresh')
    expect(await served()).toBe(before + 1)
  })
})

describe('a REGISTRY_COPY that holds no copy stops the start', () => {
  it('with a ConfigError naming the setting and the directory (main.ts: exit 78)', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'doi-proxy-no-copy-'))
    onTestFinished(() => {
      rmSync(empty, { recursive: true, force: true })
    })
    const started = buildApp(testConfig('http://127.0.0.1:9', { registryCopy: empty, offline: true }))
    await expect(started).rejects.toBeInstanceOf(ConfigError)
    await expect(started).rejects.toThrow(`invalid setting registryCopy (REGISTRY_COPY): ${JSON.stringify(empty)} holds no registry copy`)
  })
})
