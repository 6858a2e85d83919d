import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { copyKeyOf } from '../../../src/handle/copy/key.js'
import { decodeCsl, encodeEntry } from '../../../src/handle/copy/record-codec.js'
import type { CopyRecord } from '../../../src/handle/copy/types.js'
import { CopyError, openCopy } from '../../../src/resolve/copy/store.js'
import type { CopyStore } from '../../../src/resolve/copy/store.js'
import { createCopyWriter, DiskFull } from '../../../src/resolve/copy/writer.js'
import type { CopyWriterOptions } from '../../../src/resolve/copy/writer.js'
import { untilSays, writerChild } from '../../support/copy-files.js'

// A real LMDB store in a temporary directory (plan-43 §1.2, §1.11, §1.13): what the importer and the
// resolver's tier rely on; below, a writer child killed with SIGKILL mid-batch. The full file system is
// test/resolve/copy/disk-full.test.ts's (a tmpfs of its own).

const root = mkdtempSync(join(tmpdir(), 'doi-proxy-copy-store-'))
afterAll(() => {
  rmSync(root, { recursive: true, force: true })
})
const opened: CopyStore[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map(async (copy) => await copy.close()))
})

let n = 0
function freshDir(name = 'copy'): string {
  return join(root, `${name}-${++n}`)
}
function open(dir: string, writable: boolean): CopyStore {
  const copy = openCopy({ dir, writable })
  opened.push(copy)
  return copy
}
const ROOMY: CopyWriterOptions = { maxBytes: 0, minFreeBytes: 0, nowS: () => 1_800_000_000, freeBytes: () => 1e12 }

function work(doi: string, stamp: number, url = `https://example.org/${doi}`): CopyRecord {
  return { doi, kind: 'work', agency: 'crossref', url, stamp, csl: { type: 'article-journal', DOI: doi, title: `Title of ${doi}` } }
}
const entry = (record: CopyRecord, covered = true) => encodeEntry(record, { importedAt: 1_800_000_000, covered })

describe('opening a registry copy', () => {
  it('a new copy is made for writing, and then opens read-only with its format', () => {
    const dir = freshDir('copy.v1') // a dot in its name: still a directory, not a file
    const writing = open(dir, true)
    expect(writing.meta('format')).toEqual({ version: 1, dictionaries: [1] })
    expect(writing.stats()).toMatchObject({ records: 0, bytes: 0 })
    const reading = open(dir, false)
    expect(reading.writable).toBe(false)
    expect(reading.meta('format')).toEqual({ version: 1, dictionaries: [1] })
    expect(reading.stats().fileBytes).toBeGreaterThan(0)
  })

  it('a directory without a copy is refused read-only, naming it and how to make one', () => {
    const dir = freshDir()
    mkdirSync(dir)
    expect(() => open(dir, false)).toThrow(CopyError)
    expect(() => open(dir, false)).toThrow(`holds no registry copy (no data.mdb): make one with doi-proxy import --to ${dir}`)
  })

  it('a data.mdb that is not LMDB is refused, not crashed on', () => {
    const dir = freshDir()
    mkdirSync(dir)
    writeFileSync(join(dir, 'data.mdb'), 'not an LMDB file at all, just text '.repeat(200))
    // LMDB itself would crash the process on it (a native abort): the magic is checked first.
    expect(() => open(dir, false)).toThrow(/has a data.mdb that is not an LMDB file/)
    expect(() => open(dir, true)).toThrow(/has a data.mdb that is not an LMDB file/)
    writeFileSync(join(dir, 'data.mdb'), '')
    expect(() => open(dir, false)).toThrow(/has a data.mdb that is not an LMDB file/)
  })

  it('a copy of a newer format is refused, saying what this version reads', async () => {
    const dir = freshDir()
    const writing = open(dir, true)
    await writing.databases.meta.put('format', { version: 2, dictionaries: [1, 2] })
    expect(() => open(dir, false)).toThrow(
      /has format \{"version":2,"dictionaries":\[1,2\]\}; this version reads layout 1 with dictionaries 1/
    )
  })

  it('an LMDB store that is not ours is refused read-only', async () => {
    const dir = freshDir()
    const writing = open(dir, true)
    await writing.databases.meta.remove('format')
    expect(() => open(dir, false)).toThrow(/is not a registry copy/)
  })
})

