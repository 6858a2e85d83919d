import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { seededRandom } from '../../bench/lib/random.js'
import {
  chooseLocation,
  namespaceLocHandles,
  namespaceLocs,
  planLocations,
  referencedHandles,
  renderShowUrls
} from '../../src/handle/locations.js'
import type { LocationDecision, LocationRequest } from '../../src/handle/locations.js'
import { automaticLocatt } from '../../src/handle/negotiate.js'
import type { HandleValue } from '../../src/handle/types.js'

// ---------------------------------------------------------------------------------------------------
// Fixtures and helpers

const FIXTURES = new URL('../fixtures/', import.meta.url)
const fixtureText = (name: string): string => readFileSync(new URL(name, FIXTURES), 'utf8')
const fixtureJson = (name: string): any => JSON.parse(fixtureText(name))

function val(index: number, type: string, value: string): HandleValue {
  return { index, type, data: { format: 'string', value }, ttl: 86400 }
}

interface ExampleValue {
  index: number
  type: string
  value: string
}
const LOC_EXAMPLES: Array<{ record?: ExampleValue[]; value?: string }> = fixtureJson('loc_10320_examples.json').examples
const exampleRecord = (i: number): HandleValue[] => (LOC_EXAMPLES[i]?.record ?? []).map((r) => val(r.index, r.type, r.value))
const b2handle = (name: string): HandleValue[] => fixtureJson(`b2handle/${name}`).values

/** Accept headers as real clients send them. */
const BROWSER = {
  accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
  userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'
}
const CURL = { accept: '*/*', userAgent: 'curl/8.5.0' }
const BIBTEX = { accept: 'application/x-bibtex; charset=utf-8', userAgent: 'python-requests/2.31' } // doi2bib
const CSL_JSON = { accept: 'application/vnd.citationstyles.csl+json', userAgent: 'citation-js' }

const always = (u: number) => () => u

function req(values: readonly HandleValue[], more: Partial<LocationRequest> = {}): LocationRequest {
  return { handle: '10.1000/x', values, includes: new Map(), namespaceValues: [], locatt: [], random: always(0.5), ...more }
}

/** What the user ends up at: the redirect target, or 'values page'. */
function target(d: LocationDecision): string {
  return d.kind === 'redirect' ? d.href : 'values page'
}

function redirect(d: LocationDecision): Extract<LocationDecision, { kind: 'redirect' }> {
  if (d.kind !== 'redirect') throw new Error(`expected a redirect, got ${JSON.stringify(d)}`)
  return d
}

// DOI Handbook §11.4.2 / [DOI-HB3] worked example (loc_10320_examples.json #0, doi:10.123/456).
const HANDBOOK = exampleRecord(0)
// Crossref multiple resolution, 10.1525/bio.2009.59.5.9 ([DOI-HB5] Figure 5-2; loc_10320_examples.json #1).
const MR_LIST = exampleRecord(1)
// Crossref per-DOI conneg location of 2012, 10.1126/science.169.3946.635 (loc_10320_examples.json #2).
const SCIENCE_1970 = exampleRecord(2)
// Crossref's service handle 10.SERV/CROSSREF as captured in 2020: the namespace location of every Crossref DOI.
const CROSSREF_SERVICE: HandleValue[] = fixtureJson('handle_10.SERV-CROSSREF_record_2020.json').values

// The reference probe's 10.5555/loc (cnri_hdlproxy_9.2.0_probe.txt header: URL idx1 + 10320/loc idx2 with
// id1 w1, id2 w0 country=gb, id3 w0 view=metadata). Attributes are written in the order the probe's
// showurls output lists them, because we write attributes in source order (Java writes HashMap order).
const PROBE_LOC = [
  val(1, 'URL', 'http://example.org/loc-url'),
  val(
    2,
    '10320/loc',
    '<locations>\n<location weight="1" id="1" href="http://example.org/loc-a"/>\n' +
      '<location country="gb" weight="0" id="2" href="http://example.org/loc-b"/>\n' +
      '<location weight="0" view="metadata" id="3" href="http://example.org/meta"/>\n</locations>'
  )
]
const CURL_LOCATT = automaticLocatt(CURL) // the probe was recorded with curl: http_role:no_conneg

// DataCite DOI 10.17879/91968401496 and DataCite's namespace location, as doi.org's showurls lists them ([OBS-MS]).
const DATACITE_DOI = '10.17879/91968401496'
const DATACITE = [val(1, 'URL', 'https://datastore.uni-muenster.de/doi/10.17879/91968401496')]
const DATACITE_NS = [
  val(1, '10320/loc', '<locations><location weight="0" http_role="conneg" href_template="https://data.crosscite.org/{hdl}"/></locations>')
]

/**
 * The body of one response in the probe transcript, from after the headers up to the next request,
 * without trailing newlines: the transcript does not keep them (a redirect body, which ends without a
 * newline, is followed by the same blank line as the showurls body, which XTag.write ends with '\n').
 */
function probeBody(request: string): string {
  const text = fixtureText('cnri_hdlproxy_9.2.0_probe.txt')
  const start = text.indexOf(`=== ${request}`)
  const bodyStart = text.indexOf('\n\n', start) + 2
  const next = text.indexOf('\n=== ', bodyStart)
  return text.slice(bodyStart, next).replace(/\n+$/, '')
}

// ---------------------------------------------------------------------------------------------------

