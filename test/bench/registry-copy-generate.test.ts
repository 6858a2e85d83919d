import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { checkCopyFiles, crossrefDoiOf, crossrefWork, generate } from '../../bench/registry-copy/generate.js'

// The registry copy's benchmark input (plan-43 §6): small runs here, with files smaller than the agencies'
// (5,000 and 10,000 items) so that several are made; the 20,000-work check and the timed 200,000-work run
// are `--check` runs of the script (bench/RESULTS.md).

const root = mkdtempSync(join(tmpdir(), 'copy-generate-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const SMALL = { perFile: { crossref: 1000, datacite: 400 } }
const sha = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex')

describe('the generated agency files', () => {
  it('are read whole by the copy mappers: every work and line a record, every state row understood, no DOI twice', async () => {
    const out = join(root, 'whole')
    const made = await generate({ seed: 43, works: 4000, datacite: 0.25, out, ...SMALL })
    expect([made.crossref.works, made.crossref.files, made.dataciteRecords.records, made.dataciteRecords.files]).toEqual([3000, 3, 1000, 3])
    expect(made.meanWorkBytes).toBeGreaterThan(6000) // §6: aim 7–9 KB a work
    expect(made.meanWorkBytes).toBeLessThan(11000)
    const check = await checkCopyFiles(out)
    expect(check.crossref).toEqual({ entries: 3, items: 3000, records: 3000, problems: [] })
    expect(check.datacite).toEqual({ entries: 3, lines: 1000, records: 1000, problems: [] })
    expect(check.states.problems).toEqual([])
    expect(check.states.rows).toBe(made.dataciteRecords.stateRows)
    expect(check.states.registered).toBeGreaterThan(0) // Registered DOIs only the CSV names
    expect(check.duplicateDois).toBe(0)
    expect(check.shapes.abstracts / 3000).toBeCloseTo(0.4, 1)
    expect(check.shapes.withReferences / 3000).toBeCloseTo(0.6, 1)
  }, 120_000)

  it('hold at DOI i the work crossrefDoiOf names, so a benchmark can ask for any of them without the files', () => {
    for (const i of [0, 1, 999, 123_456]) expect(crossrefWork(43, i).DOI).toBe(crossrefDoiOf(43, i))
  })

  it('are the same bytes for the same seed, other DOIs for another', async () => {
    const a = await generate({ seed: 43, works: 600, datacite: 0.5, out: join(root, 'a'), ...SMALL })
    const b = await generate({ seed: 43, works: 600, datacite: 0.5, out: join(root, 'b'), ...SMALL })
    expect(a.cached || b.cached).toBe(false)
    for (const name of ['crossref-annual.tar', 'datacite.tar', 'datacite-states.csv']) {
      expect(sha(join(root, 'a', name))).toBe(sha(join(root, 'b', name)))
    }
    expect(crossrefDoiOf(44, 0)).not.toBe(crossrefDoiOf(43, 0))
  }, 120_000)

  it('are the same bytes made on two threads as on one', async () => {
    const one = join(root, 'one-thread')
    const two = join(root, 'two-threads')
    await generate({ seed: 43, works: 2500, datacite: 0.2, out: one, ...SMALL })
    await generate({ seed: 43, works: 2500, datacite: 0.2, out: two, threads: 2, ...SMALL })
    for (const name of ['crossref-annual.tar', 'datacite.tar', 'datacite-states.csv']) {
      expect(sha(join(two, name))).toBe(sha(join(one, name)))
    }
  }, 120_000)

  it('are made once: the same options again find the directory made', async () => {
    const out = join(root, 'once')
    expect((await generate({ seed: 43, works: 300, datacite: 0.15, out, ...SMALL })).cached).toBe(false)
    expect((await generate({ seed: 43, works: 300, datacite: 0.15, out, ...SMALL })).cached).toBe(true)
    expect((await generate({ seed: 43, works: 301, datacite: 0.15, out, ...SMALL })).cached).toBe(false)
  }, 120_000)
})
