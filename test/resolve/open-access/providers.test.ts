import { describe, expect, it } from 'vitest'
import { openAlexCopy, unpaywallCopy } from '../../../src/resolve/open-access/providers.js'

// What a provider's answer says about a DOI's open copy, read defensively (docs/institutional.md §8).
describe('unpaywallCopy: best_oa_location.url when is_oa (Unpaywall API v2 and data feed)', () => {
  it.each<[unknown, string | null]>([
    [{ is_oa: true, best_oa_location: { url: 'https://europepmc.org/articles/pmc1' } }, 'https://europepmc.org/articles/pmc1'],
    [{ is_oa: false, best_oa_location: { url: 'https://europepmc.org/articles/pmc1' } }, null], // not open: ignore a stray location
    [{ is_oa: 'true', best_oa_location: { url: 'https://x.example/' } }, null], // is_oa must be the boolean
    [{ is_oa: true, best_oa_location: null }, null],
    [{ is_oa: true, best_oa_location: { url: 'javascript:alert(1)' } }, null],
    [{ is_oa: true, best_oa_location: { url: ['https://x.example/'] } }, null],
    [{ is_oa: true, best_oa_location: [{ url: 'https://x.example/' }] }, null],
    [null, null],
    ['https://x.example/', null],
    [[], null]
  ])('%j → %j', (work, expected) => {
    expect(unpaywallCopy(work)).toBe(expected)
  })
})

describe('openAlexCopy: open_access.oa_url (OpenAlex work object)', () => {
  it.each<[unknown, string | null]>([
    [{ open_access: { is_oa: true, oa_url: 'https://arxiv.org/pdf/1' } }, 'https://arxiv.org/pdf/1'],
    [{ open_access: { is_oa: false, oa_url: null } }, null],
    [{ open_access: { oa_url: 'data:text/html,x' } }, null],
    [{ open_access: 'https://arxiv.org/pdf/1' }, null],
    [{}, null]
  ])('%j → %j', (work, expected) => {
    expect(openAlexCopy(work)).toBe(expected)
  })
})
