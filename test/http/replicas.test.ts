import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { pino } from 'pino'
import type { AppDeps } from '../../src/app.js'
import type { Config } from '../../src/config/schema.js'
import { FakeUpstream } from '../support/fake-upstream.js'
import { PROBE_RECORDS, admin, str } from '../support/records.js'
import { TestRedis } from '../support/redis.js'
import { metric, replicaApp, sharedUp, waitFor } from '../support/replica-apps.js'
import type { HandleValue } from '../../src/handle/types.js'
import { cacheSourceOf, sourceId } from '../../src/resolve/cache/source.js'

// REDIS_URL (behaviour.md §11): replicas share a second cache tier, against a real redis-server.

const T0 = Date.UTC(2026, 10, 23, 12, 0, 0)
const DAY = 86_400_000

const RECORDS: Record<string, HandleValue[]> = { ...PROBE_RECORDS }
for (let i = 0; i < 10; i++) RECORDS[`10.5555/shared-${i}`] = [admin(), str(1, 'URL', `http://example.org/shared-${i}`)]
// Records whose URL has ttl 0: "do not cache" (behaviour.md §3).
for (let i = 0; i < 4; i++) RECORDS[`10.5555/zero-${i}`] = [admin(), str(1, 'URL', `http://example.org/zero-${i}`, 0)]

let redis: TestRedis

beforeAll(async () => {
  redis = await TestRedis.start()
})
afterAll(async () => {
  await redis?.close()
})
beforeEach(async () => {
  await redis.run() // a test may have killed it
  const client = redis.client()
  await client.flushall()
  client.disconnect()
})

async function fakeUpstream(): Promise<FakeUpstream> {
  const upstream = await FakeUpstream.start(RECORDS)
  onTestFinished(() => upstream.close())
  return upstream
}

/** One replica: a whole app on the shared upstream and Redis. */
async function replica(upstream: FakeUpstream, overrides: Partial<Config> = {}, deps: AppDeps = {}): Promise<FastifyInstance> {
  return await replicaApp(upstream, { redisUrl: redis.url, ...overrides }, deps)
}

/** The Redis key of a record as replicas on this upstream name it: the prefix, the key version and the source. */
function recordKey(upstream: FakeUpstream, key: string): string {
  return `doi-proxy:v2:${sourceId(cacheSourceOf({ upstreamUrl: upstream.url, offline: false }))}:r:${key}`
}