describe('writing batches', () => {
  it('a batch is read back by key, any spelling of the DOI, by a reader opened read-only', () => {
    const dir = freshDir()
    const writer = createCopyWriter(open(dir, true), ROOMY)
    expect(writer.putBatch([entry(work('10.1000/abc', 100)), entry(work('10.1000/def', 100))])).toEqual({
      written: 2,
      unchanged: 0,
      older: 0,
      unreadable: 0
    })
    const reader = open(dir, false)
    expect(reader.head(copyKeyOf('10.1000/ABC'))).toMatchObject({ doi: '10.1000/abc', kind: 'work', stamp: 100, covered: true })
    const bytes = reader.get(copyKeyOf('10.1000/def'))
    expect(bytes === undefined ? undefined : decodeCsl(bytes)).toEqual({
      type: 'article-journal',
      DOI: '10.1000/def',
      title: 'Title of 10.1000/def'
    })
    expect(reader.head(copyKeyOf('10.1000/none'))).toBeUndefined()
  })

  it('newer wins, an equal stamp changes nothing, an older one is kept out', () => {
    const copy = open(freshDir(), true)
    const writer = createCopyWriter(copy, ROOMY)
    writer.putBatch([entry(work('10.1/a', 100, 'https://old.example/'))])
    expect(writer.putBatch([entry(work('10.1/a', 200, 'https://new.example/'))])).toMatchObject({ written: 1 })
    expect(writer.putBatch([entry(work('10.1/A', 200, 'https://same-stamp.example/'))])).toMatchObject({ written: 0, unchanged: 1 })
    expect(writer.putBatch([entry(work('10.1/a', 150, 'https://older.example/'))])).toMatchObject({ written: 0, older: 1 })
    expect(copy.head(copyKeyOf('10.1/a'))).toMatchObject({ target: 'https://new.example/', stamp: 200 })
    expect(copy.stats()).toMatchObject({ records: 1, byAgency: { crossref: 1 } })
  })

  it('importing the same batch twice changes nothing', () => {
    const copy = open(freshDir(), true)
    const writer = createCopyWriter(copy, ROOMY)
    const batch = [entry(work('10.1/a', 1)), entry(work('10.1/b', 2)), entry(work('10.2/c', 3))]
    writer.putBatch(batch)
    const before = copy.stats()
    expect(writer.putBatch(batch)).toEqual({ written: 0, unchanged: 3, older: 0, unreadable: 0 })
    expect(copy.stats()).toEqual(before)
  })

  it('the checkpoint is written with its batch, and the figures and prefixes follow the records', () => {
    const copy = open(freshDir(), true)
    const writer = createCopyWriter(copy, ROOMY)
    const datacite: CopyRecord = { doi: '10.5281/zenodo.1', kind: 'work', agency: 'datacite', url: 'https://zenodo.org/record/1', stamp: 5 }
    writer.putBatch([entry(work('10.1/a', 1)), entry(work('10.1/b', 1)), entry(datacite)], { name: 'file:x', value: { itemsDone: 3 } })
    expect(copy.meta('file:x')).toEqual({ itemsDone: 3 })
    expect(copy.stats()).toMatchObject({ records: 3, byAgency: { crossref: 2, datacite: 1 }, updatedAt: 1_800_000_000 })
    expect(copy.prefix('10.1')).toEqual({ agency: 'crossref', records: 2, whole: false, asOf: 0 })
    expect(copy.prefix('10.5281')).toEqual({ agency: 'datacite', records: 1, whole: false, asOf: 0 })
    expect(copy.prefix('10.9')).toBeUndefined()
  })

  it('a whole prefix and the coverage are marked, coverage never moving back', () => {
    const copy = open(freshDir(), true)
    const writer = createCopyWriter(copy, ROOMY)
    writer.putBatch([entry(work('10.1/a', 1))])
    writer.markWhole('10.1', 'crossref', 1_700_000_000)
    expect(copy.prefix('10.1')).toEqual({ agency: 'crossref', records: 1, whole: true, asOf: 1_700_000_000 })
    writer.extendCoverage('crossref', { base: 1_700_000_000, through: 1_750_000_000 })
    writer.extendCoverage('crossref', { base: 1_600_000_000, through: 1_650_000_000 })
    expect(copy.coverage()).toEqual({ crossref: { base: 1_700_000_000, through: 1_750_000_000 } })
  })

  it('a reader already open sees later commits within a tenth of a second (its redirect reads share a snapshot that long)', async () => {
    const dir = freshDir()
    const writer = createCopyWriter(open(dir, true), ROOMY)
    writer.putBatch([entry(work('10.1/a', 1))])
    const reader = open(dir, false)
    expect(reader.head(copyKeyOf('10.1/b'))).toBeUndefined()
    writer.putBatch([entry(work('10.1/b', 1))])
    await new Promise((resolve) => setTimeout(resolve, 110))
    expect(reader.head(copyKeyOf('10.1/b'))).toMatchObject({ doi: '10.1/b' })
  })

  it('a read-only copy cannot be given a writer', () => {
    const dir = freshDir()
    open(dir, true)
    expect(() => createCopyWriter(open(dir, false), ROOMY)).toThrow('was opened read-only')
  })
})

