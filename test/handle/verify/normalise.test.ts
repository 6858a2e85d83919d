import { describe, expect, it } from 'vitest'
import { normaliseName, normaliseTitle } from '../../../src/handle/verify/normalise.js'

// Issue 41: a title is compared "normalised: case, diacritics, LaTeX braces and accent commands, punctuation,
// a subtitle after `:` optional"; the registry's side carries HTML, JATS and MathML (Crossref's titles).
describe('a title as comparable tokens', () => {
  it.each([
    // LaTeX (a .bib): accents onto their letters, braces, special letters, math, dashes, ties
    ['Schr{\\"o}dinger\'s $\\alpha$--decay', ['schrodingers', 'alpha', 'decay']],
    ["{\\'E}cole {\\c{c}}a {\\v{S}}koda", ['ecole', 'ca', 'skoda']],
    [
      '\\"{u}ber \\`a la \\^{o}te \\~n \\=a \\.z \\H{o} \\u{a} \\k{e} \\r{a}',
      ['uber', 'a', 'la', 'ote', 'n', 'a', 'z', 'o', 'a', 'e', 'a']
    ],
    ["Stra{\\ss}e {\\O}resund {\\AA}rhus {\\ae}ther {\\l}{\\'o}d{\\'z}", ['strasse', 'oresund', 'arhus', 'aether', 'lodz']],
    ["{\\'\\i}ndice", ['indice']], // \'{\i}: the dotless i under an accent
    ['{DNA} repair in \\emph{E. coli} and \\textit{in vivo}', ['dna', 'repair', 'in', 'e', 'coli', 'and', 'in', 'vivo']],
    ['CO$_2$ and H$_{2}$O at $10^{3}$~K', ['co2', 'and', 'h2o', 'at', '103', 'k']],
    ['$\\beta$-cells and $\\varepsilon$ \\& $\\Gamma$', ['beta', 'cells', 'and', 'epsilon', 'and', 'gamma']],
    ['Rock \\& roll, 50\\% off', ['rock', 'and', 'roll', '50', 'off']],
    ['1990--2000 trends', ['1990', '2000', 'trends']], // a range, not a subtitle
    // HTML, JATS, MathML (a registry): inline tags join, block tags separate, entities read
    ['Schrödinger’s <i>α</i>-decay', ['schrodingers', 'alpha', 'decay']],
    ['CO<sub>2</sub> uptake in <i>Arabidopsis</i>', ['co2', 'uptake', 'in', 'arabidopsis']],
    ['<mml:math><mml:mi>β</mml:mi></mml:math>-cells', ['beta', 'cells']],
    ['<jats:p>Fish</jats:p><jats:p>Chips</jats:p>', ['fish', 'chips']],
    ['Fish &amp; chips &#233;t&eacute; &#x3B1; &alpha; &unknown;', ['fish', 'and', 'chips', 'ete', 'alpha', 'alpha', 'and', 'unknown']], // an unknown entity stays text,
    // Unicode: diacritics out, letters without a decomposition folded, Greek by name, compatibility forms
    ['Straße Æsir Łódź Œuvre Þór Đakovo naïve', ['strasse', 'aesir', 'lodz', 'oeuvre', 'thor', 'dakovo', 'naive']],
    ['µ-opioid ﬁbres', ['mu', 'opioid', 'fibres']], // the micro sign and the fi ligature (NFKD)
    // words: case, punctuation, number words, apostrophes
    [
      'Two Decades of Alzheimer’s Research in 3 Countries since 1990!',
      ['two', 'decades', 'of', 'alzheimers', 'research', 'in', 'three', 'countries', 'since', '1990']
    ],
    ['', []],
    ['&QUOT;VIOLATION OF MY BODY&QUOT;', ['violation', 'of', 'my', 'body']], // entities in capitals (HTML reads them alike)
    ['GRAND++ and C++ with Ca2+', ['grand', 'plus', 'plus', 'and', 'c', 'plus', 'plus', 'with', 'ca2', 'plus']] // pluses belong to a name
  ])('%j → %j', (raw, tokens) => {
    expect(normaliseTitle(raw).tokens).toEqual(tokens)
  })

  it.each([
    ['Continual Lea.: a study', ['lea']], // before a subtitle's colon
    ['Proc. Intl. Conf., Berlin', ['proc', 'intl', 'conf']],
    ['Deep nets', []]
  ])('the abbreviations of %j are %j', (raw, abbreviations) => {
    expect(normaliseTitle(raw).abbreviations).toEqual(abbreviations)
  })

  it.each([
    ['Deep nets: a study of cats', ['deep', 'nets']],
    ['Deep nets - a study', ['deep', 'nets']],
    ['Deep nets — a study', ['deep', 'nets']],
    ['Deep nets --- a study', ['deep', 'nets']], // LaTeX's em dash
    ['Deep nets -- a study', ['deep', 'nets']], // a spaced en dash
    ['Do nets dream? A study', ['do', 'nets', 'dream']],
    ['Growth of E. coli in milk', ['growth', 'of', 'e', 'coli', 'in', 'milk']], // a full stop ends an abbreviation, not a title
    ['Proc. of the survey', ['proc', 'of', 'the', 'survey']],
    ['Non-linear waves', ['non', 'linear', 'waves']], // an unspaced hyphen joins
    ['Deep nets', ['deep', 'nets']]
  ])('the main title of %j is %j', (raw, main) => {
    expect(normaliseTitle(raw).mainTokens).toEqual(main)
  })

  it.each([
    ['Deep learning for protein…', true],
    ['Deep learning for protein ...', true],
    ['Deep learning for protein', false]
  ])('%j is cut short: %j', (raw, truncated) => {
    expect(normaliseTitle(raw)).toMatchObject({ truncated })
  })

  it('reads at most 2,000 characters of a title', () => {
    expect(normaliseTitle('word '.repeat(10_000)).tokens).toHaveLength(400)
  })
})

describe('a name as comparable tokens', () => {
  it.each([
    ['M{\\"u}ller, H.-J.', ['muller', 'h', 'j']],
    ['Müller, Hans', ['muller', 'hans']],
    ['{World Health Organization}', ['world', 'health', 'organization']],
    ['Ørsted, H. C. & Co', ['orsted', 'h', 'c', 'co']],
    ['<i>van der Berg</i>', ['van', 'der', 'berg']]
  ])('%j → %j', (raw, tokens) => {
    expect(normaliseName(raw)).toEqual(tokens)
  })
})
