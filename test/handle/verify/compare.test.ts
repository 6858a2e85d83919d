import { describe, expect, it } from 'vitest'
import { compareCited } from '../../../src/handle/verify/compare.js'
import type { CitedWork, RegisteredWork } from '../../../src/handle/verify/types.js'

const WORK: RegisteredWork = {
  titles: ['Schrödinger equations for <i>α</i>-particles', 'Schrödinger equations for <i>α</i>-particles: a review'],
  years: { issued: 2020, online: 2019 },
  authors: [{ family: 'Müller', given: 'Hans' }]
}

// Issue 41: title normalised, "year (±1, online-first against issue year), first author's family name when
// given"; mismatch names each field with both values; a wrong title is another work, a wrong year or author a detail.
describe('the metadata verdict of a cited work', () => {
  it.each<[string, CitedWork]>([
    ['everything agrees', { title: 'Schr{\\"o}dinger equations for $\\alpha$-particles', year: 2020, author: 'M{\\"u}ller, H.' }],
    ['the online-first year', { title: 'Schrodinger equations for alpha-particles', year: 2019 }],
    ['a year after the issue', { title: 'Schrodinger equations for alpha-particles', year: 2021 }],
    ['a year before the online one', { title: 'Schrodinger equations for alpha-particles', year: 2018 }],
    ['no year nor author cited', { title: 'Schrodinger equations for alpha particles: a review' }]
  ])('%s: match', (_, cited) => {
    expect(compareCited(cited, WORK)).toEqual({ verdict: 'match', mismatches: [] })
  })

  it('a year two off every registered year is a detail, both years named', () => {
    expect(compareCited({ title: 'Schrodinger equations for alpha-particles', year: 2022 }, WORK)).toEqual({
      verdict: 'mismatch',
      mismatches: [{ field: 'year', cited: 2022, registered: 2020 }],
      kind: 'details'
    })
  })

  it('another first author is a detail, both names given', () => {
    expect(compareCited({ title: 'Schrodinger equations for alpha-particles', author: 'Smith, J.' }, WORK)).toEqual({
      verdict: 'mismatch',
      mismatches: [{ field: 'author', cited: 'Smith, J.', registered: 'Müller, Hans' }],
      kind: 'details'
    })
  })

  it('another title is another work, whatever else agrees; the registered main title is named', () => {
    expect(compareCited({ title: 'Deep nets for cats', year: 2017, author: 'Müller, H.' }, WORK)).toEqual({
      verdict: 'mismatch',
      mismatches: [
        { field: 'title', cited: 'Deep nets for cats', registered: 'Schrödinger equations for <i>α</i>-particles' },
        { field: 'year', cited: 2017, registered: 2020 }
      ],
      kind: 'other-work'
    })
  })

  it('the issue year is the one shown, else print, online, posted', () => {
    const posted: RegisteredWork = { ...WORK, years: { posted: 2015 } }
    expect(compareCited({ title: 'Schrodinger equations for alpha particles', year: 2020 }, posted).mismatches).toEqual([
      { field: 'year', cited: 2020, registered: 2015 }
    ])
  })

  it.each<[string, CitedWork, RegisteredWork | undefined, string]>([
    ['no metadata from the agency', { title: 'A' }, undefined, 'the agency gives no metadata for this DOI'],
    ['no title cited', { year: 2020, author: 'Müller' }, WORK, 'the reference gives no title to compare'],
    ['a blank title cited', { title: '  ' }, WORK, 'the reference gives no title to compare'],
    ['no registered title', { title: 'A' }, { titles: [], years: {}, authors: [] }, 'the registered metadata has no title']
  ])('%s: unverifiable, saying why', (_, cited, registered, why) => {
    expect(compareCited(cited, registered)).toEqual({ verdict: 'unverifiable', mismatches: [], why })
  })

  it('a record without years or authors compares the title alone', () => {
    expect(
      compareCited({ title: 'A title of note', year: 1900, author: 'Nobody' }, { titles: ['A title of note'], years: {}, authors: [] })
    ).toEqual({
      verdict: 'match',
      mismatches: []
    })
  })
})
