import { afterEach, describe, expect, it } from 'vitest'
import { createMetrics } from '../../../src/observe/metrics.js'
import type { Metrics } from '../../../src/observe/metrics.js'
import { closeRedis, createRedisClient, waitConnected } from '../../../src/resolve/fleet/redis.js'
import type { RedisClient } from '../../../src/resolve/fleet/redis.js'
import { createCrossrefUpdates } from '../../../src/resolve/retraction/crossref-updates.js'
import { loadRetractionWatch } from '../../../src/resolve/retraction/retraction-watch.js'
import { createRetractions, OTHER_AGENCY, retractionResultOf } from '../../../src/resolve/retraction/retractions.js'
import type { RetractionsOptions } from '../../../src/resolve/retraction/retractions.js'
import { FakeCrossrefApi } from '../../support/fake-crossref-api.js'
import { useTestRedis } from '../../support/redis.js'

// Issue 41: `verify=retraction` gives each DOI its `retraction` object from RETRACTIONS_FROM's source,
// cached (RETRACTIONS_TTL_SECONDS) and, with Redis, shared by the replicas: one Crossref lookup per DOI.
const WORKS = {
  '10.1/retracted': { 'updated-by': [{ DOI: '10.1/notice', type: 'retraction', date: '2021-03-04', source: 'retraction-watch' as const }] },
  '10.1/concern': { 'updated-by': [{ DOI: '10.1/eoc', type: 'expression_of_concern', date: '2019-05-06' }] },
  '10.1/fine': {}
}
const SAMPLE = new URL('../../fixtures/retraction-watch-sample.csv', import.meta.url).pathname
const redisServer = useTestRedis()

const open: Array<{ close: () => Promise<void> }> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map(async (x) => await x.close()))
})

async function fake(): Promise<FakeCrossrefApi> {
  const api = await FakeCrossrefApi.start({ works: WORKS })
  open.push(api)
  return api
}

async function redisClient(): Promise<RedisClient> {
  const client = createRedisClient({ topology: { kind: 'server', url: redisServer().url }, commandTimeoutMs: 500, connectTimeoutMs: 1_000 })
  open.push({ close: async () => await closeRedis(client, 500) })
  await waitConnected(client, 2_000)
  return client
}

interface Built {
  service: ReturnType<typeof createRetractions>
  metrics: Metrics
  clock: { t: number }
}

function service(api: FakeCrossrefApi | undefined, opts: Partial<RetractionsOptions> = {}): Built {
  const metrics = createMetrics()
  const clock = { t: Date.UTC(2026, 0, 1) }
  let crossref: RetractionsOptions['crossref']
  if (api !== undefined) {
    const client = createCrossrefUpdates({
      baseUrl: api.url,
      mailto: 'ops@example.org',
      userAgent: 'doi-proxy/test',
      concurrency: 3,
      timeoutMs: 2_000,
      maxBodyBytes: 1 << 20
    })
    open.push(client)
    crossref = client
  }
  const built = createRetractions({
    from: 'crossref',
    crossref,
    metrics,
    now: () => clock.t,
    ttlSeconds: 3600,
    lookupMs: 3_000,
    redisPrefix: 'doi-proxy:',
    ...opts
  })
  return { service: built, metrics, clock }
}

async function lookups(metrics: Metrics): Promise<Record<string, number>> {
  const { values } = await metrics.retractionLookups.get()
  return Object.fromEntries(values.map((v) => [`${v.labels.source}/${v.labels.outcome}`, v.value]))
}

