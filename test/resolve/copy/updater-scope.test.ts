import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { copyKeyOf } from '../../../src/handle/copy/key.js'
import { encodeEntry } from '../../../src/handle/copy/record-codec.js'
import { createFeedClient, FeedError } from '../../../src/resolve/copy/feeds.js'
import type { FeedClient } from '../../../src/resolve/copy/feeds.js'
import { openCopy } from '../../../src/resolve/copy/store.js'
import type { CopyLog, CopyStore } from '../../../src/resolve/copy/store.js'
import { copyScopeOf, NoCoverage, noteScope, runUpdate, startUpdateSchedule, stateKeyOf } from '../../../src/resolve/copy/updater.js'
import type { UpdateContext, UpdateOutcome } from '../../../src/resolve/copy/updater.js'
import { createCopyWriter } from '../../../src/resolve/copy/writer.js'
import type { CopyWriter } from '../../../src/resolve/copy/writer.js'
import { crossrefWork, FakeAgencyFeeds } from '../../support/fake-agency-feeds.js'

// Updates of a copy limited to some prefixes (issue 43 §3, a copy imported with --prefix), against the real
// fake feeds: only those prefixes asked for and written, the copy's scope as the default, and the agency's
// coverage moved only by a run that listed every prefix the copy holds.

const DAY = 86_400
const NOW = Math.floor(Date.now() / 1000)
const THROUGH = NOW - 3 * DAY
const iso = (s: number): string => new Date(s * 1000).toISOString()

