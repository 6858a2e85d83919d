import { describe, expect, it } from 'vitest'
import { firstAuthorMatches, personLabel } from '../../../src/handle/verify/people.js'
import type { PersonName } from '../../../src/handle/verify/types.js'

// Issue 41: "first author's family name when given"; citation styles write names every way (Chicago, APA,
// Vancouver, BibTeX), registries split family and given names their own way (CSL-JSON).
describe('a cited first author who is the registered one', () => {
  it.each<[string, PersonName]>([
    ['Müller, Hans', { family: 'Müller', given: 'Hans' }],
    ['Müller, H.', { family: 'Müller', given: 'Hans' }], // initials
    ['H. Müller', { family: 'Müller', given: 'Hans' }], // given first
    ['Muller HJ', { family: 'Müller', given: 'Hans-Jürgen' }], // Vancouver, diacritics stripped
    ['Mueller, H.', { family: 'Müller', given: 'Hans' }], // ü written ue
    ['M{\\"u}ller, H.', { family: 'Mueller', given: 'Hans' }], // BibTeX accent against ue
    ['van der Berg, J.', { family: 'Berg', given: 'J. van der' }], // particles with the family name or not
    ['Berg, J. van der', { family: 'van der Berg', given: 'Jan' }],
    ['De Souza, A.', { family: 'de Souza', given: 'Ana' }],
    ['García, M.', { family: 'García-López', given: 'María' }], // one part of a double family name
    ['Wang Wei', { family: 'Wang', given: 'Wei' }], // family first
    ['Wei Wang', { family: 'Wang', given: 'Wei' }], // given first
    ['Wang', { family: 'Wei', given: 'Wang' }], // a record that swapped the name
    ['Kowalsky, J.', { family: 'Kowalski', given: 'Jan' }], // one slip in a long name
    ['{World Health Organization}', { literal: 'World Health Organization' }], // an organisation
    ['WHO', { literal: 'World Health Organization' }], // by its initials
    ['Smith, J. and Jones, K.', { family: 'Smith', given: 'John' }], // the first of a list
    ['Smith, J. et al.', { family: 'Smith', given: 'John' }],
    ['Aaberg, J.', { family: 'Åberg', given: 'Jan' }], // å written aa
    ['Beyr, D.', { family: 'Beyer', given: 'Dirk' }], // one slip in a five-letter name (the registered name's length)
    ['Wnag, Q.', { family: 'Wang', given: 'Qichen' }], // two letters swapped in a four-letter name
    ['Boagerts, B.', { family: 'Bogaerts', given: 'Bart' }], // a slip next to an "ae" that is no umlaut
    ['Zhnag, S.', { family: 'Zhang', given: 'Siwei' }]
  ])('%j is %j', (cited, first) => {
    expect(firstAuthorMatches(cited, [first, { family: 'Other', given: 'A.' }])).toBe(true)
  })
})

describe('a cited first author who is someone else', () => {
  it.each<[string, PersonName]>([
    ['Smith, J.', { family: 'Müller', given: 'Hans' }],
    ['Wong, W.', { family: 'Wang', given: 'Wei' }], // a short name has no slip allowed
    ['Thomas Jones', { family: 'Smith', given: 'Thomas' }], // a shared given name is not the family's
    ['Other, A.', { family: 'Müller', given: 'Hans' }], // the second author is not the first
    ['Acme Corporation', { literal: 'World Health Organization' }],
    ['Xia, W.', { family: 'Xiao', given: 'Wei' }], // a four-letter name allows no added letter: Xia is another name
    ['Zou, S.', { family: 'Zhou', given: 'Shengwei' }]
  ])('%j is not %j', (cited, first) => {
    expect(firstAuthorMatches(cited, [first, { family: 'Other', given: 'A.' }])).toBe(false)
  })

  it('a record without authors leaves nothing to compare', () => {
    expect(firstAuthorMatches('Smith, J.', [])).toBe(true)
  })
})

describe('a registered person as a message shows them', () => {
  it.each<[PersonName, string]>([
    [{ family: 'Müller', given: 'Hans' }, 'Müller, Hans'],
    [{ family: 'Müller' }, 'Müller'],
    [{ literal: 'World Health Organization' }, 'World Health Organization']
  ])('%j → %j', (person, label) => {
    expect(personLabel(person)).toBe(label)
  })
})
