/**
 * Titles and names as comparable tokens (issue 41, `check --verify metadata`): a .bib writes
 * `Schr{\"o}dinger's $\alpha$--decay`, a registry writes `Schrödinger’s <i>α</i>-decay`; both become
 * `schrodinger s alpha decay`. Most false alarms of a title check are markup, not words, so both sides go
 * through the same folding.
 */

/** The longest text folded: a title or a name longer than this is cut (a hostile record costs no more). */
const MAX_CHARS = 2_000

/** A title's comparable tokens: all of them, and those of its main title (before a subtitle's separator). */
export interface NormalisedTitle {
  tokens: string[]
  mainTokens: string[]
  /** The title ends with "…" or "...": the writer cut it, so the registered title may go on. */
  truncated: boolean
  /** The words written with a full stop after them (Intl., Proc.): perhaps abbreviations. */
  abbreviations: string[]
}

// Greek letters by name, as LaTeX (`\alpha`), HTML (`&alpha;`) and Unicode (`α`) write them: one token each.
const GREEK = [
  'alpha',
  'beta',
  'gamma',
  'delta',
  'epsilon',
  'zeta',
  'eta',
  'theta',
  'iota',
  'kappa',
  'lambda',
  'mu',
  'nu',
  'xi',
  'omicron',
  'pi',
  'rho',
  'sigma',
  'tau',
  'upsilon',
  'phi',
  'chi',
  'psi',
  'omega'
] as const
const GREEK_LETTERS = 'αβγδεζηθικλμνξοπρστυφχψω'
const GREEK_BY_LETTER = new Map<string, string>([...GREEK_LETTERS].map((letter, i) => [letter, GREEK[i] as string]))
GREEK_BY_LETTER.set('ς', 'sigma').set('ϕ', 'phi').set('ϵ', 'epsilon').set('ϑ', 'theta').set('ϱ', 'rho').set('ϖ', 'pi')

// Letters NFKD does not split into a base and a mark (Unicode's decompositions; BibTeX's \ss, \o, \ae, \l…).
const FOLDED: Record<string, string> = {
  ß: 'ss',
  ẞ: 'ss',
  æ: 'ae',
  Æ: 'ae',
  ø: 'o',
  Ø: 'o',
  ł: 'l',
  Ł: 'l',
  œ: 'oe',
  Œ: 'oe',
  þ: 'th',
  Þ: 'th',
  đ: 'd',
  Đ: 'd',
  ð: 'd',
  Ð: 'd',
  ı: 'i',
  ħ: 'h'
}
const FOLDED_RE = new RegExp(`[${Object.keys(FOLDED).join('')}]`, 'g')

// LaTeX's special letters (\ss, \o, \aa…) as the letters they stand for.
const LATEX_LETTERS: Record<string, string> = {
  ss: 'ss',
  o: 'o',
  O: 'o',
  aa: 'a',
  AA: 'a',
  ae: 'ae',
  AE: 'ae',
  oe: 'oe',
  OE: 'oe',
  l: 'l',
  L: 'l',
  i: 'i',
  j: 'j'
}

// Commands that only lay text out (their argument stays) or draw a symbol no one types in a title.
const LATEX_DROPPED = new Set(
  (
    'emph textit textbf textsc texttt textrm textsf textup textsl textnormal mathrm mathbf mathit mathcal mathbb mathsf ' +
    'mathtt mathfrak boldsymbol bm text mbox hbox makebox it bf em rm sc tt sf sl up ensuremath textsuperscript ' +
    'textsubscript relax noindent protect nocase ldots dots cdots textendash textemdash quad qquad left right big Big ' +
    'textquoteright textquoteleft textquotedblleft textquotedblright sim cdot times pm mp prime to rightarrow leftarrow ' +
    'infty approx leq geq le ge neq ne displaystyle textstyle scriptstyle url'
  ).split(' ')
)

