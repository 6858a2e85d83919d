import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { pino } from 'pino'
import { buildConfig, ConfigError } from '../../src/config/schema.js'
import { FakeAgency } from '../support/fake-agency.js'
import { FakeUpstream } from '../support/fake-upstream.js'
import { PROBE_RECORDS, admin, str } from '../support/records.js'
import { useTestRedis } from '../support/redis.js'
import { replicaApp, waitFor } from '../support/replica-apps.js'

// DELETE /api/cache/{doi} (src/http/routes/cache.ts): a DOI registered minutes ago, whose "not found" is
// cached, is dropped from every tier of every replica (datacite/datacite#2281). Real redis-server.

const TOKEN = 'a'.repeat(24) + '0123456789abcdef'
const BEARER = { authorization: `Bearer ${TOKEN}` }

const redis = useTestRedis()

async function fakeUpstream(): Promise<FakeUpstream> {
  const upstream = await FakeUpstream.start({ ...PROBE_RECORDS })
  onTestFinished(() => upstream.close())
  return upstream
}

/** Both replicas listen on the fleet's channel (their subscription is made as they connect). */
async function subscribed(count: number): Promise<void> {
  const client = redis().client()
  try {
    await waitFor(async () => {
      const channels = (await client.pubsub('CHANNELS', 'doi-proxy:v1:fleet:*')) as string[]
      if (channels.length === 0) return false
      const [, n] = (await client.pubsub('NUMSUB', channels[0] as string)) as [string, number]
      return n >= count
    })
  } finally {
    client.disconnect()
  }
}

