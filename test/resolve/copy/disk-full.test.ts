import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { copyKeyOf } from '../../../src/handle/copy/key.js'
import { openCopy } from '../../../src/resolve/copy/store.js'
import { crossrefAnnualTar, crossrefWorks, dataciteRecord, lines, write } from '../../support/copy-files.js'
import { findOnPath } from '../../support/test-tools.js'

// The disk fills during an import (plan-43 §1.13): the importer stops with exit 75 and says where the copy
// stands; the copy is whole (every batch before the last commit, nothing of the one that failed); with room
// again, the same command goes on. A 16 MiB tmpfs of its own, mounted in a user and mount namespace
// (`unshare -rm`: no root needed), so nothing else on the machine sees it fill.

const REPO = fileURLToPath(new URL('../../..', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'doi-proxy-disk-full-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const PARTS = 8
const PER_PART = 2500
let tar: string

beforeAll(async () => {
  tar = await crossrefAnnualTar(
    join(root, 'crossref.tar'),
    // An abstract of random text each: about 2 KB a record that deflate cannot shrink, so 16 MiB fills.
    Array.from({ length: PARTS }, (_, p) =>
      crossrefWorks(`10.${6000 + p}`, 0, PER_PART).map((w) => ({ ...w, abstract: randomBytes(1500).toString('base64') }))
    )
  )
})

const canUnshare = findOnPath(['unshare']) !== undefined

interface Ran {
  code: number
  stdout: string
  stderr: string
}

/** `script` run in a namespace of its own with DIR a fresh 16 MiB tmpfs; OUT is outside it. */
async function inSmallDisk(script: string, env: Record<string, string> = {}): Promise<Ran> {
  const dir = join(root, `disk-${Math.random().toString(36).slice(2)}`)
  mkdirSync(dir)
  const shell = `set -u; mount -t tmpfs -o size=16m tmpfs "$DIR" || exit 99; cd "$REPO"; ${script}`
  const p = spawn('unshare', ['-rm', 'sh', '-c', shell], {
    env: {
      ...process.env,
      DIR: dir,
      REPO,
      OUT: join(root, `out-${Math.random().toString(36).slice(2)}`),
      TAR: tar,
      NODE: process.execPath,
      ...env
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  p.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
  p.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  return await new Promise((resolve) => p.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr })))
}

const IMPORT = '"$NODE" --import tsx src/command/cli.ts import --to "$DIR/copy" --batch 500 --json "$TAR"'

describe.skipIf(!canUnshare)('the disk fills during an import', () => {
  it('LMDB failing to write stops the import (exit 75), the copy whole; with room again the same command ends it', async () => {
    const out = join(root, 'full-copy')
    const ran = await inSmallDisk(
      `REGISTRY_COPY_MIN_FREE_BYTES=0 ${IMPORT} > "$DIR/../first.json" 2>"$DIR/../first.err"; echo "first $?"; ` +
        `cat "$DIR/../first.err" >&2; cat "$DIR/../first.json"; ` +
        `cp -r "$DIR/copy" "${out}"; ` +
        `mount -o remount,size=256m "$DIR"; REGISTRY_COPY_MIN_FREE_BYTES=0 ${IMPORT} > "$DIR/../second.json"; echo "second $?"; cat "$DIR/../second.json"`
    )
    expect(ran.stdout).toMatch(/^first 75$/m)
    const [first, second] = ran.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { imported: number; records: number; stopped?: { reason: string; message: string } })
    expect(first?.stopped?.reason).toBe('disk_full')
    expect(first?.stopped?.message).toMatch(
      /^stopped: the disk of .* is full: writing failed \(.*\).*; the copy holds everything up to .*crossref\.tar › \d{4}\.json\.gz item \d+; free some space and run the same command again$/
    )
    expect(ran.stderr).toContain('doi-proxy import: stopped: the disk of')
    // The copy as it was left on the full disk: it opens, and holds exactly what its checkpoint says.
    const copy = openCopy({ dir: out, writable: false })
    try {
      const records = copy.stats().records
      expect(records).toBe(first?.records)
      expect(records).toBeGreaterThan(0)
      const state = [...copy.databases.meta.getRange({ start: 'file:', end: 'file;' })][0]?.value as {
        entriesInOrder: number
        partial: Record<string, number>
      }
      const items = state.entriesInOrder * PER_PART + Object.values(state.partial).reduce((a, b) => a + b, 0)
      expect(records).toBe(items)
      let found = 0
      for (const { key } of copy.databases.records.getRange()) if (copy.head(key as Buffer) !== undefined) found++
      expect(found).toBe(records)
      expect(copy.head(copyKeyOf('10.6000/w0'))).toMatchObject({ kind: 'work' })
    } finally {
      await copy.close()
    }
    expect(ran.stdout).toMatch(/^second 0$/m)
    expect(second).toMatchObject({ records: PARTS * PER_PART })
    expect(second?.imported).toBe(PARTS * PER_PART - (first?.records ?? 0))
  }, 180_000)

  it('below REGISTRY_COPY_MIN_FREE_BYTES the import stops before LMDB fails, saying how much is free', async () => {
    const ran = await inSmallDisk(`REGISTRY_COPY_MIN_FREE_BYTES=8388608 ${IMPORT}; echo "exit $?"`)
    expect(ran.stdout).toMatch(/^exit 75$/m)
    const summary = JSON.parse(ran.stdout.split('\n').find((l) => l.startsWith('{')) ?? '{}') as {
      records: number
      stopped?: { message: string }
    }
    expect(summary.stopped?.message).toMatch(
      /^stopped: the disk of .* is full: \d+ bytes free, and REGISTRY_COPY_MIN_FREE_BYTES keeps 8388608; the copy holds everything up to /
    )
    expect(summary.records).toBeGreaterThan(0)
  }, 120_000)

  it('the problems file filling the disk stops the import (exit 75) as LMDB does; with room again each problem is named whole', async () => {
    // 3,000 records refused (a javascript: URL), about 300 bytes of problems file each: the first batch's 1,000 lines
    // do not fit in the 100 KiB a filler leaves free, while the batch itself (no record, a checkpoint) would.
    const bad = write(
      join(root, 'refused.jsonl'),
      lines(
        Array.from({ length: 3000 }, (_, i) => dataciteRecord(`10.5281/refused.${i}`, { url: `javascript:alert(${i})//${'x'.repeat(60)}` }))
      )
    )
    const good = write(join(root, 'good.jsonl'), lines([dataciteRecord('10.5281/good')]))
    const problems = join(root, 'problems.ndjson')
    const run = (input: string) =>
      `REGISTRY_COPY_MIN_FREE_BYTES=0 "$NODE" --import tsx src/command/cli.ts import --to "$DIR/copy" --json "${input}"`
    const ran = await inSmallDisk(
      `${run(good)} > /dev/null; echo "good $?"; ` +
        `cat /dev/zero > "$DIR/filler" 2>/dev/null; truncate -s -100K "$DIR/filler"; ` +
        `${run(bad)} > "$DIR/../p-first.json" 2>"$DIR/../p-first.err"; echo "first $?"; cat "$DIR/../p-first.json"; cat "$DIR/../p-first.err" >&2; ` +
        `rm "$DIR/filler"; ${run(bad)} > "$DIR/../p-second.json"; echo "second $?"; cat "$DIR/../p-second.json"; ` +
        `cp "$DIR/copy/import-problems.ndjson" "${problems}"`
    )
    expect(ran.stdout).toMatch(/^good 0$/m)
    expect(ran.stdout).toMatch(/^first 75$/m)
    const [first, second] = ran.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { malformed: number; stopped?: { reason: string; message: string } })
    expect(first?.stopped?.reason).toBe('disk_full')
    expect(first?.stopped?.message).toMatch(
      /^stopped: the disk of .*\/copy is full: writing failed \(ENOSPC: no space left on device, write\), \d+ bytes free; the copy holds everything up to .*; free some space and run the same command again$/
    )
    expect(ran.stderr).toContain('doi-proxy import: stopped: the disk of')
    expect(ran.stdout).toMatch(/^second 0$/m)
    expect(second).toMatchObject({ malformed: 3000 })
    // Every problem named once the room is back, each line whole: the failed write was cut back, not left half done.
    const named = readFileSync(problems, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { item: number })
    expect(new Set(named.map((p) => p.item)).size).toBe(3000)
    expect(named.length).toBe(3000)
  }, 180_000)
})
