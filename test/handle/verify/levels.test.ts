import { describe, expect, it } from 'vitest'
import { parseVerifyLevels } from '../../../src/handle/verify/levels.js'

// Issue 41: `check --verify LEVELS`, `POST /api/batch?verify=LEVELS` and VERIFY_LEVELS, a comma list of
// metadata, retraction, landing.
describe('the verify levels of a comma list', () => {
  it.each([
    ['metadata', ['metadata']],
    ['metadata,retraction,landing', ['metadata', 'retraction', 'landing']],
    ['landing,metadata', ['metadata', 'landing']], // always in one order, whatever the list's
    [' retraction , landing ', ['retraction', 'landing']], // spaces around a word
    ['landing,landing', ['landing']], // each once
    ['metadata,,landing,', ['metadata', 'landing']], // empty items dropped
    ['', []], // none: VERIFY_LEVELS empty turns verification off; check runs as before
    [' , ', []]
  ])('%j → %j', (raw, levels) => {
    expect(parseVerifyLevels(raw)).toEqual(levels)
  })

  it.each([
    ['meta', '"meta" is not a verify level (metadata, retraction or landing)'],
    ['metadata,Landing', '"Landing" is not a verify level (metadata, retraction or landing)'], // spelled exactly
    ['metadata,all', '"all" is not a verify level (metadata, retraction or landing)'],
    ['x'.repeat(500), `"${'x'.repeat(40)}" is not a verify level (metadata, retraction or landing)`] // never echoed whole
  ])('%j is refused, naming the word', (raw, why) => {
    expect(parseVerifyLevels(raw)).toBe(why)
  })
})
