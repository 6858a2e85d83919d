import { describe, expect, it } from 'vitest'
import { createUnitReaders, ReaderFailed } from '../../src/command/import/readers.js'
import type { UnitBatch, UnitOptions } from '../../src/command/import/worker.js'
import { crossrefPage, crossrefWork, crossrefWorks } from '../support/copy-files.js'

// The reading threads of `doi-proxy import --jobs N` (plan-43 §1.11), real threads on real bytes: what they
// send back, how far ahead of them the main thread may read, and how a failure stops them all.

const OPTIONS: UnitOptions = {
  name: 'part.jsonl',
  maxRecordBytes: 4 * 1024 * 1024,
  map: { abstracts: true },
  skipItems: 0,
  importedAt: 1_700_000_000,
  inWhole: false,
  batchSize: 1000
}

async function* once(bytes: Buffer): AsyncGenerator<Buffer> {
  yield bytes
}

describe('reading threads', () => {
  it("a unit's batches come back in order with their records, and `done` says the format", async () => {
    const readers = createUnitReaders({ jobs: 2 })
    const batches: UnitBatch[] = []
    const page = Buffer.from(crossrefPage(crossrefWorks('10.5555', 0, 25)))
    async function* pieces(): AsyncGenerator<Buffer> {
      for (let at = 0; at < page.length; at += 500) yield page.subarray(at, at + 500)
    }
    const { done } = await readers.read({
      chunks: pieces(),
      opts: { ...OPTIONS, batchSize: 10 },
      onBatch: (b) => batches.push(b),
      where: 'page.json'
    })
    expect(await done).toEqual({ format: 'crossref-page', damaged: false })
    await readers.close()
    // A batch is handed on once it holds batchSize records, at the end of a chunk.
    expect(batches.length).toBeGreaterThanOrEqual(3)
    expect(batches.map((b) => b.final)).toEqual([...batches.slice(1).map(() => false), true])
    expect(batches.flatMap((b) => b.entries.map((e) => e.key.toString('utf8')))).toEqual(
      Array.from({ length: 25 }, (_, i) => `10.5555/W${i}`) // the copy's key: ASCII letters folded (handle/copy/key.ts)
    )
    expect(batches.at(-1)!.itemsDone).toBe(25)
  }, 30_000)

  it('a commit that fails stops the reading: its unit and every later one are refused with its error', async () => {
    const readers = createUnitReaders({ jobs: 2 })
    const full = new Error('the disk is full')
    const job = {
      chunks: once(Buffer.from(crossrefPage(crossrefWorks('10.5555', 0, 5)))),
      opts: OPTIONS,
      onBatch: () => {
        throw full
      },
      where: 'page.json'
    }
    const { done } = await readers.read(job)
    await expect(done).rejects.toBe(full)
    await expect(readers.read({ ...job, chunks: once(Buffer.from('{}')) })).rejects.toBe(full)
    await readers.close(full)
  }, 30_000)

  it('a thread that fails names the unit it was reading, and the import stops', async () => {
    const readers = createUnitReaders({ jobs: 1 })
    const { done } = await readers.read({
      chunks: once(Buffer.from(crossrefPage(crossrefWorks('10.5555', 0, 1)))),
      // No options: readUnit throws outside what it names as the input's problems.
      opts: null as unknown as UnitOptions,
      onBatch: () => {},
      where: 'crossref.tar › 0042.json.gz'
    })
    await expect(done).rejects.toThrow(ReaderFailed)
    await expect(done).rejects.toThrow(/^reading crossref\.tar › 0042\.json\.gz failed: TypeError/)
    await readers.close()
  }, 30_000)

  it('a slow commit holds the reading back to the file: at most 16 MiB sent ahead of what the thread took', async () => {
    const readers = createUnitReaders({ jobs: 1 })
    // 1 MiB chunks of ten 100 kB works, one a line: a batch a chunk, each committed in 100 ms.
    const line = (i: number): string => JSON.stringify(crossrefWork(`10.5555/big${i}`, { title: 'x'.repeat(100_000) })) + '\n'
    const chunk = (c: number): Buffer => {
      const text = Array.from({ length: 10 }, (_, i) => line(c * 10 + i)).join('')
      return Buffer.concat([Buffer.from(text), Buffer.alloc(1024 * 1024 - text.length, 0x0a)])
    }
    let pulled = 0
    async function* many(): AsyncGenerator<Buffer> {
      for (let c = 0; c < 64; c++) {
        pulled++
        yield chunk(c)
      }
    }
    let committed = 0
    let ahead = 0
    const enough = new Error('enough: twelve batches committed')
    const handed = readers.read({
      chunks: many(),
      opts: { ...OPTIONS, batchSize: 1 },
      onBatch: () => {
        const until = Date.now() + 30
        while (Date.now() < until);
        committed++
        ahead = Math.max(ahead, pulled - committed)
        if (committed === 12) throw enough
      },
      where: 'big.jsonl'
    })
    await expect(handed).rejects.toBe(enough)
    // Unbounded, all 64 would be read at once. Bounded: beyond those committed, two the thread holds (one read,
    // one sent and not yet committed), 16 sent ahead (the credit) and the one waiting to be sent.
    expect(committed).toBe(12)
    expect(ahead).toBeGreaterThanOrEqual(16)
    expect(ahead).toBeLessThanOrEqual(2 + 16 + 1)
    expect(pulled).toBeLessThan(64)
    await readers.close(enough)
  }, 30_000)
})
