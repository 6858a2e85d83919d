import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { setup } from '../support/app.js'
import { admin, str } from '../support/records.js'
import { FakeOpenAccess } from '../support/fake-open-access.js'
import { useTestRedis } from '../support/redis.js'
import type { Config } from '../../src/config/schema.js'
import type { LocalServiceConfig } from '../../src/config/local-services.js'

// Link-out chains (docs/institutional.md "Open access first"): on campus to the link resolver, off campus
// an open copy first, then EZproxy; against a fake Unpaywall and a fake OpenAlex on loopback.

const CAMPUS = '192.0.2.10'
const HOME = '203.0.113.9'
const OTHER_HOME = '198.51.100.77'

const LIBRARY: LocalServiceConfig = {
  id: 'library',
  name: 'University Library',
  url: 'https://sfx.example.edu/sfxlcl41?sid=doi-proxy&id=doi:{doi}',
  networks: ['192.0.2.0/24'],
  prefixes: [],
  linkout: ['service', 'registered']
}
const EVERYONE: LocalServiceConfig = {
  id: 'anywhere',
  name: "Open access, then the library's EZproxy",
  networks: ['0.0.0.0/0', '::/0'],
  prefixes: [],
  linkout: ['open-access', 'ezproxy'],
  ezproxy: 'https://login.ezproxy.example.edu/login?url={url}'
}

const RECORDS = {
  10.5555: [admin()],
  '10.5555/open': [str(1, 'URL', 'https://publisher.example/open')],
  '10.5555/closed': [str(1, 'URL', 'https://publisher.example/closed?a=1&b=2')],
  '10.5555/unknown': [str(1, 'URL', 'https://publisher.example/unknown')],
  '10.5555/hostile': [str(1, 'URL', 'https://publisher.example/hostile')],
  '10.5555/crlf': [str(1, 'URL', 'https://publisher.example/crlf')]
}
for (let i = 0; i < 5; i++) (RECORDS as Record<string, unknown>)[`10.5555/n${i}`] = [str(1, 'URL', `https://publisher.example/n${i}`)]

const COPIES: Record<string, string | null> = {
  '10.5555/open': 'https://europepmc.org/articles/PMC1',
  '10.5555/closed': null,
  '10.5555/hostile': 'javascript:alert(document.cookie)',
  '10.5555/crlf': 'https://repo.example/\r\nSet-Cookie: a=b',
  '10.5555/n0': 'https://repo.example/n0',
  '10.5555/n1': 'https://repo.example/n1',
  '10.5555/n2': 'https://repo.example/n2'
}

const OPEN_COPY = 'https://europepmc.org/articles/PMC1'
const EZPROXIED = (url: string): string => `https://login.ezproxy.example.edu/login?url=${url}`

// Generous, so a busy test machine never makes a quick provider late; the tests of lateness set their own.
const BUDGET_MS = 2000

async function fakeProvider(kind: 'unpaywall' | 'openalex' = 'unpaywall'): Promise<FakeOpenAccess> {
  const fake = await FakeOpenAccess.start(kind, COPIES)
  onTestFinished(async () => {
    await fake.close()
  })
  return fake
}

function oaSettings(fake: FakeOpenAccess, over: Partial<Config> = {}): Partial<Config> {
  return fake.kind === 'unpaywall'
    ? { oaProvider: 'unpaywall', unpaywallUrl: fake.url, unpaywallEmail: 'library@example.edu', oaBudgetMs: BUDGET_MS, ...over }
    : { oaProvider: 'openalex', openalexUrl: fake.url, oaBudgetMs: BUDGET_MS, ...over }
}

async function chainApp(fake: FakeOpenAccess, over: Partial<Config> = {}, services: LocalServiceConfig[] = [LIBRARY, EVERYONE]) {
  return await setup({
    records: RECORDS,
    overrides: { localServices: services, publicBaseUrl: 'https://doi.library.example', ...oaSettings(fake, over) }
  })
}

const sleep = async (ms: number): Promise<void> => {
  await new Promise((resolve) => setTimeout(resolve, ms))
}

