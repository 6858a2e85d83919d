import { describe, expect, expectTypeOf, it } from 'vitest'
import { VERIFY_LEVELS } from '../../../src/handle/verify/types.js'
import type { LandingResult, MetadataResult, RetractionResult, VerifyLevel } from '../../../src/handle/verify/types.js'

// Issue 41, "In --format json (and in the batch API) each DOI carries these objects, exactly so named".
// The compiler checks these (npx tsc): an object of the shape is one of ours, and one the issue does
// not allow is not (each @ts-expect-error fails the build when the line compiles).
describe('the wire shapes of issue 41', () => {
  it('the levels are metadata, retraction, landing, in that order', () => {
    expect(VERIFY_LEVELS).toEqual(['metadata', 'retraction', 'landing'])
    expectTypeOf<VerifyLevel>().toEqualTypeOf<'metadata' | 'retraction' | 'landing'>()
  })

  it('metadata: a verdict and the fields that differ, with both values; kind and why besides', () => {
    const allowed: MetadataResult[] = [
      { verdict: 'match', mismatches: [] },
      {
        verdict: 'mismatch',
        mismatches: [
          { field: 'title', cited: 'Deep nets for cats', registered: 'Soil microbes of Iowa' },
          { field: 'year', cited: 2019, registered: 2017 },
          { field: 'author', cited: 'Smith', registered: 'Müller' }
        ],
        kind: 'other-work'
      },
      { verdict: 'mismatch', mismatches: [{ field: 'year', cited: 2019, registered: 2016 }], kind: 'details' },
      { verdict: 'unverifiable', mismatches: [], why: 'nothing cited to compare' }
    ]
    const refused: MetadataResult[] = [
      // @ts-expect-error: no such verdict
      { verdict: 'wrong', mismatches: [] },
      // @ts-expect-error: the fields compared are title, year and author
      { verdict: 'mismatch', mismatches: [{ field: 'journal', cited: 'x', registered: 'y' }] },
      // @ts-expect-error: a mismatch is of another work or of details
      { verdict: 'mismatch', mismatches: [], kind: 'typo' }
    ]
    expect(allowed.length + refused.length).toBe(7)
  })

  it('retraction: verdict, notice, date; a null verdict only with its error', () => {
    const allowed: RetractionResult[] = [
      { verdict: 'retracted', notice: '10.1/n', date: '2021-03-04' },
      { verdict: 'corrected', notice: '10.1/c', date: '2020-01-02' },
      { verdict: 'expression-of-concern', notice: '10.1/e', date: '2020-01-02' },
      { verdict: 'none', notice: null, date: null },
      { verdict: null, notice: null, date: null, error: 'a DOI of DataCite: Crossref has no notices for it' }
    ]
    const refused: RetractionResult[] = [
      // @ts-expect-error: a null verdict says why
      { verdict: null, notice: null, date: null },
      // @ts-expect-error: no such verdict
      { verdict: 'withdrawn', notice: null, date: null }
    ]
    expect(allowed.length + refused.length).toBe(7)
  })

  it('landing: verdict, status, final URL, one line of evidence; a null verdict only with its error', () => {
    const allowed: LandingResult[] = [
      { verdict: 'alive', status: 200, url: 'https://journal.example/a/1', evidence: 'citation_doi names 10.1/x' },
      { verdict: 'unconfirmed', status: 200, url: 'https://casino.example/', evidence: 'no DOI or title; landed on casino.example' },
      { verdict: 'blocked', status: 403, url: 'https://journal.example/a/1', evidence: 'Cloudflare challenge (cf-mitigated: challenge)' },
      { verdict: 'dead', status: null, url: 'https://gone.example/', evidence: 'DNS: gone.example not found' },
      { verdict: null, status: null, url: null, evidence: null, error: 'offline, and no landing check recorded' }
    ]
    const refused: LandingResult[] = [
      // @ts-expect-error: a verdict names the URL it reached
      { verdict: 'alive', status: 200, url: null, evidence: 'x' },
      // @ts-expect-error: no such verdict
      { verdict: 'gone', status: 404, url: 'https://journal.example/a/1', evidence: 'x' },
      // @ts-expect-error: a null verdict says why
      { verdict: null, status: null, url: null, evidence: null }
    ]
    expect(allowed.length + refused.length).toBe(8)
  })
})
