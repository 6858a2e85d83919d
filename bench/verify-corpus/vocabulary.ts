/**
 * The synthetic registry's words (bench/verify-corpus/generate.ts): per field, nouns, adjectives and verbs
 * in -ing as titles use them, with the words that trip a matcher on purpose (diacritics, Greek letters,
 * hyphenated compounds, British spellings, species in italics); names with diacritics, particles, CJK
 * names and organisations.
 */

const words = (text: string): string[] => text.trim().split(/\s+/)

export interface Field {
  name: string
  nouns: string[]
  adjectives: string[]
  gerunds: string[]
  /** Words a registry sets in italics (species, genes). */
  italic: string[]
}

export const FIELDS: Field[] = [
  {
    name: 'biology',
    nouns: words(`protein enzyme membrane genome mutation receptor pathway neuron synapse mitochondria ribosome chromatin
      transcription translation expression phenotype genotype metabolism apoptosis autophagy inflammation cytokine antibody
      antigen vaccine pathogen virus bacterium microbiome fungus parasite host tissue organoid embryo stem-cell differentiation
      regeneration signalling kinase phosphatase ligand channel transporter hormone oestrogen haemoglobin tumour carcinoma
      leukaemia lymphocyte macrophage neutrophil platelet plasma serum biomarker sequencing assay screening knockout
      α-synuclein β-amyloid γ-secretase microRNA lipid glucose insulin cholesterol behaviour ageing diet fibre foetus
      population evolution selection speciation adaptation biodiversity ecosystem habitat pollinator predator prey
      photosynthesis chloroplast root seedling drought salinity nitrogen phosphorus`),
    adjectives: words(`cellular molecular genetic epigenetic metabolic immune innate adaptive chronic acute inflammatory
      mitochondrial neuronal synaptic cortical hepatic renal cardiac pulmonary intestinal microbial viral bacterial fungal
      transgenic evolutionary ecological marine terrestrial tropical paediatric maternal neonatal oxidative hypoxic
      non-coding single-cell genome-wide long-term`),
    gerunds: words(`regulating modulating targeting mapping profiling sequencing imaging inhibiting activating silencing
      tracking predicting engineering editing`),
    italic: words('Escherichia-coli Drosophila Arabidopsis Caenorhabditis Saccharomyces Mus-musculus Danio-rerio Plasmodium')
  },
  {
    name: 'physics',
    nouns: words(`quantum entanglement decoherence superconductivity superfluid magnetism spin lattice phonon photon electron
      plasma laser cavity resonator waveguide soliton vortex turbulence boundary-layer shock wave dispersion scattering
      diffraction interferometer spectroscopy spectrum absorption emission fluorescence crystal semiconductor graphene
      nanotube nanowire metamaterial topology insulator conductor transistor qubit gate decay neutrino hadron quark gluon
      boson fermion meson muon detector collider accelerator galaxy cluster quasar pulsar black-hole gravitational-wave
      cosmology inflation dark-matter redshift nebula exoplanet atmosphere dynamo convection viscosity rheology colloid
      polymer granular friction elasticity fracture thermodynamics entropy equilibrium fluctuation Schrödinger Poincaré
      Erdős Bose–Einstein Hartree–Fock centre metre`),
    adjectives: words(`quantum topological nonlinear non-linear relativistic ultrafast ultracold coherent incoherent chaotic
      stochastic thermal magnetic electric optical photonic plasmonic acoustic elastic viscous turbulent anisotropic
      isotropic ferromagnetic antiferromagnetic superconducting two-dimensional three-dimensional high-energy low-temperature
      cosmological galactic stellar solar`),
    gerunds: words(`probing measuring simulating controlling trapping cooling tuning detecting observing constraining
      modelling imaging`),
    italic: words('in-situ ab-initio')
  },
  {
    name: 'computing',
    nouns: words(`algorithm compiler kernel scheduler cache memory processor network protocol router packet latency
      throughput bandwidth database query index transaction consistency replication consensus blockchain cryptography
      encryption signature authentication vulnerability malware intrusion firewall privacy anonymity learning network
      transformer attention embedding classifier regression clustering segmentation detection recognition translation
      summarization retrieval recommendation ranking reinforcement policy reward agent robot planning navigation
      localization vision graph tree heap hash automaton grammar parser type verification proof theorem solver
      optimization heuristic benchmark dataset workload microservice container virtualization cloud edge sensor
      smartphone interface visualization crowdsourcing programme catalogue behaviour colour organisation`),
    adjectives: words(`distributed parallel concurrent scalable efficient robust adversarial federated probabilistic
      differentiable neural convolutional recurrent generative contrastive self-supervised semi-supervised unsupervised
      interpretable explainable lightweight real-time energy-efficient fault-tolerant decentralized secure formal
      symbolic approximate incremental dynamic static large-scale open-source`),
    gerunds: words(`learning optimizing scheduling compressing caching verifying fuzzing scaling indexing partitioning
      routing encoding decoding training`),
    italic: words('et-al')
  },
  {
    name: 'social',
    nouns: words(`inequality poverty income wealth labour employment unemployment migration immigration urbanization
      housing education schooling literacy health healthcare insurance pension welfare policy reform governance democracy
      election voting polarization populism trust corruption institution regulation market competition trade tariff
      globalization inflation monetary fiscal taxation debt growth productivity innovation entrepreneurship firm household
      consumption savings gender discrimination race ethnicity identity religion family marriage fertility mortality
      childhood adolescence ageing crime policing incarceration violence conflict war peace refugee community
      neighbourhood network media social-media misinformation survey panel experiment behaviour attitude preference
      norm wellbeing happiness organisation programme defence`),
    adjectives: words(`economic social political fiscal monetary rural urban regional global local informal public private
      comparative longitudinal cross-national experimental randomized causal structural institutional demographic
      educational racial gendered intergenerational post-war low-income middle-income`),
    gerunds: words(`measuring explaining understanding reducing rethinking estimating comparing assessing evaluating
      predicting`),
    italic: words('de-facto laissez-faire')
  },
  {
    name: 'humanities',
    nouns: words(`literature novel poetry poem drama theatre narrative rhetoric translation manuscript archive
      historiography memory modernity modernism romanticism enlightenment renaissance reformation empire colonialism
      nation nationalism revolution monarchy republic church monastery pilgrimage ritual myth folklore music opera
      symphony painting sculpture architecture cathedral landscape museum exhibition collection philosophy ethics
      aesthetics metaphysics epistemology ontology phenomenology language dialect grammar syntax semantics phonology
      lexicon etymology orthography inscription papyrus chronicle biography autobiography letter diary censorship press
      print book reader authorship gender sexuality body emotion honour colour Gödel Montaigne Dvořák Brontë Café
      naïveté Québec São-Paulo Kraków Zürich`),
    adjectives: words(`medieval early-modern classical ancient byzantine victorian colonial postcolonial imperial baroque
      gothic romantic modernist literary poetic musical visual religious secular sacred vernacular oral written
      comparative philosophical moral political cultural intellectual transatlantic mediterranean nineteenth-century
      twentieth-century`),
    gerunds: words(`reading writing rethinking remembering translating performing imagining collecting narrating
      reconsidering`),
    italic: words('Don-Quixote Hamlet Beowulf Odyssey')
  }
]

