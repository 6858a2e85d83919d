import { describe, expect, it } from 'vitest'
import { takeoverOf } from '../../../src/handle/health/takeover.js'
import type { LandingSeen, LastGood } from '../../../src/handle/health/takeover.js'

const MAY_2 = Date.UTC(2026, 4, 2, 15, 30)
const GOOD: LastGood = { url: 'https://www.journal.example/article/1', at: MAY_2 }
const page = (verdict: LandingSeen['verdict'], url: string): LandingSeen => ({ verdict, url, evidence: 'no DOI or title on the page' })

// Issue 42, plan D12: takeover = unconfirmed + final domain ∉ {last alive's, registered's} + seen alive before.
describe('when a watched DOI’s page was taken over', () => {
  it.each([
    // The example: the journal's domain lapsed, the DOI now lands on a casino elsewhere.
    [
      page('unconfirmed', 'https://casino.example/'),
      'https://journal.example/a/1',
      GOOD,
      'takeover',
      'landed on casino.example; alive on journal.example until 2026-05-02'
    ],
    // Another host of the same registrable domain (PSL, tldts): the publisher's own, not a takeover.
    [
      page('unconfirmed', 'https://old.journal.example/x'),
      'https://journal.example/a/1',
      GOOD,
      'unconfirmed',
      'no DOI or title on the page; named the DOI until 2026-05-02'
    ],
    // Moved to the domain it is now registered with: the publisher moved it (D12: ∉ registered's domain).
    [
      page('unconfirmed', 'https://new-publisher.example/a'),
      'https://doi.new-publisher.example/a',
      GOOD,
      'unconfirmed',
      'no DOI or title on the page; named the DOI until 2026-05-02'
    ],
    // Never seen alive: a DOI we never knew working is not taken over (D12: a last alive check exists).
    [page('unconfirmed', 'https://casino.example/'), 'https://journal.example/a/1', null, 'unconfirmed', 'no DOI or title on the page'],
    // Private suffixes count (allowPrivateDomains): two github.io sites are two owners.
    [
      page('unconfirmed', 'https://spam.github.io/'),
      null,
      { url: 'https://lab.github.io/paper', at: MAY_2 },
      'takeover',
      'landed on spam.github.io; alive on lab.github.io until 2026-05-02'
    ],
    // No registered URL known: the last alive domain alone decides.
    [
      page('unconfirmed', 'https://casino.example/'),
      null,
      GOOD,
      'takeover',
      'landed on casino.example; alive on journal.example until 2026-05-02'
    ]
  ] as Array<[LandingSeen, string | null, LastGood | null, string, string]>)(
    '%o registered at %s, last good %o → %s',
    (landing, registered, lastGood, verdict, evidence) => {
      expect(takeoverOf(landing, registered, lastGood)).toEqual({ verdict, evidence })
    }
  )

  // Only `unconfirmed` can be a takeover: a page naming the DOI is its own; dead/blocked say so as they are.
  it.each(['alive', 'blocked', 'dead'] as const)('a page found %s elsewhere keeps that verdict and its evidence', (verdict) => {
    expect(takeoverOf(page(verdict, 'https://casino.example/'), null, GOOD)).toEqual({ verdict, evidence: 'no DOI or title on the page' })
  })

  it('a final URL that does not parse is never called a takeover', () => {
    expect(takeoverOf(page('unconfirmed', 'not a url'), null, GOOD).verdict).toBe('unconfirmed')
  })
})
