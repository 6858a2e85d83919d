import { mkdtempSync, rmSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { pino, type Logger } from 'pino'
import { describe, expect, it, onTestFinished } from 'vitest'
import { setup } from '../support/app.js'
import { pages } from '../support/fake-landing.js'
import { cslRecord, verifyingApp } from '../support/verifying-app.js'
import type { Config } from '../../src/config/schema.js'
import type { BatchResult } from '../../src/http/batch.js'

// POST /api/batch?verify= (issue 41) against real fakes on loopback addresses: the Handle API, an agency
// answering CSL-JSON, Crossref's REST API, and landing pages on 127.0.0.2 reached through an injected lookup.

const PAPER = '10.9999/paper'
const RETRACTED = '10.9999/retracted'
const SLOW = '10.9999/slow'
const HANGING = 20

/** POST /api/batch?verify= against the fakes: a DOI a page, a retracted one whose page is gone, a slow page, and pages that hang. */
async function withFakes(opts: { overrides?: Partial<Config>; heartbeatMs?: number; logger?: Logger } = {}) {
  const landing: Record<string, string> = { [PAPER]: '/paper', [RETRACTED]: '/retracted', [SLOW]: '/slow' }
  // Pages that take ten seconds, one a DOI.
  for (let i = 0; i < HANGING; i++) landing[`10.9999/hang${i}`] = `/hang?${i}`
  return await verifyingApp({
    prefix: '10.9999',
    agency: {
      [PAPER]: cslRecord('Soil microbes of Iowa', 2017, 'Schrödinger'),
      [RETRACTED]: cslRecord('A retracted result', 2020, 'Doe'),
      [SLOW]: cslRecord('A slow page', 2021, 'Roe')
    },
    crossref: {
      [PAPER]: {},
      [SLOW]: {},
      [RETRACTED]: { 'updated-by': [{ DOI: '10.9999/notice', type: 'retraction', date: '2021-03-04' }] }
    },
    pages: {
      '/paper': pages.citationDoi(PAPER),
      '/retracted': pages.status(404),
      '/slow': pages.slow(600, pages.citationDoi(SLOW)),
      '/hang': pages.slow(10_000, pages.status(200))
    },
    landing,
    overrides: { landingTimeoutMs: 2000, ...opts.overrides },
    deps: { batchHeartbeatMs: opts.heartbeatMs, logger: opts.logger }
  })
}

async function verifyBatch(
  app: Awaited<ReturnType<typeof withFakes>>['app'],
  items: unknown[],
  levels = 'metadata,retraction,landing'
): Promise<{ status: number; raw: string; results: BatchResult[] }> {
  const res = await app.inject({
    method: 'POST',
    url: `/api/batch?verify=${levels}`,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(items)
  })
  const results =
    res.statusCode === 200
      ? res.body
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as BatchResult)
      : []
  // A refusal's words, read from its {"message"}.
  const raw = res.statusCode === 200 ? res.body : (JSON.parse(res.body) as { message: string }).message
  return { status: res.statusCode, raw, results }
}