describe('where a request is redirected', () => {
  it.each([
    // [HDB] Handbook example: a UK client gets the uk mirror through the country chooser
    ['Handbook: a client in GB goes to the uk location', req(HANDBOOK, { country: 'GB' }), 'https://uk.example.com/'],
    // locatt runs before country in every chooser order
    ['Handbook: locatt=id:1 wins over the GB country', req(HANDBOOK, { country: 'GB', locatt: ['id:1'] }), 'https://www1.example.com/'],
    ['Handbook: locatt=id:0 selects the weight-0 uk location', req(HANDBOOK, { locatt: ['id:0'] }), 'https://uk.example.com/'],
    ['Handbook: locatt=country:gb selects uk', req(HANDBOOK, { locatt: ['country:gb'] }), 'https://uk.example.com/'],
    // locatt values are case-sensitive ([HNS92] filterBasedOnLinkParam uses equals): no match, filter ignored
    [
      'Handbook: locatt=country:GB matches nothing and is ignored',
      req(HANDBOOK, { locatt: ['country:GB'], random: always(0.7) }),
      'https://www1.example.com/'
    ],
    // the country chooser compares case-insensitively and trims ([HNS92] filterBasedOnCountry)
    ['Handbook: country " gb " still matches', req(HANDBOOK, { country: 'gb' }), 'https://uk.example.com/'],

    // probe transcript, second probe: GET /10.5555/loc with curl
    [
      'probe 10.5555/loc: default goes to loc-a, the only positive weight',
      req(PROBE_LOC, { locatt: CURL_LOCATT, random: always(0.999) }),
      'http://example.org/loc-a'
    ],
    [
      'probe 10.5555/loc: random 0 still goes to loc-a',
      req(PROBE_LOC, { locatt: CURL_LOCATT, random: always(0) }),
      'http://example.org/loc-a'
    ],
    ['probe 10.5555/loc?locatt=country:gb → loc-b', req(PROBE_LOC, { locatt: ['country:gb', ...CURL_LOCATT] }), 'http://example.org/loc-b'],
    [
      'probe 10.5555/loc?locatt=view:metadata → meta',
      req(PROBE_LOC, { locatt: ['view:metadata', ...CURL_LOCATT] }),
      'http://example.org/meta'
    ],
    ['probe 10.5555/loc?locatt=id:2 → loc-b', req(PROBE_LOC, { locatt: ['id:2', ...CURL_LOCATT] }), 'http://example.org/loc-b'],
    [
      'probe 10.5555/loc?locatt=id:9 matches nothing → loc-a',
      req(PROBE_LOC, { locatt: ['id:9', ...CURL_LOCATT] }),
      'http://example.org/loc-a'
    ],
    // a key without value keeps the locations that have the attribute ([HNS92] filterBasedOnLinkParam)
    ['locatt=view (key only) → meta', req(PROBE_LOC, { locatt: ['view'] }), 'http://example.org/meta'],
    // probe: ?type=URL and ?index=1 leave only the URL value, so the plain first-URL rule applies (case A)
    ['probe 10.5555/loc?type=URL → loc-url', req(PROBE_LOC.filter((v) => v.type === 'URL')), 'http://example.org/loc-url'],

    // Crossref MR-LIST 10.1525/bio.2009.59.5.9, chooseby="locatt,country,weighted"
    [
      'MR-LIST: a plain request goes to the mr.crossref.org choice page',
      req(MR_LIST, { random: always(0) }),
      'http://mr.crossref.org/iPage?doi=10.1525%2Fbio.2009.59.5.9'
    ],
    [
      'MR-LIST: locatt=id:1 → the choice page',
      req(MR_LIST, { locatt: ['id:1'] }),
      'http://mr.crossref.org/iPage?doi=10.1525%2Fbio.2009.59.5.9'
    ],
    [
      'MR-LIST: locatt=country:uk → BioOne',
      req(MR_LIST, { locatt: ['country:uk'] }),
      'http://www.bioone.org/doi/full/10.1525/bio.2009.59.5.9'
    ],
    ['MR-LIST: ?country=uk → BioOne', req(MR_LIST, { country: 'uk' }), 'http://www.bioone.org/doi/full/10.1525/bio.2009.59.5.9'],
    // the record says "uk", which is not an ISO 3166 code, so a GeoIP country GB does not match it
    [
      'MR-LIST: a GB client still gets the choice page',
      req(MR_LIST, { country: 'GB' }),
      'http://mr.crossref.org/iPage?doi=10.1525%2Fbio.2009.59.5.9'
    ],

    // DataCite namespace conneg location ([OBS-MS], behaviour.md R9)
    [
      'DataCite: a BibTeX request goes to data.crosscite.org',
      req(DATACITE, { handle: DATACITE_DOI, namespaceValues: DATACITE_NS, locatt: automaticLocatt(BIBTEX) }),
      'https://data.crosscite.org/10.17879%2F91968401496'
    ],
    [
      'DataCite: a browser goes to the landing page',
      req(DATACITE, { handle: DATACITE_DOI, namespaceValues: DATACITE_NS, locatt: automaticLocatt(BROWSER), random: always(0) }),
      'https://datastore.uni-muenster.de/doi/10.17879/91968401496'
    ],
    [
      'DataCite: curl goes to the landing page',
      req(DATACITE, { handle: DATACITE_DOI, namespaceValues: DATACITE_NS, locatt: automaticLocatt(CURL), random: always(0.999) }),
      'https://datastore.uni-muenster.de/doi/10.17879/91968401496'
    ],

    // 10.SERV/CROSSREF as the namespace of a Crossref DOI (behaviour.md R9; the <xlocation> is not a location)
    [
      'Crossref: CSL-JSON goes to data.crossref.org',
      req(MR_LIST, { handle: '10.1525/bio.2009.59.5.9', namespaceValues: CROSSREF_SERVICE, locatt: automaticLocatt(CSL_JSON) }),
      'https://data.crossref.org/10.1525%2Fbio.2009.59.5.9'
    ],
    [
      'Crossref: a browser goes to the choice page',
      req(MR_LIST, { handle: '10.1525/bio.2009.59.5.9', namespaceValues: CROSSREF_SERVICE, locatt: automaticLocatt(BROWSER) }),
      'http://mr.crossref.org/iPage?doi=10.1525%2Fbio.2009.59.5.9'
    ],
    [
      'Crossref: action=metadata (role:metadata) does not reach the <xlocation>',
      req(MR_LIST, {
        namespaceValues: CROSSREF_SERVICE,
        locatt: ['role:metadata', ...automaticLocatt({ ...BROWSER, action: 'metadata' })]
      }),
      'http://mr.crossref.org/iPage?doi=10.1525%2Fbio.2009.59.5.9'
    ],
    // 2012 per-DOI conneg value: conneg requests get the metadata service
    [
      '10.1126 (2012): RDF goes to data.crossref.org',
      req(SCIENCE_1970, { locatt: automaticLocatt({ accept: 'application/rdf+xml' }) }),
      'http://data.crossref.org/10.1126/science.169.3946.635'
    ],

    // b2handle: chooseby written with spaces around '=', trailing space after </locations>
    [
      'b2handle: a browser goes to the weight-1 location',
      req(b2handle('handlerecord_with_10320LOC_PUBLIC.json'), { locatt: automaticLocatt(BROWSER), random: always(0) }),
      'http://foo.bar'
    ],
    [
      'b2handle: CSL-JSON goes to the conneg location',
      req(b2handle('handlerecord_with_10320LOC_PUBLIC.json'), { locatt: automaticLocatt(CSL_JSON) }),
      'http://foo.foo'
    ],
    [
      'b2handle: curl goes to the no_conneg location',
      req(b2handle('handlerecord_with_10320LOC_PUBLIC.json'), { locatt: automaticLocatt(CURL) }),
      'http://clipc-services.ceda.ac.uk/testdata/v1/novar_fx_dummy_historical_r5i1p1_CHECKCONNEG.nc'
    ],
    ['b2handle: an empty 10320/LOC and no URL → values page', req(b2handle('handlerecord_with_empty_10320LOC_PUBLIC.json')), 'values page'],
    ['b2handle: no 10320/LOC and no URL → values page', req(b2handle('handlerecord_without_10320LOC_PUBLIC.json')), 'values page'],
    ['b2handle: custom types only → values page', req(b2handle('handlerecord_for_reading_PUBLIC.json')), 'values page']
  ])('%s', (_name, request, expected) => {
    expect(target(chooseLocation(request))).toBe(expected)
  })

  // Handbook: "Other clients get id 1 or id 2 at random"; never uk (weight 0) nor the legacy URL (weight 0).
  it.each([0, 0.1, 0.25, 0.49, 0.5, 0.51, 0.75, 0.999])('Handbook: a client outside GB gets www1 or www2 (random %s)', (u) => {
    const href = target(chooseLocation(req(HANDBOOK, { country: 'US', random: always(u) })))
    expect(['https://www1.example.com/', 'https://www2.example.com/']).toContain(href)
  })

  it('Handbook: the draw walks from the last candidate (random 0.2 → www2, 0.7 → www1)', () => {
    // behaviour.md R3 step 4: r = random·total = 0.4 is reached by www2 alone; r = 1.4 needs www1 too
    expect(target(chooseLocation(req(HANDBOOK, { random: always(0.2) })))).toBe('https://www2.example.com/')
    expect(target(chooseLocation(req(HANDBOOK, { random: always(0.7) })))).toBe('https://www1.example.com/')
  })

  it('10.1126 (2012): a browser gets one of the two weight-0 locations, as the 9.2 code weighs the URL 0', () => {
    // behaviour.md R2: with its own 10320/loc the URL gets urlWeight 0, so both candidates weigh 0 and the
    // pick is uniform; the 2012 handbook expected the URL (see the report)
    const hrefs = [0, 0.99].map((u) => target(chooseLocation(req(SCIENCE_1970, { locatt: automaticLocatt(BROWSER), random: always(u) }))))
    expect(hrefs).toEqual([
      'http://data.crossref.org/10.1126/science.169.3946.635',
      'http://www.sciencemag.org/cgi/doi/10.1126/science.169.3946.635'
    ])
  })
})