describe('replicas sharing one Redis', () => {
  it('a replica whose upstream slots are all taken still answers at once what another replica shared', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream)
    // The held slot outlives the reader's longest wait for one: without asking Redis first, the reader would get 503.
    const b = await replica(upstream, { upstreamMaxConcurrent: 1, upstreamTimeoutMs: 15_000, upstreamQueueTimeoutMs: 300 })
    expect((await a.inject({ url: '/10.5555/shared-1' })).statusCode).toBe(302)
    upstream.mode = { kind: 'hang' }
    // A flooding client holds B's only upstream slot; the reader's DOI is in Redis.
    const held = b.inject({ url: '/10.5555/hangs', remoteAddress: '192.0.2.66' })
    await waitFor(async () => upstream.inFlight > 0)
    const res = await b.inject({ url: '/10.5555/shared-1', remoteAddress: '198.51.100.7' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/shared-1')
    upstream.mode = { kind: 'ok' }
    await upstream.close()
    await held
  })

  it('a DOI one replica resolved is answered by another without asking the upstream', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream)
    const b = await replica(upstream)
    expect((await a.inject({ url: '/10.5555/plain' })).statusCode).toBe(302)
    const res = await b.inject({ url: '/10.5555/plain' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/plain')
    expect(upstream.count('10.5555/plain')).toBe(1)
    expect(upstream.count('10.5555')).toBe(1)
    expect(await metric(b, /^doi_proxy_shared_cache_total\{result="hit"\} (\d+)/m)).toBeGreaterThanOrEqual(1)
  })

  it('replicas that miss the same DOI at once make one upstream request between them', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream)
    const b = await replica(upstream)
    const c = await replica(upstream)
    upstream.mode = { kind: 'slow', delayMs: 300 }
    const answers = await Promise.all([a, b, c, a, b, c].map(async (app) => await app.inject({ url: '/10.5555/shared-1' })))
    expect(answers.map((r) => r.statusCode)).toEqual([302, 302, 302, 302, 302, 302])
    expect(answers.every((r) => r.headers.location === 'http://example.org/shared-1')).toBe(true)
    expect(upstream.count('10.5555/shared-1')).toBe(1)
    expect(upstream.count('10.5555')).toBe(1)
  })

  it("deployments with different upstreams on one Redis, with the same REDIS_KEY_PREFIX, never answer with each other's records", async () => {
    const upstream = await fakeUpstream()
    const mirror = await FakeUpstream.start({ ...RECORDS, '10.5555/plain': [admin(), str(1, 'URL', 'http://mirror.example/plain')] })
    onTestFinished(() => mirror.close())
    const a = await replica(upstream)
    const b = await replica(mirror)
    expect((await a.inject({ url: '/10.5555/plain' })).headers.location).toBe('http://example.org/plain')
    const res = await b.inject({ url: '/10.5555/plain' })
    expect(res.headers.location).toBe('http://mirror.example/plain')
    expect(mirror.count('10.5555/plain')).toBe(1)
    expect(await metric(b, /^doi_proxy_shared_cache_total\{result="hit"\} (\d+)/m)).toBe(0)
  })

  it('a not-found answer is shared too', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream)
    const b = await replica(upstream)
    expect((await a.inject({ url: '/10.5555/nowhere' })).statusCode).toBe(404)
    expect((await b.inject({ url: '/10.5555/nowhere' })).statusCode).toBe(404)
    expect(upstream.count('10.5555/nowhere')).toBe(1)
  })

  it("a record with a ttl 0 value is kept alike by the process's own cache and the shared tier: not at all, fresh or stale", async () => {
    const upstream = await fakeUpstream()
    /** A record asked for by `first`, then again by `second`, the upstream failing meanwhile or not: status and X-Cache. */
    async function askedAgain(first: FastifyInstance, second: FastifyInstance, doi: string, failing: boolean): Promise<string> {
      upstream.mode = { kind: 'ok' }
      expect((await first.inject({ url: `/${doi}` })).statusCode).toBe(302)
      if (failing) upstream.mode = { kind: 'status', status: 503 }
      const res = await second.inject({ url: `/${doi}` })
      return `${res.statusCode} ${String(res.headers['x-cache'])}`
    }
    // The local cache: one process without Redis asks twice. The shared tier: one replica asks, another one after it.
    const alone = await replicaApp(upstream, {})
    const [a, b, c, d] = [await replica(upstream), await replica(upstream), await replica(upstream), await replica(upstream)]
    const local = {
      fresh: await askedAgain(alone, alone, '10.5555/zero-0', false),
      failing: await askedAgain(alone, alone, '10.5555/zero-1', true)
    }
    const shared = { fresh: await askedAgain(a, b, '10.5555/zero-2', false), failing: await askedAgain(c, d, '10.5555/zero-3', true) }
    expect(shared).toEqual(local)
    // Asked of the upstream every time, and no copy stands in when it fails.
    expect(local.fresh).toBe('302 MISS')
    expect(local.failing).not.toMatch(/^302/)
    for (let i = 0; i < 4; i++) expect(upstream.count(`10.5555/zero-${i}`)).toBe(2)
    const client = redis.client()
    onTestFinished(() => {
      client.disconnect()
    })
    expect(await client.exists(recordKey(upstream, '10.5555/ZERO-2'), recordKey(upstream, '10.5555/ZERO-3'))).toBe(0)
  })

  it('records live under a versioned prefix naming their source, with a Redis TTL of freshness plus the longest staleness', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream, { cacheMaxTtlSeconds: 3600, maxStaleSeconds: 7200 })
    await a.inject({ url: '/10.5555/plain' })
    const client = redis.client()
    onTestFinished(() => {
      client.disconnect()
    })
    const ttl = await client.pttl(recordKey(upstream, '10.5555/PLAIN'))
    expect(ttl).toBeGreaterThan(3600_000)
    expect(ttl).toBeLessThanOrEqual(3600_000 + 7200_000)
  })

  it('an expired record another replica stored stands in when the upstream fails', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream, {}, { now: () => T0 })
    expect((await a.inject({ url: '/10.5555/shared-2' })).statusCode).toBe(302)
    upstream.mode = { kind: 'status', status: 503 }
    const b = await replica(upstream, {}, { now: () => T0 + 2 * DAY })
    const res = await b.inject({ url: '/10.5555/shared-2' })
    expect(res.statusCode).toBe(302)
    expect(res.headers['x-cache']).toBe('STALE')
  })

  it('a value in Redis that is not a cache entry is ignored and counted, never served', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream)
    const client = redis.client()
    onTestFinished(() => {
      client.disconnect()
    })
    await client.set(
      recordKey(upstream, '10.5555/PLAIN'),
      '[1,1,2,1,[{"index":1,"type":"URL","data":{"format":"string","value":"javascript:alert(1)"}}]]'
    )
    await client.set(recordKey(upstream, '10.5555/MULTI'), '\u0000not json')
    const plain = await a.inject({ url: '/10.5555/plain' })
    expect(plain.statusCode).toBe(302)
    expect(plain.headers.location).toBe('http://example.org/plain')
    expect((await a.inject({ url: '/10.5555/multi' })).headers.location).toBe('http://example.org/first')
    expect(await metric(a, /^doi_proxy_shared_cache_errors_total\{reason="bad_value"\} (\d+)/m)).toBeGreaterThanOrEqual(2)
  })

  it('an entry in Redis that promises more freshness than we give, or is dated in the future, is not believed', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream, { cacheMaxTtlSeconds: 60 }, { now: () => T0 })
    const client = redis.client()
    onTestFinished(() => {
      client.disconnect()
    })
    const planted = (storedAt: number, freshUntil: number): string =>
      JSON.stringify([
        1,
        storedAt,
        freshUntil,
        1,
        [{ index: 1, type: 'URL', data: { format: 'string', value: 'http://planted.example/' }, ttl: 86400 }]
      ])
    await client.set(recordKey(upstream, '10.5555/PLAIN'), planted(T0, T0 + 100 * 365 * DAY))
    await client.set(recordKey(upstream, '10.5555/MULTI'), planted(T0 + DAY, T0 + DAY + 30_000))
    expect((await a.inject({ url: '/10.5555/plain' })).headers.location).toBe('http://example.org/plain')
    expect((await a.inject({ url: '/10.5555/multi' })).headers.location).toBe('http://example.org/first')
    expect(await metric(a, /^doi_proxy_shared_cache_errors_total\{reason="bad_value"\} (\d+)/m)).toBeGreaterThanOrEqual(2)
  })

  it('a value in Redis larger than any record could be is refused without being read whole', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream, { upstreamMaxBodyBytes: 1024 }, { now: () => T0 })
    const client = redis.client()
    onTestFinished(() => {
      client.disconnect()
    })
    const values = Array.from({ length: 2000 }, (_, i) => ({
      index: i + 1,
      type: 'DESC',
      data: { format: 'string', value: 'x'.repeat(40) },
      ttl: 86400
    }))
    await client.set(recordKey(upstream, '10.5555/PLAIN'), JSON.stringify([1, T0, T0 + 30_000, 1, values]))
    expect((await a.inject({ url: '/10.5555/plain' })).headers.location).toBe('http://example.org/plain')
    expect(await metric(a, /^doi_proxy_shared_cache_errors_total\{reason="bad_value"\} (\d+)/m)).toBeGreaterThanOrEqual(1)
  })

  it('rate-limit counters are shared by the replicas', async () => {
    const upstream = await fakeUpstream()
    const limits = { rateLimitMax: 2, rateLimitWindowMs: 60_000, rateLimitAllowList: [] }
    const a = await replica(upstream, limits)
    const b = await replica(upstream, limits)
    const from = { remoteAddress: '203.0.113.7' }
    expect((await a.inject({ url: '/10.5555/shared-3', ...from })).statusCode).toBe(302)
    expect((await b.inject({ url: '/10.5555/shared-4', ...from })).statusCode).toBe(302)
    expect((await a.inject({ url: '/10.5555/shared-5', ...from })).statusCode).toBe(429)
  })

  it('each rate-limit counter in Redis is named by its limit and its client', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream, { rateLimitMax: 5, authRateLimitMax: 5, rateLimitWindowMs: 60_000, rateLimitAllowList: [] })
    const from = { remoteAddress: '203.0.113.8' }
    expect((await a.inject({ url: '/10.5555/shared-8', ...from })).statusCode).toBe(302)
    expect((await a.inject({ url: '/10.5555/shared-9?auth', ...from })).statusCode).toBe(302)
    const client = redis.client()
    onTestFinished(() => {
      client.disconnect()
    })
    expect((await client.keys('doi-proxy:v1:rl:*')).sort()).toEqual([
      'doi-proxy:v1:rl:auth:203.0.113.8',
      'doi-proxy:v1:rl:lookups:203.0.113.8'
    ])
  })
})

