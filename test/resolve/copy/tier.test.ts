import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { cacheKey } from '../../../src/handle/name.js'
import { encodeEntry } from '../../../src/handle/copy/record-codec.js'
import type { CopyRecord } from '../../../src/handle/copy/types.js'
import { openCopy } from '../../../src/resolve/copy/store.js'
import type { CopyStore } from '../../../src/resolve/copy/store.js'
import { createCopyTier } from '../../../src/resolve/copy/tier.js'
import type { CopyTierOptions } from '../../../src/resolve/copy/tier.js'
import { createCopyWriter } from '../../../src/resolve/copy/writer.js'
import { copyMetadata } from '../../../src/resolve/copy/metadata.js'

// The resolver's view of the registry copy (plan-43 §1.7–§1.9), on a real LMDB store.

const NOW_S = Date.parse('2026-11-27T12:00:00Z') / 1000
const DAY = 86400
const WEEK = 7 * DAY
const LONG_SUFFIX = 'x'.repeat(2000)

const RECORDS: Array<{ record: CopyRecord; covered: boolean }> = [
  {
    record: {
      doi: '10.7001/New',
      kind: 'work',
      agency: 'crossref',
      url: 'https://a.example/new',
      stamp: NOW_S - DAY,
      csl: { title: 'New' }
    },
    covered: false
  },
  {
    record: { doi: '10.7001/old', kind: 'work', agency: 'crossref', url: 'https://a.example/old', stamp: NOW_S - 30 * DAY },
    covered: false
  },
  // Old by its own date, but a whole file and an update vouch for it until yesterday.
  {
    record: { doi: '10.7001/vouched', kind: 'work', agency: 'crossref', url: 'https://a.example/v', stamp: NOW_S - 300 * DAY },
    covered: true
  },
  { record: { doi: '10.7002/alias', kind: 'alias', agency: 'other', aliasOf: '10.7001/New', stamp: NOW_S - DAY }, covered: false },
  { record: { doi: '10.7003/reg', kind: 'registered', agency: 'datacite', stamp: NOW_S - DAY }, covered: false },
  {
    record: { doi: `10.7001/${LONG_SUFFIX}`, kind: 'work', agency: 'crossref', url: 'https://a.example/long', stamp: NOW_S - DAY },
    covered: false
  }
]

async function makeStore(): Promise<CopyStore> {
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-tier-'))
  const writable = openCopy({ dir, writable: true })
  const writer = createCopyWriter(writable, { maxBytes: 0, minFreeBytes: 0, nowS: () => NOW_S })
  writer.putBatch(RECORDS.map(({ record, covered }) => encodeEntry(record, { importedAt: NOW_S, covered })))
  writer.extendCoverage('crossref', { base: NOW_S - 30 * DAY, through: NOW_S - DAY })
  writer.markWhole('10.7001', 'crossref', NOW_S - 30 * DAY)
  await writable.close()
  const store = openCopy({ dir, writable: false })
  onTestFinished(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })
  return store
}

async function tier(opts: Partial<CopyTierOptions> = {}) {
  const copy = await makeStore()
  return createCopyTier({ copy, maxAgeS: WEEK, offline: false, now: () => NOW_S * 1000, ...opts })
}

const peek = (t: Awaited<ReturnType<typeof tier>>, handle: string) => t.peek(handle, cacheKey(handle))

