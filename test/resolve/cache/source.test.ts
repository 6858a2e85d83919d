import { describe, expect, it } from 'vitest'
import { cacheSourceOf, checkSource, sameSource, sourceId } from '../../../src/resolve/cache/source.js'

// What a cache's records were made from (behaviour.md §11): one upstream's records never answer for another.

const DOI_ORG = { upstreamUrl: 'https://doi.org/api/handles', offline: false }

describe('the source of a cache', () => {
  it.each([
    // [a, b, same source?, why]
    [DOI_ORG, { upstreamUrl: 'https://doi.org/api/handles/', offline: false }, true, 'a trailing slash is the same upstream'],
    [DOI_ORG, { upstreamUrl: 'https://DOI.ORG/api/handles', offline: false }, true, 'host names are case-insensitive (RFC 3986 §3.2.2)'],
    [DOI_ORG, { upstreamUrl: 'https://doi.org:443/api/handles', offline: false }, true, 'the default port is the same origin'],
    [DOI_ORG, { upstreamUrl: 'https://hdl.handle.net/api/handles', offline: false }, false, 'another upstream'],
    [DOI_ORG, { upstreamUrl: 'http://127.0.0.1:8100/api/handles', offline: false }, false, 'a test fixture'],
    [DOI_ORG, { upstreamUrl: 'https://doi.org/API/handles', offline: false }, false, 'paths are case-sensitive'],
    [DOI_ORG, { upstreamUrl: 'https://doi.org/api/handles', offline: true }, false, 'offline is another source']
  ])('%o and %o: same source %s (%s)', (a, b, same) => {
    expect(sameSource(cacheSourceOf(a), cacheSourceOf(b))).toBe(same)
    expect(sourceId(cacheSourceOf(a)) === sourceId(cacheSourceOf(b))).toBe(same)
  })

  it('the id is 12 hex digits, the same at every start', () => {
    expect(sourceId(cacheSourceOf(DOI_ORG))).toMatch(/^[0-9a-f]{12}$/)
    expect(sourceId(cacheSourceOf(DOI_ORG))).toBe(sourceId(cacheSourceOf({ ...DOI_ORG })))
  })

  it.each([
    [{ upstream: 'https://doi.org/api/handles', offline: false }, true],
    [{ upstream: 'https://doi.org/api/handles', offline: 'false' }, false],
    [{ upstream: 42, offline: false }, false],
    [{ upstream: 'x'.repeat(5000), offline: false }, false],
    [null, false],
    [['https://doi.org/api/handles', false], false],
    ['https://doi.org/api/handles', false]
  ])('a source read back from a file, %o, is believed: %s', (raw, ok) => {
    expect(checkSource(raw) !== undefined).toBe(ok)
  })
})