/** Templates of a main title: N a noun, A an adjective, G a verb in -ing, X a word set in italics, # a number word. */
export const MAIN_TEMPLATES = [
  'A N of N in N',
  'A N and A N',
  'G N in A N',
  'The N of A N',
  'N and N in A N',
  'On the A N of N',
  'A N G N',
  'N, N and N in X',
  'G the N of N',
  'A N and N of A N',
  '# A N of N',
  'N of N in X',
  'Towards A N of N',
  'The A N of N versus N',
  'A N in the N of N'
]

export const SUBTITLE_TEMPLATES = [
  'a A N',
  'evidence from N',
  'a systematic review',
  'a A study of N',
  'N and N revisited',
  'the case of N',
  'lessons from A N'
]

export const NUMBER_WORDS = ['Two', 'Three', 'Four', 'Five', 'Six', 'Ten']

/** British spellings and their American forms (the corpus's "spelling" perturbation swaps them). */
export const SPELLINGS: Record<string, string> = {
  behaviour: 'behavior',
  colour: 'color',
  organisation: 'organization',
  labour: 'labor',
  tumour: 'tumor',
  oestrogen: 'estrogen',
  haemoglobin: 'hemoglobin',
  leukaemia: 'leukemia',
  paediatric: 'pediatric',
  ageing: 'aging',
  fibre: 'fiber',
  foetus: 'fetus',
  centre: 'center',
  metre: 'meter',
  theatre: 'theater',
  programme: 'program',
  catalogue: 'catalog',
  defence: 'defense',
  honour: 'honor',
  neighbourhood: 'neighborhood',
  signalling: 'signaling',
  modelling: 'modeling'
}