describe('campus to the link resolver, off campus open access first then EZproxy', () => {
  it('on campus, the reader goes to the link resolver and Unpaywall is not asked', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake)
    const res = await app.inject({ url: '/10.5555/open', remoteAddress: CAMPUS })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('https://sfx.example.edu/sfxlcl41?sid=doi-proxy&id=doi:10.5555%2Fopen')
    expect(fake.seen).toHaveLength(0)
  })

  it("off campus, a DOI with an open copy goes to the open copy (Unpaywall's best_oa_location)", async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake)
    const res = await app.inject({ url: '/10.5555/open', remoteAddress: HOME })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe(OPEN_COPY)
    expect(fake.paths).toEqual(['/v2/10.5555/open'])
    expect(fake.seen[0]?.query.get('email')).toBe('library@example.edu')
  })

  it('off campus, a DOI without an open copy goes to the publisher through EZproxy', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake)
    const res = await app.inject({ url: '/10.5555/closed', remoteAddress: HOME })
    expect(res.headers.location).toBe(EZPROXIED('https://publisher.example/closed?a=1&b=2'))
  })

  it('a DOI Unpaywall does not know (404) goes through EZproxy too', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake)
    expect((await app.inject({ url: '/10.5555/unknown', remoteAddress: HOME })).headers.location).toBe(
      EZPROXIED('https://publisher.example/unknown')
    )
  })

  it('OpenAlex: the copy is open_access.oa_url, asked with mailto= when CONTACT_EMAIL is set', async () => {
    const fake = await fakeProvider('openalex')
    const { app } = await chainApp(fake, { contactEmail: 'systems@example.edu' })
    const res = await app.inject({ url: '/10.5555/open', remoteAddress: HOME })
    expect(res.headers.location).toBe(OPEN_COPY)
    expect(fake.paths).toEqual(['/works/doi:10.5555/open'])
    expect(fake.seen[0]?.query.get('mailto')).toBe('systems@example.edu')
    expect(fake.seen[0]?.userAgent).toContain('mailto:systems@example.edu')
  })

  it('a diverted answer is private and never stored, by the browser or a CDN', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake)
    const res = await app.inject({ url: '/10.5555/open', remoteAddress: HOME })
    expect(res.headers['cache-control']).toBe('private, no-store')
  })

  it('readers on different networks each get their own answer for the same cached DOI, in any order', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake, {}, [
      LIBRARY,
      { ...EVERYONE, id: 'elsewhere', networks: ['198.51.100.0/24'], linkout: ['registered'] },
      EVERYONE
    ])
    for (let round = 0; round < 3; round++) {
      expect((await app.inject({ url: '/10.5555/open', remoteAddress: HOME })).headers.location).toBe(OPEN_COPY)
      const campus = await app.inject({ url: '/10.5555/open', remoteAddress: CAMPUS })
      // The loop guard lets a campus reader through to the publisher on the second try within 10 s.
      expect(campus.headers.location).toBe(
        round === 0 ? 'https://sfx.example.edu/sfxlcl41?sid=doi-proxy&id=doi:10.5555%2Fopen' : 'https://publisher.example/open'
      )
      const other = await app.inject({ url: '/10.5555/open', remoteAddress: OTHER_HOME })
      expect(other.headers.location).toBe('https://publisher.example/open')
      expect(other.headers['cache-control']).toBe('private')
      expect(other.headers.vary).toBe('Cookie')
    }
    // No answer was frozen into a prepared answer for the hot path, which would give it to every reader.
    expect((await app.inject('/metrics')).body).toContain('doi_proxy_prepared_answers_total 0')
  })
})

describe('the reader still decides', () => {
  it('nols=y goes to the publisher', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake)
    expect((await app.inject({ url: '/10.5555/open?nols=y', remoteAddress: HOME })).headers.location).toBe('https://publisher.example/open')
    expect(fake.seen).toHaveLength(0)
  })

  it('"the publisher\'s site, always" at /settings goes to the publisher', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake)
    const res = await app.inject({ url: '/10.5555/open', remoteAddress: HOME, headers: { cookie: 'doi_proxy_ls=none' } })
    expect(res.headers.location).toBe('https://publisher.example/open')
  })

  it('a reader who chose the library is sent there from home, by its chain', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake)
    const res = await app.inject({ url: '/10.5555/open', remoteAddress: HOME, headers: { cookie: 'doi_proxy_ls=library' } })
    expect(res.headers.location).toBe('https://sfx.example.edu/sfxlcl41?sid=doi-proxy&id=doi:10.5555%2Fopen')
  })

  it('?linkout=registered bypasses the chain, also through /openurl', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake)
    expect((await app.inject({ url: '/10.5555/open?linkout=registered', remoteAddress: HOME })).headers.location).toBe(
      'https://publisher.example/open'
    )
    expect(
      (await app.inject({ url: '/openurl?rft_id=info:doi/10.5555/open&linkout=registered', remoteAddress: HOME })).headers.location
    ).toBe('https://publisher.example/open')
    expect(fake.seen).toHaveLength(0)
  })
})