describe('choosers and their order', () => {
  const twoByAddressAndCountry = [
    val(
      1,
      '10320/loc',
      '<locations>' +
        '<location id="net" href="http://net.example/" addresses="10.0.0.0/8, 192.0.2.0/24" country="fr"/>' +
        '<location id="gb" href="http://gb.example/" country="gb"/></locations>'
    )
  ]
  const withChooseBy = (chooseby: string): HandleValue[] => [
    val(
      1,
      '10320/loc',
      `<locations ${chooseby}>` +
        '<location id="a" href="http://a.example/" country="gb" score="1"/>' +
        '<location id="b" href="http://b.example/" score="5" weight="0"/></locations>'
    )
  ]

  it.each([
    // behaviour.md §5: default order locatt,address,country,score,weighted: address decides before country
    [
      'default order: the address chooser runs before country',
      req(twoByAddressAndCountry, { clientAddress: '10.1.2.3', country: 'GB' }),
      'http://net.example/'
    ],
    [
      'an IPv4 client seen as ::ffff:a.b.c.d matches an IPv4 range',
      req(twoByAddressAndCountry, { clientAddress: '::ffff:192.0.2.7', country: 'GB' }),
      'http://net.example/'
    ],
    [
      'a client outside every range: country decides',
      req(twoByAddressAndCountry, { clientAddress: '203.0.113.9', country: 'GB' }),
      'http://gb.example/'
    ],
    ['no client address: the address chooser changes nothing', req(twoByAddressAndCountry, { country: 'GB' }), 'http://gb.example/'],
    // behaviour.md R3: choose_by is checked before chooseby
    ['choose_by wins over chooseby', req(withChooseBy('chooseby="country" choose_by="score"'), { country: 'GB' }), 'http://b.example/'],
    ['chooseby="country" alone', req(withChooseBy('chooseby="country"'), { country: 'GB', random: always(0.5) }), 'http://a.example/'],
    ['chooseby="score" keeps the highest score, even at weight 0', req(withChooseBy('chooseby="score"')), 'http://b.example/'],
    // [HNS92] the list is trimmed and lower-cased, blanks skipped, unknown names ignored
    ['chooseby " Score , ,bogus" still scores', req(withChooseBy('chooseby=" Score , ,bogus"')), 'http://b.example/'],
    [
      'chooseby="weighted,score" draws before scoring',
      req(withChooseBy('chooseby="weighted,score"'), { random: always(0.99) }),
      'http://a.example/'
    ],
    // with no chooser at all the weighted draw still happens
    ['chooseby="" falls to the weighted draw', req(withChooseBy('chooseby=""')), 'http://a.example/']
  ])('%s', (_name, request, expected) => {
    expect(target(chooseLocation(request))).toBe(expected)
  })

  it('the first root that sets chooseby wins (own values in order)', () => {
    const values = [
      val(1, '10320/loc', '<locations chooseby="score"><location href="http://low.example/" score="1"/></locations>'),
      val(2, '10320/loc', '<locations chooseby="country"><location href="http://high.example/" score="9" weight="0"/></locations>')
    ]
    expect(target(chooseLocation(req(values)))).toBe('http://high.example/')
  })
})