describe('DELETE /api/cache/{doi}', () => {
  it('a cached "not found" of a DOI registered since is dropped from every tier of every replica: the next request finds it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'purge-'))
    onTestFinished(() => {
      rmSync(dir, { recursive: true, force: true })
    })
    const cacheFile = join(dir, 'cache.snapshot')
    const upstream = await fakeUpstream()
    const a = await replicaApp(upstream, { redisUrl: redis().url, adminToken: TOKEN, cacheFile })
    const b = await replicaApp(upstream, { redisUrl: redis().url, adminToken: TOKEN })
    await subscribed(2)
    // Asked before it was registered: not found, in A's memory (and its kept answer), Redis, B's memory.
    for (const app of [a, a, a, b, b]) expect((await app.inject({ url: '/10.5555/new' })).statusCode).toBe(404)
    expect(upstream.count('10.5555/new')).toBe(1)
    await a.inject({ method: 'DELETE', url: '/api/cache/10.5555/other', headers: BEARER }) // a snapshot written now holds /new
    expect(readFileSync(cacheFile, 'utf8')).toContain('"10.5555/NEW"')
    upstream.set('10.5555/new', [admin(), str(1, 'URL', 'http://example.org/new')])
    expect((await b.inject({ url: '/10.5555/new' })).statusCode).toBe(404) // still cached

    const res = await a.inject({ method: 'DELETE', url: '/api/cache/10.5555/NEW', headers: BEARER })
    expect(res.statusCode).toBe(200)
    expect(res.headers['cache-control']).toBe('no-store')
    expect(JSON.parse(res.body)).toMatchObject({ doi: '10.5555/NEW', held: true, redis: 'deleted', told: 'redis' })
    expect(readFileSync(cacheFile, 'utf8')).not.toContain('"10.5555/NEW"')
    expect((await a.inject({ url: '/10.5555/new' })).headers.location).toBe('http://example.org/new')
    await waitFor(async () => (await b.inject({ url: '/10.5555/new' })).statusCode === 302)
  })

  it("purges asked at once share the snapshot's writes, and none of their DOIs is left in it", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'purge-'))
    onTestFinished(() => {
      rmSync(dir, { recursive: true, force: true })
    })
    const cacheFile = join(dir, 'cache.snapshot')
    const writes: string[] = []
    const logger = pino(
      { level: 'info' },
      {
        write: (line: string) => {
          if (line.includes('wrote the cache snapshot')) writes.push(line)
        }
      }
    )
    const upstream = await fakeUpstream()
    const a = await replicaApp(upstream, { adminToken: TOKEN, cacheFile }, { logger })
    for (let i = 0; i < 20; i++) expect((await a.inject({ url: `/10.5555/gone-${i}` })).statusCode).toBe(404)
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => await a.inject({ method: 'DELETE', url: `/api/cache/10.5555/gone-${i}`, headers: BEARER }))
    )
    expect(answers.map((res) => res.statusCode)).toEqual(Array(20).fill(200))
    expect(writes.length).toBeLessThanOrEqual(3)
    expect(readFileSync(cacheFile, 'utf8')).not.toContain('GONE-')
  })

  it('a wait published in Redis by anyone who may write there is not taken: lookups go on', async () => {
    const upstream = await fakeUpstream()
    upstream.set('10.5555/new', [admin(), str(1, 'URL', 'http://example.org/new')])
    const a = await replicaApp(upstream, { redisUrl: redis().url })
    await subscribed(1)
    const client = redis().client()
    onTestFinished(() => {
      client.disconnect()
    })
    const [channel] = (await client.pubsub('CHANNELS', 'doi-proxy:v1:fleet:*')) as string[]
    // As the fleet's own messages are written (src/resolve/fleet/messages.ts), a minute's wait.
    expect(
      await client.publish(
        channel as string,
        JSON.stringify({ from: 'someone', message: { kind: 'upstream-wait', until: Date.now() + 60_000 } })
      )
    ).toBe(1)
    // Redis has sent it to the replica's subscription (publish answered 1); a moment for the replica to read it
    // (without the check, the lookup below was refused with 503 after this wait).
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect((await a.inject({ url: '/10.5555/new' })).statusCode).toBe(302)
  })

  it('without ADMIN_TOKEN purging is off: 404, and nothing is dropped', async () => {
    const upstream = await fakeUpstream()
    const a = await replicaApp(upstream, {})
    expect((await a.inject({ url: '/10.5555/new' })).statusCode).toBe(404)
    const res = await a.inject({ method: 'DELETE', url: '/api/cache/10.5555/new', headers: BEARER })
    expect(res.statusCode).toBe(404)
    expect(JSON.parse(res.body).message).toContain('ADMIN_TOKEN')
    expect((await a.inject({ url: '/10.5555/new' })).headers['x-cache']).toBe('HIT')
  })

  it('an agency\'s cached "not found" for the DOI\'s metadata is dropped too: the next negotiated request gets the metadata', async () => {
    const agency = await FakeAgency.start()
    onTestFinished(async () => {
      await agency.close()
    })
    const conneg = `<locations><location weight="0" http_role="conneg" href_template="${agency.origin}/{hdl}"/></locations>`
    const upstream = await FakeUpstream.start({
      ...PROBE_RECORDS,
      10.9999: [admin(), str(2, 'HS_NAMESPACE', '<HS_NAMESPACE><locs>10.SERV/FAKE</locs></HS_NAMESPACE>')],
      '10.SERV/FAKE': [admin(), str(1, '10320/loc', conneg)],
      '10.9999/paper': [str(1, 'URL', 'https://publisher.example/paper')]
    })
    onTestFinished(() => upstream.close())
    const a = await replicaApp(upstream, {
      adminToken: TOKEN,
      metadataMode: 'fetch',
      metadataHosts: [agency.host],
      negativeTtlSeconds: 3600
    })
    const bib = { accept: 'application/x-bibtex' }
    // The agency has no metadata for it yet: its 404 is held (NEGATIVE_TTL_SECONDS), then it has some.
    expect((await a.inject({ url: '/10.9999/paper', headers: bib })).statusCode).toBe(404)
    agency.records.set('10.9999/paper', { 'application/x-bibtex': '@article{paper}\n' })
    const held = await a.inject({ url: '/10.9999/Paper', headers: bib })
    expect([held.statusCode, held.headers['x-cache']]).toEqual([404, 'HIT'])
    expect(agency.seen).toHaveLength(1)
    const purged = await a.inject({ method: 'DELETE', url: '/api/cache/10.9999/PAPER', headers: BEARER })
    expect(purged.statusCode).toBe(200)
    expect(purged.json()).toMatchObject({ held: true })
    const after = await a.inject({ url: '/10.9999/paper', headers: bib })
    expect([after.statusCode, after.body]).toEqual([200, '@article{paper}\n'])
    expect(agency.seen).toHaveLength(2)
  })

  it.each([
    ['no Authorization', {}],
    ['another token', { authorization: `Bearer ${'b'.repeat(40)}` }],
    ['the token not as Bearer', { authorization: `Basic ${TOKEN}` }]
  ])('with %s: 401 with WWW-Authenticate, and nothing is dropped', async (_name, headers) => {
    const upstream = await fakeUpstream()
    const a: FastifyInstance = await replicaApp(upstream, { adminToken: TOKEN })
    expect((await a.inject({ url: '/10.5555/new' })).statusCode).toBe(404)
    const res = await a.inject({ method: 'DELETE', url: '/api/cache/10.5555/new', headers })
    expect(res.statusCode).toBe(401)
    expect(res.headers['www-authenticate']).toBe('Bearer realm="doi-proxy"')
    expect((await a.inject({ url: '/10.5555/new' })).headers['x-cache']).toBe('HIT')
  })
})

describe('ADMIN_TOKEN', () => {
  it.each([
    ['shorter than 32 characters', 'short-token-123', 'at least 32 characters'],
    ['with a space', `${TOKEN} x`, 'A-Z a-z 0-9']
  ])('%s is refused at start, naming the setting and never the value', (_name, value, says) => {
    let error: unknown
    try {
      buildConfig(undefined, { ADMIN_TOKEN: value })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as Error).message).toContain('ADMIN_TOKEN')
    expect((error as Error).message).toContain(says)
    expect((error as Error).message).not.toContain(value)
  })
})
