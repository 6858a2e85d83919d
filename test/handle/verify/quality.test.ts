import { describe, expect, it } from 'vitest'
import { generateCorpus } from '../../../bench/verify-corpus/generate.js'
import { measure } from '../../../bench/verify-quality.js'

// Issue 41, "the matcher's quality, measured": detection >= 0.95 with false alarms <= 5 % on a labelled corpus
// of at least 2,000 entries, offline, no language model. The constants were tuned on the dev split
// (bench/verify-quality.ts); this gate reads the held-out test split only.
describe('the metadata matcher on the held-out corpus', () => {
  const corpus = generateCorpus(41, 3000)
  const test = corpus.filter((entry) => entry.split === 'test')
  const quality = measure(test)

  it('is made of at least 2,000 entries, one in five held out', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(2000)
    expect(test.length / corpus.length).toBeGreaterThan(0.15)
    expect(test.length / corpus.length).toBeLessThan(0.25)
  })

  it('flags at least 95 % of fabricated references', () => {
    expect(quality.detection).toBeGreaterThanOrEqual(0.95)
  })

  it('flags at most 5 % of genuine references', () => {
    expect(quality.falseAlarms).toBeLessThanOrEqual(0.05)
  })

  it('tells a real work cited with a wrong year or author as details, not another work', () => {
    expect(quality.detailsAsDetails).toBeGreaterThanOrEqual(0.95)
    expect(quality.kindAccuracy).toBeGreaterThanOrEqual(0.95)
  })

  it('would fail a matcher that lets any title through', () => {
    expect(measure(test, { maxUnexplained: 99, minCoverage: 0, typos: [] }).detection).toBeLessThan(0.95)
  })

  it('is the same corpus for the same seed', () => {
    expect(generateCorpus(41, 50)).toEqual(generateCorpus(41, 50))
  })
})