describe('answers the same for everyone (may be prepared once per record)', () => {
  const loc = (xml: string): HandleValue[] => [
    val(1, 'URL', 'http://example.org/url'),
    val(2, '10320/loc', `<locations>${xml}</locations>`)
  ]
  it.each([
    // reference case A: the first URL value, nothing chosen
    ['a record with URL values only', req([val(1, 'URL', 'http://example.org/a'), val(2, 'URL', 'http://example.org/b')]), true],
    // behaviour.md §5: weight 0 is never drawn while another has weight
    ['one location of positive weight among weight-0 ones (the probe 10.5555/loc)', req(PROBE_LOC, { locatt: CURL_LOCATT }), false],
    ['one location only', req(loc('<location href="http://one.example/"/>')), true],
    [
      'locatt leaves one location',
      req(loc('<location href="http://a.example/" view="x"/><location href="http://b.example/"/>'), { locatt: ['view:x'] }),
      true
    ],
    [
      'two locations of weight 1: a random draw',
      req(loc('<location href="http://a.example/"/><location href="http://b.example/"/>')),
      false
    ],
    [
      'two of weight 1 and one of 0: still a draw',
      req(loc('<location href="http://a.example/"/><location href="http://b.example/"/><location href="http://c.example/" weight="0"/>')),
      false
    ],
    [
      'a weight-1 and a weight-0 location: always the first',
      req(loc('<location href="http://a.example/"/><location href="http://b.example/" weight="0"/>')),
      true
    ],
    // behaviour.md §5: the country chooser tells clients apart as soon as a candidate names a country
    [
      'a location for one country',
      req(loc('<location href="http://a.example/" weight="0"/><location href="http://gb.example/" country="gb" weight="0"/>')),
      false
    ],
    [
      'a location for one network',
      req(loc('<location href="http://a.example/" weight="0"/><location href="http://net.example/" addresses="10.0.0.0/8" weight="0"/>')),
      false
    ],
    [
      'a country named after the choice is already made',
      req(loc('<location href="http://a.example/" score="9"/><location href="http://gb.example/" country="gb"/>'), { locatt: [] }),
      false
    ],
    [
      'chooseby="score" decides before any country',
      req(
        loc('').concat([
          val(
            3,
            '10320/loc',
            '<locations chooseby="score,country"><location href="http://a.example/" score="9"/><location href="http://gb.example/" country="gb"/></locations>'
          )
        ])
      ),
      true
    ]
  ])('%s', (_name, request, expected) => {
    const decision = redirect(chooseLocation(request))
    expect(decision.sameForEveryone).toBe(expected)
  })
})

describe('urlOnly: the answer depends on the record only through its chosen URL value (the door’s copy redirects)', () => {
  const url = val(1, 'URL', 'https://pub.example/a')
  const sameHref = val(3, '10320/loc', '<locations><location href="https://pub.example/a" weight="1"/></locations>')
  const refresh = val(4, '10320/headers', '<meta http-equiv="refresh" content="0; url=https://elsewhere.example/"/>')
  it.each<[string, LocationRequest, boolean]>([
    // [case, request, urlOnly]
    ['a record with one URL value and no 10320/loc (reference case A)', req([url]), true],
    [
      'its URL chosen beside the Crossref service’s namespace locations, a browser asking',
      req([url], { namespaceValues: CROSSREF_SERVICE, locatt: automaticLocatt(BROWSER) }),
      true
    ],
    ['a 10320/loc location chosen, though its href is the URL value’s', req([url, sameHref], { locatt: [] }), false],
    ['a 10320/headers refresh to another URL: not on this page, but on the page of a record whose URL it names', req([url, refresh]), false]
  ])('%s: %s', (_name, request, expected) => {
    expect(redirect(chooseLocation(request)).urlOnly).toBe(expected)
  })
})

describe('a plan built once per record gives the same decisions', () => {
  it.each([
    ['the probe 10.5555/loc for curl', req(PROBE_LOC, { locatt: CURL_LOCATT })],
    ['the probe 10.5555/loc from GB', req(PROBE_LOC, { locatt: CURL_LOCATT, country: 'GB' })],
    ['DataCite conneg for BibTeX', req(DATACITE, { handle: DATACITE_DOI, namespaceValues: DATACITE_NS, locatt: automaticLocatt(BIBTEX) })],
    ['the handbook example for a browser', req(HANDBOOK, { locatt: automaticLocatt(BROWSER) })]
  ])('%s', (_name, request) => {
    const plan = planLocations(request)
    expect(chooseLocation(request, plan)).toEqual(chooseLocation(request))
    expect(chooseLocation(request, plan)).toEqual(chooseLocation(request, plan))
    expect(renderShowUrls(request, plan)).toEqual(renderShowUrls(request))
  })
})