describe('never slower than it must be', () => {
  it('a provider slower than OA_BUDGET_MS: the reader goes on to EZproxy at once, and the next reader gets the open copy', async () => {
    const fake = await fakeProvider()
    fake.mode = { slowMs: 1500 }
    const { app } = await chainApp(fake, { oaBudgetMs: 100 })
    const started = performance.now()
    const first = await app.inject({ url: '/10.5555/open', remoteAddress: HOME })
    const waited = performance.now() - started
    expect(first.headers.location).toBe(EZPROXIED('https://publisher.example/open'))
    expect(waited).toBeLessThan(1200)
    // The answer arrives (1.5 s after it was asked) and is kept.
    await vi.waitFor(
      async () => {
        expect((await app.inject('/metrics')).body).toContain('doi_proxy_open_access_lookups_total{provider="unpaywall",result="found"} 1')
      },
      { timeout: 10_000, interval: 50 }
    )
    fake.mode = 'fail'
    expect((await app.inject({ url: '/10.5555/open', remoteAddress: OTHER_HOME })).headers.location).toBe(OPEN_COPY)
    expect(fake.seen).toHaveLength(1)
  })

  it('many readers at once: one call to the provider', async () => {
    const fake = await fakeProvider()
    fake.mode = { slowMs: 100 }
    const { app } = await chainApp(fake, { oaBudgetMs: 2000 })
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => await app.inject({ url: '/10.5555/open', remoteAddress: `203.0.113.${i + 1}` }))
    )
    expect(answers.map((a) => a.headers.location)).toEqual(Array(20).fill(OPEN_COPY))
    expect(fake.seen).toHaveLength(1)
  })

  it('"no open copy" is cached too: the second reader costs no call', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake)
    await app.inject({ url: '/10.5555/closed', remoteAddress: HOME })
    const second = await app.inject({ url: '/10.5555/closed', remoteAddress: OTHER_HOME })
    expect(second.headers.location).toBe(EZPROXIED('https://publisher.example/closed?a=1&b=2'))
    expect(fake.seen).toHaveLength(1)
  })

  it("the daily limit stops calls before the provider's own, and says so in the metrics and on /status", async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake, { oaDailyLimit: 2 })
    for (const doi of ['n0', 'n1', 'n2']) await app.inject({ url: `/10.5555/${doi}`, remoteAddress: HOME })
    expect(fake.seen).toHaveLength(2)
    expect((await app.inject({ url: '/10.5555/n2', remoteAddress: HOME })).headers.location).toBe(EZPROXIED('https://publisher.example/n2'))
    const metrics = (await app.inject('/metrics')).body
    expect(metrics).toContain('doi_proxy_open_access_lookups_total{provider="unpaywall",result="daily_limit"} 2')
    expect(metrics).toContain('doi_proxy_open_access_daily_limit 2')
    const status = (await app.inject('/status.json')).json() as { openAccess: { provider: string; callsToday: number; dailyLimit: number } }
    expect(status.openAccess).toMatchObject({ provider: 'unpaywall', dailyLimit: 2 })
    expect(status.openAccess.callsToday).toBeGreaterThanOrEqual(2)
    expect((await app.inject('/status')).body).toContain('daily limit')
  })

  it('one of two workers without Redis keeps to half the day (main.ts tells a worker WORKERS)', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake, { oaDailyLimit: 4, workers: 2 })
    for (const doi of ['n0', 'n1', 'n2']) await app.inject({ url: `/10.5555/${doi}`, remoteAddress: HOME })
    expect(fake.seen).toHaveLength(2)
    expect((await app.inject('/metrics')).body).toContain('doi_proxy_open_access_daily_limit 2')
    expect(((await app.inject('/status.json')).json() as { openAccess: { dailyLimit: number } }).openAccess.dailyLimit).toBe(2)
  })
})