describe('retraction verdicts from Crossref', () => {
  it.each([
    ['10.1/retracted', { verdict: 'retracted', notice: '10.1/notice', date: '2021-03-04' }],
    ['10.1/concern', { verdict: 'expression-of-concern', notice: '10.1/eoc', date: '2019-05-06' }],
    ['10.1/fine', { verdict: 'none', notice: null, date: null }]
  ])('gives %s its verdict', async (doi, expected) => {
    const { service: s } = service(await fake())
    expect(await s.find(doi)).toEqual(expected)
  })

  it("gives a DOI Crossref does not know a null verdict saying so (another agency's DOI)", async () => {
    const { service: s, metrics } = service(await fake())
    expect(await s.find('10.5061/dryad.x')).toEqual({ verdict: null, notice: null, date: null, error: OTHER_AGENCY })
    expect(await lookups(metrics)).toEqual({ 'crossref/other_agency': 1 })
  })

  it('asks Crossref once for a DOI asked again, in any case, within the TTL', async () => {
    const api = await fake()
    const { service: s, metrics } = service(api)
    await s.find('10.1/retracted')
    expect(await s.find('10.1/RETRACTED')).toMatchObject({ verdict: 'retracted' })
    expect(api.seen).toHaveLength(1)
    expect(await lookups(metrics)).toEqual({ 'crossref/found': 1 })
  })

  it('asks again once the TTL is over', async () => {
    const api = await fake()
    const { service: s, clock } = service(api, { ttlSeconds: 60 })
    await s.find('10.1/fine')
    clock.t += 61_000
    await s.find('10.1/fine')
    expect(api.seen).toHaveLength(2)
  })

  it('keeps nothing with a TTL of 0', async () => {
    const api = await fake()
    const { service: s } = service(api, { ttlSeconds: 0 })
    await s.find('10.1/fine')
    await s.find('10.1/fine')
    expect(api.seen).toHaveLength(2)
  })

  it('asks Crossref once for readers asking for one DOI at once', async () => {
    const api = await fake()
    api.mode = { slowMs: 100 }
    const { service: s } = service(api)
    const answers = await Promise.all(Array.from({ length: 5 }, async () => await s.find('10.1/retracted')))
    expect(new Set(answers.map((a) => a.verdict))).toEqual(new Set(['retracted']))
    expect(api.seen).toHaveLength(1)
  })

  it('gives a null verdict with the reason when Crossref fails, and keeps it nowhere', async () => {
    const api = await fake()
    api.mode = 'fail'
    const errors: string[] = []
    const { service: s, metrics } = service(api, { onError: (doi) => errors.push(doi) })
    expect(await s.find('10.1/fine')).toEqual({
      verdict: null,
      notice: null,
      date: null,
      error: 'Crossref could not say: Crossref answered HTTP 500'
    })
    api.mode = 'normal'
    expect(await s.find('10.1/fine')).toMatchObject({ verdict: 'none' })
    expect(errors).toEqual(['10.1/fine'])
    expect(await lookups(metrics)).toEqual({ 'crossref/error': 1, 'crossref/none': 1 })
  })
})

describe('admission and readers who leave', () => {
  it('admits a reader only for a lookup past its memory', async () => {
    const { service: s } = service(await fake())
    let admitted = 0
    const admit = async (): Promise<void> => {
      admitted++
    }
    await s.find('10.1/fine', { admit })
    await s.find('10.1/fine', { admit })
    expect(admitted).toBe(1)
  })

  it("throws admission's refusal to the reader, asking nothing", async () => {
    const api = await fake()
    const { service: s } = service(api)
    const admit = async (): Promise<void> => {
      throw new Error('429 rate limited')
    }
    await expect(s.find('10.1/fine', { admit })).rejects.toThrow('429 rate limited')
    expect(api.seen).toHaveLength(0)
  })

  it('lets a reader leave while the lookup goes on for the others', async () => {
    const api = await fake()
    api.mode = { slowMs: 200 }
    const { service: s } = service(api)
    const leaving = new AbortController()
    const left = s.find('10.1/retracted', { signal: leaving.signal })
    const staying = s.find('10.1/retracted')
    setTimeout(() => leaving.abort(new Error('the reader left')), 20)
    await expect(left).rejects.toThrow('the reader left')
    expect(await staying).toMatchObject({ verdict: 'retracted' })
    expect(api.seen).toHaveLength(1)
  })
})