describe('POST /api/batch?verify=: each registered line checked', () => {
  it('gives a registered line its metadata, retraction and landing objects, exactly as the issue names them', async () => {
    const { app, site } = await withFakes()
    const page = `${site.origin('journal.test')}/paper`
    const { status, results } = await verifyBatch(app, [
      { doi: PAPER, title: 'Soil Microbes of {I}owa', year: 2018, author: 'Schr{\\"o}dinger, A.' }
    ])
    expect(status).toBe(200)
    expect(results).toEqual([
      {
        input: PAPER,
        doi: PAPER,
        registered: true,
        url: page,
        source: 'upstream',
        status: 302,
        metadata: { verdict: 'match', mismatches: [] },
        retraction: { verdict: 'none', notice: null, date: null },
        landing: { verdict: 'alive', status: 200, url: page, evidence: 'citation_doi names the DOI' }
      }
    ])
  })

  it('says a DOI names another work when the cited title is not the registered one', async () => {
    const { app } = await withFakes()
    const { results } = await verifyBatch(app, [{ doi: PAPER, title: 'Deep nets for cats', year: 2017 }], 'metadata')
    expect(results[0]!.metadata).toEqual({
      verdict: 'mismatch',
      kind: 'other-work',
      mismatches: [{ field: 'title', cited: 'Deep nets for cats', registered: 'Soil microbes of Iowa' }]
    })
    expect(results[0]).not.toHaveProperty('landing')
  })

  it('says a retracted work is retracted, with its notice and date, and a 404 landing page is dead', async () => {
    const { app } = await withFakes()
    const { results } = await verifyBatch(app, [{ doi: RETRACTED, title: 'A retracted result' }], 'retraction,landing')
    expect(results[0]!.retraction).toEqual({ verdict: 'retracted', notice: '10.9999/notice', date: '2021-03-04' })
    expect(results[0]!.landing).toEqual(expect.objectContaining({ verdict: 'dead', status: 404 }))
  })

  it('gives null objects to lines that are not registered or not DOI names', async () => {
    const { app } = await withFakes()
    const { results } = await verifyBatch(app, ['10.9999/missing', 'not a doi'])
    for (const r of results) {
      expect(r).toEqual(expect.objectContaining({ registered: false, metadata: null, retraction: null, landing: null }))
    }
  })

  it('calls a DOI cited without a title unverifiable, asking the agency nothing', async () => {
    const { app, agency } = await withFakes()
    const { results } = await verifyBatch(app, [PAPER], 'metadata')
    expect(results[0]!.metadata).toEqual({ verdict: 'unverifiable', mismatches: [], why: 'the reference gives no title to compare' })
    expect(agency.seen).toHaveLength(0)
  })

  it('asks the agency once for a DOI cited twice under two titles, and compares each', async () => {
    const { app, agency } = await withFakes()
    const { results } = await verifyBatch(
      app,
      [
        { doi: PAPER, title: 'Soil microbes of Iowa' },
        { doi: PAPER, title: 'Deep nets for cats' }
      ],
      'metadata'
    )
    expect(results.map((r) => r.metadata?.verdict)).toEqual(['match', 'mismatch'])
    expect(agency.count(PAPER)).toBe(1)
  })

  it('keeps the input order while a landing page is slow, sending newlines as it waits', async () => {
    const { app } = await withFakes({ heartbeatMs: 100 })
    const { raw, results } = await verifyBatch(app, [{ doi: SLOW, title: 'A slow page' }, PAPER], 'landing')
    expect(results.map((r) => r.input)).toEqual([SLOW, PAPER])
    expect(results.map((r) => r.landing?.verdict)).toEqual(['alive', 'alive'])
    expect(raw.startsWith('\n')).toBe(true)
  })

  it('stops visiting landing pages when the reader goes away', async () => {
    const { app, site } = await withFakes({ overrides: { batchConcurrency: 1, verifyConcurrency: 2 } })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as AddressInfo
    const body = JSON.stringify(Array.from({ length: HANGING }, (_, i) => `10.9999/hang${i}`))
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/api/batch?verify=landing',
      headers: { 'content-type': 'application/json' }
    })
    req.on('error', () => {})
    req.end(body)
    const pagesAsked = (): number => site.paths.filter((p) => p.startsWith('/hang')).length
    for (let waited = 0; pagesAsked() === 0 && waited < 5000; waited += 20) await sleep(20)
    expect(pagesAsked()).toBeGreaterThan(0)
    req.destroy()
    await sleep(1000)
    // The pages being fetched are let go (a line's request already on its way when the reader left may still
    // arrive: at most VERIFY_CONCURRENCY in all), and no other is asked for.
    const settled = pagesAsked()
    expect(site.inFlight).toBe(0)
    expect(settled).toBeLessThanOrEqual(2)
    await sleep(1000)
    expect(pagesAsked()).toBe(settled)
  })

  it('visits a landing page once for two batches asking about its DOI: the verdict is kept LANDING_TTL_SECONDS', async () => {
    const { app, site } = await withFakes()
    const first = await verifyBatch(app, [PAPER], 'landing')
    const visits = site.seen.filter((s) => s.path === '/paper').length
    const second = await verifyBatch(app, [PAPER], 'landing')
    expect(second.results[0]!.landing).toEqual(first.results[0]!.landing)
    expect(visits).toBe(1)
    expect(site.seen.filter((s) => s.path === '/paper')).toHaveLength(1)
  })

  it('visits it again at once when LANDING_TTL_SECONDS is 0', async () => {
    const { app, site } = await withFakes({ overrides: { landingTtlSeconds: 0, landingShortTtlSeconds: 0 } })
    await verifyBatch(app, [PAPER], 'landing')
    await verifyBatch(app, [PAPER], 'landing')
    expect(site.seen.filter((s) => s.path === '/paper')).toHaveLength(2)
  })

  it.each([
    ['warns once, at the first page visited, when CONTACT_EMAIL is empty', undefined, 1],
    ['does not warn when CONTACT_EMAIL is set', 'crawl@example.org', 0]
  ])('%s', async (_name, contactEmail, warnings) => {
    const lines: string[] = []
    const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(line) })
    const { app } = await withFakes({ overrides: { contactEmail }, logger })
    expect(lines.filter((l) => l.includes('CONTACT_EMAIL'))).toHaveLength(0)
    await verifyBatch(app, [PAPER, RETRACTED], 'landing')
    await verifyBatch(app, [SLOW], 'landing')
    expect(lines.filter((l) => l.includes('CONTACT_EMAIL is empty: landing pages'))).toHaveLength(warnings)
  })

  it("visits no landing page past the reader's rate limit: the line's landing verdict is null, saying why", async () => {
    const { app, site } = await withFakes({ overrides: { rateLimitMax: 1, rateLimitAllowList: [] } })
    // The record is looked up (the one lookup the limit allows) and cached.
    await verifyBatch(app, [PAPER], '')
    const { results } = await verifyBatch(app, [PAPER], 'landing')
    expect(results[0]!.registered).toBe(true)
    expect(results[0]!.landing).toEqual(expect.objectContaining({ verdict: null, error: expect.stringMatching(/limit|too many/i) }))
    expect(site.seen.filter((r) => r.path === '/paper')).toHaveLength(0)
  })

  it('warns of no listener leak while many lines wait at once', async () => {
    const warnings: string[] = []
    const onWarning = (w: Error): void => {
      warnings.push(`${w.name}: ${w.message}`)
    }
    process.on('warning', onWarning)
    onTestFinished(() => {
      process.off('warning', onWarning)
    })
    const { app } = await withFakes({ overrides: { crossrefTimeoutMs: 1000 } })
    const dois = Array.from({ length: HANGING }, (_, i) => ({ doi: `10.9999/hang${i}`, title: `Hanging ${i}` }))
    const { results } = await verifyBatch(app, dois, 'metadata,retraction')
    expect(results).toHaveLength(HANGING)
    // Warnings are emitted on the next tick.
    await sleep(50)
    expect(warnings.filter((w) => w.includes('MaxListenersExceeded'))).toEqual([])
  })

  it('counts each verdict on /metrics', async () => {
    const { app } = await withFakes()
    await verifyBatch(app, [{ doi: RETRACTED, title: 'A retracted result' }], 'retraction')
    const metrics = await app.inject({ url: '/metrics' })
    expect(metrics.body).toMatch(/doi_proxy_verify_verdicts_total\{level="retraction",verdict="retracted"\} 1/)
  })
})