const root = mkdtempSync(join(tmpdir(), 'doi-proxy-copy-scope-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const log: CopyLog = { info: () => undefined, warn: () => undefined }
let fake: FakeAgencyFeeds
let copy: CopyStore
let writer: CopyWriter
let feeds: FeedClient
let n = 0

/** 1,200 works of 10.1103 (two pages) and 300 of 10.6666, changed a day ago. */
function works(): Record<string, unknown>[] {
  const physics = Array.from({ length: 1200 }, (_, i) => crossrefWork(`10.1103/p${i}`, `https://example.org/p${i}`, iso(NOW - DAY)))
  const other = Array.from({ length: 300 }, (_, i) => crossrefWork(`10.6666/o${i}`, `https://example.org/o${i}`, iso(NOW - DAY)))
  return [...physics, ...other]
}

beforeEach(async () => {
  fake = await FakeAgencyFeeds.start({
    works: works(),
    dois: [
      { doi: '10.5281/zenodo.1', url: 'https://zenodo.example/1', updated: iso(NOW - DAY) },
      { doi: '10.7777/d1', url: 'https://data.example.org/d1', updated: iso(NOW - DAY) }
    ]
  })
  copy = openCopy({ dir: join(root, `copy-${++n}`), writable: true })
  writer = createCopyWriter(copy, { maxBytes: 0, minFreeBytes: 0, nowS: () => NOW, freeBytes: () => 1e12 })
  writer.extendCoverage('crossref', { base: THROUGH, through: THROUGH })
  writer.extendCoverage('datacite', { base: THROUGH, through: THROUGH })
  feeds = createFeedClient({ userAgent: 'doi-proxy/test', timeoutMs: 5_000, retries: 1, baseDelayMs: 20, minIntervalMs: 0 })
})
afterEach(async () => {
  await feeds.close()
  await copy.close()
  await fake.close()
})

function ctx(agency: 'crossref' | 'datacite', more: Partial<UpdateContext> = {}): UpdateContext {
  return { copy, writer, feeds, baseUrl: fake.url, mailto: undefined, nowS: () => NOW, maxRecordBytes: 4 * 1024 * 1024, log, ...more }
}
const held = (doi: string) => copy.head(copyKeyOf(doi))

/** The copy as an import without --prefix leaves it: any prefix (one record of 10.6666 in it). */
function wholeCopy(): void {
  noteScope(copy, undefined)
  writer.putBatch([
    encodeEntry(
      { doi: '10.6666/held', kind: 'work', agency: 'crossref', url: 'https://example.org/held', stamp: THROUGH },
      { importedAt: NOW, covered: true }
    )
  ])
}

describe('an update limited to prefixes', () => {
  it('asks Crossref for those prefixes only (prefix filters, ORed) and writes only their works', async () => {
    wholeCopy()
    const outcome = await runUpdate('crossref', ctx('crossref', { prefixes: ['10.1103', '10.9999'] }))
    expect(outcome).toMatchObject({ outcome: 'done', records: 1200, written: 1200, filtered: 0, prefixes: ['10.1103', '10.9999'] })
    expect(fake.requestsTo('/works')[0]!.query.get('filter')).toBe(
      `from-update-date:${iso(THROUGH - DAY).slice(0, 10)},prefix:10.1103,prefix:10.9999`
    )
    expect(held('10.1103/p1199')).toBeDefined()
    expect(held('10.6666/o0')).toBeUndefined()
  })

  it('counts as filtered, and does not write, what the agency sends outside the prefixes', async () => {
    wholeCopy()
    fake.ignorePrefixes = true
    const outcome = await runUpdate('crossref', ctx('crossref', { prefixes: ['10.1103'] }))
    expect(outcome).toMatchObject({ outcome: 'done', records: 1500, written: 1200, filtered: 300 })
    expect(held('10.6666/o0')).toBeUndefined()
  })

  it('asks DataCite with its prefix filter, comma-separated', async () => {
    const outcome = await runUpdate('datacite', ctx('datacite', { prefixes: ['10.5281', '10.1103'] }))
    expect(outcome).toMatchObject({ outcome: 'done', records: 1, written: 1 })
    expect(fake.requestsTo('/dois')[0]!.query.get('prefix')).toBe('10.1103,10.5281')
    expect(held('10.5281/zenodo.1')).toBeDefined()
    expect(held('10.7777/d1')).toBeUndefined()
  })

  it("leaves the agency's coverage where it was when the copy holds other prefixes too", async () => {
    wholeCopy()
    const outcome = await runUpdate('crossref', ctx('crossref', { prefixes: ['10.1103'] }))
    expect(outcome).toMatchObject({ outcome: 'done', covered: false, through: THROUGH })
    expect(copy.coverage().crossref).toEqual({ base: THROUGH, through: THROUGH })
    expect(copy.meta(stateKeyOf('crossref'))).toBeUndefined()
  })

  it('moves the coverage when the prefixes are all the copy holds (its scope)', async () => {
    noteScope(copy, ['10.1103'])
    const outcome = await runUpdate('crossref', ctx('crossref', { prefixes: ['10.1103'] }))
    expect(outcome).toMatchObject({ outcome: 'done', covered: true, through: NOW })
    expect(copy.coverage().crossref?.through).toBe(NOW)
  })

  it('resumed with other prefixes than the stopped run, starts the pages again from the same date', async () => {
    noteScope(copy, ['10.1103', '10.6666'])
    const controller = new AbortController()
    fake.onRequest = () => {
      if (fake.seen.length === 2) controller.abort()
    }
    const stopped = await runUpdate('crossref', ctx('crossref', { prefixes: ['10.1103'], signal: controller.signal }))
    expect(stopped).toMatchObject({ outcome: 'interrupted', pages: 1 })
    fake.onRequest = undefined
    const asked = fake.seen.length
    const outcome = await runUpdate('crossref', ctx('crossref', { prefixes: ['10.1103', '10.6666'] }))
    expect(outcome).toMatchObject({ outcome: 'done', resumed: true, covered: true })
    const again = fake.requestsTo('/works').slice(asked)[0]!
    expect(again.query.get('cursor')).toBe('*')
    expect(again.query.get('filter')).toMatch(/,prefix:10\.1103,prefix:10\.6666$/)
    expect(held('10.6666/o299')).toBeDefined()
  })
})

describe('where an update starts (--since)', () => {
  it('refuses a date after the coverage: the changes between would be missed', async () => {
    const refused = await runUpdate('crossref', ctx('crossref', { since: THROUGH + DAY })).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(NoCoverage)
    expect((refused as Error).message).toMatch(/^--since \d{4}-\d\d-\d\d is after the copy's crossref coverage \(\d{4}-\d\d-\d\d\)/)
    expect(fake.seen).toHaveLength(0)
  })

  it('starts earlier than the coverage when given an earlier date', async () => {
    await runUpdate('crossref', ctx('crossref', { since: THROUGH - 10 * DAY }))
    expect(fake.requestsTo('/works')[0]!.query.get('filter')).toBe(`from-update-date:${iso(THROUGH - 11 * DAY).slice(0, 10)}`)
  })
})

describe("the copy's scope", () => {
  it.each<[string, Array<readonly string[] | undefined>, string[] | undefined]>([
    ['an empty copy imported with --prefix takes its prefixes', [['10.1103', '10.1088']], ['10.1088', '10.1103']],
    ['a second import with --prefix widens it', [['10.1103'], ['10.1088']], ['10.1088', '10.1103']],
    ['an import without --prefix makes it any prefix', [['10.1103'], undefined], undefined],
    ['after any prefix, a --prefix import leaves it any', [undefined, ['10.1103']], undefined]
  ])('%s', (_, imports, expected) => {
    for (const prefixes of imports) noteScope(copy, prefixes)
    expect(copyScopeOf(copy)).toEqual(expected)
  })

  it('is any prefix for a copy that holds records and recorded none (made before scopes were)', () => {
    writer.putBatch([
      encodeEntry(
        { doi: '10.6666/held', kind: 'work', agency: 'crossref', url: 'https://example.org/held', stamp: THROUGH },
        { importedAt: NOW, covered: true }
      )
    ])
    noteScope(copy, ['10.1103'])
    expect(copyScopeOf(copy)).toBeUndefined()
  })

  it("is what the server's schedule asks for", async () => {
    noteScope(copy, ['10.1103'])
    const runs: Array<UpdateOutcome | Error> = []
    const schedule = startUpdateSchedule({
      settings: {
        registryCopyUpdateHours: 24,
        allowedSchemes: ['http', 'https', 'ftp'],
        crossrefApiUrl: fake.url,
        dataciteApiUrl: fake.url,
        contactEmail: undefined,
        registryCopyUpdateTimeoutMs: 5_000,
        registryCopyMaxBytes: 0,
        registryCopyMinFreeBytes: 0,
        registryCopyMaxRecordBytes: 4 * 1024 * 1024
      },
      copy,
      userAgent: 'doi-proxy/test',
      log,
      agencies: ['crossref'],
      firstCheckMs: 60_000,
      feedMinIntervalMs: 0,
      onRun: (_agency, result) => runs.push(result)
    })
    try {
      await schedule.checkNow()
    } finally {
      await schedule.stop()
    }
    expect(runs[0]).not.toBeInstanceOf(FeedError)
    expect(runs[0]).toMatchObject({ outcome: 'done', covered: true, written: 1200, prefixes: ['10.1103'] })
    expect(fake.requestsTo('/works').every((r) => r.query.get('filter')?.endsWith(',prefix:10.1103'))).toBe(true)
    expect(held('10.6666/o0')).toBeUndefined()
  })
})
