import { describe, expect, it } from 'vitest'
import {
  cacheControlSeconds,
  entryFor,
  freshBound,
  freshnessPolicy,
  isFresh,
  metadataEntryFor,
  metadataFreshnessPolicy,
  namespaceLocationsSeconds,
  staleUntil
} from '../../src/handle/freshness.js'
import type { FreshnessAnswer, FreshnessPolicy, MetadataFreshnessPolicy } from '../../src/handle/freshness.js'
import type { HandleValue } from '../../src/handle/types.js'

// Sources: D§n = docs/behaviour.md §n (the spec's DECISIONS.md §n): §3 resolution, §11 the shared tier and
// the snapshot; R§11 = behaviour.md R11 "Caching and TTL" (the reference's, reference-proxy.md §11).

const NOW = Date.parse('2026-11-22T10:39:28Z')
const S = 1000
const DAY = 86_400 * S

// The defaults: CACHE_MIN_TTL_SECONDS 60, CACHE_MAX_TTL_SECONDS 86400, NEGATIVE_TTL_SECONDS 60, MAX_STALE_SECONDS 7 days.
const DEFAULTS: FreshnessPolicy = freshnessPolicy({
  cacheMinTtlSeconds: 60,
  cacheMaxTtlSeconds: 86_400,
  negativeTtlSeconds: 60,
  maxStaleSeconds: 7 * 86_400
})

function found(...ttls: Array<number | string>): FreshnessAnswer {
  const values: HandleValue[] = ttls.map((ttl, i) => ({
    index: i + 1,
    type: 'URL',
    data: { format: 'string', value: 'http://example.org/' },
    ttl,
    timestamp: '2026-11-22T10:39:19Z'
  }))
  return { kind: 'found', record: { values } }
}
const NOT_FOUND: FreshnessAnswer = { kind: 'not-found' }

describe('entryFor: how long an answer is fresh, and kept to stand in when the upstream fails', () => {
  const rows: Array<{
    why: string
    answer: FreshnessAnswer
    policy?: Partial<FreshnessPolicy>
    fresh: number | undefined
    stale?: number
  }> = [
    { why: 'D§3: the smallest ttl of the values', answer: found(86_400, 3600), fresh: 3600 * S, stale: 3600 * S + 7 * DAY },
    { why: 'D§3: capped by the maximum (24 h)', answer: found(172_800), fresh: DAY, stale: DAY + 7 * DAY },
    { why: 'D§3: never below the floor (60 s)', answer: found(5), fresh: 60 * S, stale: 60 * S + 7 * DAY },
    { why: 'D§3, R§11: a ttl of 0 means "do not cache": neither fresh nor kept stale', answer: found(0, 86_400), fresh: undefined },
    { why: 'D§3: an absolute ttl counts from now', answer: found('2026-11-22T12:39:28Z'), fresh: 7200 * S, stale: 7200 * S + 7 * DAY },
    { why: 'D§3: an absolute ttl already past is a ttl of 0', answer: found('2026-11-01T00:00:00Z'), fresh: undefined },
    { why: 'D§3: an empty record is fresh for the maximum', answer: found(), fresh: DAY, stale: DAY + 7 * DAY },
    { why: 'D§3: not found is cached a short time (60 s), and never stands in', answer: NOT_FOUND, fresh: 60 * S, stale: 60 * S },
    {
      why: 'D§3: NEGATIVE_TTL_SECONDS=0 turns the not-found cache off',
      answer: NOT_FOUND,
      policy: { notFoundSeconds: 0 },
      fresh: undefined
    },
    {
      why: 'D§3: MAX_STALE_SECONDS=0: a found record is kept only while fresh',
      answer: found(3600),
      policy: { maxStaleMs: 0 },
      fresh: 3600 * S,
      stale: 3600 * S
    },
    {
      why: 'CACHE_MAX_TTL_SECONDS=0 keeps no found record',
      answer: found(3600),
      policy: { maxTtlSeconds: 0, minTtlSeconds: 0 },
      fresh: undefined
    }
  ]
  it.each(rows)('$why', ({ answer, policy, fresh, stale }) => {
    const life = entryFor(answer, NOW, { ...DEFAULTS, ...policy })
    expect(life === undefined ? undefined : life.freshUntil - NOW).toBe(fresh)
    if (life !== undefined) expect(life.staleUntil - NOW).toBe(stale)
  })
})

describe('the other questions every tier asks', () => {
  it('an entry is fresh until, not at, its fresh-until', () => {
    expect(isFresh({ freshUntil: NOW + 1 }, NOW)).toBe(true)
    expect(isFresh({ freshUntil: NOW }, NOW)).toBe(false)
  })

  it('D§11: an entry read back (Redis, a snapshot) keeps what is left of its freshness and staleness', () => {
    expect(staleUntil({ kind: 'found', freshUntil: NOW }, DEFAULTS)).toBe(NOW + 7 * DAY)
    expect(staleUntil({ kind: 'not-found', freshUntil: NOW }, DEFAULTS)).toBe(NOW)
  })

  it('the bound on freshness is the longest entryFor gives, found or not found', () => {
    expect(freshBound(DEFAULTS)).toBe(DAY)
    expect(freshBound({ ...DEFAULTS, maxTtlSeconds: 30, minTtlSeconds: 0, notFoundSeconds: 600 })).toBe(600 * S)
    // No answer entryFor makes is ever above the bound.
    for (const answer of [found(), found(172_800), found(1), NOT_FOUND]) {
      for (const policy of [DEFAULTS, { ...DEFAULTS, maxTtlSeconds: 30, minTtlSeconds: 30, notFoundSeconds: 600 }]) {
        const life = entryFor(answer, NOW, policy)
        expect(life === undefined || life.freshUntil - NOW <= freshBound(policy)).toBe(true)
      }
    }
  })
})