describe('POST /api/batch?verify=: offline', () => {
  it('compares with the CSL-JSON the local records hold, and says why retraction and landing cannot be told', async () => {
    const { app, upstream } = await setup({ overrides: { offline: true, localStoreDir: 'config/sample-records' } })
    const { results } = await verifyBatch(app, [
      { doi: '10.5072/sample-dataset', title: 'A sample dataset of doi-proxy', year: 2026 },
      { doi: '10.5555/sample', title: 'Deep nets for cats' }
    ])
    expect(results[0]).toEqual(
      expect.objectContaining({
        registered: true,
        metadata: { verdict: 'match', mismatches: [] },
        retraction: {
          verdict: null,
          notice: null,
          date: null,
          error: "offline, and this DOI's retraction notices were not recorded (RECORD_TO)"
        },
        landing: expect.objectContaining({
          verdict: null,
          status: null,
          evidence: null,
          error: "offline, and this DOI's landing page was not visited while recording (RECORD_TO)"
        })
      })
    )
    expect(results[1]!.metadata).toEqual(expect.objectContaining({ verdict: 'mismatch', kind: 'other-work' }))
    expect(upstream.seen).toHaveLength(0)
  })
})

describe('POST /api/batch?verify=: recorded, then replayed offline', () => {
  it('gives offline, from what RECORD_TO kept, the verdicts it gave online, and visits no page', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'verify-record-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const items = [
      { doi: PAPER, title: 'Soil microbes of Iowa', year: 2017 },
      { doi: RETRACTED, title: 'A retracted result', year: 2020 }
    ]
    const { app, site, crossref } = await withFakes({ overrides: { recordTo: dir } })
    const online = await verifyBatch(app, items)
    expect(online.results.map((r) => [r.landing?.verdict, r.retraction?.verdict])).toEqual([
      ['alive', 'none'],
      ['dead', 'retracted']
    ])
    // Closing writes what is recorded.
    await app.close()
    const asked = { pages: site.seen.length, crossref: crossref.seen.length }
    const { app: offline } = await setup({ overrides: { offline: true, localStoreDir: dir, crossrefApiUrl: crossref.url } })
    const replayed = await verifyBatch(offline, items)
    for (const [i, line] of replayed.results.entries()) {
      const was = online.results[i]!
      expect({ metadata: line.metadata, retraction: line.retraction, landing: line.landing }).toEqual({
        metadata: was.metadata,
        retraction: was.retraction,
        landing: was.landing
      })
    }
    expect({ pages: site.seen.length, crossref: crossref.seen.length }).toEqual(asked)
  })
})