/** Family names: diacritics, particles, double names, CJK, plain. */
export const FAMILIES = words(`Müller Schröder Gödel Jørgensen Ødegaard Sørensen Åberg Łukasiewicz Kowalski Dvořák Šimić
  Nováková Erdős Pérez García-López Núñez Muñoz Gonçalves Brontë Lefèvre Ngô Nguyễn Çelik Yılmaz Öztürk Håkansson
  Smith Johnson Williams Brown Jones Miller Davis Wilson Anderson Taylor Thomas Moore Martin Jackson Thompson White
  Harris Clark Lewis Robinson Walker Young Allen King Wright Scott Green Baker Adams Nelson Hill Campbell Mitchell
  Roberts Carter Phillips Evans Turner Torres Parker Collins Edwards Stewart Morris Murphy Cook Rogers Morgan Peterson
  Cooper Reed Bailey Bell Gomez Kelly Howard Ward Cox Diaz Richardson Wood Watson Brooks Bennett Gray James Reyes Cruz
  Hughes Price Myers Long Foster Sanders Ross Morales Powell Sullivan Russell Ortiz Jenkins Gutierrez Perry Butler
  Barnes Fisher Henderson Coleman Simmons Patterson Jordan Reynolds Hamilton Graham Kimura Tanaka Suzuki Yamamoto
  Nakamura Kobayashi Ivanov Petrova Smirnov Kuznetsova Rossi Bianchi Ferrari Esposito Romano Dubois Lambert Fontaine
  Bakker Visser Jansen Nielsen Hansen Larsen Andersson Lindqvist Virtanen Korhonen Papadopoulos Nowak Horváth
  Kovács Popescu Schmidt Schneider Fischer Weber Wagner Becker Hoffmann Koch Richter Klein Wolf Neumann Schwarz
  Zimmermann Krüger Hartmann Lange Werner Krause Meier Lehmann Köhler Bauer Kaiser Fuchs Vogel Keller Günther`)

export const GIVENS = words(`Hans Jürgen Søren Åsa Łucja José María Zoë Chloé Renée François Ana João Émile Inès Jan
  John Mary Robert Linda Michael Sarah David Laura James Emma Peter Anna Thomas Clara Daniel Julia Mark Elena Paul
  Sofia Andrew Nora Kevin Ruth Simon Alice Henrik Ingrid Pierre Marie Luca Giulia Piotr Olga Dmitri Yuki Kenji Aiko`)

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
  ['al', 'Rashid']
]

/** Chinese and Korean names: family first in the language, either order in citations. */
export const CJK_FAMILIES = words('Wang Li Zhang Liu Chen Yang Huang Zhao Zhou Wu Xu Sun Ma Zhu Hu Guo He Lin Kim Park Choi Jung')
export const CJK_GIVENS = words('Wei Fang Min Jing Lei Yan Hui Tao Jun Ying Xin Hao Yu Ming Seo-yeon Ji-hoon Min-jun')

export const ORGANISATIONS = [
  'World Health Organization',
  'European Space Agency',
  'National Research Council',
  'Intergovernmental Panel on Climate Change',
  'Open Science Collaboration',
  'International Monetary Fund',
  'ATLAS Collaboration',
  'Human Genome Consortium'
]
