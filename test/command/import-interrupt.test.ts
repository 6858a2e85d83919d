import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { decodeCsl } from '../../src/handle/copy/record-codec.js'
import { openCopy } from '../../src/resolve/copy/store.js'
import type { CopyStore } from '../../src/resolve/copy/store.js'
import { crossrefAnnualTar, crossrefWorks } from '../support/copy-files.js'

// Ctrl-C during `doi-proxy import` of files (issue 43 §3): the real command as a child (src/command/cli.ts,
// whose SIGINT handler is command/interrupt.ts onInterrupt), sent SIGINT as a terminal's Ctrl-C sends it,
// mid-import. It commits the batch being read and exits 130 saying how to go on; the same command then
// ends with the same copy as one uninterrupted run.

const REPO = fileURLToPath(new URL('../..', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'doi-proxy-import-interrupt-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0
const fresh = (name: string): string => join(root, `${name}-${++n}`)
const ENV = { REGISTRY_COPY_MIN_FREE_BYTES: '0' }

interface Ran {
  code: number | null
  signal: string | null
  stdout: string
  stderr: string
}

function child(args: string[]): { done: Promise<Ran>; interrupt: () => void } {
  const p = spawn(process.execPath, ['--import', 'tsx', 'src/command/cli.ts', 'import', ...args], {
    cwd: REPO,
    env: { ...process.env, ...ENV },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  p.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
  p.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  const done = new Promise<Ran>((resolve) => p.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })))
  return { done, interrupt: () => p.kill('SIGINT') }
}

async function withCopy<T>(dir: string, read: (copy: CopyStore) => T): Promise<T> {
  const copy = openCopy({ dir, writable: false })
  try {
    return read(copy)
  } finally {
    await copy.close()
  }
}

/** Every record of a copy (without when it was written), its prefix marks and its coverage. */
async function everything(dir: string): Promise<unknown> {
  return await withCopy(dir, (copy) => ({
    records: [...copy.databases.records.getRange()].map(({ key, value }) => [
      Buffer.from(key as Buffer).toString('utf8'),
      { ...(copy.head(key as Buffer) as object), importedAt: 0, csl: decodeCsl(value) }
    ]),
    prefixes: [...copy.databases.prefixes.getRange()].map(({ key, value }) => [Buffer.from(key as Buffer).toString('utf8'), value]),
    coverage: copy.coverage()
  }))
}

describe('doi-proxy import stopped by Ctrl-C', () => {
  it.each([['1'], ['2']])(
    '(--jobs %s) exits 130 saying where the copy stands, and the same command then ends with the copy one run makes',
    async (jobs) => {
      const sizes = [1500, 1500, 1500, 1500, 1500, 1500]
      const total = sizes.reduce((a, b) => a + b, 0)
      const tar = await crossrefAnnualTar(
        fresh('crossref.tar'),
        sizes.map((count, p) => crossrefWorks(`10.${5000 + p}`, 0, count))
      )
      const once = fresh('once')
      const stopped = fresh('stopped')
      const args = (to: string): string[] => ['--to', to, '--jobs', jobs, '--batch', '50', tar]
      expect((await child(args(once)).done).code).toBe(0)

      const run = child(args(stopped))
      // Ctrl-C once the copy holds some batches (the import under way, its SIGINT handler in place).
      let partway = false
      for (let i = 0; i < 1500 && !partway; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20))
        try {
          partway = await withCopy(stopped, (copy) => copy.stats().records >= 500)
        } catch {
          partway = false // not made yet
        }
      }
      expect(partway).toBe(true)
      run.interrupt()
      const ran = await run.done
      expect(ran.code, ran.stderr).toBe(130)
      expect(ran.stderr).toContain('stopping: committing the batch being read (Ctrl-C again to quit now)')
      expect(ran.stdout).toMatch(
        /^interrupted: the copy holds everything up to \S+ › \d+\.json\.gz item [\d,]+; run the same command again to go on from there$/m
      )
      const partial = await withCopy(stopped, (copy) => copy.stats().records)
      expect(partial).toBeGreaterThan(0)
      expect(partial).toBeLessThan(total)

      const again = await child(args(stopped)).done
      expect(again.code, again.stderr).toBe(0)
      expect(await everything(stopped)).toEqual(await everything(once))
    },
    180_000
  )
})