describe('stopping cleanly before the disk is full', () => {
  it('below REGISTRY_COPY_MIN_FREE_BYTES the batch is refused and nothing of it is written', () => {
    const copy = open(freshDir(), true)
    let free = 1e12
    const writer = createCopyWriter(copy, { ...ROOMY, minFreeBytes: 1_000_000, freeBytes: () => free })
    writer.putBatch([entry(work('10.1/a', 1))], { name: 'run', value: 1 })
    free = 1_000_100
    const refused = (() => {
      try {
        writer.putBatch([entry(work('10.1/b', 1))], { name: 'run', value: 2 })
      } catch (err) {
        return err
      }
      return undefined
    })()
    expect(refused).toBeInstanceOf(DiskFull)
    expect(refused).toMatchObject({ reason: 'min_free', freeBytes: 1_000_100 })
    expect((refused as Error).message).toMatch(/is full: 1000100 bytes free, and REGISTRY_COPY_MIN_FREE_BYTES keeps 1000000/)
    expect(copy.head(copyKeyOf('10.1/b'))).toBeUndefined()
    expect(copy.meta('run')).toBe(1)
  })

  it('past REGISTRY_COPY_MAX_BYTES the batch is refused, the copy holding every batch before it', () => {
    const copy = open(freshDir(), true)
    const cap = copy.stats().fileBytes + 256 * 1024
    const writer = createCopyWriter(copy, { ...ROOMY, maxBytes: cap })
    let written = 0
    const big = (i: number) => entry(work(`10.1/${i}`, 1, `https://example.org/${'x'.repeat(1000)}/${i}`))
    expect(() => {
      for (let batch = 0; batch < 1000; batch++) {
        writer.putBatch(
          Array.from({ length: 10 }, (_, i) => big(batch * 10 + i)),
          { name: 'run', value: batch }
        )
        written = batch + 1
      }
    }).toThrow(DiskFull)
    expect(written).toBeGreaterThan(0)
    expect(copy.stats().fileBytes).toBeLessThanOrEqual(cap)
    expect(copy.meta('run')).toBe(written - 1)
    expect(copy.stats().records).toBe(written * 10)
  })
})

// ---- other processes: a writer killed mid-batch ---------------------------------------------------

describe('a writer killed with SIGKILL mid-batch', () => {
  it('the copy reopens holding exactly the batches up to its last checkpoint', async () => {
    const dir = freshDir()
    open(dir, true)
    const child = writerChild(dir)
    await untilSays(child, /batch 20\n/)
    child.kill('SIGKILL')
    await new Promise((resolve) => child.on('close', resolve))
    const copy = open(dir, false)
    const last = copy.meta('run') as number
    expect(last).toBeGreaterThanOrEqual(20)
    expect(copy.stats().records).toBe((last + 1) * 200)
    const held = copy.databases.records.getKeysCount()
    expect(held).toBe((last + 1) * 200)
    expect(copy.head(copyKeyOf(`10.1/b${last}-199`))).toMatchObject({ kind: 'work' })
    expect(copy.head(copyKeyOf(`10.1/b${last + 1}-0`))).toBeUndefined()
    // And a writer takes up where it stopped.
    expect(createCopyWriter(open(dir, true), ROOMY).putBatch([entry(work('10.1/after', 1))])).toMatchObject({ written: 1 })
  }, 60_000)
})
