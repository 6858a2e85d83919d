import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { duration, progressLine } from '../../src/command/import/progress.js'
import { crossrefAnnualTar, crossrefWorks } from '../support/copy-files.js'
import { findOnPath } from '../support/test-tools.js'

// The import's progress (plan-43 §4): on a terminal (util-linux's `script` gives it one) a bar redrawn in
// place with records/s and the ETA; piped, no bar and no escape codes, a line every --progress-seconds.

const REPO = fileURLToPath(new URL('../..', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'doi-proxy-import-terminal-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let tar: string
beforeAll(async () => {
  tar = await crossrefAnnualTar(
    join(root, 'crossref-2025.tar'),
    Array.from({ length: 6 }, (_, p) => crossrefWorks(`10.${7000 + p}`, 0, 2000))
  )
})

const ESC = String.fromCharCode(27)

async function run(command: string, args: string[]): Promise<{ code: number; output: string; stderr: string }> {
  const p = spawn(command, args, {
    cwd: REPO,
    env: { ...process.env, REGISTRY_COPY_MIN_FREE_BYTES: '0', COLUMNS: '150' },
    stdio: ['pipe', 'pipe', 'pipe']
  })
  let output = ''
  let stderr = ''
  p.stdout.on('data', (c: Buffer) => (output += c.toString()))
  p.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  return await new Promise((resolve) => p.on('close', (code) => resolve({ code: code ?? -1, output, stderr })))
}

describe('the progress line', () => {
  it.each([
    [
      {
        bytesDone: 41,
        bytesTotal: 100,
        records: 2_345_678,
        recordsPerS: 9812,
        bytesPerS: 63e6,
        current: 'crossref-2025.tar › 0042.json.gz'
      },
      150,
      'importing  41%  2,345,678 records  9,812/s  63 MB/s  ETA 0:00  crossref-2025.tar › 0042.json.gz'
    ],
    [
      { bytesDone: 0, bytesTotal: 3.6e9, records: 0, recordsPerS: 0, bytesPerS: 0, current: '' },
      150,
      'importing   0%  0 records  0/s  0.0 MB/s  ETA ?'
    ],
    [
      {
        bytesDone: 1e9,
        bytesTotal: 4.6e9,
        records: 10,
        recordsPerS: 1,
        bytesPerS: 1e6,
        current: 'a/very/long/path/to/crossref-2025.tar › 0042.json.gz'
      },
      90,
      'importing  21%  10 records  1/s  1.0 MB/s  ETA 1:00:00  …/crossref-2025.tar › 0042.json.gz'
    ]
  ])('%j in %i columns', (state, columns, line) => {
    expect(progressLine(state, columns)).toBe(line)
    expect(progressLine(state, columns).length).toBeLessThanOrEqual(columns)
  })

  it.each([
    [0, '0:00'],
    [59.6, '1:00'],
    [3599, '59:59'],
    [3600, '1:00:00'],
    [90061, '25:01:01']
  ])('%d s is %s', (s, text) => expect(duration(s)).toBe(text))
})

const haveScript = findOnPath(['script']) !== undefined

describe('on a terminal and piped', () => {
  it.skipIf(!haveScript)(
    'on a terminal the bar is redrawn in place with records/s and the ETA, then cleared for the summary',
    async () => {
      const command = `${process.execPath} --import tsx src/command/cli.ts import --to ${join(root, 'tty-copy')} --batch 100 ${tar}`
      const { output } = await run('script', ['-qfc', command, '/dev/null'])
      const draws = output.split(`\r${ESC}[K`).filter((d) => d.startsWith('importing'))
      expect(draws.length).toBeGreaterThan(1)
      expect(draws.at(-1)).toMatch(
        /^importing +\d+% {2}[\d,]+ records {2}[\d,]+\/s {2}[\d.]+ MB\/s {2}ETA [\d:?]+ {2}.*crossref-2025\.tar › \d{4}\.json\.gz/
      )
      expect(output).toContain('imported 12,000 · unchanged 0 · filtered 0 · malformed 0')
    },
    120_000
  )

  it('piped, no bar and no escape codes: a line every --progress-seconds', async () => {
    const { code, stderr, output } = await run(process.execPath, [
      '--import',
      'tsx',
      'src/command/cli.ts',
      'import',
      '--to',
      join(root, 'piped-copy'),
      '--batch',
      '100',
      '--progress-seconds',
      '1',
      tar
    ])
    expect(code).toBe(0)
    expect(stderr).not.toContain(ESC)
    expect(stderr).not.toContain('\r')
    const progressLines = stderr.split('\n').filter((l) => l.startsWith('importing'))
    expect(progressLines.length).toBeGreaterThan(0)
    expect(progressLines[0]).toMatch(/^importing +\d+% {2}[\d,]+ records {2}[\d,]+\/s /)
    expect(output).toContain('imported 12,000 ·')
  }, 120_000)
})
