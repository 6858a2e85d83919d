import { afterEach, describe, expect, it } from 'vitest'
import { noticesOfCrossrefWork, retractionVerdictOf } from '../../../src/handle/verify/retraction.js'
import { createCrossrefUpdates } from '../../../src/resolve/retraction/crossref-updates.js'
import type { CrossrefUpdatesOptions } from '../../../src/resolve/retraction/crossref-updates.js'
import { FakeCrossrefApi } from '../../support/fake-crossref-api.js'

// Issue 41: the retraction level asks Crossref's REST API for a work's `updated-by` notices, politely
// (mailto, its own concurrency cap, Retry-After honoured) and within bounds (time, size).
const WORKS = {
  '10.1/retracted': { 'updated-by': [{ DOI: '10.1/notice', type: 'retraction', date: '2021-03-04', source: 'retraction-watch' as const }] },
  '10.1/corrected': { 'updated-by': [{ DOI: '10.1/erratum', type: 'correction', date: '2020-01-02' }] },
  '10.1/fine': {}
}

const open: Array<{ close: () => Promise<void> }> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map(async (x) => await x.close()))
})

async function fake(): Promise<FakeCrossrefApi> {
  const api = await FakeCrossrefApi.start({ works: WORKS })
  open.push(api)
  return api
}

function client(api: FakeCrossrefApi | string, opts: Partial<CrossrefUpdatesOptions> = {}) {
  const c = createCrossrefUpdates({
    baseUrl: typeof api === 'string' ? api : api.url,
    mailto: 'ops@example.org',
    userAgent: 'doi-proxy/test (mailto:ops@example.org)',
    concurrency: 3,
    timeoutMs: 2_000,
    maxBodyBytes: 1024 * 1024,
    ...opts
  })
  open.push(c)
  return c
}

describe("a work's notices from Crossref", () => {
  it("gives the work's updated-by notices, asked with mailto and our User-Agent", async () => {
    const api = await fake()
    const found = await client(api).workOf('10.1/RETRACTED')
    expect(found.kind).toBe('found')
    expect(retractionVerdictOf(noticesOfCrossrefWork(found.kind === 'found' ? found.work : null))).toEqual({
      verdict: 'retracted',
      notice: '10.1/notice',
      date: '2021-03-04'
    })
    expect(api.seen).toMatchObject([
      { path: '/works/10.1/RETRACTED', mailto: 'ops@example.org', userAgent: 'doi-proxy/test (mailto:ops@example.org)' }
    ])
  })

  it('asks without mailto when no contact is set', async () => {
    const api = await fake()
    await client(api, { mailto: undefined }).workOf('10.1/fine')
    expect(api.seen[0]?.mailto).toBeNull()
  })

  it('says a DOI Crossref does not know is not found (another agency registered it)', async () => {
    const api = await fake()
    expect(await client(api).workOf('10.5061/dryad.x')).toEqual({ kind: 'not-found' })
  })

  it('encodes a DOI so no dot segment or query character changes what is asked', async () => {
    const api = await fake()
    await client(api).workOf('10.1/a?b#c')
    expect(api.seen[0]?.doi).toBe('10.1/a?b#c')
  })
})

describe('politeness towards Crossref', () => {
  it('never has more requests in flight than its concurrency', async () => {
    const api = await fake()
    api.mode = { slowMs: 100 }
    const c = client(api, { concurrency: 2 })
    await Promise.all(Array.from({ length: 8 }, async (_, i) => await c.workOf(`10.1/w${i}`)))
    expect(api.seen).toHaveLength(8)
    expect(api.peak).toBe(2)
  })

  it('sends no request before the time a 429 Retry-After names, then asks again', async () => {
    const api = await fake()
    api.mode = { busy: 429, retryAfter: '1', times: 1 }
    const c = client(api, { timeoutMs: 5_000 })
    const first = c.workOf('10.1/corrected')
    await new Promise((resolve) => setTimeout(resolve, 50))
    const second = c.workOf('10.1/fine') // asked during the pause: waits for its end
    expect((await first).kind).toBe('found')
    expect((await second).kind).toBe('found')
    const [told, ...after] = api.seen.map((s) => s.at)
    expect(after).toHaveLength(2)
    for (const at of after) expect(at - told!).toBeGreaterThanOrEqual(990)
  })

  it('fails at once, with no request, when the pause lasts past the deadline', async () => {
    const api = await fake()
    api.mode = { busy: 503, retryAfter: '120', times: 1 }
    const c = client(api)
    await expect(c.workOf('10.1/fine')).rejects.toThrow('Crossref asked us to wait 120 s (HTTP 503, Retry-After)')
    await expect(c.workOf('10.1/fine')).rejects.toThrow(/Crossref asked us to wait 1[12]\d s \(Retry-After\)/)
    expect(api.seen).toHaveLength(1)
  })
})

describe('a Crossref that fails', () => {
  it('says HTTP 500', async () => {
    const api = await fake()
    api.mode = 'fail'
    await expect(client(api).workOf('10.1/fine')).rejects.toThrow('Crossref answered HTTP 500')
  })

  it('gives up on a slow answer at its timeout', async () => {
    const api = await fake()
    api.mode = { slowMs: 2_000 }
    const started = performance.now()
    await expect(client(api, { timeoutMs: 300 }).workOf('10.1/fine')).rejects.toThrow('Crossref did not answer within 300 ms')
    expect(performance.now() - started).toBeLessThan(1_500)
  })

  it('stops reading an answer larger than its bound', async () => {
    const api = await fake()
    api.mode = 'huge'
    await expect(client(api, { maxBodyBytes: 64 * 1024 }).workOf('10.1/fine')).rejects.toThrow(
      "Crossref's answer is larger than 65536 bytes"
    )
  })

  it('says Crossref could not be reached when nothing listens', async () => {
    const api = await fake()
    const url = api.url
    await api.close()
    open.splice(open.indexOf(api), 1)
    await expect(client(url).workOf('10.1/fine')).rejects.toThrow('Crossref could not be reached: ECONNREFUSED')
  })
})
