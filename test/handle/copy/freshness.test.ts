import { describe, expect, it } from 'vitest'
import { copyAnswers, effectiveAsOf, freshForSeconds } from '../../../src/handle/copy/freshness.js'
import type { CopyHead, Coverage } from '../../../src/handle/copy/types.js'

// Source: plan-43 §1.8 (the "younger than REGISTRY_COPY_MAX_AGE_SECONDS", measured from the data's
// as-of, not the import: a six-month-old file imported today is six months old); offline the copy always answers.

const DAY = 86_400
const NOW = 1_800_000_000
const WEEK = 7 * DAY
const coverage: Coverage = { crossref: { base: NOW - 200 * DAY, through: NOW - DAY } }
type Head = Pick<CopyHead, 'stamp' | 'covered' | 'agency'>

describe("a copy record's as-of", () => {
  it.each<[string, Head, number]>([
    ['covered: its agency coverage, newer than its stamp', { stamp: NOW - 300 * DAY, covered: true, agency: 'crossref' }, NOW - DAY],
    ['covered, but its own stamp is newer', { stamp: NOW - 3600, covered: true, agency: 'crossref' }, NOW - 3600],
    [
      'not covered (a REST page saved by hand): its stamp alone',
      { stamp: NOW - 300 * DAY, covered: false, agency: 'crossref' },
      NOW - 300 * DAY
    ],
    ['covered by an agency with no coverage yet: its stamp', { stamp: NOW - 30 * DAY, covered: true, agency: 'datacite' }, NOW - 30 * DAY]
  ])('%s', (_, head, asOf) => {
    expect(effectiveAsOf(head, coverage)).toBe(asOf)
  })
})

describe('whether the copy answers', () => {
  it.each<[string, number, number, boolean, boolean, number]>([
    // what, as-of, max age, offline → answers, fresh for
    ['a day old, a week allowed', NOW - DAY, WEEK, false, true, 6 * DAY],
    ['exactly a week old: too old', NOW - WEEK, WEEK, false, false, 0],
    ['a year old online', NOW - 365 * DAY, WEEK, false, false, 0],
    ['a year old offline: answers', NOW - 365 * DAY, WEEK, true, true, 0],
    ['max age 0 online: never first (only a stand-in)', NOW, 0, false, false, 0],
    ['stamped in the future (a hostile file): counts as now', NOW + 365 * DAY, WEEK, false, true, WEEK]
  ])('%s', (_, asOf, maxAge, offline, answers, freshFor) => {
    expect(copyAnswers(asOf, NOW, maxAge, offline)).toBe(answers)
    expect(freshForSeconds(asOf, NOW, maxAge)).toBe(freshFor)
  })
})
