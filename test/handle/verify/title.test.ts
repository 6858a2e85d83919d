import { describe, expect, it } from 'vitest'
import { editDistance, titleAgreement, wordKey } from '../../../src/handle/verify/title.js'

const REGISTERED = 'The colour of behaviour in non-linear systems: a review'

// Issue 41: the title "normalised: case, diacritics, LaTeX braces and accent commands, punctuation, a subtitle
// after `:` optional"; the corpus's perturbations (bench/verify-corpus) are what people do to a real title.
describe('a cited title that names the registered work', () => {
  it.each([
    ['THE COLOUR OF BEHAVIOUR IN NON-LINEAR SYSTEMS: A REVIEW', REGISTERED], // case
    ['The colour of behaviour in non-linear systems', REGISTERED], // subtitle dropped
    ['The colour of behaviour in non-linear systems: a review', ['The colour of behaviour in non-linear systems']], // subtitle the record lacks
    ['Deep nets: a study', ['Deep nets', 'Deep nets: a study']], // subtitle apart in the record (Crossref `subtitle`)
    ['The color of behavior in nonlinear systems', REGISTERED], // American spelling, hyphen written whole
    ['The colour of behavior in non linear system', REGISTERED], // hyphen apart, singular
    ['The colur of behaviuor in non-linear systems', REGISTERED], // two typos (a deletion, a swap)
    ['Haemoglobin and oestrogen in paediatric tumours', 'Hemoglobin and estrogen in pediatric tumors'],
    ['Modelling the centre of the programme', 'Modeling the center of the program'],
    ['Two decades of Alzheimer’s research', '2 decades of Alzheimer research'], // digits and words, apostrophe
    ['Schr{\\"o}dinger equations for $\\alpha$-particles', 'Schrödinger equations for <i>α</i>-particles'], // LaTeX against HTML
    ['Schrodinger equations for alpha-particles', 'Schrödinger equations for α-particles'], // stripped diacritics, Greek named
    ['Economic growth & inequality in Europe', 'Economic growth and inequality in Europe'],
    ['The colour of behaviour in non-lin…', REGISTERED], // cut short by the citer
    ['Neural computation in the mammalian retina', 'Neural computation in the mammalian retina: circuits, cells and synapses'],
    ['Intl. comparison of phonological development', 'International comparison of phonological development'], // an abbreviation
    ['Deep nets', ['A far longer title of another kind', 'Deep nets']], // the record's short title
    // Rules the corpus of real titles asked for (bench/VERIFY-QUALITY.md, per category); titles from HALLMARK's works.
    ['LLMs are zero-shot reasoners', 'Large Language Models are Zero-Shot Reasoners'], // initials for a run of words
    ['Internet of Things security: a survey', 'IoT security: a survey'], // the record's initials, spelt out
    [
      'Yet Another TC: A Masked Autoencoder Based Traffic Transformer',
      ['Yet Another Traffic Classifier', 'Yet Another Traffic Classifier: A Masked Autoencoder Based Traffic Transformer']
    ], // a word the record has twice pairs by place, so the initials still find theirs
    ['Sesame -- Practical Endto-End Privacy Compliance', 'Sesame: Practical End-to-End Privacy Compliance'], // a hyphen lost
    ['Collective border cell migartin', 'Collective border cell migration'], // two slips in a nine-letter word
    ['Temprol graph modeling', 'Temporal graph modeling'], // two slips in an eight-letter word (the bound goes from six)
    [
      'Dark Experience for General Continual Lea.: A Strong, Simple Baseline',
      'Dark Experience for General Continual Learning: A Strong, Simple Baseline'
    ], // an abbreviation before a colon
    [
      'Hybrid Memoised: Approximate Inference at the Discrete-Continuous Interface',
      'Hybrid Memoised Wake-Sleep: Approximate Inference at the Discrete-Continuous Interface'
    ] // a word dropped from a short main title, the subtitle kept: coverage of the whole title
  ])('%j names %j', (cited, registered) => {
    expect(titleAgreement(cited, registered)).toMatchObject({ match: true, unexplained: [] })
  })
})

describe('a cited title that names another work', () => {
  it.each([
    ['Soil microbes of Iowa', REGISTERED, ['soil', 'microbes', 'iowa']], // another title
    ['The colour of behaviour in linear systems: a survey', REGISTERED, ['survey']], // a content word swapped
    ['The colour of cognition in non-linear markets', REGISTERED, ['cognition', 'markets']], // paraphrase
    ['The flavour of behaviour in non-linear systems', REGISTERED, ['flavour']], // one word, not a typo away
    ['Hyperdimensional colour of behaviour in non-linear systems', REGISTERED, ['hyperdimensional']], // an invented word
    ['Trends 1998', 'Trends 1999', ['1998']], // numbers are never a typo
    [
      'Rethinking Boundaries: Spurious Recognition of Discontinuous Mentions',
      ['Rethinking Boundaries', 'Rethinking Boundaries: End-to-End Recognition of Discontinuous Mentions with Pointer Networks'],
      ['spurious']
    ], // the record gives its subtitle apart: another subtitle is another work
    ['Exploring Single Siamese Representation Learning', 'Exploring Simple Siamese Representation Learning', ['single']], // two letters replaced in place: another real word
    ['Partial transformer networks', 'Spatial transformer networks', ['partial']], // two slips do not change the first letter
    ['GRAND++: Graph Neural Diffusion', 'GRAND: Graph Neural Diffusion', ['plus', 'plus']] // a sequel's pluses are part of its name
  ])('%j is not %j: %j unexplained', (cited, registered, unexplained) => {
    expect(titleAgreement(cited, registered)).toMatchObject({ match: false, unexplained })
  })

  it('a cited title naming a small part of the registered one is another work', () => {
    // every cited word is in the record, but two of six content words: coverage 1/3
    expect(titleAgreement('Non-linear systems', 'Colour and behaviour of light in non-linear systems')).toMatchObject({
      match: false,
      unexplained: []
    })
  })
})

describe('the words of a title as keys', () => {
  it.each([
    ['colours', 'color'],
    ['behaviour', 'behavior'],
    ['organisations', 'organization'],
    ['analysed', 'analyzed'],
    ['studies', 'study'],
    ['boxes', 'box'],
    ['analysis', 'analysis'], // not a plural
    ['virus', 'virus'],
    ['centres', 'centers'.slice(0, -1)],
    ['1990s', '1990s'] // numbers stay
  ])('%j → %j', (word, key) => {
    expect(wordKey(word)).toBe(key)
  })

  it.each([
    ['protein', 'protien', 1, 1], // a swap of neighbours is one edit (Damerau)
    ['colour', 'color', 1, 1],
    ['kitten', 'sitting', 3, 3],
    ['kitten', 'sitting', 1, 2] // above the bound: bound + 1
  ])('the distance of %j and %j within %j is %j', (a, b, bound, distance) => {
    expect(editDistance(a, b, bound)).toBe(distance)
  })
})
