import { describe, expect, it } from 'vitest'
import { CHECK_VERDICTS, checkVerdictOf, isFailure, SHOWN_VERDICTS, VERDICT_CODE, verdictOf } from '../../../src/handle/health/types.js'
import type { CheckVerdict } from '../../../src/handle/health/types.js'

// Issue 42: the verdicts of a health check, their codes in the database and which of them are failures.
describe('the verdicts of a health check', () => {
  // The codes are written to every check row: a renumbering would change the history. Source: plan §2 (alive 0 … error 7).
  it.each([
    ['alive', 0],
    ['unconfirmed', 1],
    ['blocked', 2],
    ['dead', 3],
    ['takeover', 4],
    ['not-found', 5],
    ['no-url', 6],
    ['error', 7]
  ] as Array<[CheckVerdict, number]>)('%s is stored as %i and read back', (verdict, code) => {
    expect(VERDICT_CODE[verdict]).toBe(code)
    expect(verdictOf(code)).toBe(verdict)
  })

  it('a code this version does not know reads as no verdict', () => {
    expect([verdictOf(8), verdictOf(-1), verdictOf(1.5)]).toEqual([undefined, undefined, undefined])
  })

  // What the owner must fix (issue 42: dead pages, taken-over domains, DOIs gone); a bot wall, drift or our own error is not.
  it.each([
    ['dead', true],
    ['takeover', true],
    ['not-found', true],
    ['no-url', true],
    ['alive', false],
    ['unconfirmed', false],
    ['blocked', false],
    ['error', false]
  ] as Array<[CheckVerdict, boolean]>)('%s is a failure: %s', (verdict, failure) => {
    expect(isFailure(verdict)).toBe(failure)
  })

  it("the landing prober's verdicts are check verdicts as they are", () => {
    expect((['alive', 'unconfirmed', 'blocked', 'dead'] as const).map(checkVerdictOf)).toEqual(['alive', 'unconfirmed', 'blocked', 'dead'])
  })

  it('the reports show every verdict but our own error, and unchecked DOIs', () => {
    expect(SHOWN_VERDICTS).toEqual([...CHECK_VERDICTS.filter((v) => v !== 'error'), 'unchecked'])
  })
})