describe('POST /api/batch?verify=: what is refused', () => {
  it.each([
    ['metadata,colour', /"colour" is not a verify level/],
    ['', null]
  ])('?verify=%s', async (levels, message) => {
    const { app } = await withFakes()
    const { status, raw } = await verifyBatch(app, [PAPER], levels)
    if (message === null) expect(status).toBe(200)
    else {
      expect(status).toBe(400)
      expect(raw).toMatch(message)
    }
  })

  it('refuses a level VERIFY_LEVELS does not allow, naming it', async () => {
    const { app, site } = await withFakes({ overrides: { verifyLevels: ['metadata'] } })
    const { status, raw } = await verifyBatch(app, [PAPER], 'metadata,landing')
    expect(status).toBe(400)
    expect(raw).toMatch(/does not verify landing \(VERIFY_LEVELS\)/)
    expect(site.seen).toHaveLength(0)
  })

  it('refuses every level when VERIFY_LEVELS is empty', async () => {
    const { app } = await withFakes({ overrides: { verifyLevels: [] } })
    const { status, raw } = await verifyBatch(app, [PAPER], 'retraction')
    expect(status).toBe(400)
    expect(raw).toMatch(/does not verify retraction/)
  })

  it('makes a line with a year that is not a year invalid, and looks nothing up for it', async () => {
    const { app } = await withFakes()
    const { results } = await verifyBatch(app, [{ doi: PAPER, title: 'x', year: 99999 }], 'metadata')
    expect(results[0]).toEqual(expect.objectContaining({ registered: false, metadata: null, error: expect.stringMatching(/year/) }))
  })

  it('refuses a JSON item that is neither a string nor an object with a doi', async () => {
    const { app } = await withFakes()
    const { status, raw } = await verifyBatch(app, [{ title: 'no doi' }], 'metadata')
    expect(status).toBe(400)
    expect(raw).toMatch(/item 0 is an object without a "doi" string/)
  })
})