describe("a failing or hostile provider is never the reader's problem", () => {
  it.each<[string, FakeOpenAccess['mode']]>([
    ['HTTP 500 with an HTML page', 'fail'],
    ['a dropped connection', 'reset'],
    ['a body that is not JSON', 'malformed'],
    ['an answer without end', 'huge'],
    ['an answer that stalls', 'stall']
  ])('%s: the reader goes on to EZproxy', async (_name, mode) => {
    const fake = await fakeProvider()
    fake.mode = mode
    const { app } = await chainApp(fake, { oaMaxBodyBytes: 64 * 1024, oaBudgetMs: 500, oaTimeoutMs: 1000 })
    const res = await app.inject({ url: '/10.5555/open', remoteAddress: HOME })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe(EZPROXIED('https://publisher.example/open'))
  })

  it('a javascript: URL from the provider is never a Location', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake)
    const res = await app.inject({ url: '/10.5555/hostile', remoteAddress: HOME })
    expect(res.headers.location).toBe(EZPROXIED('https://publisher.example/hostile'))
  })

  it('a URL with CR/LF from the provider sets no header of ours', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake)
    const res = await app.inject({ url: '/10.5555/crlf', remoteAddress: HOME })
    expect(res.headers.location).toBe(EZPROXIED('https://publisher.example/crlf'))
    expect(res.headers['set-cookie']).toBeUndefined()
  })

  it('an unreachable provider: EZproxy, and the failure counted', async () => {
    const { app } = await setup({
      records: RECORDS,
      overrides: { localServices: [EVERYONE], oaProvider: 'openalex', openalexUrl: 'http://127.0.0.1:9', oaBudgetMs: 1000 }
    })
    const res = await app.inject({ url: '/10.5555/open', remoteAddress: HOME })
    expect(res.headers.location).toBe(EZPROXIED('https://publisher.example/open'))
    expect((await app.inject('/metrics')).body).toContain('doi_proxy_open_access_lookups_total{provider="openalex",result="error"} 1')
  })
})

describe('metrics per step, on /metrics and /status', () => {
  it('counts open-access found, missed and timed out, and the step each reader took', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake)
    await app.inject({ url: '/10.5555/open', remoteAddress: HOME })
    await app.inject({ url: '/10.5555/closed', remoteAddress: HOME })
    await app.inject({ url: '/10.5555/n0', remoteAddress: CAMPUS })
    fake.mode = { slowMs: 3 * BUDGET_MS }
    await app.inject({ url: '/10.5555/n1', remoteAddress: HOME })
    const metrics = (await app.inject('/metrics')).body
    expect(metrics).toContain('doi_proxy_linkout_total{step="open-access",result="found"} 1')
    expect(metrics).toContain('doi_proxy_linkout_total{step="open-access",result="missed"} 1')
    expect(metrics).toContain('doi_proxy_linkout_total{step="open-access",result="timed_out"} 1')
    expect(metrics).toContain('doi_proxy_linkout_total{step="ezproxy",result="taken"} 2')
    expect(metrics).toContain('doi_proxy_linkout_total{step="service",result="taken"} 1')
    const page = (await app.inject('/status')).body
    expect(page).toContain('Link-out chains')
    expect(page).toContain('open-access, timed_out')
  })
})

