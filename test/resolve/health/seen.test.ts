import { pino } from 'pino'
import { describe, expect, it, onTestFinished } from 'vitest'
import { lookupParamsOf, PLAIN_LOOKUP } from '../../../src/handle/lookup-params.js'
import type { HandleValue } from '../../../src/handle/types.js'
import { createMetrics } from '../../../src/observe/metrics.js'
import { createSeenDois, SEEN_BATCH, watchEventOf } from '../../../src/resolve/health/seen.js'
import type { SeenOptions, WatchEvent } from '../../../src/resolve/health/seen.js'
import { setUpCaches } from '../../../src/services/cache-tiers.js'
import { createLookup } from '../../../src/services/lookup.js'
import { setUpUpstream } from '../../../src/services/upstream.js'
import { testConfig } from '../../support/app.js'
import { FakeUpstream } from '../../support/fake-upstream.js'
import { admin, str } from '../../support/records.js'

// Issue 42, plan D9 (c): the DOIs of a watched prefix the upstream found for a reader, told in batches.

const record = (url: string): HandleValue[] => [admin(), str(1, 'URL', url)]

/** The lookup flow as the server builds it (services/lookup.ts), before a real fake upstream, with `onFound` given. */
async function realLookup(onFound: (handle: string, key: string) => void, records: Record<string, HandleValue[]>) {
  const upstream = await FakeUpstream.start(records)
  const config = testConfig(upstream.url, { upstreamRetries: 0 })
  const log = pino({ level: 'silent' })
  const metrics = createMetrics()
  const now = Date.now
  const { upstream: guarded, queue } = setUpUpstream(config, { metrics, log, onWait: () => {} })
  const { freshness, cache, tiers } = await setUpCaches(config, { log, metrics, now })
  const fetcher = tiers.wrap(guarded!.guarded)
  const { resolver } = createLookup(config, {
    fetcher,
    queue,
    local: undefined,
    cache,
    freshness,
    recorder: undefined,
    metrics,
    log,
    now,
    random: Math.random,
    onFound
  })
  onTestFinished(async () => {
    await guarded?.close()
    await tiers.close()
    await upstream.close()
  })
  return { resolver, cache, upstream }
}

/** A seen-DOI tracker whose announcements are kept, batch by batch. */
function tracker(opts: Partial<SeenOptions> = {}) {
  const batches: WatchEvent[][] = []
  const warnings: string[] = []
  const seen = createSeenDois({
    prefixes: ['10.5555'],
    announce: (batch) => {
      batches.push(batch)
    },
    batchMs: 50,
    log: { warn: (_obj, msg) => warnings.push(msg) },
    ...opts
  })
  onTestFinished(async () => await seen.stop())
  const dois = (): string[] => batches.flat().map((e) => e.doi)
  return { seen, batches, warnings, dois }
}