// HTML's named entities a title carries; the accented letters (&eacute;) are read by rule below.
const ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  ndash: '–',
  mdash: '—',
  hellip: '…',
  rsquo: '’',
  lsquo: '‘',
  ldquo: '“',
  rdquo: '”',
  szlig: 'ss',
  aelig: 'ae',
  AElig: 'ae',
  oelig: 'oe',
  OElig: 'oe',
  oslash: 'o',
  Oslash: 'o',
  thorn: 'th',
  eth: 'd',
  minus: '-',
  times: 'x'
}

// Tags that separate words (a block, a line break); every other tag (i, sub, mml:mi…) joins its neighbours: H<sub>2</sub>O is H2O.
const BLOCK_TAG = /<\/?(?:[a-z]+:)?(?:p|br|div|li|title|sec|label|td|tr)\b[^>]*>/gi

/** Markup out: tags (HTML, JATS, MathML) and entities. */
function withoutMarkup(text: string): string {
  return text
    .replace(/<!\[CDATA\[|\]\]>/g, '')
    .replace(BLOCK_TAG, ' ')
    .replace(/<\/?[a-z][a-z0-9:._-]*(?:\s[^<>]*)?\/?>/gi, '')
    .replace(/&#(\d{1,7});/g, (_, code: string) => fromCode(Number(code)))
    .replace(/&#x([0-9a-f]{1,6});/gi, (_, code: string) => fromCode(parseInt(code, 16)))
    .replace(/&([a-z]+);/gi, (whole, name: string) => {
      // HTML reads &QUOT; as &quot; (a title set in capitals keeps its entities in capitals).
      const known = ENTITIES[name] ?? ENTITIES[name.toLowerCase()]
      if (known !== undefined) return known
      const lower = name.toLowerCase()
      if ((GREEK as readonly string[]).includes(lower)) return ` ${lower} `
      const accented = /^([a-z])(?:acute|grave|uml|circ|tilde|cedil|ring|caron|slash|ogon|dot|macr|breve|dblac)$/i.exec(name)
      return accented?.[1] ?? whole
    })
}

function fromCode(code: number): string {
  return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : ' '
}

/** LaTeX out: accents onto their letters, special letters, Greek by name, layout commands, math, braces, ties, dashes. */
function withoutLatex(text: string): string {
  return (
    text
      // \'{e}, \'e, {\'e}, \"{\i}: the accent goes (diacritics are dropped anyway), the letter stays.
      .replace(
        /\\(['"`^~=.])\s*(?:\{\s*\\?([a-zA-Z])\s*\}|\\?([a-zA-Z]))/g,
        (_, accent: string, braced?: string, bare?: string) => braced ?? bare ?? ''
      )
      // \c{c}, \v{s}, \H{o}, \u{a}, \k{a}, \r{a}, \d{o}, \b{o}, \t{oo}; also \c c.
      .replace(/\\([cvHukrdbt])\s*\{\s*\\?([a-zA-Z]{1,2})\s*\}/g, '$2')
      .replace(/\\([cvHukrdbt])\s+([a-zA-Z])(?![a-zA-Z])/g, '$2')
      .replace(/\\(ss|aa|AA|ae|AE|oe|OE|o|O|l|L|i|j)(?![a-zA-Z])\s*(?:\{\})?/g, (_, letter: string) => LATEX_LETTERS[letter] ?? letter)
      .replace(/\\([&%$#_{}])/g, '$1')
      .replace(/\\\\/g, ' ')
      .replace(/\\([a-zA-Z]+)\*?/g, (_, name: string) => {
        const lower = name.toLowerCase()
        if (
          (GREEK as readonly string[]).includes(lower) ||
          (lower.startsWith('var') && (GREEK as readonly string[]).includes(lower.slice(3)))
        ) {
          return ` ${lower.replace(/^var/, '')} `
        }
        return LATEX_DROPPED.has(name) ? ' ' : ` ${name} `
      })
      // Math: its letters and digits stay; sub- and superscripts join (CO$_2$ is CO2).
      .replace(/\$([^$]*)\$/g, (_, math: string) => math.replace(/[_^]/g, ''))
      .replace(/[{}]/g, '')
      .replace(/~/g, ' ')
      // An em dash (---) or a spaced en dash (--) sets a subtitle off; 1990--2000 is a range.
      .replace(/\s*---\s*|\s+--\s+/g, ' – ')
      .replace(/--/g, '-')
  )
}

/** Unicode out: compatibility forms, marks dropped, the letters NFKD keeps whole folded, Greek by name, lower case. */
function withoutDiacritics(text: string): string {
  return text
    .replace(FOLDED_RE, (letter) => FOLDED[letter] ?? letter)
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[\u0370-\u03ff]/g, (letter) => {
      const name = GREEK_BY_LETTER.get(letter)
      return name === undefined ? letter : ` ${name} `
    })
}

/**
 * A text folded for comparison, punctuation kept: markup, LaTeX, diacritics out, lower case, spaces single.
 * The separators of a subtitle (`:`, a spaced dash) survive, so the main title can be found.
 */
export function foldText(raw: string): string {
  return withoutDiacritics(withoutLatex(withoutMarkup(raw.slice(0, MAX_CHARS))))
    .replace(/[\u2018\u2019\u02bc'`´]/g, '') // Alzheimer's is alzheimers: an apostrophe joins
    .replace(/\s+/g, ' ')
    .trim()
}

// Digits as number words, so "2" and "Two" agree and a typo in "three" is still one (1990 stays a number).
const NUMBER_WORDS: Record<string, string> = {
  '0': 'zero',
  '1': 'one',
  '2': 'two',
  '3': 'three',
  '4': 'four',
  '5': 'five',
  '6': 'six',
  '7': 'seven',
  '8': 'eight',
  '9': 'nine',
  '10': 'ten',
  '11': 'eleven',
  '12': 'twelve',
  '1st': 'first',
  '2nd': 'second',
  '3rd': 'third',
  '4th': 'fourth',
  '5th': 'fifth'
}

/** The tokens of a folded text: letters and digits, `&` read as "and", small numbers as words. */
function tokensOf(folded: string): string[] {
  return (
    folded
      .replace(/&/g, ' and ')
      // A name's pluses are part of it: GRAND++ is not GRAND (C++, Ca2+ read alike on both sides).
      .replace(/([a-z0-9])(\+{1,2})(?![a-z0-9])/g, (_, last: string, plus: string) => `${last} ${'plus '.repeat(plus.length)}`)
      .split(/[^a-z0-9]+/)
      .filter((token) => token !== '')
      .map((token) => NUMBER_WORDS[token] ?? token)
  )
}

// A subtitle starts after a colon, a spaced dash, or a question or exclamation mark followed by more words;
// not after a full stop, which ends abbreviations (Proc., E. coli) far more often than main titles.
const SUBTITLE_SEPARATOR = /\s*(?::|\s[-–—]\s|[?!]\s)/

/** A title as comparable tokens: all of them and those of its main title (before the first subtitle separator). */
export function normaliseTitle(raw: string): NormalisedTitle {
  const folded = foldText(raw)
  const truncated = /(?:…|\.\.\.)\s*$/.test(folded)
  const cut = folded.replace(/\s*(?:…|\.\.\.)\s*$/, '')
  const tokens = tokensOf(cut)
  const separator = SUBTITLE_SEPARATOR.exec(cut)
  const main = separator === null ? tokens : tokensOf(cut.slice(0, separator.index))
  // An abbreviation's full stop may be followed by the subtitle's colon or a comma (Continual Lea.: a study).
  const abbreviations = [...cut.matchAll(/(?:^|[^a-z0-9])([a-z]{2,})\.(?=[\s:;,)]|$)/g)].map((found) => found[1] as string)
  return { tokens, mainTokens: main.length > 0 ? main : tokens, truncated, abbreviations }
}

/** A person's or an organisation's name as comparable tokens: "{\"U}ller, H.-J." is ["uller", "h", "j"]. */
export function normaliseName(raw: string): string[] {
  return tokensOf(foldText(raw).replace(/&/g, ' '))
}