describe('weights and the draw', () => {
  const weighted = (...weights: string[]): HandleValue[] => [
    val(
      1,
      '10320/loc',
      '<locations chooseby="weighted">' +
        weights.map((w, i) => `<location id="${i}" href="http://w${i}.example/"${w === '-' ? '' : ` weight="${w}"`}/>`).join('') +
        '</locations>'
    )
  ]

  it.each([
    // behaviour.md R3: weight default 1, negative counts as 0; non-numeric falls back to the default 1 (our choice)
    ['a missing weight counts as 1', weighted('0', '-'), 0.01, 'http://w1.example/'],
    ['a negative weight counts as 0', weighted('-3', '1'), 0, 'http://w1.example/'],
    ['a non-numeric weight counts as 1', weighted('abc', '0'), 0.5, 'http://w0.example/'],
    ['weight " 2 " is read trimmed', weighted('1', ' 2 '), 0.6, 'http://w1.example/'],
    // behaviour.md §5: weight 0 is never drawn unless all are 0 (Java would take the last one when r = 0)
    ['random 0 does not pick a trailing weight-0 location', weighted('1', '0'), 0, 'http://w0.example/'],
    ['all weights 0: uniform, random 0 → the first', weighted('0', '0', '0'), 0, 'http://w0.example/'],
    ['all weights 0: uniform, random 0.99 → the last', weighted('0', '0', '0'), 0.99, 'http://w2.example/'],
    ['all weights 0: uniform, random 0.5 → the middle', weighted('0', '-1', '0'), 0.5, 'http://w1.example/'],
    ['a random source returning 1 is clamped', weighted('1', '1'), 1, 'http://w0.example/']
  ])('%s', (_name, values, u, expected) => {
    expect(target(chooseLocation(req(values, { random: always(u) })))).toBe(expected)
  })

  it('draws in proportion to the weights: 1 and 3 give about 25% and 75%, weight 0 never', () => {
    // Seeded, so the statistical test is repeatable.
    const rng = seededRandom(20261122)
    const counts = new Map<string, number>()
    const values = weighted('1', '0', '3')
    for (let i = 0; i < 10_000; i++) {
      const href = target(chooseLocation(req(values, { random: rng })))
      counts.set(href, (counts.get(href) ?? 0) + 1)
    }
    expect(counts.get('http://w1.example/')).toBeUndefined()
    expect(Math.abs((counts.get('http://w0.example/') ?? 0) / 10_000 - 0.25)).toBeLessThan(0.02)
    expect(Math.abs((counts.get('http://w2.example/') ?? 0) / 10_000 - 0.75)).toBeLessThan(0.02)
  })
})

describe('candidates, in the reference order (seen through action=showurls)', () => {
  it('probe 10.5555/loc?action=showurls: byte for byte the reference output', () => {
    const body = probeBody('GET /10.5555/loc?action=showurls ')
    expect(body).toContain('<location mode="legacy" weight="0.0" href="http://example.org/loc-url"/>')
    expect(renderShowUrls(req(PROBE_LOC, { handle: '10.5555/loc' }))).toBe(body + '\n')
  })

  it("DataCite: byte for byte doi.org's showurls output ([OBS-MS])", () => {
    expect(renderShowUrls(req(DATACITE, { handle: DATACITE_DOI, namespaceValues: DATACITE_NS }))).toBe(
      '<locations>\n' +
        '<location mode="legacy" weight="1.0" href="https://datastore.uni-muenster.de/doi/10.17879/91968401496"/>\n' +
        '<location weight="0" http_role="conneg" href="https://data.crosscite.org/10.17879%2F91968401496" href_template="https://data.crosscite.org/{hdl}"/>\n' +
        '</locations>\n'
    )
  })

  const own = val(1, '10320/loc', '<locations include="10.1000/inc"><location href="http://own.example/"/></locations>')
  const url = val(2, 'URL', 'http://url.example/')
  const included = [val(1, '10320/loc', '<locations><location href="http://inc.example/"/></locations>')]
  const ns = [val(1, '10320/loc', '<locations><location href="http://ns.example/" weight="0"/></locations>')]
  const hrefs = (xml: string | undefined): string[] => [...(xml ?? '').matchAll(/ href="([^"]*)"/g)].map((m) => m[1] ?? '')

  it.each([
    // behaviour.md R3 step 1: own → include → legacy URL values → namespace
    [
      'own, include, legacy, namespace',
      req([own, url], { includes: new Map([['10.1000/inc', included]]), namespaceValues: ns }),
      ['http://own.example/', 'http://inc.example/', 'http://url.example/', 'http://ns.example/']
    ],
    [
      'an include that could not be fetched is skipped',
      req([own, url], { namespaceValues: ns }),
      ['http://own.example/', 'http://url.example/', 'http://ns.example/']
    ],
    [
      'no_legacy drops the URL values',
      req([val(1, '10320/loc', '<locations no_legacy="yes"><location href="http://own.example/"/></locations>'), url]),
      ['http://own.example/']
    ],
    [
      'no_nslocs drops the namespace locations',
      req([val(1, '10320/loc', '<locations no_nslocs="true"><location href="http://own.example/"/></locations>')], { namespaceValues: ns }),
      ['http://own.example/']
    ],
    // <xlocation> (10.SERV/CROSSREF) and other elements are not locations; <loc_template> is
    [
      'only <location> and <loc_template> elements count',
      req([
        val(
          1,
          '10320/loc',
          '<locations><xlocation href="http://x.example/"/><loc_template href="http://t.example/"/><Location href="http://l.example/"/></locations>'
        )
      ]),
      ['http://t.example/', 'http://l.example/']
    ],
    [
      'the 10.SERV/CROSSREF namespace value contributes its one <location>',
      req([url], { handle: '10.5555/12345678', namespaceValues: CROSSREF_SERVICE }),
      ['http://url.example/', 'https://data.crossref.org/10.5555%2F12345678']
    ]
  ])('%s', (_name, request, expected) => {
    expect(hrefs(renderShowUrls(request))).toEqual(expected)
  })

  it.each([
    // behaviour.md R2: URL weight 0 when the record has its own 10320/loc, 1.0 when only namespace locations exist
    [
      'own 10320/loc: URL weight 0.0',
      [val(1, '10320/loc', '<locations><location href="http://own.example/"/></locations>'), url],
      ns,
      '<location mode="legacy" weight="0.0" href="http://url.example/"/>'
    ],
    ['only namespace locations: URL weight 1.0', [url], ns, '<location mode="legacy" weight="1.0" href="http://url.example/"/>'],
    [
      'urlWeight="2" on the root',
      [val(1, '10320/loc', '<locations urlWeight="2"><location href="http://own.example/"/></locations>'), url],
      [],
      '<location mode="legacy" weight="2.0" href="http://url.example/"/>'
    ],
    // [HNS92] extractLegacyURLs: URL.xxx gets urlSubtypeWeight (0) next to a plain URL, else urlWeight
    [
      'URL.META next to a plain URL: 0.0',
      [url, val(3, 'URL.META', 'http://meta.example/')],
      ns,
      '<location mode="legacy" weight="0.0" href="http://meta.example/"/>'
    ],
    [
      'URL.META alone, namespace only: 1.0',
      [val(3, 'URL.META', 'http://meta.example/')],
      ns,
      '<location mode="legacy" weight="1.0" href="http://meta.example/"/>'
    ]
  ])('legacy URL weight: %s', (_name, values, namespaceValues, line) => {
    expect(renderShowUrls(req(values, { namespaceValues }))).toContain(line)
  })

  it.each([
    // behaviour.md R3 "Legacy-only handles": first exact URL 1.0, the rest 0.0
    [
      'legacy only: the first URL 1.0, the others 0.0',
      [val(1, 'URL', 'http://first.example/'), val(2, 'EMAIL', 'a@b'), val(3, 'URL', 'http://second.example/')],
      '<locations>\n<location mode="legacy" weight="1.0" href="http://first.example/"/>\n<location mode="legacy" weight="0.0" href="http://second.example/"/>\n</locations>\n'
    ],
    // the root name of the first 10320/loc is reused
    [
      "the first root's name is reused",
      [val(1, '10320/loc', '<locs><location href="http://a.example/"/></locs>')],
      '<locs>\n<location href="http://a.example/"/>\n</locs>\n'
    ],
    // XUtil.encodeString: & < > " ' and characters from U+00FF up are escaped
    [
      'values are escaped',
      [
        val(
          1,
          '10320/loc',
          '<locations><location href="http://a.example/?a=1&amp;b=&lt;&gt;&quot;&apos;" title="café ÿ Ā 😀"/></locations>'
        )
      ],
      '<locations>\n<location href="http://a.example/?a=1&amp;b=&lt;&gt;&quot;&#39;" title="café &#255; &#256; &#128512;"/>\n</locations>\n'
    ],
    ['no candidate at all → undefined (values page)', b2handle('handlerecord_with_empty_10320LOC_PUBLIC.json'), undefined],
    ['no URL and no location → undefined', b2handle('handlerecord_for_reading_PUBLIC.json'), undefined]
  ])('showurls: %s', (_name, values, expected) => {
    expect(renderShowUrls(req(values))).toBe(expected)
  })
})

