import { describe, expect, it } from 'vitest'
import { bypassesChain, chooseLinkout, ezproxyUrl, openAccessLocation } from '../../src/handle/linkout.js'
import type { LinkoutFacts } from '../../src/handle/linkout.js'

// The link-out chain (docs/institutional.md "Open access first"): which step gives which URL.
const REGISTERED = 'https://publisher.example/article/1'
const SERVICE = 'https://sfx.example.edu/sfx?id=doi:10.1000%2F1'
const EZPROXY = 'https://login.ezproxy.example.edu/login?url={url}'
const OA = 'https://repository.example.org/1.pdf'

function facts(over: Partial<LinkoutFacts>): LinkoutFacts {
  return { steps: [], registered: REGISTERED, service: SERVICE, ezproxy: EZPROXY, openAccess: undefined, ...over }
}

describe('chooseLinkout', () => {
  it.each<[string, Partial<LinkoutFacts>, ReturnType<typeof chooseLinkout>]>([
    // the worked example: campus to the link resolver
    ['service first gives the service', { steps: ['service', 'registered'] }, { kind: 'go', step: 'service', location: SERVICE }],
    // off campus: open access first, then EZproxy
    ['open access not looked up yet: ask', { steps: ['open-access', 'ezproxy'] }, { kind: 'ask-open-access' }],
    [
      'an open copy found goes there',
      { steps: ['open-access', 'ezproxy'], openAccess: { kind: 'found', url: OA } },
      { kind: 'go', step: 'open-access', location: OA }
    ],
    [
      'no open copy: EZproxy around the registered URL',
      { steps: ['open-access', 'ezproxy'], openAccess: { kind: 'none' } },
      { kind: 'go', step: 'ezproxy', location: `https://login.ezproxy.example.edu/login?url=${REGISTERED}` }
    ],
    [
      'the provider late: next step',
      { steps: ['open-access', 'ezproxy'], openAccess: { kind: 'late' } },
      { kind: 'go', step: 'ezproxy', location: `https://login.ezproxy.example.edu/login?url=${REGISTERED}` }
    ],
    [
      'the provider unavailable: next step',
      { steps: ['open-access', 'registered'], openAccess: { kind: 'unavailable' } },
      { kind: 'go', step: 'registered', location: REGISTERED }
    ],
    // open access after a step that always answers is never asked for
    [
      'registered first: open access never asked',
      { steps: ['registered', 'open-access'] },
      { kind: 'go', step: 'registered', location: REGISTERED }
    ],
    [
      'EZproxy first: open access never asked',
      { steps: ['ezproxy', 'open-access'] },
      { kind: 'go', step: 'ezproxy', location: `https://login.ezproxy.example.edu/login?url=${REGISTERED}` }
    ],
    // the service held back (loop guard) or absent: on to the next step
    ['service held back: open access is asked', { steps: ['service', 'open-access'], service: undefined }, { kind: 'ask-open-access' }],
    [
      'a chain that runs out ends at the registered URL',
      { steps: ['service', 'open-access'], service: undefined, openAccess: { kind: 'none' } },
      { kind: 'go', step: 'registered', location: REGISTERED }
    ],
    [
      'no EZproxy template: the step gives nothing',
      { steps: ['ezproxy'], ezproxy: undefined },
      { kind: 'go', step: 'registered', location: REGISTERED }
    ]
  ])('%s', (_name, over, expected) => {
    expect(chooseLinkout(facts(over))).toEqual(expected)
  })
})

describe('ezproxyUrl', () => {
  it('puts the registered URL after url= as it is (OCLC starting point URLs)', () => {
    expect(ezproxyUrl(EZPROXY, 'https://pub.example/a?b=1&c=2')).toBe(
      'https://login.ezproxy.example.edu/login?url=https://pub.example/a?b=1&c=2'
    )
  })

  it('a $ pattern in the URL is inserted literally, never read as a replacement pattern', () => {
    expect(ezproxyUrl(EZPROXY, 'https://pub.example/$&$1')).toBe('https://login.ezproxy.example.edu/login?url=https://pub.example/$&$1')
  })
})

describe('openAccessLocation: a provider URL passes the checks a record URL passes', () => {
  it.each<[unknown, string | undefined]>([
    ['https://europepmc.org/articles/pmc1', 'https://europepmc.org/articles/pmc1'],
    ['http://repository.example.org/a b.pdf', 'http://repository.example.org/a%20b.pdf'],
    // a non-ASCII host becomes Punycode, as for a record (behaviour.md §4)
    ['https://bücher.example/x', 'https://xn--bcher-kva.example/x'],
    ['javascript:alert(1)', undefined],
    ['data:text/html,<script>alert(1)</script>', undefined],
    ['ftp://files.example.org/1.pdf', undefined], // http(s) only for a provider
    ['https://example.org/\r\nSet-Cookie: a=b', undefined],
    ['//evil.example/x', undefined], // scheme-relative
    ['/local/path', undefined],
    ['https:///nohost', undefined],
    [`https://example.org/${'a'.repeat(3000)}`, undefined],
    [42, undefined],
    [null, undefined],
    [{ url: 'https://example.org' }, undefined]
  ])('%j → %j', (raw, expected) => {
    expect(openAccessLocation(raw)).toBe(expected)
  })
})

describe('bypassesChain', () => {
  it.each<[Array<[string, string[]]>, boolean]>([
    [[['linkout', ['registered']]], true],
    [[['linkout', ['REGISTERED']]], true],
    [[['linkout', ['open-access']]], false],
    [[['nols', ['y']]], false],
    [[], false]
  ])('%j → %s', (pairs, expected) => {
    expect(bypassesChain(new Map(pairs))).toBe(expected)
  })
})
