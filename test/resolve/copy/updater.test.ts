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
import {
  leaseNow,
  NoCoverage,
  releaseLease,
  runUpdate,
  startUpdateSchedule,
  takeLease,
  updateOutcomeLabel
} from '../../../src/resolve/copy/updater.js'
import type { UpdateContext, UpdateOutcome, UpdateScheduleSettings } from '../../../src/resolve/copy/updater.js'
import { createCopyWriter, DiskFull } from '../../../src/resolve/copy/writer.js'
import type { CopyWriter } from '../../../src/resolve/copy/writer.js'
import { crossrefWork, FakeAgencyFeeds } from '../../support/fake-agency-feeds.js'
import type { FakeDataciteDoi } from '../../support/fake-agency-feeds.js'

// Updates of the registry copy against real fakes of Crossref's and DataCite's feeds (plan-43 §1.12):
// every page written with the run's state, a stopped run resumed from its cursor, the coverage moved only
// when a run completes, newer wins; polite (mailto, User-Agent, one request at a time); one updater per copy.

const DAY = 86_400
const NOW = Math.floor(Date.now() / 1000)
const THROUGH = NOW - 3 * DAY
const UA = 'doi-proxy/test (mailto:ops@example.org)'
const MAILTO = 'ops@example.org'
const iso = (s: number): string => new Date(s * 1000).toISOString()