describe('href_template', () => {
  const templated = (template: string): HandleValue[] => [
    val(1, '10320/loc', `<locations><location href_template="${template}"/></locations>`)
  ]
  it.each([
    // behaviour.md R3: {hdl} is URL-component-encoded ('/' → %2F, space → %20), {hdl:path} path-encoded
    ['{hdl}', 'https://data.crosscite.org/{hdl}', '10.17879/91968401496', 'https://data.crosscite.org/10.17879%2F91968401496'],
    ['{hdl} with a space', 'https://x.example/{hdl}', '10.1000/a b', 'https://x.example/10.1000%2Fa%20b'],
    ['{hdl:path}', 'https://x.example/{hdl:path}', '10.1000/a b?c', 'https://x.example/10.1000/a%20b%3Fc'],
    ['both, twice', 'https://x.example/{hdl:path}?id={hdl}&again={hdl}', '10.1/x', 'https://x.example/10.1/x?id=10.1%2Fx&again=10.1%2Fx'],
    ['an href wins over the template', '', '10.1/x', 'http://plain.example/']
  ])('%s', (name, template, handle, expected) => {
    const values = name.startsWith('an href')
      ? [val(1, '10320/loc', '<locations><location href="http://plain.example/" href_template="http://t.example/{hdl}"/></locations>')]
      : templated(template)
    expect(target(chooseLocation(req(values, { handle })))).toBe(expected)
  })

  it('trims the href', () => {
    expect(target(chooseLocation(req([val(1, '10320/loc', '<locations><location href="  http://a.example/ \n"/></locations>')])))).toBe(
      'http://a.example/'
    )
  })
})

describe('redirect status (http_sc)', () => {
  const loc = (root: string, location: string): HandleValue =>
    val(1, '10320/loc', `<locations ${root}><location href="http://a.example/" ${location}/></locations>`)
  it.each([
    // behaviour.md R2/R3: location first, then root, then namespace root; default 302; only 301/302/303/307/308
    ['no http_sc → 302', [loc('', '')], [], 302],
    ['location http_sc="303"', [loc('http_sc="301"', 'http_sc="303"')], [], 303],
    ['root http_sc="307"', [loc('http_sc="307"', '')], [], 307],
    [
      'namespace root http_sc="301" for a namespace location',
      [val(1, 'URL', 'http://url.example/')],
      [val(1, '10320/loc', '<locations http_sc="301"><location href="http://ns.example/" weight="1"/></locations>')],
      301
    ],
    ['10.SERV/CROSSREF root http_sc="302"', [], CROSSREF_SERVICE, 302],
    ["an invalid location http_sc falls through to the root's 308", [loc('http_sc="308"', 'http_sc="999"')], [], 308],
    ['http_sc="200" is not a redirect → 302', [loc('http_sc="200"', '')], [], 302]
  ])('%s', (_name, values, namespaceValues, status) => {
    expect(redirect(chooseLocation(req(values, { namespaceValues }))).status).toBe(status)
  })
})