describe('online, a copy record answers while its data is younger than the maximum age', () => {
  it.each([
    // [handle, expected kind, why]
    ['10.7001/New', 'found', 'its own date is a day old'],
    ['10.7001/NEW', 'found', 'DOIs fold ASCII case (behaviour.md §2.8)'],
    ['10.7001/old', 'too-old', 'thirty days old, not vouched for'],
    ['10.7001/vouched', 'found', "covered: the agency's coverage through yesterday vouches for it (plan §1.8)"],
    ['10.7001/absent', 'absent', 'not held'],
    ['10.7003/reg', 'absent', 'registered without a public URL: the upstream is asked online'],
    ['10.7001', 'absent', 'online, prefix records come from the upstream'],
    ['10.SERV/CROSSREF', 'absent', 'online, service records come from the upstream'],
    [`10.7001/${LONG_SUFFIX}`, 'found', 'a key over 1,900 bytes is hashed and its DOI compared']
  ])('%s: %s (%s)', async (handle, kind) => {
    expect(peek(await tier(), handle).kind).toBe(kind)
  })

  it('a found record answers for what is left of the maximum age, and not a second longer', async () => {
    const store = await makeStore()
    const at = (seconds: number) => createCopyTier({ copy: store, maxAgeS: WEEK, offline: false, now: () => seconds * 1000 })
    expect(peek(at(NOW_S + WEEK - DAY - 1), '10.7001/New').kind).toBe('found')
    expect(peek(at(NOW_S + WEEK - DAY), '10.7001/New').kind).toBe('too-old')
  })

  it.each<[string, string | undefined, string]>([
    // [handle, the URL the door may redirect to, why]
    ['10.7001/New', 'https://a.example/new', 'a work the copy answers'],
    ['10.7001/NEW', 'https://a.example/new', 'DOIs fold ASCII case (behaviour.md §2.8)'],
    [`10.7001/${LONG_SUFFIX}`, 'https://a.example/long', 'a hashed key, its DOI compared'],
    ['10.7001/old', undefined, 'too old online: the upstream is asked'],
    ['10.7002/alias', undefined, 'an alias is followed by the route (HS_ALIAS)'],
    ['10.7003/reg', undefined, 'registered without a public URL'],
    ['10.7001/absent', undefined, 'not held'],
    ['10.7001', undefined, 'a prefix record is not a work']
  ])('workUrl(%s) is %s (%s)', async (handle, url) => {
    expect((await tier()).workUrl(handle, cacheKey(handle))).toBe(url)
  })

  it('the values are doi.org’s: the URL at index 1, ttl 86400, the agency’s date', async () => {
    const found = peek(await tier(), '10.7001/New')
    expect(found.kind === 'found' && found.values).toEqual([
      {
        index: 1,
        type: 'URL',
        data: { format: 'string', value: 'https://a.example/new' },
        ttl: 86400,
        timestamp: new Date((NOW_S - DAY) * 1000).toISOString()
      }
    ])
  })

  it('an alias is an HS_ALIAS at index 1', async () => {
    const found = peek(await tier(), '10.7002/alias')
    expect(found.kind === 'found' && found.values[0]).toMatchObject({ type: 'HS_ALIAS', data: { value: '10.7001/New' } })
  })

  it('with a maximum age of 0 nothing answers first, and a record still stands in', async () => {
    const t = await tier({ maxAgeS: 0 })
    expect(peek(t, '10.7001/New').kind).toBe('too-old')
    expect(t.standIn('10.7001/old', cacheKey('10.7001/old'))?.[0]?.data.value).toBe('https://a.example/old')
  })

  it('a registered DOI without a URL never stands in', async () => {
    const t = await tier()
    expect(t.standIn('10.7003/reg', cacheKey('10.7003/reg'))).toBeUndefined()
  })
})

describe('offline, the copy answers alone', () => {
  it('every record it holds answers, however old, with no end to its freshness', async () => {
    const t = await tier({ offline: true, now: () => (NOW_S + 3650 * DAY) * 1000 })
    expect(peek(t, '10.7001/old').kind).toBe('found')
    expect(t.workUrl('10.7001/old', cacheKey('10.7001/old'))).toBe('https://a.example/old')
  })

  it('a prefix it holds gets a record naming its agency’s service; the service gets its conneg location', async () => {
    const t = await tier({ offline: true })
    const prefix = peek(t, '10.7001')
    expect(prefix.kind === 'found' && prefix.values.map((v) => v.data.value)).toEqual([
      '10.SERV/CROSSREF',
      '<HS_NAMESPACE><locs>10.SERV/CROSSREF</locs></HS_NAMESPACE>'
    ])
    const service = peek(t, '10.SERV/CROSSREF')
    expect(service.kind === 'found' && String(service.values[0]?.data.value)).toContain('https://data.crossref.org/{hdl}')
  })

  it.each([
    ['10.7001/missing', 'holds every DOI of 10.7001 registered by 2026-10-28, and not this one; it may have been registered since'],
    ['10.9999/missing', "it is not in this resolver's copy of the registry"],
    ['10.7003/reg', 'registered at DataCite, but its URL is not public']
  ])('the absence of %s is said in words: %s', async (handle, words) => {
    const t = await tier({ offline: true })
    expect(t.absence(handle, cacheKey(handle))).toContain(words)
  })
})

describe('the copy’s metadata', () => {
  it('CSL-JSON for a record with it; none for one without; 406 material for a type not offered', async () => {
    const meta = copyMetadata(await tier())
    const answer = meta.answer('10.7001/new', 'application/vnd.citationstyles.csl+json')
    expect(answer).toEqual({
      kind: 'answer',
      answer: { contentType: 'application/vnd.citationstyles.csl+json; charset=utf-8', body: '{"title":"New"}' }
    })
    expect(meta.answer('10.7001/old', 'application/vnd.citationstyles.csl+json')).toEqual({ kind: 'none' })
    expect(meta.answer('10.7001/new', 'application/x-bibtex')).toEqual({
      kind: 'not-acceptable',
      offered: ['application/vnd.citationstyles.csl+json']
    })
  })
})
