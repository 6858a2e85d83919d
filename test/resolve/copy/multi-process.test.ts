import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openCopy } from '../../../src/resolve/copy/store.js'
import { untilSays, writerChild } from '../../support/copy-files.js'

// One writer and many readers in other processes (plan-43 §1.1, §1.4: LMDB serialises writers across
// processes; readers see each commit whole): two reader children, opened read-only while a writer child
// commits batches with their checkpoint, each see the checkpoint move and, in every read, exactly the
// records it vouches for.

const root = mkdtempSync(join(tmpdir(), 'doi-proxy-copy-processes-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const SRC = new URL('../../../src/', import.meta.url).pathname

function readerChild(dir: string) {
  const program = `
    import { openCopy } from '${SRC}resolve/copy/store.ts'
    const copy = openCopy({ dir: ${JSON.stringify(dir)}, writable: false })
    for (let i = 0; i < 20; i++) {
      console.log(copy.meta('run'), copy.stats().records)
      copy.databases.root.resetReadTxn()
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    await copy.close()`
  const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  p.stdout.on('data', (c: Buffer) => (out += c.toString()))
  return new Promise<{ code: number | null; out: string }>((resolve) => p.on('close', (code) => resolve({ code, out })))
}

describe('a writer and readers in other processes', () => {
  it('two readers see the writer’s commits as they come, each whole', async () => {
    const dir = join(root, 'copy')
    await openCopy({ dir, writable: true }).close()
    const writer = writerChild(dir, 150)
    await untilSays(writer, /batch 0\n/)
    const [a, b] = await Promise.all([readerChild(dir), readerChild(dir)])
    writer.kill('SIGKILL')
    for (const r of [a, b]) {
      expect(r.code).toBe(0)
      const reads = r.out
        .trim()
        .split('\n')
        .map((l) => l.split(' ').map(Number) as [number, number])
      expect(reads).toHaveLength(20)
      // Each read as one commit left it: the checkpoint and exactly the records it vouches for.
      for (const [run, records] of reads) expect(records).toBe((run + 1) * 200)
      // And the commits came in as the reader read.
      expect(new Set(reads.map(([run]) => run)).size).toBeGreaterThan(2)
    }
  }, 90_000)
})
