import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { describe, expect, it, onTestFinished } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../../src/app.js'
import type { AppDeps } from '../../../src/app.js'
import { buildConfig } from '../../../src/config/schema.js'
import type { Config } from '../../../src/config/schema.js'
import { FakeUpstream } from '../../support/fake-upstream.js'
import { admin, str } from '../../support/records.js'
import type { HandleValue } from '../../../src/handle/types.js'
import { cacheSourceOf, sourceId } from '../../../src/resolve/cache/source.js'

// CACHE_FILE (behaviour.md §11): the cache survives a restart, whatever the file holds.

const T0 = Date.UTC(2026, 10, 23, 12, 0, 0)
const DAY = 86_400_000

function records(n: number): Record<string, HandleValue[]> {
  const out: Record<string, HandleValue[]> = { 10.5555: [admin(), str(3, 'EMAIL', 'admin@example.org')] }
  for (let i = 0; i < n; i++) out[`10.5555/r${i}`] = [admin(), str(1, 'URL', `http://example.org/r${i}`)]
  return out
}

function tempFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'doi-proxy-snapshot-'))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  return join(dir, 'sub', 'cache.snapshot')
}

interface Logged {
  level: number
  msg: string
  [k: string]: unknown
}

async function start(
  upstream: FakeUpstream,
  overrides: Partial<Config>,
  deps: AppDeps = {}
): Promise<{ app: FastifyInstance; logs: Logged[] }> {
  const logs: Logged[] = []
  const logger = pino(
    { level: 'info' },
    {
      write: (line: string) => {
        logs.push(JSON.parse(line) as Logged)
      }
    }
  )
  const config: Config = {
    ...buildConfig(undefined, {}),
    upstreamUrl: upstream.url,
    upstreamTimeoutMs: 2000,
    upstreamRetries: 0,
    localStoreDir: undefined,
    maxEventLoopDelayMs: 0,
    ...overrides
  }
  const app = await buildApp(config, { logger, ...deps })
  await app.ready()
  onTestFinished(async () => {
    await app.close()
  })
  return { app, logs }
}

async function upstreamFor(recs: Record<string, HandleValue[]>): Promise<FakeUpstream> {
  const upstream = await FakeUpstream.start(recs)
  onTestFinished(() => upstream.close())
  return upstream
}

