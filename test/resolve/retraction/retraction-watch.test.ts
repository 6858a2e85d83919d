import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { afterAll, describe, expect, it } from 'vitest'
import { retractionVerdictOf } from '../../../src/handle/verify/retraction.js'
import { loadRetractionWatch } from '../../../src/resolve/retraction/retraction-watch.js'

// Issue 41: RETRACTIONS_FROM=file reads the Retraction Watch CSV (Crossref's export: its real header,
// synthetic rows with quoted commas, a note on two lines, "unavailable" DOIs) for offline verification.
const SAMPLE = new URL('../../fixtures/retraction-watch-sample.csv', import.meta.url).pathname
const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-rw-'))
afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
})

describe('the Retraction Watch CSV', () => {
  it.each([
    ['10.5555/rw.retracted', { verdict: 'retracted', notice: '10.5555/rw.notice.1', date: '2021-03-04' }],
    ['10.5555/rw.corrected', { verdict: 'corrected', notice: '10.5555/rw.erratum.2', date: '2020-01-02' }],
    ['10.5555/rw.concern', { verdict: 'expression-of-concern', notice: null, date: '2019-12-31' }], // RetractionDOI "unavailable"
    ['10.5555/rw.reinstated', { verdict: 'corrected', notice: '10.5555/rw.notice.4b', date: '2016-03-03' }], // reinstated later
    ['10.5555/RW.BOTH', { verdict: 'retracted', notice: '10.5555/rw.notice.8', date: '2022-09-09' }], // two rows, DOIs in two cases
    ['10.5555/not-listed', { verdict: 'none', notice: null, date: null }]
  ])('gives %s its verdict', async (doi, expected) => {
    const file = await loadRetractionWatch(SAMPLE)
    expect(retractionVerdictOf(file.noticesOf(doi))).toEqual(expected)
  })

  it('counts rows read, kept and skipped (a work without a DOI)', async () => {
    const file = await loadRetractionWatch(SAMPLE)
    expect(file.counts).toEqual({ rows: 8, kept: 7, skipped: 1, dropped: 0, works: 5 })
  })

  it('reads the file gzipped as well', async () => {
    const gz = join(dir, 'rw.csv.gz')
    writeFileSync(gz, gzipSync(readFileSync(SAMPLE)))
    const file = await loadRetractionWatch(gz)
    expect(retractionVerdictOf(file.noticesOf('10.5555/rw.retracted')).verdict).toBe('retracted')
  })

  it('keeps no more notices than its bound, counting the rest as dropped', async () => {
    const file = await loadRetractionWatch(SAMPLE, { maxNotices: 2 })
    expect(file.counts).toMatchObject({ kept: 2, dropped: 5 })
  })

  it('refuses a CSV that is not the data set, naming RETRACTIONS_FILE and the missing column', async () => {
    const other = join(dir, 'other.csv')
    writeFileSync(other, 'doi,title\n10.1/x,A title\n')
    await expect(loadRetractionWatch(other)).rejects.toThrow(
      `invalid setting retractionsFile (RETRACTIONS_FILE): ${JSON.stringify(other)} is not the Retraction Watch CSV: no column OriginalPaperDOI, RetractionDOI, RetractionDate, RetractionNature`
    )
  })

  it('refuses a truncated gzip, naming RETRACTIONS_FILE', async () => {
    const broken = join(dir, 'broken.csv.gz')
    const whole = gzipSync(readFileSync(SAMPLE))
    writeFileSync(broken, whole.subarray(0, whole.length >> 1))
    await expect(loadRetractionWatch(broken)).rejects.toThrow(
      /^invalid setting retractionsFile \(RETRACTIONS_FILE\): .* cannot be read as the Retraction Watch CSV/
    )
  })

  it('refuses a file that is not there, naming RETRACTIONS_FILE', async () => {
    await expect(loadRetractionWatch(join(dir, 'missing.csv'))).rejects.toThrow(/RETRACTIONS_FILE.*ENOENT/)
  })

  it('refuses a row longer than its bound rather than holding it', async () => {
    const long = join(dir, 'long.csv')
    writeFileSync(long, `${readFileSync(SAMPLE, 'utf8').split('\n')[0]}\n1,"${'x'.repeat(5000)}"\n`)
    await expect(loadRetractionWatch(long, { maxRowChars: 1000 })).rejects.toThrow(/RETRACTIONS_FILE/)
  })
})
