import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runImportCommand } from '../../src/command/import/command.js'
import { importUpdate, NO_CONTACT } from '../../src/command/import/update.js'
import type { ImportUpdateOptions } from '../../src/command/import/update.js'
import { loadConfig } from '../../src/config/load.js'
import { copyKeyOf } from '../../src/handle/copy/key.js'
import { openCopy } from '../../src/resolve/copy/store.js'
import { copyScopeOf, noteScope, releaseLease, takeLease } from '../../src/resolve/copy/updater.js'
import { createCopyWriter, freeBytesOf } from '../../src/resolve/copy/writer.js'
import { crossrefInner, crossrefWorks, gz, write } from '../support/copy-files.js'
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

  it('applies ALLOWED_SCHEMES to what it writes, as the import does', async () => {
    fake.works.push(crossrefWork('10.5555/gopher', 'gopher://example.org/1', iso(NOW - DAY)))
    const refused = await importUpdate(options())
    expect(refused.outcome?.malformed).toBe(2) // javascript: and gopher:
    said = []
    dir = await makeCopy()
    const allowed = await importUpdate(options({}, { ALLOWED_SCHEMES: 'http,https,ftp,gopher' }))
    expect(allowed.outcome?.malformed).toBe(1) // javascript: is never a redirect
    const copy = openCopy({ dir, writable: false })
    try {
      expect(copy.head(copyKeyOf('10.5555/gopher'))).toMatchObject({ target: 'gopher://example.org/1' })
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

  it('exits 2 on a copy with no coverage of the agency, asking nothing, and says the two ways to go on', async () => {
    const result = await importUpdate(options({ dir: await makeCopy(false) }))
    expect(result.exitCode).toBe(2)
    expect(said.at(-1)).toMatch(
      /holds no crossref coverage to update from: import Crossref's public data file into it first, or give --since DATE \(the date the data it holds is as of\) to ask for what changed since then$/
    )
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

/** `doi-proxy import ARGS`, in this process, with the fake feeds as the agencies' APIs. */
async function command(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const code = await runImportCommand(args, {
    cwd: root,
    env: { CROSSREF_API_URL: fake.url, DATACITE_API_URL: fake.url, CONTACT_EMAIL: 'ops@example.org', REGISTRY_COPY_MIN_FREE_BYTES: '0' },
    stdout: { write: (t: string) => Boolean((stdout += t)) } as unknown as NodeJS.WritableStream,
    stderr: { write: (t: string) => Boolean((stderr += t)) } as unknown as NodeJS.WritableStream
  })
  return { code, stdout, stderr }
}

describe('doi-proxy import --update --since', () => {
  it('updates a copy with no coverage of the agency from the date given, and then covers it', async () => {
    const bare = await makeCopy(false)
    const ran = await command(['--update', 'crossref', '--to', bare, '--since', iso(NOW - 2 * DAY).slice(0, 10)])
    expect(ran.code, ran.stderr).toBe(0)
    // A day before the date: Crossref's filter takes days, and a change is indexed a while after it is made.
    expect(fake.requestsTo('/works')[0]!.query.get('filter')).toBe(`from-update-date:${iso(NOW - 3 * DAY).slice(0, 10)}`)
    expect(ran.stderr).toMatch(/crossref updated: the copy now covers it to .* · 1,201 records · written 1,200 /)
  })

  it('refuses a date after the coverage (exit 2), asking nothing', async () => {
    const ran = await command(['--update', 'crossref', '--to', dir, '--since', iso(NOW).slice(0, 10)])
    expect(ran.code).toBe(2)
    expect(ran.stderr).toMatch(
      /^crossref update stopped: --since .* is after the copy's crossref coverage .*: the changes between would be missed/m
    )
    expect(fake.seen).toHaveLength(0)
  })

  it('refuses a date it cannot read, as the file import does', async () => {
    const ran = await command(['--update', 'crossref', '--to', dir, '--since', 'last week'])
    expect(ran.code).toBe(2)
    expect(ran.stderr).toContain('--since takes a date such as 2025-01-31')
  })
})

describe('doi-proxy import --update --prefix', () => {
  beforeEach(() => {
    fake.works.push(
      crossrefWork('10.1103/a', 'https://example.org/a', iso(NOW - DAY)),
      crossrefWork('10.1088/b', 'https://example.org/b', iso(NOW - DAY))
    )
  })

  /** A copy of any prefix, as an import without --prefix leaves it (one record held). */
  async function wholeCopy(): Promise<string> {
    const made = await makeCopy()
    const copy = openCopy({ dir: made, writable: true })
    noteScope(copy, undefined)
    await copy.close()
    return made
  }

  it('asks for those prefixes only, counts the rest filtered, and leaves the coverage of a copy holding more', async () => {
    const whole = await wholeCopy()
    const ran = await command(['--update', 'crossref', '--to', whole, '--prefix', '10.1103,10.1088'])
    expect(ran.code, ran.stderr).toBe(0)
    expect(fake.requestsTo('/works')[0]!.query.get('filter')).toMatch(/^from-update-date:\S+,prefix:10\.1088,prefix:10\.1103$/)
    expect(ran.stderr).toMatch(
      /^crossref \(10\.1088, 10\.1103\) updated: its records written; the copy's crossref coverage stays at .*, as the copy holds other prefixes too .* · 2 records · written 2 · unchanged 0 · older than held 0 · filtered 0 · malformed 0$/m
    )
    const copy = openCopy({ dir: whole, writable: false })
    try {
      expect(copy.head(copyKeyOf('10.1103/a'))).toBeDefined()
      expect(copy.head(copyKeyOf('10.5555/u0'))).toBeUndefined()
      expect(copy.coverage().crossref?.through).toBe(THROUGH)
    } finally {
      await copy.close()
    }
  })

  it('writes nothing outside them, even when the agency sends it', async () => {
    fake.ignorePrefixes = true
    const ran = await command(['--update', 'crossref', '--to', await wholeCopy(), '--prefix', '10.1103'])
    expect(ran.code, ran.stderr).toBe(0)
    expect(ran.stderr).toMatch(/ · 1,203 records · written 1 · unchanged 0 · older than held 0 · filtered 1,201 · malformed 1$/m)
  })

  it('takes at most 100 prefixes (exit 2)', async () => {
    const many = Array.from({ length: 101 }, (_, i) => `10.${1000 + i}`).join(',')
    const ran = await command(['--update', 'crossref', '--to', dir, '--prefix', many])
    expect(ran.code).toBe(2)
    expect(ran.stderr).toContain('--prefix with --update takes at most 100 prefixes, got 101')
  })

  it('asks DataCite with its prefix filter', async () => {
    fake.dois.push(
      { doi: '10.5281/zenodo.9', url: 'https://zenodo.example/9', updated: iso(NOW - DAY) },
      { doi: '10.7777/x', url: 'https://data.example.org/x', updated: iso(NOW - DAY) }
    )
    const ran = await command(['--update', 'datacite', '--to', await makeCopy(false), '--since', iso(NOW - 2 * DAY), '--prefix', '10.5281'])
    expect(ran.code, ran.stderr).toBe(0)
    expect(fake.requestsTo('/dois')[0]!.query.get('prefix')).toBe('10.5281')
    expect(ran.stderr).toMatch(/^datacite \(10\.5281\) updated: the copy now covers it to .* · 1 record · written 1 /m)
  })
})

describe('a copy imported with --prefix (its scope)', () => {
  it('is updated for its prefixes only by default, saying so, and its coverage moves', async () => {
    // As docs/registry-copy.md's copy-physics: Crossref's file, two prefixes, changed since a date.
    const files = join(root, `crossref-${++n}`)
    write(join(files, '0.json.gz'), gz(crossrefInner([...crossrefWorks('10.1103', 0, 2), ...crossrefWorks('10.5555', 0, 2)])))
    const physics = join(root, `copy-physics-${n}`)
    const imported = await command(['--to', physics, '--prefix', '10.1103,10.1088', '--since', '2020-01-01', files])
    expect(imported.code, imported.stderr).toBe(0)
    fake.works.push(crossrefWork('10.1103/new', 'https://example.org/new', iso(NOW - DAY)))
    const ran = await command(['--update', 'crossref', '--to', physics, '--since', iso(NOW - 2 * DAY).slice(0, 10)])
    expect(ran.code, ran.stderr).toBe(0)
    expect(ran.stderr).toMatch(/^asking crossref only for 10\.1088, 10\.1103: the prefixes the copy was imported with \(--prefix\)$/m)
    expect(fake.requestsTo('/works').every((r) => /,prefix:10\.1088,prefix:10\.1103$/.test(r.query.get('filter') ?? ''))).toBe(true)
    expect(ran.stderr).toMatch(/^crossref \(10\.1088, 10\.1103\) updated: the copy now covers it to .* · written 1 /m)
    const copy = openCopy({ dir: physics, writable: false })
    try {
      expect(copyScopeOf(copy)).toEqual(['10.1088', '10.1103'])
      expect(copy.head(copyKeyOf('10.1103/new'))).toBeDefined()
      expect(copy.head(copyKeyOf('10.5555/u0'))).toBeUndefined()
      expect(copy.coverage().crossref?.through).toBeGreaterThanOrEqual(NOW)
    } finally {
      await copy.close()
    }
  })
})