describe('the other sources', () => {
  it('reads the Retraction Watch file with RETRACTIONS_FROM=file, asking no server', async () => {
    const { service: s, metrics } = service(undefined, { from: 'file', file: await loadRetractionWatch(SAMPLE) })
    expect(await s.find('10.5555/rw.retracted')).toEqual({ verdict: 'retracted', notice: '10.5555/rw.notice.1', date: '2021-03-04' })
    expect(await s.find('10.5555/unknown')).toEqual({ verdict: 'none', notice: null, date: null })
    expect(await lookups(metrics)).toEqual({ 'file/found': 1, 'file/none': 1 })
  })

  it('refuses at start a source it is not given', () => {
    expect(() => service(undefined, { from: 'crossref' })).toThrow('RETRACTIONS_FROM=crossref needs the Crossref client')
    expect(() => service(undefined, { from: 'file' })).toThrow('RETRACTIONS_FROM=file needs the notices read from RETRACTIONS_FILE')
  })

  it('says retraction checks are off with RETRACTIONS_FROM=off', async () => {
    const { service: s } = service(undefined, { from: 'off' })
    expect(await s.find('10.1/x')).toMatchObject({ verdict: null, error: 'retraction checks are off here (RETRACTIONS_FROM=off)' })
  })
})

describe('verdicts shared by replicas through Redis', () => {
  it('two replicas asking for one DOI at once make one Crossref request', async () => {
    const api = await fake()
    api.mode = { slowMs: 150 }
    const a = service(api, { redis: await redisClient() })
    const b = service(api, { redis: await redisClient() })
    const [va, vb] = await Promise.all([a.service.find('10.1/retracted'), b.service.find('10.1/retracted')])
    expect(va).toEqual(vb)
    expect(va).toMatchObject({ verdict: 'retracted' })
    expect(api.seen).toHaveLength(1)
  })

  it("a replica started later answers from the others' verdict, asking Crossref nothing", async () => {
    const api = await fake()
    await service(api, { redis: await redisClient() }).service.find('10.1/concern')
    const later = service(api, { redis: await redisClient() })
    expect(await later.service.find('10.1/concern')).toMatchObject({ verdict: 'expression-of-concern', notice: '10.1/eoc' })
    expect(api.seen).toHaveLength(1)
    expect(await lookups(later.metrics)).toEqual({ 'shared/found': 1 })
  })

  it('a failure is not shared: the next replica asks Crossref itself', async () => {
    const api = await fake()
    api.mode = 'fail'
    await service(api, { redis: await redisClient() }).service.find('10.1/fine')
    api.mode = 'normal'
    expect(await service(api, { redis: await redisClient() }).service.find('10.1/fine')).toMatchObject({ verdict: 'none' })
    expect(api.seen).toHaveLength(2)
  })

  it('reads back from Redis only what is a verdict', async () => {
    const client = await redisClient()
    await client.set('doi-proxy:retraction:1:answer:10.1/FINE', JSON.stringify({ verdict: 'bogus', notice: '<script>' }), 'PX', 60_000)
    await client.set(
      'doi-proxy:retraction:1:answer:10.1/OTHER',
      JSON.stringify({ verdict: 'corrected', notice: '10.1/c', date: '2020-02-02' }),
      'PX',
      60_000
    )
    const api = await fake()
    const s = service(api, { redis: client }).service
    expect(await s.find('10.1/fine')).toMatchObject({ verdict: 'none' })
    expect(await s.find('10.1/other')).toEqual({ verdict: 'corrected', notice: '10.1/c', date: '2020-02-02' }) // the keys are these
    expect(api.dois).toEqual(['10.1/fine'])
  })
})

describe('a verdict read back', () => {
  it.each([
    [
      { verdict: 'retracted', notice: '10.1/n', date: '2021-03-04' },
      { verdict: 'retracted', notice: '10.1/n', date: '2021-03-04' }
    ],
    [
      { verdict: 'none', notice: null, date: null, extra: 1 },
      { verdict: 'none', notice: null, date: null }
    ], // rebuilt, nothing more
    [
      { verdict: null, notice: null, date: null, error: 'x' },
      { verdict: null, notice: null, date: null, error: 'x' }
    ],
    [{ verdict: 'bogus', notice: null, date: null }, undefined],
    [{ verdict: 'retracted', notice: 3, date: null }, undefined],
    [{ verdict: 'retracted', notice: null, date: 'March' }, undefined],
    [{ verdict: null }, undefined],
    [null, undefined]
  ])('%j → %j', (value, expected) => {
    expect(retractionResultOf(value)).toEqual(expected)
  })
})
