import { describe, expect, it } from 'vitest'
import { failuresOf, parseFailOn } from '../../../src/handle/verify/fail-on.js'
import type { Verdicts } from '../../../src/handle/verify/fail-on.js'
import type { LandingResult, MetadataResult, RetractionResult } from '../../../src/handle/verify/types.js'

const ALL = ['metadata', 'retraction', 'landing'] as const

// Issue 41: `--fail-on` takes a comma list; with --verify the default becomes unregistered,mismatch,retracted,dead.
describe('the --fail-on list in force', () => {
  it.each([
    [undefined, [], ['unregistered']], // as before issue 41
    [undefined, ALL, ['unregistered', 'mismatch', 'retracted', 'dead']],
    [undefined, ['landing'], ['unregistered', 'dead']], // what a level not verified would decide is left out
    [undefined, ['metadata', 'retraction'], ['unregistered', 'mismatch', 'retracted']],
    ['unknown', [], ['unregistered', 'unknown']], // today's `--fail-on unknown`: also when one could not be checked
    ['unregistered', ALL, ['unregistered']], // a given list replaces the default
    ['dead,unconfirmed', ['landing'], ['unregistered', 'dead', 'unconfirmed']], // unregistered always fails
    ['retracted', ALL, ['unregistered', 'retracted']],
    [' mismatch , unknown ', ['metadata'], ['unregistered', 'unknown', 'mismatch']], // FAIL_ON's order
    ['unconfirmed,dead,dead', ['landing'], ['unregistered', 'dead', 'unconfirmed']]
  ] as const)('--fail-on %j with --verify %j → %j', (raw, levels, list) => {
    expect(parseFailOn(raw, levels)).toEqual(list)
  })

  it.each([
    ['blocked', ALL, '--fail-on takes unregistered, unknown, mismatch, retracted, dead, unconfirmed (a comma list), got "blocked"'], // a bot wall: the page exists
    [
      'unverifiable',
      ALL,
      '--fail-on takes unregistered, unknown, mismatch, retracted, dead, unconfirmed (a comma list), got "unverifiable"'
    ],
    ['mismatch', [], '--fail-on mismatch needs --verify metadata'],
    ['retracted', ['metadata'], '--fail-on retracted needs --verify retraction'],
    ['dead', ['metadata', 'retraction'], '--fail-on dead needs --verify landing'],
    ['unconfirmed', [], '--fail-on unconfirmed needs --verify landing']
  ] as const)('--fail-on %j with --verify %j is refused: %s', (raw, levels, why) => {
    expect(parseFailOn(raw, levels)).toBe(why)
  })
})

const MATCH: MetadataResult = { verdict: 'match', mismatches: [] }
const OTHER_WORK: MetadataResult = {
  verdict: 'mismatch',
  mismatches: [{ field: 'title', cited: 'Deep nets for cats', registered: 'Soil microbes of Iowa' }],
  kind: 'other-work'
}
const UNVERIFIABLE: MetadataResult = { verdict: 'unverifiable', mismatches: [], why: 'nothing cited to compare' }
const RETRACTED: RetractionResult = { verdict: 'retracted', notice: '10.1/n', date: '2021-03-04' }
const CORRECTED: RetractionResult = { verdict: 'corrected', notice: '10.1/c', date: '2020-01-02' }
const CONCERN: RetractionResult = { verdict: 'expression-of-concern', notice: '10.1/e', date: '2020-01-02' }
const RETRACTION_UNKNOWN: RetractionResult = { verdict: null, notice: null, date: null, error: 'Crossref did not answer' }
const ALIVE: LandingResult = { verdict: 'alive', status: 200, url: 'https://journal.example/a/1', evidence: 'citation_doi names 10.1/x' }
const DEAD: LandingResult = { verdict: 'dead', status: 404, url: 'https://journal.example/a/1', evidence: 'HTTP 404' }
const BLOCKED: LandingResult = { verdict: 'blocked', status: 403, url: 'https://journal.example/a/1', evidence: 'Cloudflare challenge' }
const UNCONFIRMED: LandingResult = { verdict: 'unconfirmed', status: 200, url: 'https://casino.example/', evidence: 'no DOI, no title' }
const LANDING_UNKNOWN: LandingResult = { verdict: null, status: null, url: null, evidence: null, error: 'offline, nothing recorded' }

const EVERYTHING = ['unregistered', 'unknown', 'mismatch', 'retracted', 'dead', 'unconfirmed'] as const
const DEFAULT_VERIFYING = ['unregistered', 'mismatch', 'retracted', 'dead'] as const

describe('what fails a run', () => {
  it.each<[string, Verdicts, readonly string[]]>([
    [
      'a registered DOI, every level fine',
      { registered: true, metadata: MATCH, retraction: { verdict: 'none', notice: null, date: null }, landing: ALIVE },
      []
    ],
    ['an unregistered DOI (its objects null)', { registered: false, metadata: null, retraction: null, landing: null }, ['unregistered']],
    ['a DOI that could not be checked', { registered: null }, ['unknown']],
    ['a DOI naming another work', { registered: true, metadata: OTHER_WORK }, ['mismatch']],
    ['unverifiable metadata is never a failure, not even unknown', { registered: true, metadata: UNVERIFIABLE }, []],
    ['a retracted work', { registered: true, retraction: RETRACTED }, ['retracted']],
    ['a correction, an expression of concern: shown, never failing', { registered: true, retraction: CORRECTED }, []],
    ['an expression of concern', { registered: true, retraction: CONCERN }, []],
    ['a retraction status that could not be found out', { registered: true, retraction: RETRACTION_UNKNOWN }, ['unknown']],
    ['a dead landing page', { registered: true, landing: DEAD }, ['dead']],
    ['a bot wall: the page exists', { registered: true, landing: BLOCKED }, []],
    ['an unconfirmed page', { registered: true, landing: UNCONFIRMED }, ['unconfirmed']],
    ['a landing page that could not be checked', { registered: true, landing: LANDING_UNKNOWN }, ['unknown']],
    ['several at once', { registered: true, metadata: OTHER_WORK, retraction: RETRACTED, landing: DEAD }, ['mismatch', 'retracted', 'dead']]
  ])('%s, with every name on: %j', (_, verdicts, failures) => {
    expect(failuresOf(verdicts, EVERYTHING)).toEqual(failures)
  })

  it('only the names in force fail: the default with --verify leaves out unknown and unconfirmed', () => {
    expect(failuresOf({ registered: true, landing: UNCONFIRMED, retraction: RETRACTION_UNKNOWN }, DEFAULT_VERIFYING)).toEqual([])
    expect(failuresOf({ registered: null }, DEFAULT_VERIFYING)).toEqual([])
    expect(failuresOf({ registered: true, metadata: OTHER_WORK, landing: DEAD }, ['unregistered', 'dead'])).toEqual(['dead'])
  })
})