describe("OA_PROVIDER=file: Unpaywall's data feed, offline", () => {
  it('a gzipped JSONL feed answers without any call', async () => {
    const { mkdtemp, writeFile } = await import('node:fs/promises')
    const { gzipSync } = await import('node:zlib')
    const { tmpdir } = await import('node:os')
    const { join } = await import('node:path')
    const dir = await mkdtemp(join(tmpdir(), 'oa-feed-'))
    const file = join(dir, 'unpaywall.jsonl.gz')
    const lines = [
      JSON.stringify({ doi: '10.5555/open', is_oa: true, best_oa_location: { url: OPEN_COPY } }),
      '{not json',
      JSON.stringify({ doi: '10.5555/closed', is_oa: false, best_oa_location: null }),
      JSON.stringify({ doi: '10.5555/hostile', is_oa: true, best_oa_location: { url: 'javascript:alert(1)' } })
    ]
    await writeFile(file, gzipSync(lines.join('\n')))
    const { app } = await setup({ records: RECORDS, overrides: { localServices: [EVERYONE], oaProvider: 'file', oaSnapshotFile: file } })
    expect((await app.inject({ url: '/10.5555/OPEN', remoteAddress: HOME })).headers.location).toBe(OPEN_COPY)
    expect((await app.inject({ url: '/10.5555/closed', remoteAddress: HOME })).headers.location).toBe(
      EZPROXIED('https://publisher.example/closed?a=1&b=2')
    )
    expect((await app.inject({ url: '/10.5555/hostile', remoteAddress: HOME })).headers.location).toBe(
      EZPROXIED('https://publisher.example/hostile')
    )
  })
})

describe('kept across a restart', () => {
  /** A cache snapshot's path in a directory of its own, removed when the test ends. */
  async function snapshotFile(): Promise<string> {
    const { mkdtemp, rm } = await import('node:fs/promises')
    const { join } = await import('node:path')
    const { tmpdir } = await import('node:os')
    const dir = await mkdtemp(join(tmpdir(), 'oa-snapshot-'))
    onTestFinished(async () => {
      await rm(dir, { recursive: true, force: true })
    })
    return join(dir, 'cache.snapshot')
  }

  it('open-access answers are in the cache snapshot: after a restart the provider is not asked again', async () => {
    const fake = await fakeProvider()
    const cacheFile = await snapshotFile()
    const before = await chainApp(fake, { cacheFile })
    expect((await before.app.inject({ url: '/10.5555/open', remoteAddress: HOME })).headers.location).toBe(OPEN_COPY)
    expect((await before.app.inject({ url: '/10.5555/closed', remoteAddress: HOME })).headers.location).toBe(
      EZPROXIED('https://publisher.example/closed?a=1&b=2')
    )
    expect(fake.seen).toHaveLength(2)
    await before.app.close() // writes the snapshot
    // The same upstream: a snapshot made from another is set aside.
    const after = await chainApp(fake, { cacheFile, upstreamUrl: before.upstream.url })
    expect((await after.app.inject({ url: '/10.5555/open', remoteAddress: OTHER_HOME })).headers.location).toBe(OPEN_COPY)
    expect((await after.app.inject({ url: '/10.5555/closed', remoteAddress: OTHER_HOME })).headers.location).toBe(
      EZPROXIED('https://publisher.example/closed?a=1&b=2')
    )
    expect(fake.seen).toHaveLength(2)
  })

  it("another provider's answers in the snapshot are not taken for this one's", async () => {
    const cacheFile = await snapshotFile()
    const unpaywall = await fakeProvider()
    const before = await chainApp(unpaywall, { cacheFile })
    expect((await before.app.inject({ url: '/10.5555/open', remoteAddress: HOME })).headers.location).toBe(OPEN_COPY)
    await before.app.close()
    const openalex = await fakeProvider('openalex')
    const after = await chainApp(openalex, { cacheFile, upstreamUrl: before.upstream.url })
    expect((await after.app.inject({ url: '/10.5555/open', remoteAddress: HOME })).headers.location).toBe(OPEN_COPY)
    expect(openalex.paths).toEqual(['/works/doi:10.5555/open'])
  })
})

