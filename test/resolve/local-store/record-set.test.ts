import { describe, expect, it } from 'vitest'
import type { HandleRecord } from '../../../src/handle/types.js'
import type { StoreProblem } from '../../../src/resolve/local-store/file-format.js'
import { buildSnapshot } from '../../../src/resolve/local-store/record-set.js'
import { urlOf } from '../../support/local-records.js'
import { str } from '../../support/records.js'

describe('buildSnapshot: duplicates (issue 7: the later file, sorted by name, wins)', () => {
  const file = (
    name: string,
    records: HandleRecord[]
  ): { name: string; records: HandleRecord[]; problems: StoreProblem[]; rejected: boolean } => ({
    name,
    records,
    problems: [],
    rejected: false
  })
  const rec = (handle: string, url: string): HandleRecord => ({ handle, values: [str(1, 'URL', url)] })

  it('the record of the later file wins, whatever order the files were read in, and the duplicate is reported', () => {
    const snap = buildSnapshot([file('b.ndjson', [rec('10.5555/x', 'https://b/')]), file('a.ndjson', [rec('10.5555/X', 'https://a/')])])
    expect(urlOf(snap.records.get('10.5555/X'))).toBe('https://b/')
    expect(snap.duplicates).toEqual([{ handle: '10.5555/x', kept: 'b.ndjson', dropped: 'a.ndjson' }])
    expect(snap.stats).toEqual({ records: 1, files: 2, rejectedFiles: 0, problems: 1 })
  })

  it('within one file the later line wins', () => {
    const snap = buildSnapshot([file('a.ndjson', [rec('10.5555/x', 'https://first/'), rec('10.5555/x', 'https://second/')])])
    expect(urlOf(snap.records.get('10.5555/X'))).toBe('https://second/')
    expect(snap.duplicates).toHaveLength(1)
  })

  it('handles that differ beyond ASCII case are different records (behaviour.md §2.8)', () => {
    const snap = buildSnapshot([file('a.ndjson', [rec('10.5555/é', 'https://lower/'), rec('10.5555/É', 'https://upper/')])])
    expect(snap.records.size).toBe(2)
    expect(snap.duplicates).toEqual([])
  })
})
