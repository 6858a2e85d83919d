/**
 * The generator's own word lists (bench/verify-corpus/generate.ts): British and American spellings, the words
 * a fabricated title wraps round a real title's key words, and names with diacritics, particles, double family
 * names and CJK names (given to some first authors, so every author perturbation has people to apply to). The
 * titles themselves are real (works.ndjson); none of these lists is the matcher's.
 */

const words = (text: string): string[] => text.trim().split(/\s+/)

/** British spellings and their American forms (the "spelling" perturbation swaps them either way). */
export const SPELLINGS: Record<string, string> = {
  behaviour: 'behavior',
  behavioural: 'behavioral',
  colour: 'color',
  organisation: 'organization',
  labour: 'labor',
  tumour: 'tumor',
  tumours: 'tumors',
  oestrogen: 'estrogen',
  haemoglobin: 'hemoglobin',
  haematopoietic: 'hematopoietic',
  leukaemia: 'leukemia',
  anaemia: 'anemia',
  oesophageal: 'esophageal',
  paediatric: 'pediatric',
  ageing: 'aging',
  fibre: 'fiber',
  foetus: 'fetus',
  centre: 'center',
  theatre: 'theater',
  programme: 'program',
  catalogue: 'catalog',
  defence: 'defense',
  neighbourhood: 'neighborhood',
  signalling: 'signaling',
  modelling: 'modeling',
  labelled: 'labeled',
  labelling: 'labeling',
  travelling: 'traveling',
  optimisation: 'optimization',
  optimise: 'optimize',
  generalisation: 'generalization',
  regularisation: 'regularization',
  normalisation: 'normalization',
  visualisation: 'visualization',
  characterisation: 'characterization',
  randomised: 'randomized',
  minimisation: 'minimization',
  maximisation: 'maximization',
  parametrisation: 'parametrization',
  tokenisation: 'tokenization',
  quantisation: 'quantization',
  summarisation: 'summarization',
  hospitalisation: 'hospitalization',
  analyse: 'analyze',
  analysing: 'analyzing',
  recognise: 'recognize',
  utilisation: 'utilization',
  harmonisation: 'harmonization',
  synthesise: 'synthesize'
}

/** Words a fabricated title wraps round a real title's key words (what language models write). */
export const SCAFFOLDS = {
  prefixes: words(`Towards Rethinking Revisiting Understanding Learning Efficient Scalable Robust Unified Adaptive Improving
    Benchmarking Exploring Characterizing`),
  frames: [
    'A Unified Framework for',
    'A Survey of',
    'On the Limits of',
    'Beyond',
    'Toward Principled',
    'Deep',
    'Improved',
    'Novel Approaches to',
    'Mechanisms of',
    'The Role of',
    'Evidence for'
  ],
  subtitles: [
    'A Systematic Review',
    'Theory and Practice',
    'A Comprehensive Benchmark',
    'New Insights and Applications',
    'A Multi-Center Cohort Study',
    'Challenges and Opportunities',
    'Implications for Clinical Practice',
    'An Empirical Study',
    'A Large-Scale Analysis'
  ]
}

/** Family names with diacritics, particles and double names, as first authors of some works. */
export const FAMILIES = words(`Müller Schröder Gödel Jørgensen Ødegaard Sørensen Åberg Łukasiewicz Dvořák Šimić Nováková
  Erdős Pérez García-López Núñez Muñoz Gonçalves Lefèvre Nguyễn Çelik Yılmaz Öztürk Håkansson Krüger Köhler Günther
  Schäfer Jäger Bräuer Würtz Fernández-Ruiz Martínez-Sánchez Ben-David Abu-Salih Smith-Jones Lloyd-Webber`)

export const GIVENS = words(`Hans Jürgen Søren Åsa Łucja José María Zoë Chloé Renée François Ana João Émile Inès Jan Jean-Luc
  Hans-Jörg Anne-Marie Peter Laura`)

/** Family names written with a particle the registry may keep or drop. */
export const PARTICLE_NAMES: [string, string][] = [
  ['van der', 'Berg'],
  ['van', 'Dijk'],
  ['de', 'Souza'],
  ['von', 'Neumann'],
  ['da', 'Silva'],
  ['van den', 'Bosch'],
  ['di', 'Marco'],
  ['de la', 'Cruz'],
  ['ter', 'Haar'],
  ['dos', 'Santos']
]

/** CJK family names (one syllable), to tell a name written family-first from one the registry swapped. */
export const CJK_FAMILIES = new Set(
  words(`wang li zhang liu chen yang huang zhao zhou wu xu sun ma zhu hu guo he lin gao luo zheng liang xie song tang han
    feng deng cao peng zeng xiao tian dong pan yuan cai jiang yu du ye cheng wei su lu ding ren shen yao jin fan kim park
    choi jung kang cho yoon jang lim shin`)
)

/** Names no real first author here has: the invented authors of a fabricated reference. */
export const INVENTED = {
  families: words(`Okonkwo Fitzgerald Lindqvist Castellanos Abernathy Moriarty Valdivia Kowalczyk Hargreaves Templeton
    Oyelaran Vasquez Ashworth Delacroix Brannigan Quigley Rasmussen Thorvaldsen Whitcombe Yarborough`),
  givens: words('Emily Marcus Priya Isabella Ahmed Soo-Yeon Nadia Oliver Chiara Tomasz Ingrid Rafael')
}
