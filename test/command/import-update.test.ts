import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { importUpdate, NO_CONTACT } from '../../src/command/import/update.js'
import type { ImportUpdateOptions } from '../../src/command/import/update.js'
import { loadConfig } from '../../src/config/load.js'
import { copyKeyOf } from '../../src/handle/copy/key.js'
import { openCopy } from '../../src/resolve/copy/store.js'
import { releaseLease, takeLease } from '../../src/resolve/copy/updater.js'
import { createCopyWriter, freeBytesOf } from '../../src/resolve/copy/writer.js'
import { crossrefWork, FakeAgencyFeeds } from '../support/fake-agency-feeds.js'

// `doi-proxy import --update crossref|datacite [--to DIR]` (plan-43 §1.12): the settings it reads, what it
// says, and its exit codes, against the fake feeds on 127.0.0.1.

const DAY = 86_400
const NOW = Math.floor(Date.now() / 1000)
const THROUGH = NOW - 3 * DAY
const TIB = 2 ** 40
const iso = (s: number): string => new Date(s * 1000).toISOString()

const root = mkdtempSync(join(tmpdir(), 'doi-proxy-import-update-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

let fake: FakeAgencyFeeds
let dir: string
let n = 0
let said: string[]

/** A copy with Crossref coverage to THROUGH (as an import of its file leaves it), closed again. */
async function makeCopy(coverage = true): Promise<string> {
  const made = join(root, `copy-${++n}`)
  const copy = openCopy({ dir: made, writable: true })
  if (coverage) {
    createCopyWriter(copy, { maxBytes: 0, minFreeBytes: 0, nowS: () => NOW }).extendCoverage('crossref', {
      base: THROUGH,
      through: THROUGH
    })
  }
  await copy.close()
  return made
}

beforeEach(async () => {
  const works = Array.from({ length: 1200 }, (_, i) => crossrefWork(`10.5555/u${i}`, `https://example.org/u${i}`, iso(NOW - DAY)))
  works.push(crossrefWork('10.5555/evil', 'javascript:alert(1)', iso(NOW - DAY)))
  fake = await FakeAgencyFeeds.start({ works })
  dir = await makeCopy()
  said = []
})
afterEach(async () => {
  await fake.close()
})

function options(more: Partial<ImportUpdateOptions> = {}, env: Record<string, string> = {}): ImportUpdateOptions {
  const config = loadConfig({
    CROSSREF_API_URL: fake.url,
    DATACITE_API_URL: fake.url,
    CONTACT_EMAIL: 'ops@example.org',
    USER_AGENT: 'doi-proxy-test/1.0',
    REGISTRY_COPY_MIN_FREE_BYTES: '0',
    ...env
  })
  return { agency: 'crossref', dir, config, say: (line) => said.push(line), retries: 1, baseDelayMs: 20, minIntervalMs: 0, ...more }
}

describe('doi-proxy import --update', () => {
  it('writes what changed, says how much, and exits 0', async () => {
    const result = await importUpdate(options())
    expect(result).toMatchObject({ exitCode: 0, pages: 2, records: 1201 })
    expect(said[0]).toBe('updating crossref: page 1, 1,000 of 1,201 records')
    expect(said[1]).toMatch(
      /^crossref updated: the copy now covers it to .* · 2 pages · 1,201 records · written 1,200 · unchanged 0 · older than held 0 · malformed 1$/
    )
    expect(said[2]).toMatch(/^ {2}crossref update page 2 item 201: 10\.5555\/evil: /)
    const copy = openCopy({ dir, writable: false })
    try {
      expect(copy.head(copyKeyOf('10.5555/u1199'))).toMatchObject({ target: 'https://example.org/u1199' })
      expect(copy.coverage().crossref?.through).toBeGreaterThanOrEqual(NOW)
    } finally {
      await copy.close()
    }
  })

  it('says one page, not "1 pages"', async () => {
    fake.works.splice(1)
    await importUpdate(options())
    expect(said.find((line) => line.startsWith('crossref updated'))).toMatch(/ · 1 page · 1 record · written 1 · /)
  })

  it('warns before a Crossref update without CONTACT_EMAIL, and updates all the same', async () => {
    const result = await importUpdate(options({}, { CONTACT_EMAIL: '' }))
    expect(said[0]).toBe(NO_CONTACT)
    expect(result.exitCode).toBe(0)
    expect(fake.seen.every((r) => r.mailto === null)).toBe(true)
  })

  it('says nothing of CONTACT_EMAIL when it is set', async () => {
    await importUpdate(options())
    expect(said).not.toContain(NO_CONTACT)
  })

  it('asks with mailto from CONTACT_EMAIL and the User-Agent naming it, one request at a time', async () => {
    await importUpdate(options())
    expect(fake.seen.map((r) => r.mailto)).toEqual(Array(3).fill('ops@example.org'))
    expect(new Set(fake.seen.map((r) => r.userAgent))).toEqual(new Set(['doi-proxy-test/1.0 (mailto:ops@example.org)']))
    expect(fake.peak).toBe(1)
  })

  it('exits 69 when the agency gives no page, and the next run resumes after the last page written', async () => {
    fake.onRequest = () => {
      if (fake.seen.length === 2) fake.mode = { fail: Infinity }
    }
    const failed = await importUpdate(options())
    expect(failed).toMatchObject({ exitCode: 69, pages: 1, records: 1000 })
    expect(said.at(-1)).toMatch(
      /^crossref update stopped: .*gave no page after 2 tries: HTTP 500; the pages written are kept: run the same command to go on$/
    )
    fake.onRequest = undefined
    fake.mode = 'normal'
    said = []
    const resumed = await importUpdate(options())
    expect(resumed).toMatchObject({ exitCode: 0, pages: 2, records: 1201 })
    expect(said.find((line) => line.startsWith('crossref updated'))).toMatch(/^crossref updated \(resumed\): /)
  })

  it('exits 130 when interrupted, saying where it will go on', async () => {
    const controller = new AbortController()
    fake.onRequest = () => {
      if (fake.seen.length === 2) controller.abort()
    }
    const result = await importUpdate(options({ signal: controller.signal }))
    expect(result.exitCode).toBe(130)
    expect(said.at(-1)).toMatch(/^crossref update interrupted: run the same command to go on from page 2 /)
  })

  it('exits 2 on a copy with no coverage of the agency, asking nothing', async () => {
    const result = await importUpdate(options({ dir: await makeCopy(false) }))
    expect(result.exitCode).toBe(2)
    expect(said.at(-1)).toMatch(/holds no crossref coverage to update from: import Crossref's public data file into it first$/)
    expect(fake.seen).toHaveLength(0)
  })

  it("exits 75 while another process holds the copy's update lease", async () => {
    const copy = openCopy({ dir, writable: true })
    takeLease(copy, 'server-1:77', Date.now())
    await copy.close()
    const result = await importUpdate(options())
    expect(result.exitCode).toBe(75)
    expect(said.at(-1)).toMatch(
      /^cannot update: server-1:77 is updating the registry copy in .* \(its lease runs to .*\); run this again later$/
    )
    expect(fake.seen).toHaveLength(0)
    const again = openCopy({ dir, writable: true })
    releaseLease(again, 'server-1:77')
    await again.close()
  })

  // REGISTRY_COPY_MIN_FREE_BYTES at its most (1 TiB): more than the test machine's disk has free.
  it.skipIf(freeBytesOf(tmpdir()) >= TIB)('exits 75 when the disk is too full for the next page, the copy whole', async () => {
    const result = await importUpdate(options({}, { REGISTRY_COPY_MIN_FREE_BYTES: String(TIB) }))
    expect(result).toMatchObject({ exitCode: 75, pages: 0 })
    expect(said.at(-1)).toMatch(
      /^crossref update stopped: the disk of .* is full: .* bytes free, and REGISTRY_COPY_MIN_FREE_BYTES keeps 1099511627776; the pages written are kept/
    )
  })

  it('exits 73 when the directory holds no copy it can open', async () => {
    const notCopy = join(root, `not-a-copy-${++n}`)
    mkdirSync(notCopy)
    writeFileSync(join(notCopy, 'data.mdb'), 'this is not LMDB'.repeat(10))
    const result = await importUpdate(options({ dir: notCopy }))
    expect(result.exitCode).toBe(73)
    expect(said.at(-1)).toMatch(/^cannot update: .* is not an LMDB file/)
  })
})