describe('when Redis fails', () => {
  it('a replica whose Redis is unreachable from the start is ready and resolves on its own', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream, { redisUrl: 'redis://127.0.0.1:1', redisConnectTimeoutMs: 200 })
    expect((await a.inject({ url: '/readyz' })).statusCode).toBe(200)
    expect((await a.inject({ url: '/10.5555/plain' })).statusCode).toBe(302)
    expect(await metric(a, /^doi_proxy_shared_cache_up (\d+)/m)).toBe(0)
    expect(await metric(a, /^doi_proxy_shared_cache_errors_total\{reason="unavailable"\} (\d+)/m)).toBeGreaterThan(0)
  })

  it('when Redis is killed, replicas keep resolving on their own, and share again once it is back', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream)
    const b = await replica(upstream)
    await redis.kill()
    expect((await a.inject({ url: '/10.5555/shared-6' })).statusCode).toBe(302)
    expect((await b.inject({ url: '/10.5555/shared-6' })).statusCode).toBe(302)
    expect(upstream.count('10.5555/shared-6')).toBe(2) // no Redis: each its own
    expect((await a.inject({ url: '/readyz' })).statusCode).toBe(200)
    expect(await metric(a, /^doi_proxy_shared_cache_errors_total\{reason="unavailable"\} (\d+)/m)).toBeGreaterThan(0)

    await redis.run()
    await waitFor(async () => (await sharedUp(a)) && (await sharedUp(b)))
    expect((await a.inject({ url: '/10.5555/shared-7' })).statusCode).toBe(302)
    expect((await b.inject({ url: '/10.5555/shared-7' })).statusCode).toBe(302)
    expect(upstream.count('10.5555/shared-7')).toBe(1)
  })

  it('Redis going away while the replica is idle is one warning, and its return one info line', async () => {
    const upstream = await fakeUpstream()
    const logs: Array<{ level: number; msg: string }> = []
    const logger = pino(
      { level: 'info' },
      {
        write: (line: string) => {
          logs.push(JSON.parse(line) as { level: number; msg: string })
        }
      }
    )
    await replica(upstream, {}, { logger })
    const lost = (): number => logs.filter((l) => l.msg.startsWith('lost the connection to the shared cache (Redis)')).length
    const back = (): number => logs.filter((l) => l.msg === 'reconnected to the shared cache (Redis)').length
    await redis.kill()
    await waitFor(async () => lost() > 0)
    // Several reconnection attempts fail while it is down: still one line.
    await new Promise((resolve) => setTimeout(resolve, 1000))
    expect(lost()).toBe(1)
    expect(logs.find((l) => l.msg.startsWith('lost the connection'))?.level).toBe(40)
    expect(back()).toBe(0)
    await redis.run()
    await waitFor(async () => back() > 0)
    expect(back()).toBe(1)
    expect(lost()).toBe(1)
  })

  it('two Redis outages back to back: the start and end of each is logged, the second counted within 10 s', async () => {
    const upstream = await fakeUpstream()
    const logs: Array<{ level: number; msg: string; lost?: number; regained?: number }> = []
    const logger = pino(
      { level: 'info' },
      {
        write: (line: string) => {
          logs.push(JSON.parse(line) as { level: number; msg: string })
        }
      }
    )
    const a = await replica(upstream, {}, { logger })
    // Outages told: a line each, or counted in the line that sums up those held back.
    const summaries = (): typeof logs => logs.filter((l) => l.msg.startsWith('the connection to the shared cache (Redis) was lost'))
    const lost = (): number =>
      logs.filter((l) => l.msg.startsWith('lost the connection to the shared cache (Redis)')).length +
      summaries().reduce((n, l) => n + (l.lost ?? 0), 0)
    const back = (): number =>
      logs.filter((l) => l.msg === 'reconnected to the shared cache (Redis)').length +
      summaries().reduce((n, l) => n + (l.regained ?? 0), 0)
    for (let outage = 1; outage <= 2; outage++) {
      await redis.kill()
      await waitFor(async () => !(await sharedUp(a)))
      await redis.run()
      await waitFor(async () => await sharedUp(a))
    }
    // The second outage came within 10 s of the first: it is told when those 10 s are over.
    await waitFor(async () => lost() === 2 && back() === 2, 20_000)
    expect(lost()).toBe(2)
    expect(back()).toBe(2)
    expect(summaries().at(-1)?.level).toBe(40)
  }, 40_000)

  it('a full Redis (maxmemory reached, no eviction) refuses writes: the replica resolves and counts it', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream)
    const client = redis.client()
    onTestFinished(async () => {
      await client.config('SET', 'maxmemory', '0')
      await client.config('SET', 'maxmemory-policy', 'noeviction')
      client.disconnect()
    })
    await client.config('SET', 'maxmemory-policy', 'noeviction')
    await client.config('SET', 'maxmemory', '1')
    const res = await a.inject({ url: '/10.5555/shared-9' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/shared-9')
    await waitFor(async () => (await metric(a, /^doi_proxy_shared_cache_errors_total\{reason="full"\} (\d+)/m)) > 0)
  })

  it('a slow Redis is given up after its command timeout and the lookup goes on without it', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream, { redisCommandTimeoutMs: 50 })
    const client = redis.client()
    onTestFinished(() => {
      client.disconnect()
    })
    await client.ping() // connected: the sleep starts now, not after a connect
    const sleeping = client.call('DEBUG', 'SLEEP', '1.5')
    await new Promise((resolve) => setTimeout(resolve, 100))
    const res = await a.inject({ url: '/10.5555/shared-8' })
    expect(res.statusCode).toBe(302)
    expect(res.headers.location).toBe('http://example.org/shared-8')
    expect(await metric(a, /^doi_proxy_shared_cache_errors_total\{reason="timeout"\} (\d+)/m)).toBeGreaterThan(0)
    await sleeping
  })

  it('a Redis that answers nothing for a second is then left alone for a while: the next misses do not wait on it', async () => {
    const upstream = await fakeUpstream()
    const a = await replica(upstream, { redisCommandTimeoutMs: 50 })
    const client = redis.client()
    onTestFinished(() => {
      client.disconnect()
    })
    await client.ping() // connected: the sleep starts now, not after a connect
    const sleeping = client.call('DEBUG', 'SLEEP', '3')
    await new Promise((resolve) => setTimeout(resolve, 100))
    const started = performance.now()
    expect((await a.inject({ url: '/10.5555/shared-0' })).statusCode).toBe(302)
    // The first miss kept trying for about a second (one slow command is not a Redis gone), then went on alone.
    expect(performance.now() - started).toBeLessThan(5000) // well under the lock's 10 s
    const timeouts = await metric(a, /^doi_proxy_shared_cache_errors_total\{reason="timeout"\} (\d+)/m)
    expect(timeouts).toBeGreaterThan(1)
    for (let i = 1; i < 5; i++) expect((await a.inject({ url: `/10.5555/shared-${i}` })).statusCode).toBe(302)
    expect(await metric(a, /^doi_proxy_shared_cache_errors_total\{reason="timeout"\} (\d+)/m)).toBe(timeouts)
    await sleeping
  })

  it('Redis paused mid-storm, for less than a second: one slow command does not switch sharing off, one upstream request per DOI', async () => {
    const upstream = await fakeUpstream()
    // A command timeout a busy machine keeps to, and a pause over it but well under the second after which
    // sharing is switched off.
    const a = await replica(upstream, { redisCommandTimeoutMs: 200 })
    const b = await replica(upstream, { redisCommandTimeoutMs: 200 })
    upstream.mode = { kind: 'slow', delayMs: 1000 }
    const client = redis.client()
    onTestFinished(() => {
      client.disconnect()
    })
    await client.ping()
    const dois = Array.from({ length: 10 }, (_, i) => `10.5555/shared-${i}`)
    const answers = Promise.all(
      dois.flatMap((doi) => [a, b, a, b].map(async (app, i) => await app.inject({ url: `/${doi}`, remoteAddress: `192.0.2.${i + 1}` })))
    )
    // While replica A fetches (its locks taken), B polls for the records: Redis stops answering for 500 ms.
    await new Promise((resolve) => setTimeout(resolve, 150))
    await client.call('DEBUG', 'SLEEP', '0.5')
    const res = await answers
    expect(res.map((r) => r.statusCode)).toEqual(Array(res.length).fill(302))
    expect(
      (await metric(a, /^doi_proxy_shared_cache_errors_total\{reason="timeout"\} (\d+)/m)) +
        (await metric(b, /^doi_proxy_shared_cache_errors_total\{reason="timeout"\} (\d+)/m))
    ).toBeGreaterThan(0)
    for (const doi of dois) expect(upstream.count(doi)).toBe(1)
  })
})