async function eventually(check: () => boolean, what: string, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe('seen DOIs through the lookup flow (onFound on an upstream miss)', () => {
  it('a DOI of a watched prefix found upstream is announced once, as the reader wrote it; hits tell nothing', async () => {
    const { seen, batches } = tracker()
    const told: string[] = []
    const { resolver, upstream } = await realLookup(
      (handle, key) => {
        told.push(handle)
        seen.onFound(handle, key)
      },
      { '10.5555/found': record('https://example.org/found') }
    )
    await resolver.lookup('10.5555/Found', { params: PLAIN_LOOKUP })
    for (let i = 0; i < 3; i++) expect((await resolver.lookup('10.5555/found', { params: PLAIN_LOOKUP })).cache).toBe('HIT')
    expect(told).toEqual(['10.5555/Found'])
    // Asked upstream again (bypassing the cache): told again, but announced once.
    await resolver.lookup('10.5555/FOUND', { params: lookupParamsOf((name) => name === 'auth') })
    expect(upstream.count('10.5555/found')).toBe(2)
    expect(told).toHaveLength(2)
    await seen.flush()
    expect(batches).toEqual([[{ v: 1, t: 'watch', key: '10.5555/FOUND', doi: '10.5555/Found', prefix: '10.5555', source: 'seen' }]])
  })

  it('not found, another prefix, a prefix record and an upstream failure announce nothing', async () => {
    const { seen, batches } = tracker()
    const { resolver, upstream } = await realLookup(seen.onFound, {
      '10.9999/other': record('https://example.org/other'),
      '10.5555': record('https://example.org/prefix')
    })
    expect((await resolver.lookup('10.5555/missing', { params: PLAIN_LOOKUP })).kind).toBe('not-found')
    expect((await resolver.lookup('10.9999/other', { params: PLAIN_LOOKUP })).kind).toBe('found')
    expect((await resolver.lookup('10.5555', { params: PLAIN_LOOKUP })).kind).toBe('found')
    upstream.mode = { kind: 'status', status: 503 }
    await expect(resolver.lookup('10.5555/down', { params: PLAIN_LOOKUP })).rejects.toThrow()
    await seen.flush()
    expect(batches).toEqual([])
  })

  it("at start, the record cache's found entries are announced (not its not-found ones)", async () => {
    const { resolver, cache } = await realLookup(() => {}, {
      '10.5555/cached': record('https://example.org/cached'),
      '10.9999/elsewhere': record('https://example.org/elsewhere')
    })
    for (const doi of ['10.5555/Cached', '10.5555/absent', '10.9999/elsewhere']) await resolver.lookup(doi, { params: PLAIN_LOOKUP })
    const { seen, dois } = tracker()
    await seen.fromCache([...cache.entries(), ['10.5555/UNREAD', { kind: 'unread' }]])
    await seen.flush()
    // The cache keeps no case: the key lower-cased is the DOI shown.
    expect(dois().sort()).toEqual(['10.5555/cached', '10.5555/unread'])
  })
})

describe('createSeenDois: batches, bounds, failures', () => {
  it('a DOI waits for the batch time, then is told with the others found meanwhile', async () => {
    const { seen, batches } = tracker({ batchMs: 300 })
    seen.onFound('10.5555/a', '10.5555/A')
    await new Promise((resolve) => setTimeout(resolve, 50))
    seen.onFound('10.5555/b', '10.5555/B')
    expect(batches).toHaveLength(0)
    await eventually(() => batches.length === 1, 'the batch is told')
    expect(batches[0]!.map((e) => e.key)).toEqual(['10.5555/A', '10.5555/B'])
  })

  it(`a batch holds at most ${SEEN_BATCH} DOIs (one host message)`, async () => {
    const { seen, batches } = tracker()
    for (let i = 0; i < 2500; i++) seen.onFound(`10.5555/n${i}`, `10.5555/N${i}`)
    await seen.flush()
    expect(batches.map((b) => b.length)).toEqual([1000, 1000, 500])
  })

  it('a DOI forgotten by the bounded memory is told again when found again', async () => {
    const { seen, dois } = tracker({ max: 3 })
    for (const s of ['a', 'b', 'c', 'd', 'a', 'd']) seen.onFound(`10.5555/${s}`, `10.5555/${s.toUpperCase()}`)
    await seen.flush()
    expect(dois()).toEqual(['10.5555/a', '10.5555/b', '10.5555/c', '10.5555/d', '10.5555/a'])
  })

  it('a batch that could not be announced is told again when its DOIs are found again', async () => {
    let fail = true
    const told: string[] = []
    const { seen, warnings } = tracker({
      announce: (batch) => {
        if (fail) throw new Error('redis down')
        told.push(...batch.map((e) => e.key))
      }
    })
    seen.onFound('10.5555/a', '10.5555/A')
    await seen.flush()
    expect(warnings).toEqual(['health: seen DOIs could not be announced; they are told again when next found'])
    fail = false
    seen.onFound('10.5555/a', '10.5555/A')
    await seen.flush()
    expect(told).toEqual(['10.5555/A'])
  })

  it('behind a slow announcer at most ten batches wait; what comes beyond is dropped, warned, and told when found again', async () => {
    let release = (): void => {}
    const gate = new Promise<void>((resolve) => (release = resolve))
    const told: string[] = []
    const { seen, warnings } = tracker({
      announce: async (batch) => {
        await gate
        told.push(...batch.map((e) => e.key))
      }
    })
    for (let i = 0; i < 12 * SEEN_BATCH; i++) seen.onFound(`10.5555/n${i}`, `10.5555/N${i}`)
    expect(warnings.filter((w) => w.startsWith('health: seen DOIs dropped'))).toHaveLength(2)
    release()
    await seen.flush()
    expect(told).toHaveLength(10 * SEEN_BATCH)
    seen.onFound('10.5555/n11999', '10.5555/N11999')
    await seen.flush()
    expect(told.at(-1)).toBe('10.5555/N11999')
  })

  it('the pass over the cache waits for a slow announcer instead of dropping', async () => {
    const told: string[] = []
    const { seen, warnings } = tracker({
      announce: async (batch) => {
        await new Promise((resolve) => setTimeout(resolve, 5))
        told.push(...batch.map((e) => e.key))
      }
    })
    const entries = Array.from({ length: 15 * SEEN_BATCH }, (_, i) => [`10.5555/N${i}`, { kind: 'found' }] as const)
    await seen.fromCache(entries)
    await seen.flush()
    expect(told).toHaveLength(15 * SEEN_BATCH)
    expect(warnings).toEqual([])
  })

  it('stop tells what waits, then takes no more', async () => {
    const { seen, dois } = tracker({ batchMs: 60_000 })
    seen.onFound('10.5555/a', '10.5555/A')
    await seen.stop()
    seen.onFound('10.5555/b', '10.5555/B')
    await seen.flush()
    expect(dois()).toEqual(['10.5555/a'])
  })
})

describe('watchEventOf: a DOI of a health-seen host message', () => {
  it.each([
    // [doi as told, event] — the key is the handle's cacheKey (src/handle/name.ts), the prefix lower-cased (watch.ts)
    ['10.5555/Abc', { key: '10.5555/ABC', doi: '10.5555/Abc', prefix: '10.5555' }],
    ['10.ABCD/x', { key: '10.ABCD/X', doi: '10.ABCD/x', prefix: '10.abcd' }],
    ['10.5555', undefined], // a prefix record: never watched
    ['10.5555/', undefined]
  ])('%s', (doi, expected) => {
    expect(watchEventOf(doi)).toEqual(expected === undefined ? undefined : { v: 1, t: 'watch', source: 'seen', ...expected })
  })
})