describe('Vary: Accept', () => {
  it.each([
    // behaviour.md R2: Vary whenever some candidate's http_role contains "conneg" (no_conneg contains it too)
    ['DataCite with a namespace conneg location', req(DATACITE, { namespaceValues: DATACITE_NS, locatt: automaticLocatt(BIBTEX) }), true],
    ['DataCite, browser request', req(DATACITE, { namespaceValues: DATACITE_NS, locatt: automaticLocatt(BROWSER) }), true],
    ['b2handle conneg/no_conneg record', req(b2handle('handlerecord_with_10320LOC_PUBLIC.json')), true],
    ['probe 10.5555/loc: no http_role', req(PROBE_LOC), false],
    ['a plain URL record', req([val(1, 'URL', 'http://a.example/')]), false]
  ])('%s → %s', (_name, request, vary) => {
    expect(chooseLocation(request).vary).toBe(vary)
  })
})

describe('Link headers and 10320/headers', () => {
  it('a location with rel becomes a Link header; 10320/links come first', () => {
    const values = [
      val(
        1,
        '10320/loc',
        '<locations><location href="http://a.example/" rel="describedby" media-type="application/json" title="Metadata"/></locations>'
      ),
      val(
        2,
        '10320/links',
        '<links><location id="pdf" rel="item" href="http://a.example/f ile.pdf" media-type="application/pdf"/>' +
          '<location rel="alternate" anchor-id="pdf" href_template="http://b.example/{hdl}" title="Überblick" titlelang="de"/>' +
          '<location href="http://no-rel.example/"/></links>'
      )
    ]
    // [HNS92] getLinkValue: <encodeURL(href)>; anchor; rel; type; target-type; media; hreflang; title / title*
    expect(redirect(chooseLocation(req(values, { handle: '10.1/x' }))).linkHeaders).toEqual([
      '<http://a.example/f%20ile.pdf>; rel="item"; type="application/pdf"',
      '<http://b.example/10.1%2Fx>; anchor="http://a.example/f%20ile.pdf"; rel="alternate"; title*=UTF-8\'de\'%C3%9Cberblick',
      '<http://a.example/>; rel="describedby"; type="application/json"; title="Metadata"'
    ])
  })

  it('10320/headers: header lines, <head> lines and what a record may not set', () => {
    const values = [
      val(1, 'URL', 'http://a.example/'),
      val(
        2,
        '10320/headers',
        'X-Handle: {hdl}\r\n<meta name="hdl" content="{hdl:path}">\nno colon here\n\nSet-Cookie: a=b\nBad Name: x\nX-Path:{hdl:path}'
      )
    ]
    const d = redirect(chooseLocation(req(values, { handle: '10.1/a b' })))
    expect(d.href).toBe('http://a.example/') // behaviour.md R2: headers alone make it the engine; the URL weighs 1.0
    expect(d.extraHeaders).toEqual([
      ['X-Handle', '10.1%2Fa%20b'],
      ['X-Path', '10.1/a%20b']
    ])
    expect(d.headLines).toEqual(['<meta name="hdl" content="10.1/a%20b">'])
    expect(d.problems.some((p) => p.includes('Set-Cookie'))).toBe(true)
    expect(d.problems.some((p) => p.includes('Bad Name'))).toBe(true)
  })

  it('suppressNsHeaders keeps namespace links out', () => {
    const nsLinks = [
      val(1, '10320/links', '<links><location rel="x" href="http://ns.example/"/></links>'),
      val(2, '10320/loc', '<locations><location href="http://ns.example/loc" weight="0"/></locations>')
    ]
    const own = (attrs: string): HandleValue =>
      val(1, '10320/loc', `<locations ${attrs}><location href="http://own.example/"/></locations>`)
    expect(redirect(chooseLocation(req([own('')], { namespaceValues: nsLinks }))).linkHeaders).toEqual(['<http://ns.example/>; rel="x"'])
    expect(redirect(chooseLocation(req([own('suppressNsHeaders="yes"')], { namespaceValues: nsLinks }))).linkHeaders).toEqual([])
  })
})