describe('shared by replicas through Redis', () => {
  const redis = useTestRedis()

  it("an answer one replica got is the other's without a call; the day's calls are counted together", async () => {
    const fake = await fakeProvider()
    const one = await chainApp(fake, { redisUrl: redis().url })
    const two = await chainApp(fake, { redisUrl: redis().url })
    const r1 = await one.app.inject({ url: '/10.5555/open', remoteAddress: HOME })
    expect(r1.headers.location).toBe(OPEN_COPY)
    await sleep(50) // the SET is not awaited by the reader
    expect((await two.app.inject({ url: '/10.5555/open', remoteAddress: HOME })).headers.location).toBe(OPEN_COPY)
    expect(fake.seen).toHaveLength(1)
    await two.app.inject({ url: '/10.5555/closed', remoteAddress: HOME })
    const client = redis().client()
    onTestFinished(() => {
      client.disconnect()
    })
    const keys = await client.keys('*oa:1:calls:*')
    expect(keys).toHaveLength(1)
    expect(await client.get(keys[0] as string)).toBe('2')
  })

  it('two replicas asked for the same DOI at once: one call to the provider, both readers get the open copy', async () => {
    const fake = await fakeProvider()
    fake.mode = { slowMs: 300 }
    const one = await chainApp(fake, { redisUrl: redis().url, redisWaitPollMs: 20 })
    const two = await chainApp(fake, { redisUrl: redis().url, redisWaitPollMs: 20 })
    const answers = await Promise.all(
      [one.app, two.app, one.app, two.app].map(
        async (app, i) => await app.inject({ url: '/10.5555/open', remoteAddress: `203.0.113.${i + 1}` })
      )
    )
    expect(answers.map((a) => a.headers.location)).toEqual(Array(4).fill(OPEN_COPY))
    expect(fake.seen).toHaveLength(1)
  })

  it(
    'workers count the whole day together in Redis; when it stops answering, each keeps to its share of its own calls',
    { timeout: 30_000 },
    async () => {
      const fake = await fakeProvider()
      // Two workers of one host: a day of 4 calls, 2 each while Redis cannot count for both.
      const settings = { redisUrl: redis().url, oaDailyLimit: 4, workers: 2, redisCommandTimeoutMs: 200 }
      const one = await chainApp(fake, settings)
      const two = await chainApp(fake, settings)
      for (const doi of ['n0', 'n1']) await one.app.inject({ url: `/10.5555/${doi}`, remoteAddress: HOME })
      await two.app.inject({ url: '/10.5555/n2', remoteAddress: HOME })
      expect(fake.seen).toHaveLength(3) // 3 of the day's 4, counted in Redis: more than one worker's share
      await redis().kill()
      onTestFinished(async () => {
        await redis().run()
      })
      await two.app.inject({ url: '/10.5555/n3', remoteAddress: HOME })
      expect(fake.seen).toHaveLength(4) // the second worker's own second call: within its share
      await two.app.inject({ url: '/10.5555/n4', remoteAddress: HOME })
      await one.app.inject({ url: '/10.5555/n4', remoteAddress: HOME })
      expect(fake.seen).toHaveLength(4) // both shares spent: the host made 4 calls, the day's limit
    }
  )

  it('a hostile value planted in Redis is never a Location', async () => {
    const fake = await fakeProvider()
    const { app } = await chainApp(fake, { redisUrl: redis().url })
    const client = redis().client()
    onTestFinished(() => {
      client.disconnect()
    })
    await client.set('doi-proxy:oa:1:10.5555/OPEN', JSON.stringify({ url: 'javascript:alert(1)' }), 'PX', 60_000)
    expect((await app.inject({ url: '/10.5555/open', remoteAddress: HOME })).headers.location).toBe(OPEN_COPY)
  })
})

describe('docs/institutional.md §8: the worked configuration', () => {
  it('loads, and sends campus to SFX, off campus to the open copy, else through EZproxy', async () => {
    const { readFileSync } = await import('node:fs')
    const { buildConfig } = await import('../../src/config/schema.js')
    const doc = readFileSync(new URL('../../docs/institutional.md', import.meta.url), 'utf8')
    const block = /<!-- linkout-example -->\n```json\n([\s\S]*?)\n```/.exec(doc)?.[1]
    expect(block).toBeDefined()
    const example = buildConfig(JSON.parse(block as string) as Record<string, unknown>, {})
    const fake = await FakeOpenAccess.start('unpaywall', { '10.1000/182': 'https://repository.example.org/182.pdf' })
    onTestFinished(async () => {
      await fake.close()
    })
    const records = { ...RECORDS, '10.1000/182': [str(1, 'URL', 'https://publisher.example/182')] }
    const { localServices, oaProvider, unpaywallEmail, trustProxy, publicBaseUrl } = example
    const { app } = await setup({
      records,
      overrides: { localServices, oaProvider, unpaywallEmail, trustProxy, publicBaseUrl, unpaywallUrl: fake.url, oaBudgetMs: BUDGET_MS }
    })
    expect((await app.inject({ url: '/10.1000/182', remoteAddress: CAMPUS })).headers.location).toBe(
      'https://sfx.library.example.edu/sfxlcl41?url_ver=Z39.88-2004&rfr_id=info:sid/doi-proxy&rft_id=info:doi/10.1000%2F182'
    )
    expect((await app.inject({ url: '/10.1000/182', remoteAddress: HOME })).headers.location).toBe('https://repository.example.org/182.pdf')
    expect((await app.inject({ url: '/10.5555/closed', remoteAddress: HOME })).headers.location).toBe(
      'https://login.ezproxy.library.example.edu/login?url=https://publisher.example/closed?a=1&b=2'
    )
    expect((await app.inject({ url: '/10.1000/182?linkout=registered', remoteAddress: HOME })).headers.location).toBe(
      'https://publisher.example/182'
    )
    expect(fake.seen[0]?.query.get('email')).toBe('library-systems@university.example')
  })
})