const root = mkdtempSync(join(tmpdir(), 'doi-proxy-copy-update-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const logged: string[] = []
const log: CopyLog = { info: (_o, msg) => logged.push(msg), warn: (_o, msg) => logged.push(msg) }

let fake: FakeAgencyFeeds
let copy: CopyStore
let writer: CopyWriter
let feeds: FeedClient
let n = 0

/** `count` Crossref works indexed a day ago, and one indexed before the update's window (never asked for). */
function crossrefWorks(count: number): Record<string, unknown>[] {
  const works = Array.from({ length: count }, (_, i) => crossrefWork(`10.5555/c${i}`, `https://example.org/c${i}`, iso(NOW - DAY)))
  works.push(crossrefWork('10.5555/old', 'https://example.org/old', iso(THROUGH - 10 * DAY)))
  return works
}
function dataciteDois(count: number): FakeDataciteDoi[] {
  return Array.from({ length: count }, (_, i) => ({
    doi: `10.7777/D${i}`,
    url: `https://data.example.org/d${i}`,
    updated: iso(NOW - DAY + i)
  }))
}

beforeEach(async () => {
  fake = await FakeAgencyFeeds.start({ works: crossrefWorks(2500), dois: dataciteDois(1500) })
  copy = openCopy({ dir: join(root, `copy-${++n}`), writable: true })
  writer = createCopyWriter(copy, { maxBytes: 0, minFreeBytes: 0, nowS: () => NOW, freeBytes: () => 1e12 })
  writer.extendCoverage('crossref', { base: THROUGH, through: THROUGH })
  writer.extendCoverage('datacite', { base: THROUGH, through: THROUGH })
  feeds = createFeedClient({ userAgent: UA, timeoutMs: 5_000, retries: 2, baseDelayMs: 20, minIntervalMs: 0 })
  logged.length = 0
})
afterEach(async () => {
  await feeds.close()
  await copy.close()
  await fake.close()
})

function ctx(agency: 'crossref' | 'datacite', more: Partial<UpdateContext> = {}): UpdateContext {
  return {
    copy,
    writer,
    feeds,
    baseUrl: fake.url,
    mailto: agency === 'crossref' ? MAILTO : undefined,
    nowS: () => NOW,
    maxRecordBytes: 4 * 1024 * 1024,
    log,
    ...more
  }
}
const held = (doi: string) => copy.head(copyKeyOf(doi))

describe('an update from Crossref', () => {
  it('writes every work changed since the coverage, page after page, and moves the coverage to when it began', async () => {
    const outcome = await runUpdate('crossref', ctx('crossref'))
    expect(outcome).toMatchObject({ outcome: 'done', resumed: false, pages: 3, records: 2500, written: 2500, malformed: 0, through: NOW })
    expect(held('10.5555/c0')).toMatchObject({ kind: 'work', agency: 'crossref', covered: true, target: 'https://example.org/c0' })
    expect(held('10.5555/C2499')).toMatchObject({ doi: '10.5555/c2499' })
    expect(held('10.5555/old')).toBeUndefined()
    expect(copy.coverage().crossref).toEqual({ base: THROUGH, through: NOW })
    expect(copy.meta('update:crossref')).toBeUndefined()
  })

  it('asks from the day before its coverage, with cursors, until an empty page', async () => {
    await runUpdate('crossref', ctx('crossref'))
    const asked = fake.requestsTo('/works')
    expect(asked.map((r) => r.query.get('filter'))).toEqual(Array(4).fill(`from-update-date:${iso(THROUGH - DAY).slice(0, 10)}`))
    expect(asked.map((r) => r.query.get('rows'))).toEqual(['1000', '1000', '1000', '1000'])
    expect(asked[0]!.query.get('cursor')).toBe('*')
    expect(new Set(asked.map((r) => r.query.get('cursor'))).size).toBe(4)
  })

  it('is polite: mailto and the User-Agent on every request, never two at once', async () => {
    await runUpdate('crossref', ctx('crossref'))
    expect(fake.seen.map((r) => r.mailto)).toEqual(Array(4).fill(MAILTO))
    expect(fake.seen.map((r) => r.userAgent)).toEqual(Array(4).fill(UA))
    expect(fake.peak).toBe(1)
  })

  it("waits the agency's Retry-After in the middle of a run", async () => {
    fake.onRequest = () => {
      if (fake.seen.length === 2) fake.mode = { busy: 429, retryAfter: '1', times: 1 }
    }
    const outcome = await runUpdate('crossref', ctx('crossref'))
    expect(outcome.outcome).toBe('done')
    expect(fake.seen).toHaveLength(5)
    expect(fake.seen[2]!.at - fake.seen[1]!.at).toBeGreaterThanOrEqual(950)
  })
})

describe('an update from DataCite', () => {
  it('follows links.next to the last page and moves the coverage', async () => {
    const outcome = await runUpdate('datacite', ctx('datacite'))
    expect(outcome).toMatchObject({ outcome: 'done', pages: 2, records: 1500, written: 1500, through: NOW })
    const asked = fake.requestsTo('/dois')
    expect(asked.map((r) => r.query.get('page[cursor]'))).toEqual(['1', Buffer.from('1000').toString('base64url')])
    expect(asked[0]!.query.get('query')).toBe(`updated:[${iso(THROUGH - DAY).replace(/\.\d{3}Z$/, 'Z')} TO *]`)
    expect(asked[0]!.query.get('sort')).toBe('updated')
    expect(asked.every((r) => r.userAgent === UA)).toBe(true)
    expect(held('10.7777/d1499')).toMatchObject({ agency: 'datacite', target: 'https://data.example.org/d1499' })
    expect(copy.coverage().datacite?.through).toBe(NOW)
    expect(fake.peak).toBe(1)
  })
})

describe('a run stopped midway', () => {
  it('when interrupted keeps the pages written and the cursor, not the coverage; the next run goes on from the cursor', async () => {
    const controller = new AbortController()
    const first = await runUpdate('crossref', ctx('crossref', { signal: controller.signal, onPage: () => controller.abort() }))
    expect(first).toMatchObject({ outcome: 'interrupted', pages: 1, records: 1000, through: THROUGH })
    expect(copy.coverage().crossref?.through).toBe(THROUGH)
    const saved = copy.meta('update:crossref') as { cursor: string; pages: number }
    expect(saved.pages).toBe(1)
    expect(held('10.5555/c999')).toBeDefined()
    expect(held('10.5555/c1000')).toBeUndefined()

    const second = await runUpdate('crossref', ctx('crossref', { nowS: () => NOW + 3600 }))
    expect(second).toMatchObject({ outcome: 'done', resumed: true, pages: 3, records: 2500, written: 1500 })
    expect(fake.seen[1]!.query.get('cursor')).toBe(saved.cursor)
    // The coverage is the first run's start: changes made since may not have been listed.
    expect(copy.coverage().crossref?.through).toBe(NOW)
  })

  it('whose next link is on a DataCite API no longer configured starts the pages again on the one configured now', async () => {
    fake.dois = dataciteDois(2500)
    const controller = new AbortController()
    await runUpdate('datacite', ctx('datacite', { signal: controller.signal, onPage: () => controller.abort() }))
    const moved = await FakeAgencyFeeds.start({ dois: dataciteDois(2500) })
    try {
      const outcome = await runUpdate('datacite', ctx('datacite', { baseUrl: moved.url }))
      expect(outcome).toMatchObject({ outcome: 'done', resumed: true, unchanged: 1000, written: 1500 })
      expect(moved.seen[0]!.query.get('page[cursor]')).toBe('1')
      expect(fake.requestsTo('/dois')).toHaveLength(1)
    } finally {
      await moved.close()
    }
  })

  it('when the agency fails, throws with the pages written; the next run resumes', async () => {
    fake.onRequest = () => {
      if (fake.seen.length === 2) fake.mode = { fail: Infinity }
    }
    const err = (await runUpdate('crossref', ctx('crossref')).catch((e: unknown) => e)) as FeedError
    expect(err).toBeInstanceOf(FeedError)
    expect(err.kind).toBe('unavailable')
    expect(copy.coverage().crossref?.through).toBe(THROUGH)
    expect((copy.meta('update:crossref') as { pages: number }).pages).toBe(1)
    fake.onRequest = undefined
    fake.mode = 'normal'
    const again = await runUpdate('crossref', ctx('crossref'))
    expect(again).toMatchObject({ outcome: 'done', resumed: true, pages: 3, records: 2500 })
  })

  it('whose cursor expired starts the pages again; what was written comes back unchanged', async () => {
    const controller = new AbortController()
    await runUpdate('crossref', ctx('crossref', { signal: controller.signal, onPage: () => controller.abort() }))
    fake.cursorTtlMs = -1
    const seenBefore = fake.seen.length
    // Fresh cursors must work again once the expired one was refused.
    fake.onRequest = (req) => {
      if (req.query.get('cursor') === '*') fake.cursorTtlMs = 60_000
    }
    const outcome = await runUpdate('crossref', ctx('crossref'))
    expect(outcome).toMatchObject({ outcome: 'done', unchanged: 1000, written: 1500 })
    expect(fake.seen.slice(seenBefore).map((r) => r.query.get('cursor') === '*')).toEqual([false, true, false, false, false])
    expect(logged).toContain('registry copy update: the cursor was refused; starting the pages again')
  })
})

describe('what an update writes', () => {
  it('newer wins: a record the copy holds newer is kept, an older one replaced', async () => {
    const newer = { doi: '10.5555/c1', kind: 'work' as const, agency: 'crossref' as const, url: 'https://kept.example/', stamp: NOW }
    const older = {
      doi: '10.5555/c2',
      kind: 'work' as const,
      agency: 'crossref' as const,
      url: 'https://gone.example/',
      stamp: THROUGH - 30 * DAY
    }
    writer.putBatch([encodeEntry(newer, { importedAt: NOW, covered: true }), encodeEntry(older, { importedAt: NOW, covered: true })])
    const outcome = await runUpdate('crossref', ctx('crossref'))
    expect(outcome).toMatchObject({ older: 1, written: 2499 })
    expect(held('10.5555/c1')).toMatchObject({ target: 'https://kept.example/' })
    expect(held('10.5555/c2')).toMatchObject({ target: 'https://example.org/c2' })
  })

  it('skips and names a work with a javascript: URL or no DOI, by page and item', async () => {
    fake.works = [
      crossrefWork('10.5555/good', 'https://example.org/good', iso(NOW - DAY)),
      crossrefWork('10.5555/bad', 'javascript:alert(1)', iso(NOW - DAY)),
      { ...crossrefWork('x', 'https://example.org/x', iso(NOW - DAY)), DOI: undefined }
    ]
    const outcome = await runUpdate('crossref', ctx('crossref'))
    expect(outcome).toMatchObject({ outcome: 'done', written: 1, malformed: 2 })
    expect(outcome.problems).toHaveLength(2)
    expect(outcome.problems[0]).toMatch(/^crossref update page 1 item 2: 10\.5555\/bad: /)
    expect(outcome.problems[1]).toMatch(/^crossref update page 1 item 3: /)
    expect(held('10.5555/bad')).toBeUndefined()
  })

  it('stops on a full disk before the page that would not fit, the pages before kept and the run resumable', async () => {
    let free = 1e12
    const tight = createCopyWriter(copy, { maxBytes: 0, minFreeBytes: 1e9, nowS: () => NOW, freeBytes: () => free })
    const err = await runUpdate('crossref', ctx('crossref', { writer: tight, onPage: () => (free = 1e9) })).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(DiskFull)
    expect(copy.meta('update:crossref')).toMatchObject({ pages: 1, records: 1000 })
    expect(copy.coverage().crossref?.through).toBe(THROUGH)
    expect(updateOutcomeLabel(err as DiskFull)).toBe('disk_full')
    free = 1e12
    await expect(runUpdate('crossref', ctx('crossref', { writer: tight }))).resolves.toMatchObject({ outcome: 'done', resumed: true })
  })

  it('refuses to start with no coverage of the agency, unless told where to start', async () => {
    const bare = openCopy({ dir: join(root, `bare-${++n}`), writable: true })
    const bareWriter = createCopyWriter(bare, { maxBytes: 0, minFreeBytes: 0, nowS: () => NOW, freeBytes: () => 1e12 })
    try {
      const refused = await runUpdate('crossref', ctx('crossref', { copy: bare, writer: bareWriter })).catch((e: unknown) => e)
      expect(refused).toBeInstanceOf(NoCoverage)
      expect(fake.seen).toHaveLength(0)
      const outcome = await runUpdate('crossref', ctx('crossref', { copy: bare, writer: bareWriter, since: NOW - 2 * DAY }))
      expect(outcome).toMatchObject({ outcome: 'done', records: 2500, through: NOW })
      expect(bare.coverage().crossref).toEqual({ base: 0, through: NOW })
    } finally {
      await bare.close()
    }
  })
})

describe("the copy's updater lease", () => {
  it('is held by one holder at a time, until it lapses', () => {
    const t = 1_000_000
    expect(takeLease(copy, 'a:1', t, 300_000).taken).toBe(true)
    expect(takeLease(copy, 'b:2', t + 1000, 300_000)).toEqual({ taken: false, lease: { holder: 'a:1', until: t + 300_000 } })
    expect(takeLease(copy, 'a:1', t + 60_000, 300_000).taken).toBe(true) // renewed
    expect(takeLease(copy, 'b:2', t + 300_000, 300_000).taken).toBe(false)
    expect(takeLease(copy, 'b:2', t + 360_001, 300_000).taken).toBe(true) // lapsed: a died
    releaseLease(copy, 'a:1') // not a's any more: left be
    expect(leaseNow(copy)?.holder).toBe('b:2')
    releaseLease(copy, 'b:2')
    expect(leaseNow(copy)).toBeUndefined()
  })
})

describe('the schedule in the server', () => {
  const settings = (): UpdateScheduleSettings => ({
    registryCopyUpdateHours: 24,
    allowedSchemes: ['http', 'https', 'ftp'],
    crossrefApiUrl: fake.url,
    dataciteApiUrl: fake.url,
    contactEmail: MAILTO,
    registryCopyUpdateTimeoutMs: 5_000,
    registryCopyMaxBytes: 0,
    registryCopyMinFreeBytes: 0,
    registryCopyMaxRecordBytes: 4 * 1024 * 1024
  })

  it('updates each agency whose coverage is older than REGISTRY_COPY_UPDATE_HOURS, then not again until due', async () => {
    const runs: Array<[string, UpdateOutcome | Error]> = []
    const counted: Array<{ agency: string; outcome: string }> = []
    const schedule = startUpdateSchedule({
      settings: settings(),
      copy,
      userAgent: UA,
      log,
      firstCheckMs: 60_000,
      feedMinIntervalMs: 0,
      onRun: (agency, result) => runs.push([agency, result]),
      updatesCounter: { inc: (labels) => counted.push(labels) }
    })
    try {
      await schedule.checkNow()
      expect(runs.map(([agency, r]) => [agency, (r as UpdateOutcome).outcome])).toEqual([
        ['crossref', 'done'],
        ['datacite', 'done']
      ])
      expect(counted).toEqual([
        { agency: 'crossref', outcome: 'done' },
        { agency: 'datacite', outcome: 'done' }
      ])
      expect(fake.requestsTo('/works').every((r) => r.mailto === MAILTO && r.userAgent === UA)).toBe(true)
      expect(fake.peak).toBe(1)
      expect(leaseNow(copy)).toBeUndefined()
      const asked = fake.seen.length
      await schedule.checkNow()
      expect(fake.seen).toHaveLength(asked)
    } finally {
      await schedule.stop()
    }
  })

  it('does not update while another process holds the lease', async () => {
    takeLease(copy, 'other-host:42', Date.now())
    const schedule = startUpdateSchedule({ settings: settings(), copy, userAgent: UA, log, feedMinIntervalMs: 0, firstCheckMs: 60_000 })
    try {
      await schedule.checkNow()
      expect(fake.seen).toHaveLength(0)
      expect(logged).toContain('registry copy update: another process holds the lease')
    } finally {
      await schedule.stop()
    }
  })

  it('stops at once in the middle of a run on a stalled agency, the lease given up and the run resumable', async () => {
    fake.mode = { slowMs: 30_000 }
    const schedule = startUpdateSchedule({ settings: settings(), copy, userAgent: UA, log, feedMinIntervalMs: 0, firstCheckMs: 0 })
    while (fake.seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 10))
    const started = performance.now()
    await schedule.stop()
    expect(performance.now() - started).toBeLessThan(1_000)
    expect(leaseNow(copy)).toBeUndefined()
    expect(copy.meta('update:crossref')).toMatchObject({ pages: 0 })
    expect(copy.coverage().crossref?.through).toBe(THROUGH)
  })

  it('refuses a copy opened read-only', async () => {
    const reading = openCopy({ dir: copy.dir, writable: false })
    try {
      expect(() => startUpdateSchedule({ settings: settings(), copy: reading, userAgent: UA, log })).toThrow(/opened read-only/)
    } finally {
      await reading.close()
    }
  })
})