describe('what is broken is skipped, never thrown', () => {
  const good = val(2, '10320/loc', '<locations><location href="http://good.example/"/></locations>')
  it.each([
    [
      'malformed XML next to a good value',
      [val(1, '10320/loc', '<locations><location href="x'), good],
      [],
      'http://good.example/',
      /malformed XML/
    ],
    ['a value that is not XML at all', [val(1, '10320/loc', 'just text'), good], [], 'http://good.example/', /no XML element/],
    // an unparsable 10320/loc still makes it the engine; with no parsed own loc the URL weighs 1.0
    [
      'only malformed XML and a URL: the URL',
      [val(1, '10320/loc', '<<<'), val(2, 'URL', 'http://url.example/')],
      [],
      'http://url.example/',
      /10320\/loc at index 1/
    ],
    [
      'an unknown chooser',
      [
        val(
          1,
          '10320/loc',
          '<locations chooseby="nearest,locatt"><location id="1" href="http://one.example/"/><location id="2" href="http://two.example/"/></locations>'
        )
      ],
      [],
      'http://two.example/',
      /unknown 10320\/loc chooser "nearest"/
    ],
    [
      'a location with neither href nor href_template',
      [val(1, '10320/loc', '<locations><location id="broken"/><location href="http://good.example/" weight="0"/></locations>')],
      [],
      'http://good.example/',
      /without href/
    ],
    [
      'only a location without href → values page',
      [val(1, '10320/loc', '<locations><location weight="1"/></locations>')],
      [],
      'values page',
      /without href/
    ],
    [
      'a broken CIDR range',
      [
        val(
          1,
          '10320/loc',
          '<locations chooseby="address"><location href="http://a.example/" addresses="10.0.0.0/99,nonsense"/><location href="http://b.example/" weight="0"/></locations>'
        )
      ],
      [],
      'http://a.example/',
      /not a CIDR range/
    ],
    [
      'a DOCTYPE with entities is not expanded',
      [val(1, '10320/loc', '<!DOCTYPE l [<!ENTITY e "http://evil.example/">]><locations><location href="&e;"/></locations>')],
      [],
      '&e;',
      /^$/
    ],
    [
      "10.SERV/CROSSREF's raw & inside an <xlocation>",
      [val(1, 'URL', 'http://url.example/')],
      CROSSREF_SERVICE,
      'http://url.example/',
      /^$/
    ]
  ])('%s', (_name, values, namespaceValues, expected, problem) => {
    const d = chooseLocation(req(values, { locatt: ['id:2'], clientAddress: '10.1.1.1', namespaceValues }))
    expect(target(d)).toBe(expected)
    expect(d.problems.join('\n')).toMatch(problem)
  })

  it('include loops end, and each handle is included once', () => {
    const a = [val(1, '10320/loc', '<locations><include>10.1/b</include><location href="http://a.example/"/></locations>')]
    const b = [val(1, '10320/loc', '<locations include="10.1/a"><location href="http://b.example/"/></locations>')]
    const request = req(a, {
      handle: '10.1/a',
      includes: new Map([
        ['10.1/a', a],
        ['10.1/b', b]
      ])
    })
    expect([...(renderShowUrls(request) ?? '').matchAll(/href="([^"]*)"/g)].map((m) => m[1])).toEqual([
      'http://a.example/',
      'http://b.example/'
    ])
    const d = chooseLocation({ ...request, handle: '10.1/other' })
    expect(d.problems.join('\n')).toMatch(/seen before/)
  })

  it('includes nested deeper than 20 levels stop there', () => {
    const includes = new Map<string, HandleValue[]>()
    for (let i = 0; i < 30; i++) {
      includes.set(`10.1/${i}`, [
        val(1, '10320/loc', `<locations include="10.1/${i + 1}"><location href="http://l${i}.example/"/></locations>`)
      ])
    }
    const d = chooseLocation(req([val(1, '10320/loc', '<locations include="10.1/0"/>')], { includes }))
    expect(d.problems.join('\n')).toMatch(/deeper than 20/)
    expect(target(d)).toMatch(/^http:\/\/l\d+\.example\/$/)
  })
})

describe('what the resolver must fetch', () => {
  it.each([
    [
      'include attribute and elements, nshdl, overridePrefix',
      [
        val(
          1,
          '10320/loc',
          '<locations include="10.1/a" nshdl="10.SERV/X" overridePrefix="10.9999"><include> 10.1/b </include><includeNamespace>10.5</includeNamespace></locations>'
        ),
        val(2, '10320/loc', '<locations include="10.1/a" overridePrefix="10.8888" no_nslocs="yes"/>')
      ],
      {
        includes: ['10.1/a', '10.1/b'],
        includeNamespaces: ['10.5'],
        nshdl: ['10.SERV/X'],
        overridePrefix: '10.9999',
        noNamespaceLocs: true
      }
    ],
    [
      'a record without 10320/loc',
      [val(1, 'URL', 'http://a.example/')],
      { includes: [], includeNamespaces: [], nshdl: [], noNamespaceLocs: false }
    ],
    [
      'malformed 10320/loc',
      [val(1, '10320/loc', '<locations include="x')],
      { includes: [], includeNamespaces: [], nshdl: [], noNamespaceLocs: false }
    ]
  ])('referencedHandles: %s', (_name, values, expected) => {
    expect(referencedHandles(values)).toEqual(expected)
  })

  it.each([
    // [CR-GL1499]: Crossref's prefix HS_NAMESPACE
    [
      'Crossref prefix',
      [val(1, 'HS_NAMESPACE', '<HS_NAMESPACE><DOI.RA>10.SERV/CROSSREF</DOI.RA><locs>10.SERV/CROSSREF</locs></HS_NAMESPACE>')],
      ['10.SERV/CROSSREF'],
      false
    ],
    [
      'two <locs>, one with no_nslocs',
      [val(1, 'hs_namespace', '<HS_NAMESPACE><locs>10.SERV/A</locs><locs no_nslocs="yes">10.SERV/B</locs></HS_NAMESPACE>')],
      ['10.SERV/A', '10.SERV/B'],
      true
    ],
    [
      'no <locs> (cayenne#34: conneg then falls back to the URL)',
      [val(1, 'HS_NAMESPACE', '<HS_NAMESPACE><status>active</status></HS_NAMESPACE>')],
      [],
      false
    ],
    ['a broken HS_NAMESPACE', [val(1, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>')], [], false],
    ['no HS_NAMESPACE', [val(1, 'HS_SERV', '10.SERV/CROSSREF')], [], false]
  ])('namespaceLocHandles: %s', (_name, values, handles, noParentLocs) => {
    expect(namespaceLocHandles(values)).toEqual(handles)
    expect(namespaceLocs(values).noParentLocs).toBe(noParentLocs)
  })

  it('the values the answer depends on are reported (for Expires)', () => {
    const d = redirect(chooseLocation(req(DATACITE, { namespaceValues: DATACITE_NS })))
    expect(d.usedValues).toEqual([...DATACITE, ...DATACITE_NS])
  })

  it('a legacy-only record redirects to its first URL value (behaviour.md §4)', () => {
    const d = redirect(
      chooseLocation(req([val(1, 'EMAIL', 'a@b'), val(2, 'URL', ' http://first.example/ '), val(3, 'URL', 'http://second.example/')]))
    )
    expect(d).toMatchObject({ href: 'http://first.example/', status: 302, vary: false, linkHeaders: [] })
  })
})