describe('docs/institutional.md: the example data feed (config/open-access-feed.example.jsonl)', () => {
  const FEED = 'config/open-access-feed.example.jsonl'

  /** The doc's example feed, and its trial run: the environment it sets and each curl line's path and answer. */
  async function theDoc(): Promise<{ feed: string; env: Record<string, string>; curls: Array<{ path: string; location: string }> }> {
    const { readFileSync } = await import('node:fs')
    const doc = readFileSync(new URL('../../docs/institutional.md', import.meta.url), 'utf8')
    const feed = /<!-- open-access-feed-example -->\n```json\n([\s\S]*?)```/.exec(doc)?.[1]
    const run = /<!-- open-access-feed-run -->\n```sh\n([\s\S]*?)```/.exec(doc)?.[1]
    expect(feed).toBeDefined()
    expect(run).toBeDefined()
    const [start, ...rest] = (run as string)
      .replace(/\\\n\s*/g, ' ')
      .trim()
      .split('\n')
    expect(start).toMatch(/ npm run start:offline$/)
    const env = Object.fromEntries([...(start as string).matchAll(/(\w+)=(?:'([^']*)'|(\S+))/g)].map((m) => [m[1]!, m[2] ?? m[3]!]))
    const curls = rest.map((line) => {
      const m = /^curl -sI http:\/\/127\.0\.0\.1:8000(\S+) \| grep -i location\s+# (\S+)$/.exec(line)
      expect(m, line).not.toBeNull()
      return { path: m![1]!, location: m![2]! }
    })
    return { feed: feed as string, env, curls }
  }

  it('the doc shows the shipped file as it is, a line of each kind', async () => {
    const { readFileSync } = await import('node:fs')
    const { feed } = await theDoc()
    expect(feed).toBe(readFileSync(FEED, 'utf8'))
    const works = feed
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { is_oa: boolean })
    expect(works.map((w) => w.is_oa)).toEqual([true, false])
  })

  it.each(['as written', 'gzipped'])('the trial run answers what the doc says, with the feed %s, and asks nobody', async (form) => {
    const { readFileSync } = await import('node:fs')
    const { mkdtemp, writeFile } = await import('node:fs/promises')
    const { gzipSync } = await import('node:zlib')
    const { tmpdir } = await import('node:os')
    const { join } = await import('node:path')
    const { buildConfig } = await import('../../src/config/schema.js')
    const { env, curls } = await theDoc()
    expect(env.OA_SNAPSHOT_FILE).toBe(FEED)
    let file = FEED
    if (form === 'gzipped') {
      file = join(await mkdtemp(join(tmpdir(), 'oa-feed-')), 'unpaywall.jsonl.gz')
      await writeFile(file, gzipSync(readFileSync(FEED)))
    }
    // npm run start:offline is OFFLINE=true; no cache file is written under the repository by a test.
    const config: Partial<Config> = buildConfig(undefined, { ...env, OA_SNAPSHOT_FILE: file, OFFLINE: 'true', CACHE_FILE: '' })
    delete config.upstreamUrl // the fake upstream's, which must not be asked
    const { app, upstream } = await setup({ overrides: config })
    expect(curls).toHaveLength(2)
    for (const { path, location } of curls) {
      expect((await app.inject({ url: path, remoteAddress: HOME })).headers.location).toBe(location)
    }
    expect(upstream.seen).toHaveLength(0)
  })
})