describe('a cache that survives restarts (CACHE_FILE)', () => {
  it('after a graceful shutdown and a restart with the upstream down, every cached DOI still resolves from the cache', async () => {
    const upstream = await upstreamFor(records(5))
    const cacheFile = tempFile()
    const first = await start(upstream, { cacheFile })
    for (let i = 0; i < 5; i++) expect((await first.app.inject({ url: `/10.5555/r${i}` })).statusCode).toBe(302)
    expect((await first.app.inject({ url: '/10.5555/missing' })).statusCode).toBe(404)
    await first.app.close()
    expect(existsSync(cacheFile)).toBe(true)
    expect(existsSync(`${cacheFile}.tmp`)).toBe(false)

    upstream.mode = { kind: 'status', status: 503 }
    const asked = upstream.seen.length
    const second = await start(upstream, { cacheFile })
    for (let i = 0; i < 5; i++) {
      const res = await second.app.inject({ url: `/10.5555/r${i}` })
      expect(res.statusCode).toBe(302)
      expect(res.headers.location).toBe(`http://example.org/r${i}`)
      expect(res.headers['x-cache']).toBe('HIT')
    }
    expect((await second.app.inject({ url: '/10.5555/missing' })).statusCode).toBe(404)
    expect(upstream.seen.length).toBe(asked)
    expect(second.logs.some((l) => l.msg === 'loaded the cache snapshot' && l.loaded === 7)).toBe(true)
  })

  it('a record that expired while the resolver was stopped is served stale when the upstream fails', async () => {
    const upstream = await upstreamFor(records(1))
    const cacheFile = tempFile()
    const first = await start(upstream, { cacheFile }, { now: () => T0 })
    expect((await first.app.inject({ url: '/10.5555/r0' })).statusCode).toBe(302)
    await first.app.close()

    upstream.mode = { kind: 'status', status: 503 }
    const second = await start(upstream, { cacheFile }, { now: () => T0 + 2 * DAY })
    const res = await second.app.inject({ url: '/10.5555/r0' })
    expect(res.statusCode).toBe(302)
    expect(res.headers['x-cache']).toBe('STALE')
  })

  it('a record older than the longest staleness is not loaded', async () => {
    const upstream = await upstreamFor(records(1))
    const cacheFile = tempFile()
    const first = await start(upstream, { cacheFile }, { now: () => T0 })
    expect((await first.app.inject({ url: '/10.5555/r0' })).statusCode).toBe(302)
    await first.app.close()

    upstream.mode = { kind: 'status', status: 503 }
    const second = await start(upstream, { cacheFile }, { now: () => T0 + 30 * DAY })
    expect((await second.app.inject({ url: '/10.5555/r0' })).statusCode).toBe(502)
    expect(second.logs.some((l) => l.msg === 'loaded the cache snapshot' && l.expired === 2 && l.loaded === 0)).toBe(true)
  })

  it('a corrupt snapshot file is set aside with a warning, and the resolver starts with an empty cache', async () => {
    const upstream = await upstreamFor(records(1))
    const cacheFile = tempFile()
    const first = await start(upstream, { cacheFile })
    await first.app.close()
    writeFileSync(cacheFile, 'PK\u0003\u0004 this is not a snapshot\n\u0000\u0000\n')
    const second = await start(upstream, { cacheFile })
    const warning = second.logs.find((l) => l.msg === 'the cache snapshot is corrupt or truncated; it was set aside')
    expect(warning).toBeDefined()
    expect(existsSync(cacheFile)).toBe(false)
    expect(existsSync(String(warning?.setAside))).toBe(true)
    expect((await second.app.inject({ url: '/10.5555/r0' })).statusCode).toBe(302)
  })

  it('a snapshot cut short keeps the records written before the cut and is set aside', async () => {
    const upstream = await upstreamFor(records(6))
    const cacheFile = tempFile()
    const first = await start(upstream, { cacheFile })
    for (let i = 0; i < 6; i++) await first.app.inject({ url: `/api/handles/10.5555/r${i}` })
    await first.app.close()
    const text = readFileSync(cacheFile, 'utf8')
    const lines = text.split('\n')
    // The header, three whole entries (r0…r2, least recently used first), then half of r3's line.
    writeFileSync(cacheFile, lines.slice(0, 4).join('\n') + '\n' + (lines[4] ?? '').slice(0, 40))

    upstream.mode = { kind: 'status', status: 503 }
    const second = await start(upstream, { cacheFile })
    for (let i = 0; i < 3; i++) expect((await second.app.inject({ url: `/api/handles/10.5555/r${i}` })).statusCode).toBe(200)
    for (let i = 3; i < 6; i++) expect((await second.app.inject({ url: `/api/handles/10.5555/r${i}` })).statusCode).not.toBe(200)
    expect(second.logs.some((l) => l.msg === 'the cache snapshot is corrupt or truncated; it was set aside' && l.loaded === 3)).toBe(true)
    expect(readdirSync(join(cacheFile, '..')).some((f) => f.startsWith('cache.snapshot.corrupt-'))).toBe(true)
  })

  it('hostile lines in a snapshot are skipped and the good ones load', async () => {
    const upstream = await upstreamFor(records(2))
    const cacheFile = tempFile()
    const first = await start(upstream, { cacheFile })
    await first.app.inject({ url: '/api/handles/10.5555/r0' })
    await first.app.inject({ url: '/api/handles/10.5555/r1' })
    await first.app.close()
    const [header = '', r0 = '', r1 = '', end = ''] = readFileSync(cacheFile, 'utf8').split('\n')
    const hostile = [
      '["10.5555/lower-case-key",[1,1764000000000,1764086400000,0]]', // not a key we make
      '["10.5555/R9",[1,1764086400000,1764000000000,0]]', // fresh until before stored
      '["10.5555/R9",[1,1764000000000,9999999999999999,0]]', // an absurd time
      '["10.5555/R9",[2,1764000000000,1764086400000,0]]', // a version we do not read
      '{"__proto__":{"polluted":true}}',
      '[' + 'x'.repeat(3 * 1024 * 1024) + ']', // longer than any record
      'null',
      '[]',
      '"string"',
      '\u0000\u0001'
    ]
    writeFileSync(cacheFile, [header, r0, ...hostile, r1, end, ''].join('\n'))
    upstream.mode = { kind: 'status', status: 503 }
    const second = await start(upstream, { cacheFile })
    expect((await second.app.inject({ url: '/api/handles/10.5555/r0' })).statusCode).toBe(200)
    expect((await second.app.inject({ url: '/api/handles/10.5555/r1' })).statusCode).toBe(200)
    expect(second.logs.some((l) => l.msg === 'skipped bad lines in the cache snapshot' && l.badLines === hostile.length)).toBe(true)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(existsSync(cacheFile)).toBe(true)
  })

  it('a record whose values do not read is dropped when its DOI is first asked for: the upstream answers it', async () => {
    // A found record's values are read the first time it is asked for, not at start (a restart with a
    // million records reads their times only); a line whose values are not values is then a miss.
    const upstream = await upstreamFor(records(1))
    const cacheFile = tempFile()
    const first = await start(upstream, { cacheFile })
    await first.app.inject({ url: '/api/handles/10.5555/r0' })
    await first.app.close()
    const [header = '', ...rest] = readFileSync(cacheFile, 'utf8').split('\n')
    const now = Date.now()
    const broken = `["10.5555/R0",[1,${now},${now + DAY},1,[{"index":"1","type":"URL","data":{}}]]]`
    writeFileSync(
      cacheFile,
      [header, ...rest.filter((l) => !l.startsWith('["10.5555/R0"')).slice(0, -2), broken, ...rest.slice(-2)].join('\n')
    )
    const asked = upstream.count('10.5555/r0')
    const second = await start(upstream, { cacheFile })
    const res = await second.app.inject({ url: '/api/handles/10.5555/r0' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-cache']).toBe('MISS')
    expect(JSON.parse(res.body).values.find((v: HandleValue) => v.type === 'URL').data.value).toBe('http://example.org/r0')
    expect(upstream.count('10.5555/r0')).toBe(asked + 1)
  })

  it('a snapshot from a larger cache fills a smaller one with the most recently used records', async () => {
    const upstream = await upstreamFor(records(20))
    const cacheFile = tempFile()
    const first = await start(upstream, { cacheFile })
    for (let i = 0; i < 20; i++) await first.app.inject({ url: `/api/handles/10.5555/r${i}` })
    await first.app.inject({ url: '/api/handles/10.5555/r0' }) // r0 is now the most recently used
    await first.app.close()

    upstream.mode = { kind: 'status', status: 503 }
    const second = await start(upstream, { cacheFile, cacheMaxEntries: 5 })
    const served = []
    for (let i = 0; i < 20; i++) {
      if ((await second.app.inject({ url: `/api/handles/10.5555/r${i}` })).statusCode === 200) served.push(i)
    }
    expect(served).toEqual([0, 16, 17, 18, 19])
  })

  it('a snapshot made from another upstream is set aside at start, not loaded, and the new upstream is asked', async () => {
    const fixture = await upstreamFor(records(2))
    const cacheFile = tempFile()
    const first = await start(fixture, { cacheFile })
    expect((await first.app.inject({ url: '/10.5555/r0' })).headers.location).toBe('http://example.org/r0')
    await first.app.close()

    const mirror = await upstreamFor({ ...records(2), '10.5555/r0': [admin(), str(1, 'URL', 'http://mirror.example/r0')] })
    const second = await start(mirror, { cacheFile })
    const res = await second.app.inject({ url: '/10.5555/r0' })
    expect(res.headers.location).toBe('http://mirror.example/r0')
    expect(res.headers['x-cache']).toBe('MISS')
    expect(mirror.count('10.5555/r0')).toBe(1)
    const warning = second.logs.find((l) => l.msg === 'the cache snapshot was made from another upstream; it was set aside and not loaded')
    expect(warning?.snapshotSource).toEqual({ upstream: fixture.url, offline: false })
    expect(String(warning?.setAside)).toMatch(/cache\.snapshot\.[0-9a-f]{12}\.set-aside$/)
    // Set aside whole, never deleted: the first upstream's record is still in it.
    expect(readFileSync(String(warning?.setAside), 'utf8')).toContain('http://example.org/r0')
  })

  it('a snapshot set aside never replaces one set aside before it', async () => {
    const fixture = await upstreamFor(records(1))
    const other = await upstreamFor(records(1))
    const cacheFile = tempFile()
    const a = await start(fixture, { cacheFile })
    await a.app.inject({ url: '/10.5555/r0' })
    await a.app.close()
    const earlier = `${cacheFile}.${sourceId(cacheSourceOf({ upstreamUrl: fixture.url, offline: false }))}.set-aside`
    writeFileSync(earlier, 'an earlier snapshot of the fixture, set aside before\n')
    const b = await start(other, { cacheFile })
    await b.app.close()
    expect(readFileSync(earlier, 'utf8')).toBe('an earlier snapshot of the fixture, set aside before\n')
    expect(readdirSync(join(cacheFile, '..')).filter((f) => f.endsWith('.set-aside'))).toHaveLength(2)
  })

  it('switching back to an upstream takes back the snapshot set aside when it was last used', async () => {
    const fixture = await upstreamFor(records(1))
    const mirror = await upstreamFor({ ...records(1), '10.5555/r0': [admin(), str(1, 'URL', 'http://mirror.example/r0')] })
    const cacheFile = tempFile()
    const first = await start(fixture, { cacheFile })
    await first.app.inject({ url: '/10.5555/r0' })
    await first.app.close()
    const second = await start(mirror, { cacheFile })
    expect((await second.app.inject({ url: '/10.5555/r0' })).headers.location).toBe('http://mirror.example/r0')
    await second.app.close()

    fixture.mode = { kind: 'status', status: 503 }
    const third = await start(fixture, { cacheFile })
    const res = await third.app.inject({ url: '/10.5555/r0' })
    expect(res.headers.location).toBe('http://example.org/r0')
    expect(res.headers['x-cache']).toBe('HIT')
    expect(third.logs.some((l) => l.msg === 'took back the cache snapshot set aside when this upstream was last used')).toBe(true)
    // The mirror's snapshot waits in its place for the next switch.
    expect(readdirSync(join(cacheFile, '..')).filter((f) => f.endsWith('.set-aside'))).toEqual([
      `cache.snapshot.${sourceId(cacheSourceOf({ upstreamUrl: mirror.url, offline: false }))}.set-aside`
    ])
  })

  it('a snapshot written before snapshots named their source (version 1) is set aside, not loaded', async () => {
    const upstream = await upstreamFor(records(1))
    const cacheFile = tempFile()
    const first = await start(upstream, { cacheFile })
    await first.app.inject({ url: '/10.5555/r0' })
    await first.app.close()
    const [, ...rest] = readFileSync(cacheFile, 'utf8').split('\n')
    writeFileSync(cacheFile, [JSON.stringify({ format: 'doi-proxy-cache', version: 1, writtenAt: T0 }), ...rest].join('\n'))

    upstream.mode = { kind: 'status', status: 503 }
    const second = await start(upstream, { cacheFile })
    expect((await second.app.inject({ url: '/10.5555/r0' })).statusCode).toBe(502)
    expect(existsSync(`${cacheFile}.v1.set-aside`)).toBe(true)
  })

  it("the snapshot's header names its source: the upstream URL, offline or not, and the format version", async () => {
    const upstream = await upstreamFor(records(1))
    const cacheFile = tempFile()
    const { app } = await start(upstream, { cacheFile })
    await app.close()
    const header = JSON.parse(readFileSync(cacheFile, 'utf8').split('\n')[0] ?? '') as Record<string, unknown>
    expect(header).toMatchObject({ format: 'doi-proxy-cache', version: 2, source: { upstream: upstream.url, offline: false } })
  })

  it('a snapshot made online is set aside by an offline start, and one made offline by an online start', async () => {
    const upstream = await upstreamFor(records(1))
    const cacheFile = tempFile()
    const online = await start(upstream, { cacheFile })
    await online.app.inject({ url: '/10.5555/r0' })
    await online.app.close()
    const offline = await start(upstream, { cacheFile, offline: true })
    expect(offline.logs.some((l) => l.msg === 'the cache snapshot was made from another upstream; it was set aside and not loaded')).toBe(
      true
    )
    await offline.app.close()
    const again = await start(upstream, { cacheFile })
    expect(
      again.logs.some(
        (l) =>
          l.msg === 'the cache snapshot was made from another upstream; it was set aside and not loaded' &&
          (l.snapshotSource as { offline?: boolean }).offline === true
      )
    ).toBe(true)
  })

  it('the cache is written periodically while the resolver runs', async () => {
    const upstream = await upstreamFor(records(1))
    const cacheFile = tempFile()
    const { app } = await start(upstream, { cacheFile, cacheSnapshotIntervalSeconds: 1 })
    await app.inject({ url: '/10.5555/r0' })
    // A write may come before the lookup on a slow start: wait for one that holds it.
    const holds = (): boolean => existsSync(cacheFile) && readFileSync(cacheFile, 'utf8').includes('"10.5555/R0"')
    for (let i = 0; i < 100 && !holds(); i++) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(readFileSync(cacheFile, 'utf8')).toContain('"10.5555/R0"')
  })
})