describe("namespaceLocationsSeconds: how long a prefix's namespace locations are kept apart", () => {
  const valuesOf = (answer: FreshnessAnswer): readonly HandleValue[] => (answer.kind === 'found' ? answer.record.values : [])
  it.each([
    ['R§11: the smallest ttl of the values', found(86_400, 600), 600],
    ['R§11: at most an hour, whatever the values say', found(86_400), 3600],
    ["R§11: no floor (the settings' CACHE_MIN_TTL_SECONDS is not this rule's)", found(5), 5],
    ['R§11: a ttl of 0 keeps nothing', found(0, 3600), 0],
    ['R§11: an absolute ttl counts from now', found('2026-11-22T10:49:28Z'), 600],
    ['R§11: no values (a prefix with no namespace locations): an hour', found(), 3600]
  ])('%s', (_why, answer, seconds) => {
    expect(namespaceLocationsSeconds(valuesOf(answer), NOW)).toBe(seconds)
  })
})

describe("metadataEntryFor: how long an agency's metadata is fresh, and kept to stand in when the agency fails", () => {
  // docs/metadata.md: METADATA_MAX_TTL_SECONDS 86400 by default; NEGATIVE_TTL_SECONDS and MAX_STALE_SECONDS as above.
  const METADATA: MetadataFreshnessPolicy = metadataFreshnessPolicy(DEFAULTS, 86_400)
  type Row = { why: string; status: number; cacheControl?: string; policy?: Partial<MetadataFreshnessPolicy>; fresh: number; kept: boolean }
  const rows: Row[] = [
    { why: 'an agency that says nothing: an hour', status: 200, fresh: 3600 * S, kept: true },
    { why: 'its max-age', status: 200, cacheControl: 'public, max-age=600', fresh: 600 * S, kept: true },
    { why: 's-maxage before max-age', status: 200, cacheControl: 'max-age=600, s-maxage=120', fresh: 120 * S, kept: true },
    {
      why: 'capped by METADATA_MAX_TTL_SECONDS',
      status: 200,
      cacheControl: 'max-age=600',
      policy: { maxTtlSeconds: 60 },
      fresh: 60 * S,
      kept: true
    },
    { why: 'no-store: not kept', status: 200, cacheControl: 'no-store', fresh: 0, kept: false },
    { why: 'private: not kept', status: 200, cacheControl: 'max-age=600, private', fresh: 0, kept: false },
    { why: 'a 204 is kept (nothing of that type)', status: 204, fresh: 3600 * S, kept: true },
    { why: 'a 404 at most NEGATIVE_TTL_SECONDS', status: 404, cacheControl: 'max-age=600', fresh: 60 * S, kept: true },
    { why: 'a 406 at most NEGATIVE_TTL_SECONDS', status: 406, fresh: 60 * S, kept: true },
    { why: 'a 410 below NEGATIVE_TTL_SECONDS keeps its own', status: 410, cacheControl: 'max-age=30', fresh: 30 * S, kept: true },
    { why: 'NEGATIVE_TTL_SECONDS=0: a 404 is not kept', status: 404, policy: { notFoundSeconds: 0 }, fresh: 0, kept: false },
    {
      why: 'a status not kept (403) still has its life, for Expires',
      status: 403,
      cacheControl: 'max-age=600',
      fresh: 600 * S,
      kept: false
    },
    { why: 'a 201 is not kept', status: 201, fresh: 3600 * S, kept: false }
  ]
  it.each(rows)('$why', ({ status, cacheControl, policy, fresh, kept }) => {
    const life = metadataEntryFor({ status, cacheControl }, NOW, { ...METADATA, ...policy })
    expect(life.freshUntil - NOW).toBe(fresh)
    expect(life.kept).toBe(kept)
  })

  it('every answer, a 404 too, stands in MAX_STALE_SECONDS past its freshness (unlike a not-found record)', () => {
    expect(metadataEntryFor({ status: 200, cacheControl: undefined }, NOW, METADATA).staleUntil - NOW).toBe(3600 * S + 7 * DAY)
    expect(metadataEntryFor({ status: 404, cacheControl: undefined }, NOW, METADATA).staleUntil - NOW).toBe(60 * S + 7 * DAY)
    expect(metadataEntryFor({ status: 200, cacheControl: undefined }, NOW, { ...METADATA, maxStaleMs: 0 }).staleUntil - NOW).toBe(3600 * S)
  })

  it("the metadata's policy is the records' not-found life and staleness with its own cap", () => {
    expect(METADATA).toEqual({ maxTtlSeconds: 86_400, notFoundSeconds: 60, maxStaleMs: 7 * DAY })
  })

  it.each([
    [undefined, undefined],
    ['public', undefined],
    ['max-age=600', 600],
    ['MAX-AGE=600', 600],
    ['max-age="600"', 600],
    ['max-age=abc', undefined],
    ['s-maxage=60, max-age=600', 60],
    ['no-cache', 0],
    ['max-age=600, no-store', 0]
  ])('Cache-Control %j says %j seconds', (header, seconds) => {
    expect(cacheControlSeconds(header)).toBe(seconds)
  })
})
